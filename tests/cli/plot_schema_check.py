#!/usr/bin/env python3
"""The figure scripts check a results document against its schema before drawing.

Each committed results document (docs/diagrams/) is edited one field at a time, by the edits
beside its script (tools/plot/check_plot_NAME.py), into
something no run writes: NaN, 1e308, a zero roofline, an unknown shape, no shapes, empty
variants, no topology, a real where an integer belongs, and so on. Every script must answer
each with exit 2, one line naming the input file, nothing on stdout and no figure, and must
still draw the unedited document.

Usage: plot_schema_check.py SOURCE_DIR [KERNBENCH_EXE]
"""

from __future__ import annotations

import contextlib
import copy
import glob
import importlib
import io
import json
import os
import subprocess
import sys
import tempfile

src = sys.argv[1]
exe = sys.argv[2] if len(sys.argv) > 2 else None
sys.path.insert(0, os.path.join(src, "tools", "plot"))
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skip: no matplotlib")
    sys.exit(77)

import kbplot  # noqa: E402

NAN = "@NAN@"  # written as the bare token NaN, which json.dumps would not produce from a string


def load(rel: str) -> dict:
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return json.load(f)


def setter(path, value):
    """An edit: set the field at `path` (keys and indices) to `value`, or delete it (value is ...)."""
    def edit(doc):
        node = doc
        for k in path[:-1]:
            node = node[k]
        if value is ...:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return edit


def cases() -> dict:
    """Per figure script with a committed document: (its module, the document, its edits,
    its end-to-end bench), from the checks beside it (tools/plot/check_plot_NAME.py)."""
    out = {}
    for p in sorted(glob.glob(os.path.join(src, "tools", "plot", "check_plot_*.py"))):
        checks = importlib.import_module(os.path.basename(p)[:-3])
        if checks.DOCUMENT is None:
            continue
        good = load(checks.DOCUMENT)
        out[checks.SCRIPT] = (importlib.import_module(checks.SCRIPT), good, checks.edits(good, setter, NAN), checks.BENCH)
    return out


def run_script(module, path: str, out: str):
    """The script's main as its command line would run it: (exit code, stdout, stderr)."""
    so, se = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        try:
            kbplot.run_main(lambda: module.main(["--in", path, "--out", out]))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, so.getvalue(), se.getvalue()


def main() -> int:
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases()
        for family, (module, good, edits, _) in all_cases.items():
            path = os.path.join(tmp, f"{family}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(good, f)
            code, out, err = run_script(module, path, os.path.join(tmp, f"{family}-good"))
            if code != 0:
                failures.append(f"{family}: the committed document is refused: {err.strip()}")
            for name, edit in edits.items():
                doc = copy.deepcopy(good)
                edit(doc)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(json.dumps(doc).replace(json.dumps(NAN), "NaN"))
                outdir = os.path.join(tmp, f"{family}-out")
                code, out, err = run_script(module, path, outdir)
                checked += 1
                lines = err.splitlines()
                if code != 2 or out or len(lines) != 1 or not lines[0].startswith(f"error: {path}: "):
                    failures.append(f"{family}: {name}: exit {code}, stdout {out!r}, stderr {err!r}")
                elif os.path.isdir(outdir) and os.listdir(outdir):
                    failures.append(f"{family}: {name}: wrote {os.listdir(outdir)}")
        # End to end, through the tool: its exit code and its one line.
        if exe:
            for family, (module, good, edits, bench) in all_cases.items():
                if bench is None:
                    continue
                bench_name, name, edit = bench
                folder = os.path.join(tmp, f"{family}-e2e")
                os.makedirs(folder)
                doc = copy.deepcopy(good)
                edits[edit](doc)
                with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                    f.write(json.dumps(doc).replace(json.dumps(NAN), "NaN"))
                r = subprocess.run([exe, "plot", "--bench", bench_name, "--in", folder, "--out", folder + "/figs"],
                                   capture_output=True, text=True)
                checked += 1
                if r.returncode != 2 or r.stdout or r.stderr.count("\n") != 1 or os.path.exists(folder + "/figs"):
                    failures.append(f"plot --bench {bench_name}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
    for f in failures:
        print(f)
    print(f"{checked} refusals checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
