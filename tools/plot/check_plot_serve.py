"""The figure checks of plot_serve.py, beside it. tests/cli/plot_content_check.py runs a
serving run through the tool (`document`), draws it and hands each figure's description
(kbplot.describe) to `content` (PlotScripts.DrawWhatTheDocumentHolds).
"""

import os
import subprocess

SCRIPT = "plot_serve"
DOCUMENT = None  # made by `document`: a serving run has no committed results
BENCH = None


def document(exe: str, tmp: str, check) -> str:
    """A fresh serving run's summary, written by the tool beside its CSV files; its path
    ("" when the run failed)."""
    out = os.path.join(tmp, "serve-run")
    r = subprocess.run([exe, "serve", "--model", "llama-tiny-random", "--tp", "1", "--tp-level", "cube",
                        "--arrivals", "gamma:2000:2", "--isl", "uniform:8:200", "--osl", "uniform:1:24",
                        "--requests", "60", "--max-num-seqs", "8", "--max-batched-tokens", "96", "--recheck", "0",
                        "--out", out], capture_output=True, text=True)
    check("serve", r.returncode == 0, r.stderr)
    return os.path.join(out, "summary.json") if r.returncode == 0 else ""


def content(doc: dict, figs: dict, check) -> None:
    lat = figs.get("serve_latency.png", [])
    check("serve latency: TTFT, TPOT and E2E panels", len(lat) == 3, lat)
    if len(lat) == 3:
        # Each CDF: its step line, three percentile markers and their labels; TTFT and TPOT with the SLO's line.
        for p, slo in zip(lat, (True, True, False)):
            check(f"serve latency {p.get('xlabel')}: a CDF, P50/P90/P99 marked",
                  p.get("lines") == 4 + (1 if slo else 0) and p.get("texts") == 3, p)
        check("serve latency: the SLO in the legend", lat[0].get("legend") == ["TTFT", f"SLO {doc['slo']['ttft_ms']:g}"], lat[0])
    tl = figs.get("serve_timeline.png", [])
    check("serve timeline: requests, then the KV cache", len(tl) == 2 and tl[0].get("legend") == ["running (batch)", "waiting"]
          and tl[1].get("legend") == ["KV cache in use"], tl)
