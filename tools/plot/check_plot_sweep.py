"""The figure checks of plot_sweep.py, beside it. tests/cli/plot_content_check.py runs a
sweep through the tool (`document`), draws it and hands each figure's description
(kbplot.describe) to `content` (PlotScripts.DrawWhatTheDocumentHolds).
"""

import os
import subprocess

SCRIPT = "plot_sweep"
DOCUMENT = None  # made by `document`: a sweep has no committed results
BENCH = None


def document(exe: str, tmp: str, check) -> str:
    """A fresh sweep's JSON, written by the tool; its path ("" when the sweep failed)."""
    path = os.path.join(tmp, "sweep.json")
    r = subprocess.run([exe, "sweep", "gemm", "--m", "64:1024:*2", "--n", "64,256", "--k", "64", "--pes", "1,2,4",
                        "--group", "m,n", "--recheck", "0", "--progress-every", "0", "--out", path],
                       capture_output=True, text=True)
    check("sweep", r.returncode == 0, r.stderr)
    return path if r.returncode == 0 else ""


def content(doc: dict, figs: dict, check) -> None:
    fronts = doc["pareto"]["fronts"]
    par = figs.get("sweep_pareto.png", [{}])[0]
    check("sweep pareto: a step line per group", par.get("lines") == len(fronts), par)
    check("sweep pareto: a point per front point", par.get("points") == sum(len(fr["points"]) for fr in fronts), par)
    hist = figs.get("sweep_histogram.png", [{}])[0]
    check("sweep histogram: a bar per bin", hist.get("bars") == len(doc["histogram"]["bins"]), hist)
    best = figs.get("sweep_best.png", [{}])[0]
    check("sweep best: one table", best.get("tables") == 1, best)
