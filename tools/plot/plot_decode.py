#!/usr/bin/env python3
"""Plot a kernbench-gpu GQA decode study (milestone-gqa-decode-4cases).

Usage:
    plot_decode.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/gqa-decode-4cases`` document (any schema_version 1.x.y)
and writes three figures into DIR (created if missing):

    decode_cases.png      the four cases at the headline shape: latency with the
                          lower bound (every cube's HBM) and the case's bound
                          (its busiest cube's HBM), MAC utilisation,
                          communication volume per link level, and the KV
                          cache's HBM footprint
    decode_vs_s_kv.png    latency against S_kv (1K to 1M) per case, the best
                          case shaded along the axis
    decode_vs_batch.png   latency against batch (1 to 64) per case, likewise

and, when the document has energy columns (1.1.0 on), a fourth:

    decode_energy.png     the four cases' energy by component (matrix, vector,
                          SRAM, HBM, links, static) and their average power

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

SCHEMA = "kernbench-gpu/gqa-decode-4cases"
SCHEMA_MAJOR = 1

FIG_CASES = "decode_cases.png"
FIG_SKV = "decode_vs_s_kv.png"
FIG_BATCH = "decode_vs_batch.png"
FIG_ENERGY = "decode_energy.png"

CASES = [1, 2, 3, 4]
NAMES = {1: "1 cube-SP / PE-TP", 2: "2 cube-repl / PE-TP", 3: "3 cube-repl / PE-SP", 4: "4 cube-SP / PE-SP"}
COLORS = {1: "#1f77b4", 2: "#d62728", 3: "#2ca02c", 4: "#ff7f0e"}
MARKERS = {1: "o", 2: "s", 3: "^", 4: "D"}


def parse_rows(doc: dict, where: str) -> list[dict]:
    """One row per case 1..4, each with integer picosecond latency and bounds (at least
    1 ps; the lower bound at most the case bound), a MAC utilisation in 0..1 and integer
    byte counts."""
    out = []
    for i, r in enumerate(kbplot.require_list(doc, "rows", "top level", where)):
        ctx = f"rows[{i}]"
        kbplot.require_object(r, ctx, where)
        case = kbplot.require_choice(r, "case", ctx, where, CASES)
        s = kbplot.require_dict(r, "op_log_summary", ctx, where)
        sctx = ctx + ".op_log_summary"
        integer = lambda key, **kw: kbplot.require_int(s, key, sctx, where, **kw)  # noqa: E731
        bound = integer("case_bound_ps", lo=1)
        out.append({
            "case": case,
            "latency": integer("latency_ps", lo=1),
            "lower": integer("lower_bound_ps", lo=1, hi=bound),
            "bound": bound,
            "util": kbplot.require_real(s, "mac_util", sctx, where, hi=1.0),
            "pe": integer("link_bytes_pe"),
            "cube": integer("link_bytes_cube"),
            "kv": integer("kv_footprint_bytes", lo=1),
            "energy": kbplot.energy_of(s, sctx, where),
        })
    if sorted(r["case"] for r in out) != CASES:
        raise InputError(where, "rows: expected one row per case 1..4")
    return sorted(out, key=lambda r: r["case"])


def parse_series(doc: dict, series: str, axis: str, where: str) -> dict[int, list[tuple[float, float]]]:
    """The points of one series: per case, (axis value, latency), both positive integers."""
    configs = kbplot.require_list(doc, "configs", "top level", where)
    out: dict[int, list[tuple[float, float]]] = {k: [] for k in CASES}
    for i, c in enumerate(configs):
        ctx = f"configs[{i}]"
        kbplot.require_object(c, ctx, where)
        if c.get("series") != series:
            continue
        case = kbplot.require_choice(c, "case", ctx, where, CASES)
        out[case].append((kbplot.require_int(c, axis, ctx, where, lo=1, hi=1 << 40),
                          kbplot.require_int(c, "latency_ps", ctx, where, lo=1)))
    if not any(out.values()):
        raise InputError(where, f"configs: no points of the {series} series")
    for k in out:
        out[k].sort()
    return out


def fig_cases(rows: list[dict], winner: int):
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    x = list(range(len(rows)))
    labels = [NAMES[r["case"]] for r in rows]
    colors = [COLORS[r["case"]] for r in rows]

    ax = axes[0][0]
    lat = [r["latency"] / 1e6 for r in rows]
    ax.bar(x, lat, color=colors, alpha=0.85)
    ax.scatter(x, [r["bound"] / 1e6 for r in rows], marker="_", s=900, color="black", zorder=3, label="case bound")
    ax.axhline(rows[0]["lower"] / 1e6, color="0.3", linestyle="--", linewidth=1, label="lower bound (every cube's HBM)")
    for i, v in enumerate(lat):
        ax.annotate(f"{v:.1f}", (i, v), ha="center", va="bottom", fontsize=9)
    ax.set_yscale("log")
    ax.set_ylim(top=max(lat) * 4)
    ax.set_ylabel("latency (us, log)")
    ax.set_title("latency, with the bounds")
    ax.legend(fontsize=8, loc="upper right")

    ax = axes[0][1]
    util = [100 * r["util"] for r in rows]
    ax.bar(x, util, color=colors, alpha=0.85)
    for i, v in enumerate(util):
        ax.annotate(f"{v:.2f}%", (i, v), ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("MAC utilisation of the SIP's PEs (%)")
    ax.set_title("MAC utilisation")

    ax = axes[1][0]
    pe = [r["pe"] / 1024 for r in rows]
    cube = [r["cube"] / 1024 for r in rows]
    ax.bar(x, pe, color="#8c8c8c", label="PE copy queues")
    ax.bar(x, cube, bottom=pe, color="#4c72b0", label="cube mesh links")
    for i in x:
        ax.annotate(f"{pe[i] + cube[i]:.1f}", (i, pe[i] + cube[i]), ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("KiB moved")
    ax.set_title("communication volume (m, l, O partials)")
    ax.legend(fontsize=8)

    ax = axes[1][1]
    kv = [r["kv"] / 2**20 for r in rows]
    ax.bar(x, kv, color=colors, alpha=0.85)
    for i, v in enumerate(kv):
        ax.annotate(f"{v:.0f}", (i, v), ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("MiB of HBM, all cubes")
    ax.set_title("KV cache footprint")

    for row in axes:
        for a in row:
            a.set_xticks(x)
            a.set_xticklabels(labels, fontsize=8)
            a.grid(axis="y", alpha=0.3)
    fig.suptitle(f"GQA decode, four KV shardings (winner: case {winner})", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def fig_energy(rows: list[dict], winner: int):
    fig, ax = kbplot.new_figure((10, 6))
    x = list(range(len(rows)))
    base = [0.0] * len(rows)
    for key, label, colour in kbplot.ENERGY_PARTS:
        uj = [r["energy"][key] / 1e9 for r in rows]
        if max(uj) > 0:
            ax.bar(x, uj, 0.6, bottom=base, color=colour, label=label, edgecolor="white", linewidth=0.5)
        base = [b + u for b, u in zip(base, uj)]
    for i, r in enumerate(rows):
        watts = r["energy"]["energy_fj"] / r["latency"] / 1000.0
        ax.annotate(f"{base[i]:.2f} uJ\n{watts:.2f} W avg", (i, base[i]), ha="center", va="bottom", fontsize=9)
    ax.set_ylim(0, max(base) * 1.2)
    ax.set_xticks(x)
    ax.set_xticklabels([NAMES[r["case"]] for r in rows], fontsize=9)
    ax.set_ylabel("energy of the decode step (uJ)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(handles=list(reversed(ax.get_legend_handles_labels()[0])), fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), title="component")
    fig.suptitle(f"GQA decode energy per case (winner on latency: case {winner})", fontsize=12)
    ax.set_title("the machine's static power (every PE and HBM stack) is charged over each case's latency", fontsize=9,
                 color="0.35")
    fig.tight_layout()
    return fig


def fig_series(series: dict[int, list[tuple[float, float]]], xlabel: str, title: str, base2: bool):
    fig, ax = kbplot.new_figure()
    for k in CASES:
        pts = series[k]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], color=COLORS[k], marker=MARKERS[k], label=NAMES[k])
    # The best case at each x, shaded along the bottom, with a line where it changes.
    xs = sorted({p[0] for pts in series.values() for p in pts})
    best = []
    for xv in xs:
        cands = [(p[1], k) for k, pts in series.items() for p in pts if p[0] == xv]
        best.append(min(cands)[1])
    for i, xv in enumerate(xs):
        if i > 0 and best[i] != best[i - 1]:
            edge = (xs[i - 1] * xv) ** 0.5
            ax.axvline(edge, color="0.2", linestyle=":", linewidth=1)
            ax.annotate(f"best: case {best[i]}", (edge, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=8)
    ax.set_xscale("log", base=2 if base2 else 10)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("latency (us, log)")
    ax.set_title(title + f"  (best at the smallest: case {best[0]}, at the largest: case {best[-1]})", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def read(path: str):
    """The document at `path`, checked whole against its schema: the rows per case, the
    winning case, and the S_kv and batch series."""
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    rows = parse_rows(doc, path)
    winner = kbplot.require_dict(doc, "winner", "top level", path)
    w = kbplot.require_choice(winner, "case", "winner", path, CASES)
    return rows, w, parse_series(doc, "s_kv", "s_kv", path), parse_series(doc, "batch", "batch", path)


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu GQA decode study (schema "
                             f"{SCHEMA} {SCHEMA_MAJOR}.x.y) as three or four PNG figures.", argv)
    rows, w, skv, batch = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_cases(rows, w), os.path.join(out, FIG_CASES)),
        (lambda: fig_series(skv, "S_kv (KV positions)", "decode latency against context length, batch 1", True),
         os.path.join(out, FIG_SKV)),
        (lambda: fig_series(batch, "batch", "decode latency against batch, S_kv 131072", True), os.path.join(out, FIG_BATCH)),
    ]
    if all(r["energy"] is not None for r in rows):
        figures.append((lambda: fig_energy(rows, w), os.path.join(out, FIG_ENERGY)))
    for path in kbplot.save_all_atomic(figures):
        print(f"wrote {path}")


if __name__ == "__main__":
    kbplot.run_main(main)
