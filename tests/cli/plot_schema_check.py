#!/usr/bin/env python3
"""The figure scripts check a results document against its schema before drawing.

Each committed results document (docs/diagrams/) is edited one field at a time into
something no run writes: NaN, 1e308, a zero roofline, an unknown shape, no shapes, empty
variants, no topology, a real where an integer belongs, and so on. Every script must answer
each with exit 2, one line naming the input file, nothing on stdout and no figure, and must
still draw the unedited document.

Usage: plot_schema_check.py SOURCE_DIR [KERNBENCH_EXE]
"""

from __future__ import annotations

import contextlib
import copy
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
import plot_ccl  # noqa: E402
import plot_decode  # noqa: E402
import plot_gemm  # noqa: E402
import plot_llm  # noqa: E402

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


GEMM = load("docs/diagrams/gemm/gemm_sweep.json")
CCL = load("docs/diagrams/ccl/allreduce_sweep.json")
DECODE = load("docs/diagrams/gqa_decode_4cases/sweep.json")
LLM = load("docs/diagrams/llm_inference/llm_inference.json")

CASES = {
    "gemm": (plot_gemm, GEMM, {
        "NaN latency": setter(["configs", 0, "latency_ps"], NAN),
        "1e308 TFLOP/s": setter(["configs", 0, "achieved_tflops"], 1e308),
        "1e308 latency": setter(["configs", 0, "latency_ps"], 1e308),
        "zero roofline": setter(["configs", 0, "roofline_ps"], 0),
        "roofline above the latency": setter(["configs", 0, "roofline_ps"], GEMM["configs"][0]["latency_ps"] + 1),
        "unknown shape": setter(["configs", 0, "shape"], "no-such-shape"),
        "unknown variant": setter(["configs", 0, "variant"], "no-such-variant"),
        "no shapes": setter(["shapes"], []),
        "shapes missing": setter(["shapes"], ...),
        "empty variants": setter(["variants"], []),
        "no topology": setter(["topology"], ...),
        "topology without a name": setter(["topology", "name"], ...),
        "real latency": setter(["configs", 0, "latency_ps"], 1.5),
        "negative latency": setter(["configs", 0, "latency_ps"], -5),
        "boolean latency": setter(["configs", 0, "latency_ps"], True),
        "utilisation above 1": setter(["configs", 0, "mac_util"], 1.5),
        "achieved above the peak": setter(["configs", 0, "achieved_tflops"], GEMM["configs"][0]["peak_tflops"] * 2),
        "m unlike its shape's": setter(["configs", 0, "m"], GEMM["configs"][0]["m"] + 1),
        "no configs": setter(["configs"], []),
        "config not an object": setter(["configs", 0], 7),
        "shape of zero rows": setter(["shapes", 0, "m"], 0),
        "variant of 0 PEs": setter(["variants", 0, "pes"], 0),
    }),
    "ccl": (plot_ccl, CCL, {
        "NaN bus bandwidth": setter(["configs", 0, "busbw_gbps"], NAN),
        "1e308 bus bandwidth": setter(["configs", 0, "busbw_gbps"], 1e308),
        "1e308 bytes": setter(["configs", 0, "bytes"], 1e308),
        "unknown level": setter(["configs", 0, "level"], "rack"),
        "unknown algorithm": setter(["configs", 0, "algo"], "magic"),
        "one rank": setter(["configs", 0, "ranks"], 1),
        "zero latency": setter(["configs", 0, "latency_ps"], 0),
        "real reference latency": setter(["configs", 0, "reference_latency_ps"], 2.5),
        "no configs": setter(["configs"], []),
        "no topology": setter(["topology"], ...),
        "no parity": setter(["parity"], ...),
    }),
    "decode": (plot_decode, DECODE, {
        "NaN latency": setter(["rows", 0, "op_log_summary", "latency_ps"], NAN),
        "1e308 latency": setter(["rows", 0, "op_log_summary", "latency_ps"], 1e308),
        "utilisation above 1": setter(["rows", 0, "op_log_summary", "mac_util"], 2),
        "zero case bound": setter(["rows", 0, "op_log_summary", "case_bound_ps"], 0),
        "a case missing": lambda d: d["rows"].pop(),
        "case 5": setter(["rows", 0, "case"], 5),
        "winner case 7": setter(["winner", "case"], 7),
        "no topology": setter(["topology"], ...),
        "series point of length 0": lambda d: [c.update(s_kv=0) for c in d["configs"] if c.get("series") == "s_kv"],
    }),
    "llm": (plot_llm, LLM, {
        "NaN tokens/s": setter(["decode", 0, "tokens_per_s"], NAN),
        "zero step": setter(["decode", 0, "step_ps"], 0),
        "a negative attention time": setter(["prefill", 0, "attention_ps"], -1),
        "an unknown tp level": setter(["decode", 0, "mapping", "tp_level"], "rack"),
        "no mapping": setter(["prefill", 0, "mapping"], ...),
        "a real batch": setter(["mappings", 0, "batch"], 1.5),
        "no decode rows": setter(["decode"], ...),
        "no memory bound": setter(["decode", 0, "memory_bound_ps"], ...),
        "no valid prefill": lambda d: [r.update(status="hbm_overflow") for r in d["prefill"]],
        "no valid breakdown": lambda d: [r.update(status="hbm_overflow") for r in d["breakdown"]],
        "no topology": setter(["topology"], ...),
        "another schema": setter(["schema"], "kernbench-gpu/gemm-sweep"),
    }),
}


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
        for family, (module, good, edits) in CASES.items():
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
            for family, bench, name, (module, good, edits) in (
                    ("gemm", "milestone-1h-gemm", "gemm_sweep.json", CASES["gemm"]),
                    ("ccl", "milestone-1h-ccl", "allreduce_sweep.json", CASES["ccl"])):
                folder = os.path.join(tmp, f"{family}-e2e")
                os.makedirs(folder)
                doc = copy.deepcopy(good)
                edits["no topology" if family == "gemm" else "NaN bus bandwidth"](doc)
                with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                    f.write(json.dumps(doc).replace(json.dumps(NAN), "NaN"))
                r = subprocess.run([exe, "plot", "--bench", bench, "--in", folder, "--out", folder + "/figs"],
                                   capture_output=True, text=True)
                checked += 1
                if r.returncode != 2 or r.stdout or r.stderr.count("\n") != 1 or os.path.exists(folder + "/figs"):
                    failures.append(f"plot --bench {bench}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
    for f in failures:
        print(f)
    print(f"{checked} refusals checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
