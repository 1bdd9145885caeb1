#!/usr/bin/env python3
"""Plot a kernbench-gpu serving study (milestone-llm-serving).

Usage:
    plot_llm_serving.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/llm-serving`` document (any schema_version 1.x.y) and writes two
figures into DIR (created if missing):

    llm_serving_front.png    tokens/s per SIP against tokens/s per user, a line per setup
                             (its points the arrival rates), filled where the run met the SLO
                             at P90; one panel per model
    llm_serving_goodput.png  goodput (requests a second meeting the SLO) against the arrival
                             rate, a line per setup; one panel per model

On a missing/unreadable file, wrong schema or malformed data it prints one line
``error: FILE: <what is wrong>`` to stderr, exits 2 and writes nothing.  On
success it prints ``wrote DIR/NAME.png`` for each figure.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbplot  # noqa: E402  (selects the Agg backend before pyplot is used)
from kbplot import InputError, plt  # noqa: E402

SCHEMA = "kernbench-gpu/llm-serving"
SCHEMA_MAJOR = 1


def read(path: str):
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    slo = kbplot.require_dict(doc, "slo", "top level", path)
    slo = {"ttft_ms": kbplot.require_real(slo, "ttft_ms", "slo", path), "tpot_ms": kbplot.require_real(slo, "tpot_ms", "slo", path)}
    runs = []
    for i, r in enumerate(kbplot.require_list(doc, "runs", "top level", path)):
        ctx = f"runs[{i}]"
        kbplot.require_object(r, ctx, path)
        row = {"model": kbplot.require_str(r, "model", ctx, path), "setup": kbplot.require_str(r, "setup", ctx, path),
               "disagg": kbplot.require_choice(r, "serving", ctx, path, ["aggregated", "disaggregated"]) == "disaggregated",
               "meets_slo_p90": kbplot.require(r, "meets_slo_p90", ctx, path)}
        if not isinstance(row["meets_slo_p90"], bool):
            raise InputError(path, f"{ctx}.meets_slo_p90: expected true or false")
        for f in ("rate", "tokens_per_s_per_sip", "tokens_per_s_per_user", "goodput_per_s", "ttft_p90_ms", "tpot_p90_ms"):
            row[f] = kbplot.require_real(r, f, ctx, path)
        if row["rate"] <= 0:
            raise InputError(path, f"{ctx}.rate: expected a rate above 0, got {row['rate']}")
        runs.append(row)
    return slo, runs


def by_model(runs: list[dict]) -> dict:
    out: dict = {}
    for r in runs:
        out.setdefault(r["model"], {}).setdefault(r["setup"], []).append(r)
    return out


def style(i: int, rs: list[dict]):
    color = plt.cm.tab10(i % 10)
    return color, "--" if rs[0]["disagg"] else "-"


def fig_front(slo: dict, runs: list[dict]):
    models = by_model(runs)
    fig, axes = plt.subplots(1, len(models), figsize=(6.6 * len(models), 5.0), squeeze=False)
    for ax, (model, setups) in zip(axes[0], models.items()):
        for i, (setup, rs) in enumerate(setups.items()):
            rs = sorted(rs, key=lambda r: r["rate"])
            color, ls = style(i, rs)
            ax.plot([r["tokens_per_s_per_user"] for r in rs], [r["tokens_per_s_per_sip"] for r in rs], ls, color=color,
                    label=setup, linewidth=1.4)
            for r in rs:
                ax.plot([r["tokens_per_s_per_user"]], [r["tokens_per_s_per_sip"]], "o", color=color, markersize=6,
                        markerfacecolor=color if r["meets_slo_p90"] else "white")
        ax.axvline(1000.0 / slo["tpot_ms"], color="#888888", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens/s per user (1 / mean TPOT, log)")
        ax.set_ylabel("output tokens/s per SIP (log)")
        ax.set_title(f"{model} (filled: P90 TTFT <= {slo['ttft_ms'] / 1000:g} s and TPOT <= {slo['tpot_ms']:g} ms)", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, title="dashed: disaggregated; dotted: the TPOT SLO", title_fontsize=7)
    fig.suptitle("Throughput per SIP against interactivity, aggregated against disaggregated (points: arrival rates)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def fig_goodput(slo: dict, runs: list[dict]):
    models = by_model(runs)
    fig, axes = plt.subplots(1, len(models), figsize=(6.6 * len(models), 4.8), squeeze=False)
    for ax, (model, setups) in zip(axes[0], models.items()):
        top = 0.0
        for i, (setup, rs) in enumerate(setups.items()):
            rs = sorted(rs, key=lambda r: r["rate"])
            color, ls = style(i, rs)
            ax.plot([r["rate"] for r in rs], [r["goodput_per_s"] for r in rs], ls, marker="o", color=color, label=setup)
            top = max(top, max(r["rate"] for r in rs))
        ax.plot([0, top], [0, top], color="#888888", linestyle=":", linewidth=1, label="every request meets the SLO")
        ax.set_xlabel("arrival rate (requests/s, Poisson)")
        ax.set_ylabel("goodput (requests/s meeting the SLO)")
        ax.set_title(f"{model}: TTFT <= {slo['ttft_ms']:g} ms and TPOT <= {slo['tpot_ms']:g} ms per request", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Goodput against the arrival rate", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def main(argv=None) -> None:
    args = kbplot.parse_args(f"Plot a kernbench-gpu serving study (schema {SCHEMA} {SCHEMA_MAJOR}.x.y) as two PNG figures.",
                             argv)
    slo, runs = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_front(slo, runs), os.path.join(out, "llm_serving_front.png")),
        (lambda: fig_goodput(slo, runs), os.path.join(out, "llm_serving_goodput.png")),
    ]
    for p in kbplot.save_all_atomic(figures):
        print(f"wrote {p}")


if __name__ == "__main__":
    kbplot.run_main(main)
