"""The figure checks of plot_gemm.py, beside it. tests/cli/plot_content_check.py draws the
committed document (docs/diagrams/gemm/gemm_sweep.json) and hands each figure's description
(kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of `edits` to the
document, which the script must refuse in one line naming the file (PlotScripts.*).
"""

SCRIPT = "plot_gemm"
DOCUMENT = "docs/diagrams/gemm/gemm_sweep.json"
# plot --bench NAME on a folder holding FILE with EDIT made: exit 2 through the tool (or None).
BENCH = ("milestone-1h-gemm", "gemm_sweep.json", "no topology")


def content(doc: dict, figs: dict, check) -> None:
    n = len(doc["configs"])
    lat, util, roof = (figs.get(k, [{}])[0] for k in ("gemm_latency_vs_roofline.png", "gemm_mac_util.png", "gemm_roofline.png"))
    check("gemm latency: a bar and a roofline mark per config", lat.get("bars") == n and lat.get("points") == n, lat)
    check("gemm utilisation: a bar per config", util.get("bars") == n, util)
    check("gemm roofline: a point per config", roof.get("points") == n, roof)
    variants = [v["name"] for v in doc["variants"]]
    check("gemm latency legend: every variant", all(any(e.startswith(v + " ") for e in lat.get("legend", [])) for v in variants),
          lat.get("legend"))
    check("gemm roofline legend: every shape", all(s["name"] in roof.get("legend", []) for s in doc["shapes"]), roof.get("legend"))
    check("gemm roofline: a roof per distinct variant machine", roof.get("lines", 0) >= 1, roof)


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
        "NaN latency": setter(["configs", 0, "latency_ps"], NAN),
        "1e308 TFLOP/s": setter(["configs", 0, "achieved_tflops"], 1e308),
        "1e308 latency": setter(["configs", 0, "latency_ps"], 1e308),
        "zero roofline": setter(["configs", 0, "roofline_ps"], 0),
        "roofline above the latency": setter(["configs", 0, "roofline_ps"], doc["configs"][0]["latency_ps"] + 1),
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
        "achieved above the peak": setter(["configs", 0, "achieved_tflops"], doc["configs"][0]["peak_tflops"] * 2),
        "m unlike its shape's": setter(["configs", 0, "m"], doc["configs"][0]["m"] + 1),
        "no configs": setter(["configs"], []),
        "config not an object": setter(["configs", 0], 7),
        "shape of zero rows": setter(["shapes", 0, "m"], 0),
        "variant of 0 PEs": setter(["variants", 0, "pes"], 0),
    }
