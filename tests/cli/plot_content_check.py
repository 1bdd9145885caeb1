#!/usr/bin/env python3
"""Every figure script draws what its document holds: rendered from the committed results
(docs/diagrams/) and from a fresh sweep, each figure's panels, bars, lines, points and legend
(`kbplot.describe`, written through KERNBENCH_PLOT_DESCRIBE) are checked against the
document's own rows.

Usage: plot_content_check.py SOURCE_DIR KERNBENCH_EXE
"""

from __future__ import annotations

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


def load(rel: str) -> dict:
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return json.load(f)


def gemm(tmp: str) -> None:
    doc = load("docs/diagrams/gemm/gemm_sweep.json")
    n = len(doc["configs"])
    figs = render("plot_gemm", os.path.join(src, "docs/diagrams/gemm/gemm_sweep.json"), tmp)
    lat, util, roof = (figs.get(k, [{}])[0] for k in ("gemm_latency_vs_roofline.png", "gemm_mac_util.png", "gemm_roofline.png"))
    check("gemm latency: a bar and a roofline mark per config", lat.get("bars") == n and lat.get("points") == n, lat)
    check("gemm utilisation: a bar per config", util.get("bars") == n, util)
    check("gemm roofline: a point per config", roof.get("points") == n, roof)
    variants = [v["name"] for v in doc["variants"]]
    check("gemm latency legend: every variant", all(any(e.startswith(v + " ") for e in lat.get("legend", [])) for v in variants),
          lat.get("legend"))
    check("gemm roofline legend: every shape", all(s["name"] in roof.get("legend", []) for s in doc["shapes"]), roof.get("legend"))
    check("gemm roofline: a roof per distinct variant machine", roof.get("lines", 0) >= 1, roof)


def ccl(tmp: str) -> None:
    doc = load("docs/diagrams/ccl/allreduce_sweep.json")
    import plot_ccl
    figs = render("plot_ccl", os.path.join(src, "docs/diagrams/ccl/allreduce_sweep.json"), tmp)
    levels = [lv for lv in plot_ccl.LEVELS if any(c["level"] == lv for c in doc["configs"])]
    for name in ("ccl_latency_vs_size.png", "ccl_busbw.png", "ccl_hbm_vs_sram.png"):
        panels = figs.get(name, [])
        check(f"{name}: a panel per level", len(panels) == len(levels), [p.get("title") for p in panels])
        for lv, p in zip(levels, panels):
            most = max(c["ranks"] for c in doc["configs"] if c["level"] == lv)
            check(f"{name}: {lv}", p["title"] == f"{plot_ccl.LEVEL_TITLES[lv]}: {most} ranks" and p["lines"] > 0, p)
    engines = figs.get("ccl_engines.png", [{}])
    check("ccl engines: a point per config", engines[0].get("points") == len(doc["configs"]), engines[0])


def decode(tmp: str) -> None:
    doc = load("docs/diagrams/gqa_decode_4cases/sweep.json")
    figs = render("plot_decode", os.path.join(src, "docs/diagrams/gqa_decode_4cases/sweep.json"), tmp)
    cases = figs.get("decode_cases.png", [])
    check("decode cases: four panels", len(cases) == 4, cases)
    check("decode cases: a bar per case (two in the communication panel)",
          [p.get("bars") for p in cases] == [4, 4, 8, 4], [p.get("bars") for p in cases])
    for name, series in (("decode_vs_s_kv.png", "s_kv"), ("decode_vs_batch.png", "batch")):
        p = figs.get(name, [{}])[0]
        drawn = sorted({c["case"] for c in doc["configs"] if c.get("series") == series})
        check(f"{name}: a line per case", len(p.get("legend", [])) == len(drawn) == 4 and p.get("lines", 0) >= 4, p)


def llm(tmp: str) -> None:
    path = os.path.join(src, "docs/diagrams/llm_inference/llm_inference.json")
    doc = load("docs/diagrams/llm_inference/llm_inference.json")
    figs = render("plot_llm", path, tmp)
    valid = lambda part: [r for r in doc[part] if r["status"] == "valid"]  # noqa: E731
    step, speed = (figs.get("llm_decode.png", [{}, {}]) + [{}, {}])[:2]
    ctx_ok = [c for c in doc["context_values"] if any(r["context"] == c for r in valid("decode"))]
    want = [e for c in doc["context_values"] for e in
            ([f"context {c}: TPOT (best mapping)"] if c in ctx_ok else []) + [f"context {c}: memory bound"]]
    check("llm decode: a TPOT line per context with a valid point, a memory bound per context",
          step.get("legend") == want and step.get("lines") == len(want), step)
    check("llm decode: a tokens/s line per context with a valid point",
          speed.get("legend") == [f"context {c}" for c in ctx_ok] and speed.get("lines") == len(ctx_ok), speed)
    pre = figs.get("llm_prefill.png", [{}])[0]
    check("llm prefill: TTFT, its bound and attention; a label per valid prompt",
          pre.get("lines") == 3 and pre.get("texts") == len(valid("prefill")), pre)
    bd = figs.get("llm_breakdown.png", [{}])[0]
    check("llm breakdown: a bar per kind per valid point", bd.get("bars") == 5 * len(valid("breakdown")), bd)
    panels = [p for p in figs.get("llm_mappings.png", []) if p.get("title")]
    batches = sorted({r["batch"] for r in doc["mappings"]})
    check("llm mappings: a panel per batch", [p["title"] for p in panels] == [f"batch {b}, context 4096" for b in batches],
          [p.get("title") for p in panels])
    tps, pps = sorted({r["mapping"]["tp"] for r in doc["mappings"]}), sorted({r["mapping"]["pp"] for r in doc["mappings"]})
    for b, p in zip(batches, panels):
        n = sum(1 for r in doc["mappings"] if r["batch"] == b)
        check(f"llm mappings batch {b}: a pp x tp grid, a cell label per mapping",
              p.get("images") == [[len(pps), len(tps)]] and p.get("texts") == n, p)
    des = figs.get("llm_design.png", [{}])[0]
    arrays = sorted({r["matrix"] for r in valid("design")})
    check("llm design: a line per PE array size",
          des.get("legend") == [f"{a}x{a} PE arrays" for a in arrays] and des.get("lines") == len(arrays), des)


def sweep(tmp: str) -> None:
    path = os.path.join(tmp, "sweep.json")
    r = subprocess.run([exe, "sweep", "gemm", "--m", "64:1024:*2", "--n", "64,256", "--k", "64", "--pes", "1,2,4",
                        "--group", "m,n", "--recheck", "0", "--progress-every", "0", "--out", path],
                       capture_output=True, text=True)
    check("sweep", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    figs = render("plot_sweep", path, tmp)
    fronts = doc["pareto"]["fronts"]
    par = figs.get("sweep_pareto.png", [{}])[0]
    check("sweep pareto: a step line per group", par.get("lines") == len(fronts), par)
    check("sweep pareto: a point per front point", par.get("points") == sum(len(fr["points"]) for fr in fronts), par)
    hist = figs.get("sweep_histogram.png", [{}])[0]
    check("sweep histogram: a bar per bin", hist.get("bars") == len(doc["histogram"]["bins"]), hist)
    best = figs.get("sweep_best.png", [{}])[0]
    check("sweep best: one table", best.get("tables") == 1, best)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for f in (gemm, ccl, decode, llm, sweep):
            f(tmp)
    for f in failures:
        print(f)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
