#!/usr/bin/env python3
"""A family's first-stage CUDA kernels stay within their local memory per thread.

Each CUDA thread's local memory holds its kernel's stack frame (the model's state lives
there) and the registers ptxas spills; on a GPU it lives in L2 and HBM, so a kernel that
walks a large frame per config is slow (docs/PERFORMANCE.md). This runs ptxas, for real sm_90
code, on the PTX the build keeps (CMakeLists.txt: each CUDA unit's), for the kernels a config
takes first: a two-stage family's small state (EvalIndexSmall, EvalSmall: two_stage.h), else
its one stage (EvalIndex, EvalOne). A kernel's stack is the larger of its frame and its
cumulative stack with its callees, as tools/cuda-local-memory.sh reports it.

    device_local_memory.py [--ptxas PATH] DIR FAMILY=STACK:SPILL ...
        DIR: the folder of kept PTX (cuda_family_FAMILY.ptx); STACK, SPILL: the most bytes of
        stack and of spill stores each of the family's first-stage kernels may have.

Exit 0 when every kernel is within its limits, 1 naming each that is not, 77 (a skip, saying
why) when ptxas or a family's PTX is absent.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

_ENTRY = re.compile(r"^\.visible \.entry ([A-Za-z_$][\w$]*)", re.M)
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores")
_USED = re.compile(r"Used (\d+) registers.*?(\d+) bytes cumulative stack size")
FIRST = ("EvalIndexSmall", "EvalSmall")  # a two-stage family's first stage
ONE = ("EvalIndex", "EvalOne")           # a family of one stage


def first_stage(ptx: str) -> list[str]:
    """The entries of the kernels a config takes first."""
    entries = _ENTRY.findall(ptx)
    small = [e for e in entries if any(k in e for k in FIRST)]
    if small:
        return small
    return [e for e in entries if any(k in e for k in ONE) and "Redo" not in e]


def figures(log: str, entries: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per entry: (stack bytes, spill store bytes, registers) from ptxas -v's report."""
    out: dict[str, tuple[int, int, int]] = {}
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _PROPS.search(line)
        if not m or m.group(1) not in entries or i + 1 >= len(lines):
            continue
        f = _FRAME.search(lines[i + 1])
        if not f:
            continue
        stack, spill, regs = int(f.group(1)), int(f.group(2)), 0
        for later in lines[i + 2 : i + 6]:
            u = _USED.search(later)
            if u:
                regs, stack = int(u.group(1)), max(stack, int(u.group(2)))
                break
        old = out.get(m.group(1))
        out[m.group(1)] = (stack, spill, regs) if old is None or stack > old[0] else old
    return out


def short(entry: str) -> str:
    """A kernel's readable name: its stage functor and the index type."""
    k = next((k for k in FIRST + ONE if k in entry), entry[:40])
    return f"{k} ({'int' if 'policy1000Ei' in entry else 'int64'} index)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptxas", default=None)
    ap.add_argument("dir")
    ap.add_argument("limits", nargs="+", metavar="FAMILY=STACK:SPILL")
    a = ap.parse_args()
    ptxas = a.ptxas or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not os.access(ptxas, os.X_OK):
        print(f"skipped: no ptxas ({ptxas}): the CUDA toolkit reads the kept PTX")
        return 77
    problems = []
    print(f"{'family':<10} {'kernel':<28} {'stack':>8} {'limit':>7} {'spill':>7} {'limit':>6} {'regs':>5}")
    for spec in a.limits:
        m = re.fullmatch(r"([a-z0-9_]+)=(\d+):(\d+)", spec)
        if not m:
            print(f"error: {spec}: expected FAMILY=STACK:SPILL")
            return 2
        family, max_stack, max_spill = m.group(1), int(m.group(2)), int(m.group(3))
        path = os.path.join(a.dir, f"cuda_family_{family}.ptx")
        if not os.path.isfile(path):
            print(f"skipped: {path} is absent (a compiler cache answered without keeping the PTX: build again "
                  f"without it)")
            return 77
        with open(path, encoding="utf-8") as f:
            entries = first_stage(f.read())
        if not entries:
            problems.append(f"{family}: no first-stage kernel in {path}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", "-e", ",".join(entries), path, "-o",
                                  os.path.join(tmp, "out.cubin")], capture_output=True, text=True)
        if run.returncode != 0:
            problems.append(f"{family}: ptxas failed: {run.stderr.strip()[:400]}")
            continue
        got = figures(run.stdout + run.stderr, entries)
        for e in entries:
            if e not in got:
                problems.append(f"{family}: ptxas reported nothing for {short(e)}")
                continue
            stack, spill, regs = got[e]
            print(f"{family:<10} {short(e):<28} {stack:>8} {max_stack:>7} {spill:>7} {max_spill:>6} {regs:>5}")
            if stack > max_stack:
                problems.append(f"{family}: {short(e)}: {stack} bytes of stack, more than {max_stack}")
            if spill > max_spill:
                problems.append(f"{family}: {short(e)}: {spill} bytes of spill stores, more than {max_spill}")
    for p in problems:
        print(f"error: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
