#!/usr/bin/env python3
"""Every figure script draws what its document holds. Each script's checks sit beside it
(tools/plot/check_plot_NAME.py): the document it draws (committed results under
docs/diagrams/, or one the tool makes), and `content`, which compares each figure's panels,
bars, lines, points, images, annotations and legend (`kbplot.describe`, written through
KERNBENCH_PLOT_DESCRIBE) with the document's own rows. A script without such a file fails.

Usage: plot_content_check.py SOURCE_DIR KERNBENCH_EXE
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import subprocess
import sys
import tempfile

src, exe = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "tools", "plot"))
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skip: no matplotlib")
    sys.exit(77)

failures: list[str] = []


def check(what: str, cond: bool, detail="") -> None:
    if not cond:
        failures.append(f"{what}: {detail}")


def render(script: str, doc_path: str, tmp: str) -> dict:
    """The script run as the tool runs it; the description of every figure it wrote."""
    desc = os.path.join(tmp, f"{script}.describe.json")
    env = dict(os.environ, KERNBENCH_PLOT_DESCRIBE=desc)
    r = subprocess.run([sys.executable, os.path.join(src, "tools", "plot", f"{script}.py"), "--in", doc_path, "--out",
                        os.path.join(tmp, script)], capture_output=True, text=True, env=env)
    check(script, r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return {}
    with open(desc, encoding="utf-8") as f:
        figs = json.load(f)
    for name in figs:
        check(f"{script}: {name}", os.path.getsize(os.path.join(tmp, script, name)) > 10000, "a near-empty PNG")
    return figs


def scripts() -> list[str]:
    """Every figure script (tools/plot/plot_NAME.py), by module name."""
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(src, "tools", "plot", "plot_*.py")))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for script in scripts():
            try:
                checks = importlib.import_module(f"check_{script}")
            except ImportError:
                check(script, False, f"no tools/plot/check_{script}.py beside it")
                continue
            path = checks.document(exe, tmp, check) if checks.DOCUMENT is None else os.path.join(src, checks.DOCUMENT)
            if not path:
                continue
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            checks.content(doc, render(script, path, tmp), check)
    for f in failures:
        print(f)
    print(f"{len(scripts())} scripts, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
