"""The figure checks of plot_moe.py, beside it. tests/cli/plot_content_check.py draws the
committed document (docs/diagrams/moe_inference/moe_inference.json) and hands each figure's
description (kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of
`edits` to the document, which the script must refuse in one line naming the file
(PlotScripts.*).
"""

SCRIPT = "plot_moe"
DOCUMENT = "docs/diagrams/moe_inference/moe_inference.json"
# plot --bench NAME on a folder holding FILE with EDIT made: exit 2 through the tool (or None).
BENCH = None

LABELS = {"ep-cube": "EP inside a SIP (over cubes)", "ep-sip": "EP across SIPs", "tp": "tensor-parallel attention"}


def content(doc: dict, figs: dict, check) -> None:
    valid = lambda part: [r for r in doc[part] if r["status"] == "valid"]  # noqa: E731
    models = list(dict.fromkeys(r["model"] for r in doc["decode"]))
    panels = figs.get("moe_decode.png", [])
    check("moe decode: a panel per model", len(panels) == len(models), panels)
    for m, p in zip(models, panels):
        strategies = [s for s in LABELS if any(r["model"] == m and r["strategy"] == s for r in valid("decode"))]
        n = sum(1 for r in valid("decode") if r["model"] == m)
        check(f"moe decode {m}: a line per strategy, a batch label per point",
              p.get("legend") == [LABELS[s] for s in strategies] and p.get("lines") == len(strategies) and p.get("texts") == n, p)
    bd = figs.get("moe_breakdown.png", [{}])[0]
    at64 = [r for r in valid("decode") if r["batch"] == 64]
    check("moe breakdown: 8 kinds stacked per point at batch 64, a TPOT label each",
          bd.get("bars") == 8 * len(at64) and bd.get("texts") == len(at64), bd)
    skews = figs.get("moe_skew.png", [])
    check("moe skew: a panel per model", len(skews) == len(models), skews)
    for m, p in zip(models, skews):
        n = sum(1 for r in valid("skew") if r["model"] == m)
        check(f"moe skew {m}: a bar and an imbalance label per point", p.get("bars") == n and p.get("texts") == n, p)
    bws = figs.get("moe_bandwidth.png", [])
    for m, p in zip(models, bws):
        levels = {r["level"] for r in doc["bandwidth"] if r["model"] == m}
        check(f"moe bandwidth {m}: dispatch, combine and the link rate per level",
              p.get("lines") == 3 * len(levels) and p.get("texts") == len(levels), p)
    pre = figs.get("moe_prefill.png", [{}])[0]
    pm = [m for m in models if any(r["model"] == m for r in valid("prefill"))]
    check("moe prefill: a line per model, a strategy label per point",
          pre.get("legend") == pm and pre.get("lines") == len(pm) and pre.get("texts") == len(valid("prefill")), pre)


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
        "NaN tokens/s per SIP": setter(["decode", 0, "tokens_per_s_per_sip"], NAN),
        "a negative step": setter(["decode", 0, "step_ps"], -1),
        "an unknown strategy": setter(["decode", 0, "strategy"], "dp"),
        "a real batch": setter(["decode", 0, "batch"], 1.5),
        "no decode rows": setter(["decode"], ...),
        "no skew routing": setter(["skew", 0, "routing"], ...),
        "an unknown level": setter(["bandwidth", 0, "level"], "rack"),
        "no link rate": setter(["bandwidth", 0, "link_gbps"], ...),
        "no bandwidth rows": setter(["bandwidth"], []),
        "no valid decode": lambda d: [r.update(status="hbm_overflow") for r in d["decode"]],
        "no topology": setter(["topology"], ...),
        "another schema": setter(["schema"], "kernbench-gpu/gemm-sweep"),
    }
