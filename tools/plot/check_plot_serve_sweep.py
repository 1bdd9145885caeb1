"""The figure checks of plot_serve_sweep.py, beside it. tests/cli/plot_content_check.py runs a
serving sweep through the tool (`document`), draws it and hands the figure's description
(kbplot.describe) to `content` (PlotScripts.DrawWhatTheDocumentHolds).
"""

import os
import subprocess

SCRIPT = "plot_serve_sweep"
DOCUMENT = None  # made by `document`: a serving sweep has no committed results
BENCH = None


def document(exe: str, tmp: str, check) -> str:
    """A fresh serving sweep's JSON, written by the tool; its path ("" when the sweep failed)."""
    out = os.path.join(tmp, "serve-sweep", "sweep.json")
    r = subprocess.run([exe, "sweep", "serve", "--model", "llama-tiny-random", "--tp", "1", "--tp-level", "cube",
                        "--arrivals", "poisson:500,poisson:4000,gamma:2000:3", "--isl", "uniform:8:200", "--osl", "uniform:1:24",
                        "--requests", "60", "--max-num-seqs", "1,2,4,8", "--max-batched-tokens", "96,256",
                        "--slo-ttft", "0.05", "--slo-tpot", "0.011", "--recheck", "0", "--out", out],
                       capture_output=True, text=True)
    check("sweep serve", r.returncode == 0, r.stderr)
    return out if r.returncode == 0 else ""


def content(doc: dict, figs: dict, check) -> None:
    p = figs.get("serve_sweep_front.png", [])
    check("serve sweep front: one panel", len(p) == 1, p)
    if len(p) != 1:
        return
    served = [c for c in doc["configs"] if c["status"] == "ok"]
    meet = sum(1 for c in served if c["meets_slo"])
    want = ([f"misses the SLO ({len(served) - meet})"] if meet < len(served) else []) + \
        ([f"meets the SLO ({meet})"] if meet else []) + ([f"front ({len(doc['front'])})"] if doc["front"] else []) + \
        ["1 / the TPOT SLO"]
    check("serve sweep front: the legend counts the configs", p[0].get("legend") == want, p[0])
    # A label per config on the front.
    check("serve sweep front: each front config labelled", p[0].get("texts") == len(doc["front"]), p[0])

