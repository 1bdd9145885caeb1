#!/usr/bin/env python3
"""Plot a kernbench-gpu serving sweep (`sweep serve --out FILE`).

Usage:
    plot_serve_sweep.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/serve-sweep`` document (any schema_version 1.x.y) and writes one
figure into DIR (created if missing):

    serve_sweep_front.png    output tokens/s per SIP against tokens/s per user of every config
                             that served: filled where its TTFT and TPOT at the SLO's percentile
                             meet the SLO, hollow where not; the SLO-aware Pareto front as a line
                             through its configs, each labelled with its index

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

SCHEMA = "kernbench-gpu/serve-sweep"
SCHEMA_MAJOR = 1


def read(path: str):
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    s = kbplot.require_dict(doc, "slo", "top level", path)
    slo = {k: kbplot.require_real(s, k, "slo", path) for k in ("ttft_ms", "tpot_ms", "percentile")}
    served = []
    for i, c in enumerate(kbplot.require_list(doc, "configs", "top level", path)):
        ctx = f"configs[{i}]"
        kbplot.require_object(c, ctx, path)
        if kbplot.require_str(c, "status", ctx, path) != "ok":
            continue
        row = {"config": i}
        for f in ("tokens_per_s_per_sip", "tokens_per_s_per_user"):
            row[f] = kbplot.require_real(c, f, ctx, path)
            if row[f] <= 0:
                raise InputError(path, f"{ctx}.{f}: expected a throughput above 0, got {row[f]}")
        for f in ("meets_slo", "on_front"):
            row[f] = kbplot.require(c, f, ctx, path)
            if not isinstance(row[f], bool):
                raise InputError(path, f"{ctx}.{f}: expected true or false")
        served.append(row)
    if not served:
        raise InputError(path, "configs: no config served")
    front = kbplot.require_list(doc, "front", "top level", path)
    by_index = {r["config"]: r for r in served}
    for k, i in enumerate(front):
        if not isinstance(i, int) or i not in by_index or not by_index[i]["on_front"]:
            raise InputError(path, f"front[{k}]: expected the index of a config on the front, got {i!r}")
    return doc, slo, served, [by_index[i] for i in front]


def fig_front(doc: dict, slo: dict, served: list[dict], front: list[dict]):
    fig, ax = plt.subplots(figsize=(8.5, 5.6))
    miss = [r for r in served if not r["meets_slo"]]
    meet = [r for r in served if r["meets_slo"]]
    if miss:
        ax.plot([r["tokens_per_s_per_user"] for r in miss], [r["tokens_per_s_per_sip"] for r in miss], "o", color="#999999",
                markerfacecolor="white", markersize=6, label=f"misses the SLO ({len(miss)})")
    if meet:
        ax.plot([r["tokens_per_s_per_user"] for r in meet], [r["tokens_per_s_per_sip"] for r in meet], "o", color="#4c72b0",
                markersize=6, label=f"meets the SLO ({len(meet)})")
    if front:
        ax.plot([r["tokens_per_s_per_user"] for r in front], [r["tokens_per_s_per_sip"] for r in front], "-", color="#c44e52",
                linewidth=1.6, label=f"front ({len(front)})")
        for r in front:
            ax.annotate(f"#{r['config']}", (r["tokens_per_s_per_user"], r["tokens_per_s_per_sip"]), textcoords="offset points",
                        xytext=(4, 4), fontsize=7, color="#c44e52")
    ax.axvline(1000.0 / slo["tpot_ms"], color="#888888", linestyle=":", linewidth=1, label="1 / the TPOT SLO")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens/s per user (1 / mean TPOT, log)")
    ax.set_ylabel("output tokens/s per SIP (log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    n = doc.get("counts", {})
    ax.set_title(f"{n.get('configs', len(served))} configs, {len(served)} served; SLO: P{slo['percentile']:g} TTFT <= "
                 f"{slo['ttft_ms']:g} ms and TPOT <= {slo['tpot_ms']:g} ms", fontsize=9)
    fig.suptitle("sweep serve: throughput per SIP against interactivity, and the SLO-aware front", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def main(argv=None) -> None:
    args = kbplot.parse_args(f"Plot a kernbench-gpu serving sweep (schema {SCHEMA} {SCHEMA_MAJOR}.x.y) as a PNG figure.", argv)
    doc, slo, served, front = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    for p in kbplot.save_all_atomic([(lambda: fig_front(doc, slo, served, front), os.path.join(out, "serve_sweep_front.png"))]):
        print(f"wrote {p}")


if __name__ == "__main__":
    kbplot.run_main(main)
