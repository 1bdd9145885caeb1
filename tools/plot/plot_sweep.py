#!/usr/bin/env python3
"""Plot a kernbench-gpu sweep (`sweep NAME --json/--out`, `merge`), any family.

Usage:
    plot_sweep.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/FAMILY-space-sweep`` document (schema_version 2.x.y or 3.x.y) and writes
into DIR (created if missing):

    sweep_pareto.png      per group, the Pareto front of latency against the sweep's
                          cost (scatter and steps, one colour per group; with --pareto)
    sweep_histogram.png   the latency histogram of the valid configs (8 bins per
                          octave; unless the sweep had --no-histogram)
    sweep_best.png        the best config of each group as a table (the first 40)

On a missing/unreadable file, wrong schema or malformed data it prints one line
``error: FILE: <what is wrong>`` to stderr, exits 2 and writes nothing.  On success it
prints ``wrote DIR/NAME.png`` for each figure.
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbplot  # noqa: E402  (selects the Agg backend before pyplot is used)
from kbplot import InputError, plt  # noqa: E402

SCHEMA_MAJOR = (2, 3)  # 3.0.0: `backend` became an object (name, deferred, on_host)
MAX_ROWS = 40


def family_schema(path: str) -> str:
    try:
        with open(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return "kernbench-gpu/FAMILY-space-sweep"  # load_json says what is wrong
    s = doc.get("schema") if isinstance(doc, dict) else None
    if isinstance(s, str) and re.fullmatch(r"kernbench-gpu/[a-z0-9_]+-space-sweep", s):
        return s
    raise InputError(path, f"schema is {json.dumps(s)}, expected \"kernbench-gpu/FAMILY-space-sweep\"")


def group_label(group) -> str:
    if isinstance(group, dict):
        return ", ".join(f"{k}={v}" for k, v in group.items()) or "all"
    return str(group)


def parse_pareto(doc: dict, where: str) -> dict:
    """The Pareto fronts: per group its label and points (integer cost, latency in us)."""
    par = kbplot.require_dict(doc, "pareto", "top level", where)
    fronts = []
    for i, fr in enumerate(kbplot.require_list(par, "fronts", "pareto", where, nonempty=False)):
        ctx = f"pareto.fronts[{i}]"
        kbplot.require_object(fr, ctx, where)
        xs, ys = [], []
        for k, p in enumerate(kbplot.require_list(fr, "points", ctx, where)):
            pctx = f"{ctx}.points[{k}]"
            kbplot.require_object(p, pctx, where)
            xs.append(kbplot.require_int(p, "cost", pctx, where))
            ys.append(kbplot.require_int(p, "latency_ps", pctx, where, lo=1) / 1e6)
        fronts.append((group_label(fr.get("group")), xs, ys))
    cost = kbplot.require_str(par, "cost", "pareto", where)
    return {"cost": cost, "meaning": par.get("meaning", cost), "fronts": fronts}


def parse_histogram(doc: dict, where: str) -> list[tuple[float, float, int]]:
    """The histogram's bins: (lo, hi) in us, lo < hi, and a count of at least 1."""
    h = kbplot.require_dict(doc, "histogram", "top level", where)
    bins = []
    for i, b in enumerate(kbplot.require_list(h, "bins", "histogram", where, nonempty=False)):
        ctx = f"histogram.bins[{i}]"
        kbplot.require_object(b, ctx, where)
        lo_ps = kbplot.require_int(b, "lo_ps", ctx, where, lo=1)
        hi_ps = kbplot.require_int(b, "hi_ps", ctx, where, lo=lo_ps)
        bins.append((lo_ps / 1e6, hi_ps / 1e6, kbplot.require_int(b, "count", ctx, where, lo=1)))
    return bins


