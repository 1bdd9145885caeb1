"""The figure checks of plot_llm.py, beside it. tests/cli/plot_content_check.py draws the
committed document (docs/diagrams/llm_inference/llm_inference.json) and hands each figure's description
(kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of `edits` to the
document, which the script must refuse in one line naming the file (PlotScripts.*).
"""

SCRIPT = "plot_llm"
DOCUMENT = "docs/diagrams/llm_inference/llm_inference.json"
# plot --bench NAME on a folder holding FILE with EDIT made: exit 2 through the tool (or None).
BENCH = None


def content(doc: dict, figs: dict, check) -> None:
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


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
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
    }
