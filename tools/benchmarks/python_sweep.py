#!/usr/bin/env python3
"""The time of a sweep from Python (kernbench_gpu.sweep, in process) against the same sweep
from the command line (sweep --json, a process of its own), alternated, on one space of
10^6 GEMM configs by default. Prints each run's wall time and the medians.

    PYTHONPATH=build-cpu/python python3 tools/benchmarks/python_sweep.py --cli build-cpu/kernbench-gpu [--runs 5]
"""

import argparse
import json
import statistics
import subprocess
import time

import kernbench_gpu as kb

SPACE = {"m": "1:1000", "n": "1:1000", "k": "64", "group": "none"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the kernbench-gpu binary")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    words = ["sweep", "gemm"] + [w for k, v in SPACE.items() for w in ("--" + k, v)] + ["--json"]
    py, cli = [], []
    for _ in range(a.runs):
        t = time.perf_counter()
        s = kb.sweep("gemm", **SPACE)
        py.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = subprocess.run([a.cli, *words], check=True, capture_output=True, text=True).stdout
        cli.append(time.perf_counter() - t)
        theirs = json.loads(out)
        assert s.json["latency_checksum"] == theirs["latency_checksum"] and s.counts["evaluated"] == theirs["evaluated"]
    n = s.counts["evaluated"]
    print(f"{n} configs, {a.runs} runs each, alternated")
    print("python  " + " ".join(f"{x:.3f}" for x in py) + f"  median {statistics.median(py):.3f} s")
    print("cli     " + " ".join(f"{x:.3f}" for x in cli) + f"  median {statistics.median(cli):.3f} s")


if __name__ == "__main__":
    main()
