"""The figure checks of plot_ccl.py, beside it. tests/cli/plot_content_check.py draws the
committed document (docs/diagrams/ccl/allreduce_sweep.json) and hands each figure's description
(kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of `edits` to the
document, which the script must refuse in one line naming the file (PlotScripts.*).
"""

SCRIPT = "plot_ccl"
DOCUMENT = "docs/diagrams/ccl/allreduce_sweep.json"
# plot --bench NAME on a folder holding FILE with EDIT made: exit 2 through the tool (or None).
BENCH = ("milestone-1h-ccl", "allreduce_sweep.json", "NaN bus bandwidth")


def content(doc: dict, figs: dict, check) -> None:
    import plot_ccl  # noqa: PLC0415
    levels = [lv for lv in plot_ccl.LEVELS if any(c["level"] == lv for c in doc["configs"])]
    for name in ("ccl_latency_vs_size.png", "ccl_busbw.png", "ccl_hbm_vs_sram.png"):
        panels = figs.get(name, [])
        check(f"{name}: a panel per level", len(panels) == len(levels), [p.get("title") for p in panels])
        for lv, p in zip(levels, panels):
            most = max(c["ranks"] for c in doc["configs"] if c["level"] == lv)
            check(f"{name}: {lv}", p["title"] == f"{plot_ccl.LEVEL_TITLES[lv]}: {most} ranks" and p["lines"] > 0, p)
    engines = figs.get("ccl_engines.png", [{}])
    check("ccl engines: a point per config", engines[0].get("points") == len(doc["configs"]), engines[0])


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
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
    }