def parse_best(doc: dict, where: str) -> dict:
    """The best config per group as table rows (the first MAX_ROWS), with their columns."""
    best = kbplot.require_list(doc, "best_per_group", "top level", where)
    space = kbplot.require_dict(doc, "space", "top level", where)
    axes = kbplot.require_list(space, "axes", "space", where, nonempty=False)
    # The columns: every swept axis (its members for a zip), then the latency.
    names = []
    for i, a in enumerate(axes):
        kbplot.require_object(a, f"space.axes[{i}]", where)
        if len(a.get("values", [])) > 1 or i == 0:
            names += a.get("names", [kbplot.require_str(a, "name", f"space.axes[{i}]", where)])
    cols = [n for n in names if n] + ["latency_us"]
    if any(isinstance(g, dict) and isinstance(g.get("best"), dict) and "case" in g["best"] for g in best):
        cols = ["case"] + [c for c in cols if c != "case"]
    rows = []
    for i, g in enumerate(best[:MAX_ROWS]):
        kbplot.require_object(g, f"best_per_group[{i}]", where)
        b = g.get("best")
        if not isinstance(b, dict):
            rows.append([str(g.get("group", ""))[:40]] + [""] * (len(cols) - 2) + ["no valid config"])
            continue
        row = [str(b.get(c, "")) for c in cols[:-1]]
        row.append(f"{kbplot.require_int(b, 'latency_ps', f'best_per_group[{i}].best', where, lo=1) / 1e6:.3f}")
        rows.append(row)
    more = f" (first {MAX_ROWS} of {len(best)})" if len(best) > MAX_ROWS else ""
    return {"cols": cols, "rows": rows, "more": more, "group": ", ".join(map(str, space.get("group", []))) or "none"}


def read(path: str) -> dict:
    """The document at `path`, checked whole against its schema: what the figures draw."""
    doc = kbplot.load_json(path, family_schema(path), SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    return {"best": parse_best(doc, path),
            "pareto": parse_pareto(doc, path) if "pareto" in doc else None,
            "histogram": parse_histogram(doc, path) if "histogram" in doc else None,
            "valid": doc.get("valid", "?"), "size": doc.get("space", {}).get("size", "?")}


def fig_pareto(par: dict):
    fronts = par["fronts"]
    fig, ax = kbplot.new_figure()
    cmap = plt.get_cmap("tab10" if len(fronts) <= 10 else "tab20")
    for i, (label, xs, ys) in enumerate(fronts):
        color = cmap(i % cmap.N)
        ax.step(xs, ys, where="post", color=color, linewidth=1, alpha=0.7)
        ax.scatter(xs, ys, color=color, s=18, label=label if len(fronts) <= 12 else None, zorder=3)
    ax.set_xlabel(f"{par['cost']}: {par['meaning']}")
    ax.set_ylabel("latency (us)")
    if fronts:
        ax.set_yscale("log")
    ax.set_title(f"Pareto fronts per group: latency against {par['cost']}  ({len(fronts)} groups)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    if 0 < len(fronts) <= 12:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_histogram(bins: list, valid, size):
    fig, ax = kbplot.new_figure()
    for lo, hi, n in bins:
        ax.bar(lo, n, width=hi - lo, align="edge", color="#4c72b0", edgecolor="white", linewidth=0.3)
    ax.set_xscale("log")
    ax.set_xlabel("latency (us, log; 8 bins per octave)")
    ax.set_ylabel("valid configs")
    ax.set_title(f"latency of the {valid} valid configs of {size}", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def fig_best(best: dict):
    cols, rows = best["cols"], best["rows"]
    height = 0.8 + 0.26 * (len(rows) + 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(cols)), height))
    ax.axis("off")
    if rows:
        t = ax.table(cellText=rows, colLabels=cols, loc="center", cellLoc="right")
        t.auto_set_font_size(False)
        t.set_fontsize(8)
        t.auto_set_column_width(list(range(len(cols))))
        t.scale(1, 1.25)
    ax.set_title(f"best config per group{best['more']}; group: {best['group']}", fontsize=10)
    fig.tight_layout()
    return fig


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu sweep (schema kernbench-gpu/FAMILY-space-sweep 2.x.y or 3.x.y).", argv)
    data = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = []
    if data["pareto"] is not None:
        figures.append((fig_pareto(data["pareto"]), os.path.join(out, "sweep_pareto.png")))
    if data["histogram"] is not None:
        figures.append((fig_histogram(data["histogram"], data["valid"], data["size"]),
                        os.path.join(out, "sweep_histogram.png")))
    figures.append((fig_best(data["best"]), os.path.join(out, "sweep_best.png")))
    for path in kbplot.save_all_atomic(figures):
        print(f"wrote {path}")


if __name__ == "__main__":
    kbplot.run_main(main)
