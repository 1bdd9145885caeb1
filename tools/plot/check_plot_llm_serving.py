"""The figure checks of plot_llm_serving.py, beside it. tests/cli/plot_content_check.py draws
the committed document (docs/diagrams/llm_serving/llm_serving.json) and hands each figure's
description (kbplot.describe) to `content`; tests/cli/plot_schema_check.py makes each of
`edits` to the document, which the script must refuse in one line naming the file
(PlotScripts.*).
"""

SCRIPT = "plot_llm_serving"
DOCUMENT = "docs/diagrams/llm_serving/llm_serving.json"
BENCH = None


def content(doc: dict, figs: dict, check) -> None:
    models = list(dict.fromkeys(r["model"] for r in doc["runs"]))
    setups = {m: list(dict.fromkeys(r["setup"] for r in doc["runs"] if r["model"] == m)) for m in models}
    front = figs.get("llm_serving_front.png", [])
    check("serving front: a panel per model", len(front) == len(models), front)
    for m, p in zip(models, front):
        n = sum(1 for r in doc["runs"] if r["model"] == m)
        # A line per setup, a marker per run, and the TPOT SLO's line.
        check(f"serving front {m}: a line per setup, a point per run", p.get("legend") == setups[m]
              and p.get("lines") == len(setups[m]) + n + 1, p)
    good = figs.get("llm_serving_goodput.png", [])
    check("serving goodput: a panel per model", len(good) == len(models), good)
    for m, p in zip(models, good):
        check(f"serving goodput {m}: a line per setup and the all-meet line",
              p.get("legend") == setups[m] + ["every request meets the SLO"] and p.get("lines") == len(setups[m]) + 1, p)


def edits(doc: dict, setter, NAN) -> dict:  # noqa: N803 (the harness's token)
    return {
        "NaN tokens/s per SIP": setter(["runs", 0, "tokens_per_s_per_sip"], NAN),
        "a rate of 0": setter(["runs", 0, "rate"], 0),
        "an unknown serving": setter(["runs", 0, "serving"], "both"),
        "a text SLO flag": setter(["runs", 0, "meets_slo_p90"], "yes"),
        "no goodput": setter(["runs", 0, "goodput_per_s"], ...),
        "no runs": setter(["runs"], []),
        "no SLO": setter(["slo"], ...),
        "no topology": setter(["topology"], ...),
        "another schema": setter(["schema"], "kernbench-gpu/gemm-sweep"),
    }
