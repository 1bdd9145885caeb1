#!/usr/bin/env python3
"""Device code must not recurse or call through pointers.

A CUDA kernel's stack is sized when it is built, from the call graph of its device
functions. A cycle in that graph (or an indirect call) makes the size unknowable: ptxas may
not say so, and a thread that recurses deeper than the size it was given overflows its
stack at run time ("an illegal memory access was encountered"). This reads the PTX of the
CUDA backend (from `cuobjdump -ptx` of the built library or objects, or .ptx files), builds
the call graph and exits 1 naming every cycle and every indirect call.

    device_call_graph.py [--expect N] [--cuobjdump PATH] PATH...
        PATH: a .ptx file, a folder of them (the build keeps each CUDA unit's, CMakeLists.txt),
        or a library or object holding PTX (read with cuobjdump). --expect: the PTX files a
        folder must hold; with fewer (a compiler cache answered without keeping them) the
        check is skipped, exit 77, saying so.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# A function definition or declaration: .entry/.func, an optional return parameter, its name.
_HEADER = re.compile(r"\.(?:entry|func)\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*\(")
_CALL = re.compile(r"\bcall(?:\.uni)?\s*(?:\([^)]*\)\s*,\s*)?(%?[A-Za-z_$][\w$]*)")


def _closing(text: str, i: int, opener: str, closer: str) -> int:
    """The index of the `closer` that matches the `opener` at text[i] (len(text) if none)."""
    depth = 0
    while i < len(text):
        if text[i] == opener:
            depth += 1
        elif text[i] == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return i


def functions(ptx: str) -> dict[str, str]:
    """Each defined function's body, by name (declarations have none)."""
    text = _COMMENT.sub("", ptx)
    out: dict[str, str] = {}
    for m in _HEADER.finditer(text):
        # The header's parameter list, then either ';' (a declaration) or the body's '{'.
        j = _closing(text, m.end() - 1, "(", ")") + 1
        while j < len(text) and text[j] not in "{;":
            j += 1
        if j >= len(text) or text[j] == ";":
            continue
        k = _closing(text, j, "{", "}")
        out[m.group(1)] = out.get(m.group(1), "") + text[j : k + 1]
    return out


def problems(ptx: str) -> list[str]:
    """Every cycle of the call graph and every indirect call, as lines to print."""
    bodies = functions(ptx)
    graph: dict[str, set[str]] = {}
    found: list[str] = []
    for name, body in bodies.items():
        callees = set()
        for c in _CALL.findall(body):
            if c.startswith("%"):
                found.append(f"indirect call in {name}")
            else:
                callees.add(c)
        graph[name] = callees
    # Cycles: an iterative depth-first search; a back edge closes one.
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                found.append("recursion: " + " -> ".join(cycle))
            elif nxt not in state and nxt in graph:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return found


def read_ptx(path: str, cuobjdump: str) -> str:
    if path.endswith(".ptx"):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    r = subprocess.run([cuobjdump, "-ptx", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"error: {path}: cuobjdump -ptx failed: {r.stderr.strip()}")
    return r.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    files = []
    for path in a.files:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "*.ptx")))
            if len(found) < a.expect:
                print(f"skipped: {path} holds {len(found)} PTX files, not the {a.expect} the build compiles "
                      "(a compiler cache answered without keeping them): rebuild kb_batched_cuda with CCACHE_DISABLE=1")
                return 77
            files += found
        else:
            files.append(path)
    bad, seen = [], 0
    for path in files:
        ptx = read_ptx(path, a.cuobjdump)
        seen += len(functions(ptx))
        bad += [f"{path}: {p}" for p in problems(ptx)]
    if seen == 0:
        print("error: no PTX function found in " + ", ".join(a.files))
        return 1
    for line in sorted(set(bad)):
        print(line)
    print(f"{seen} device functions read, {len(set(bad))} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
