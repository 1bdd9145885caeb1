#!/usr/bin/env python3
"""Rewrites tests/data/expected/{milestone_1h_gemm,sweep_gemm}.json from a build's binary.

For a change that moves the published numbers on purpose: run it, read the diff, and say
why in the files' "about" (--about TEXT). The tests compare every later build with them.

    tools/regen-expected.py build/kernbench-gpu --about "..."
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = os.path.join(ROOT, "tests", "data", "expected")
# The columns tests/cli/test_families.cpp compares (kConfigColumns).
CONFIG = ["m", "n", "k", "tile_m", "tile_n", "tile_k", "pes", "cubes", "buffers", "split", "dataflow",
          "array_rows", "array_cols"]
MILESTONE_FIGURES = ["latency_ps", "roofline_ps", "compute_roof_ps", "hbm_roof_ps", "mac_cycles", "macs",
                     "matrix_busy_ps", "dma_busy_ps", "max_pe_matrix_busy_ps", "max_pe_dma_busy_ps",
                     "hbm_read_bytes", "hbm_write_bytes"]


def run(exe, args):
    return subprocess.run([exe] + args, check=True, capture_output=True, text=True).stdout


def config(row):
    c = {"index": row["index"], "latency_ps": row["latency_ps"]}
    for k in CONFIG:
        c[k] = row[k]
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exe")
    ap.add_argument("--about-milestone", required=True)
    ap.add_argument("--about-sweep", required=True)
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as out:
        run(a.exe, ["run", "--bench", "milestone-1h-gemm", "--backend", "omp", "--out", out])
        with open(os.path.join(out, "gemm_sweep.json")) as f:
            got = json.load(f)["configs"]
    milestone = {"about": a.about_milestone,
                 "configs": [dict({"shape": c["shape"], "variant": c["variant"]},
                                  **{k: c[k] for k in MILESTONE_FIGURES}) for c in got]}

    path = os.path.join(EXPECTED, "sweep_gemm.json")
    with open(path) as f:
        old = json.load(f)
    sweeps = []
    for w in old["sweeps"]:
        j = json.loads(run(a.exe, ["sweep", "gemm"] + shlex.split(w["args"]) + ["--backend", "omp", "--json"]))
        fronts = []
        for fr in j.get("pareto", {}).get("fronts", []):
            fronts.append([dict(config(p), cost=p["cost"]) for p in fr["points"]])
        sweeps.append({"args": w["args"], "size": j["space"]["size"], "valid": j["valid"], "invalid": j["invalid"],
                       "latency_checksum": j["latency_checksum"],
                       "best": [None if b["best"] is None else config(b["best"]) for b in j["best_per_group"]],
                       "top": [config(t) for t in j["top"]], "pareto": fronts,
                       "histogram": j["histogram"]["bins"]})
    for name, doc in (("milestone_1h_gemm.json", milestone), ("sweep_gemm.json", {"about": a.about_sweep, "sweeps": sweeps})):
        with open(os.path.join(EXPECTED, name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
