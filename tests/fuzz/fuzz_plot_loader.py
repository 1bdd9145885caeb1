#!/usr/bin/env python3
"""Fuzz target for the figure scripts' readers of result documents (tools/plot/).

The bytes are one document; each script's reader (`kbplot.load_json`, then the script's
own parse of the rows it plots) must accept it or reject it with `kbplot.InputError` (the
one-line error, exit 2). Anything else (another exception) is a finding.

    fuzz_plot_loader.py DIR...               replay every file (the seed corpus): no atheris needed
    fuzz_plot_loader.py --fuzz -runs=N DIR   fuzz with atheris (libFuzzer for Python); options go to libFuzzer
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "plot"))

FUZZ = len(sys.argv) > 1 and sys.argv[1] == "--fuzz"
if FUZZ:
    try:
        import atheris  # pip install atheris (libFuzzer for Python)
    except ImportError:
        print("skipped: atheris is not installed (python3 -m pip install atheris)")
        sys.exit(77)

    # Coverage of the readers (not of matplotlib) guides the fuzzer.
    with atheris.instrument_imports(include=["kbplot", "plot_ccl", "plot_decode", "plot_gemm", "plot_sweep"]):
        import kbplot
        import plot_ccl
        import plot_decode
        import plot_gemm
        import plot_sweep
else:
    import kbplot  # noqa: E402
    import plot_ccl  # noqa: E402
    import plot_decode  # noqa: E402
    import plot_gemm  # noqa: E402
    import plot_sweep  # noqa: E402

_PATH = os.path.join(tempfile.gettempdir(), f"kb-fuzz-plot-{os.getpid()}.json")


def _decode(doc, where):
    plot_decode.parse_rows(doc, where)
    winner = kbplot.require_dict(doc, "winner", "top level", where)
    kbplot.require_num(winner, "case", "winner", where)
    plot_decode.parse_series(doc, "s_kv", "s_kv", where)
    plot_decode.parse_series(doc, "batch", "batch", where)


def _ccl(doc, where):
    plot_ccl.parse(doc, where)
    kbplot.require_dict(doc, "parity", "top level", where)


# (schema or None for a family's space sweep, major version, the script's parse)
READERS = [
    (plot_gemm.SCHEMA, plot_gemm.SCHEMA_MAJOR, plot_gemm.parse_sweep),
    (plot_ccl.SCHEMA, plot_ccl.SCHEMA_MAJOR, _ccl),
    (plot_decode.SCHEMA, plot_decode.SCHEMA_MAJOR, _decode),
    (None, plot_sweep.SCHEMA_MAJOR, None),
]


def one_input(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    for schema, major, parse in READERS:
        try:
            if schema is None:
                schema = plot_sweep.family_schema(_PATH)
            doc = kbplot.load_json(_PATH, schema, major)
            if parse:
                parse(doc, _PATH)
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
