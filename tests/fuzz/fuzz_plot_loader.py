#!/usr/bin/env python3
"""Fuzz target for the figure scripts' readers of result documents (tools/plot/).

The bytes are one document; each script's `read` (`kbplot.load_json`, then the script's
check of the whole document against its schema) must accept it or reject it with
`kbplot.InputError` (the one-line error, exit 2). Anything else (another exception) is a
finding.

    fuzz_plot_loader.py DIR...               replay every file (the seed corpus): no atheris needed
    fuzz_plot_loader.py --fuzz -runs=N DIR   fuzz with atheris (libFuzzer for Python); options go to libFuzzer
"""
import importlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "plot"))

FUZZ = len(sys.argv) > 1 and sys.argv[1] == "--fuzz"
# Every figure script (tools/plot/plot_*.py): each has `read(path)`, its whole check of a
# document. A new script is fuzzed by being there.
SCRIPTS = sorted(n[:-3] for n in os.listdir(sys.path[0]) if n.startswith("plot_") and n.endswith(".py"))
if FUZZ:
    try:
        import atheris  # pip install atheris (libFuzzer for Python)
    except ImportError:
        print("skipped: atheris is not installed (python3 -m pip install atheris)")
        sys.exit(77)

    # Coverage of the readers (not of matplotlib) guides the fuzzer.
    with atheris.instrument_imports(include=["kbplot"] + SCRIPTS):
        import kbplot
        MODULES = [importlib.import_module(n) for n in SCRIPTS]
else:
    import kbplot  # noqa: E402
    MODULES = [importlib.import_module(n) for n in SCRIPTS]

_PATH = os.path.join(tempfile.gettempdir(), f"kb-fuzz-plot-{os.getpid()}.json")


def one_input(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    for module in MODULES:
        try:
            module.read(_PATH)
        except kbplot.InputError:
            pass


def main() -> int:
    if FUZZ:
        atheris.Setup([sys.argv[0]] + sys.argv[2:], one_input)
        atheris.Fuzz()
        return 0
    files = []
    for d in sys.argv[1:]:
        files += [os.path.join(d, n) for n in sorted(os.listdir(d))] if os.path.isdir(d) else [d]
    for path in files:
        with open(path, "rb") as f:
            one_input(f.read())
    print(f"replayed {len(files)} inputs")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        if os.path.exists(_PATH):
            os.unlink(_PATH)
