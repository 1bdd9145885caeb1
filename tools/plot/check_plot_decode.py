"""The figure checks of plot_decode.py, beside it. tests/cli/plot_content_check.py draws the
committed document (docs/diagrams/gqa_decode_4cases/sweep.json) and hands each figure's description
(kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of `edits` to the
document, which the script must refuse in one line naming the file (PlotScripts.*).
"""

SCRIPT = "plot_decode"
DOCUMENT = "docs/diagrams/gqa_decode_4cases/sweep.json"
# plot --bench NAME on a folder holding FILE with EDIT made: exit 2 through the tool (or None).
BENCH = None


def content(doc: dict, figs: dict, check) -> None:
    cases = figs.get("decode_cases.png", [])
    check("decode cases: four panels", len(cases) == 4, cases)
    check("decode cases: a bar per case (two in the communication panel)",
          [p.get("bars") for p in cases] == [4, 4, 8, 4], [p.get("bars") for p in cases])
    for name, series in (("decode_vs_s_kv.png", "s_kv"), ("decode_vs_batch.png", "batch")):
        p = figs.get(name, [{}])[0]
        drawn = sorted({c["case"] for c in doc["configs"] if c.get("series") == series})
        check(f"{name}: a line per case", len(p.get("legend", [])) == len(drawn) == 4 and p.get("lines", 0) >= 4, p)


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
        "NaN latency": setter(["rows", 0, "op_log_summary", "latency_ps"], NAN),
        "1e308 latency": setter(["rows", 0, "op_log_summary", "latency_ps"], 1e308),
        "utilisation above 1": setter(["rows", 0, "op_log_summary", "mac_util"], 2),
        "zero case bound": setter(["rows", 0, "op_log_summary", "case_bound_ps"], 0),
        "a case missing": lambda d: d["rows"].pop(),
        "case 5": setter(["rows", 0, "case"], 5),
        "winner case 7": setter(["winner", "case"], 7),
        "no topology": setter(["topology"], ...),
        "series point of length 0": lambda d: [c.update(s_kv=0) for c in d["configs"] if c.get("series") == "s_kv"],
    }
