#!/usr/bin/env python3
"""Plot a kernbench-gpu collective sweep (milestone-1h-ccl).

Usage:
    plot_ccl.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/allreduce-sweep`` document (any schema_version 1.x.y)
and writes four figures into DIR (created if missing), each with one panel per
level (PEs of a cube, cubes of a SIP, SIPs of a ring, every PE of several cubes
level by level) at the most ranks of the level:

    ccl_latency_vs_size.png   simulated latency per algorithm against message
                              size (log-log), SRAM and HBM buffers, with the
                              alpha-beta-gamma model's curve dashed
    ccl_busbw.png             bus bandwidth (nccl-tests) against size
    ccl_hbm_vs_sram.png       latency with HBM buffers over latency with SRAM
                              buffers, where both fit
    ccl_engines.png           reference engine against batched model (every
                              point), and simulated / analytical per size

The four are of the allreduce points.  When the document has points of other ops
(1.2.0 on: allgather, reducescatter, alltoall), one more:

    ccl_ops_busbw.png         bus bandwidth against size, a row per op and a panel
                              per single level, per algorithm and buffer, beside
                              the alpha-beta-gamma model's bus bandwidth (dashed)

and, when the document has energy columns (1.1.0 on), two more of the allreduce
points:

    ccl_energy_per_byte.png   energy per byte of message (pJ) per algorithm
                              against size, SRAM and HBM buffers
    ccl_energy_hbm_vs_sram.png  the energy HBM buffers cost over SRAM buffers
                              (nJ), where both fit

On a missing/unreadable file, wrong schema or malformed data it prints one line
``error: FILE: <what is wrong>`` to stderr, exits 2 and writes nothing.  On
success it prints ``wrote DIR/NAME.png`` for each figure.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbplot  # noqa: E402  (selects the Agg backend before pyplot is used)
from kbplot import InputError, plt  # noqa: E402

from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

SCHEMA = "kernbench-gpu/allreduce-sweep"
SCHEMA_MAJOR = 1

FIG_LATENCY = "ccl_latency_vs_size.png"
FIG_BUSBW = "ccl_busbw.png"
FIG_BUFFERS = "ccl_hbm_vs_sram.png"
FIG_ENGINES = "ccl_engines.png"
FIG_ENERGY = "ccl_energy_per_byte.png"
FIG_ENERGY_BUFFERS = "ccl_energy_hbm_vs_sram.png"
FIG_OPS = "ccl_ops_busbw.png"

LEVELS = ["pe", "cube", "sip", "hier"]
LEVEL_TITLES = {"pe": "PEs of one cube", "cube": "cubes of one SIP", "sip": "SIPs on a ring",
                "hier": "hier: every PE, level by level"}
ALGOS = ["ring", "hd", "tree", "mesh2d", "root", "pairwise"]
ALLREDUCE_ALGOS = ALGOS[:5]
OPS = ["allreduce", "reduce", "allgather", "reducescatter", "alltoall"]
# The single-level ops of their own: nccl-tests' bus bandwidth factor, and their titles.
OWN_OPS = {"allgather": "all-gather", "reducescatter": "reduce-scatter", "alltoall": "all-to-all"}
COLORS = {"ring": "#1f77b4", "hd": "#d62728", "tree": "#2ca02c", "mesh2d": "#9467bd", "root": "#ff7f0e",
          "pairwise": "#8c564b"}
MARKERS = {"ring": "o", "hd": "s", "tree": "^", "mesh2d": "D", "root": "v", "pairwise": "X"}


@dataclass
class Point:
    level: str
    algo: str
    ranks: int
    buffer: str
    bytes: int
    latency_ps: float
    reference_ps: float
    analytical_ps: float
    busbw: float
    energy_fj: int | None = None  # None: no energy columns
    op: str = "allreduce"

    def analytical_busbw(self) -> float:
        """The alpha-beta-gamma model's time as a bus bandwidth (busbw / latency x analytical)."""
        return self.busbw * self.latency_ps / self.analytical_ps if self.analytical_ps > 0 else 0.0


def parse(doc: dict, where: str) -> list[Point]:
    """Check the document against its schema and return its points.

    ``topology`` names the machine and ``parity`` says whether the engines agreed; each
    config has a known level, algorithm and buffer, 2..4096 ranks, 2 B..4 GiB per rank, and
    integer picosecond latencies (both engines' at least 1 ps, the analytical model's at
    least 0) and a bus bandwidth of at most 10^9 GB/s.
    """
    kbplot.require_topology(doc, where)
    parity = kbplot.require_dict(doc, "parity", "top level", where)
    if not isinstance(parity.get("ok"), bool):
        raise InputError(where, 'parity: "ok" is missing or not true/false')
    points = []
    for i, c in enumerate(kbplot.require_list(doc, "configs", "top level", where)):
        ctx = f"configs[{i}]"
        kbplot.require_object(c, ctx, where)
        level = kbplot.require_choice(c, "level", ctx, where, LEVELS)
        algo = kbplot.require_choice(c, "algo", ctx, where, ALGOS)
        op = kbplot.require_choice(c, "op", ctx, where, OPS) if "op" in c else "allreduce"
        buffer = kbplot.require_choice(c, "buffer", ctx, where, ("sram", "hbm"))
        integer = lambda key, **kw: kbplot.require_int(c, key, ctx, where, **kw)  # noqa: E731
        energy = kbplot.energy_of(c, ctx, where)
        points.append(Point(level, algo, integer("ranks", lo=2, hi=4096), buffer, integer("bytes", lo=2, hi=1 << 32),
                            integer("latency_ps", lo=1), integer("reference_latency_ps", lo=1),
                            integer("analytical_ps"), kbplot.require_real(c, "busbw_gbps", ctx, where, hi=1e9),
                            energy["energy_fj"] if energy else None, op))
    return points


def most_ranks(points: list[Point], level: str) -> int:
    return max((p.ranks for p in points if p.level == level), default=0)


def series(points, level, algo, buffer, ranks):
    sel = sorted((p for p in points if p.level == level and p.algo == algo and p.buffer == buffer and p.ranks == ranks),
                 key=lambda p: p.bytes)
    return sel


def both_buffers(points, level, algo, ranks):
    """(HBM point, SRAM point) of each size where both buffer kinds fit, by size."""
    sram = {p.bytes: p for p in series(points, level, algo, "sram", ranks)}
    return [(p, sram[p.bytes]) for p in series(points, level, algo, "hbm", ranks) if p.bytes in sram]


def no_minor_ticks(ax):
    """Decade ticks and grid only: a log axis spanning many decades would otherwise make eight
    minor ticks a decade, which are most of the time a figure takes to draw."""
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())


def size_axis(ax):
    ax.set_xscale("log", base=2)
    ticks = [2 ** k for k in range(10, 31, 4)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([_size(t) for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("bytes per rank")
    ax.grid(True, which="major", alpha=0.3)


def _size(b: int) -> str:
    if b >= 1 << 30:
        return f"{b >> 30} GiB"
    if b >= 1 << 20:
        return f"{b >> 20} MiB"
    return f"{b >> 10} KiB"


def panels(title: str, subtitle: str):
    fig, axes = plt.subplots(1, len(LEVELS), figsize=(22, 5.6))
    fig.suptitle(title, fontsize=13, fontweight="bold")
    fig.text(0.5, 0.905, subtitle, ha="center", fontsize=9, color="0.3")
    return fig, axes


def algo_legend(fig, extra, algos=ALLREDUCE_ALGOS):
    handles = [Line2D([], [], color=COLORS[a], marker=MARKERS[a], label=a) for a in algos] + extra
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    # A fixed layout: tight_layout, or the saved figure's tight bounding box, would draw the
    # figure once more (a log axis lays out its ticks at every draw).
    kbplot.fixed_layout(fig, left=0.04, right=0.99, bottom=0.17, top=0.85, wspace=0.22)


def plot_buffers(ax, points, level, algo, ranks, value):
    """One algorithm's curve against size: SRAM buffers solid, HBM buffers dotted and hollow."""
    for buffer, style, face in (("sram", "-", COLORS[algo]), ("hbm", ":", "white")):
        s = series(points, level, algo, buffer, ranks)
        if s:
            ax.plot([p.bytes for p in s], [value(p) for p in s], linestyle=style, color=COLORS[algo],
                    marker=MARKERS[algo], markersize=4, markerfacecolor=face)


def fig_latency(points):
    fig, axes = panels("Allreduce latency against message size",
                       "solid: SRAM buffers; dotted, hollow: HBM buffers; dashed: alpha-beta-gamma model")
    for ax, level in zip(axes, LEVELS):
        ranks = most_ranks(points, level)
        for algo in ALLREDUCE_ALGOS:
            plot_buffers(ax, points, level, algo, ranks, lambda p: p.latency_ps / 1e6)
            a = series(points, level, algo, "hbm", ranks) or series(points, level, algo, "sram", ranks)
            a = [p for p in a if p.analytical_ps > 0]
            if a:
                ax.plot([p.bytes for p in a], [p.analytical_ps / 1e6 for p in a], linestyle="--", linewidth=0.9,
                        color=COLORS[algo], alpha=0.7)
        size_axis(ax)
        ax.set_yscale("log")
        no_minor_ticks(ax)
        ax.set_ylabel("latency (us)")
        ax.set_title(f"{LEVEL_TITLES[level]}: {ranks} ranks")
    algo_legend(fig, [Line2D([], [], color="0.3", linestyle="-", label="SRAM"),
                      Line2D([], [], color="0.3", linestyle=":", marker="o", markerfacecolor="white", label="HBM"),
                      Line2D([], [], color="0.3", linestyle="--", label="analytical")])
    return fig


def fig_busbw(points):
    fig, axes = panels("Allreduce bus bandwidth against message size",
                       "busbw = bytes / latency x 2(ranks-1)/ranks (nccl-tests); solid: SRAM, dotted: HBM buffers")
    for ax, level in zip(axes, LEVELS):
        ranks = most_ranks(points, level)
        for algo in ALLREDUCE_ALGOS:
            plot_buffers(ax, points, level, algo, ranks, lambda p: p.busbw)
        size_axis(ax)
        ax.set_yscale("log")
        no_minor_ticks(ax)
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{LEVEL_TITLES[level]}: {ranks} ranks")
    algo_legend(fig, [])
    return fig


def fig_buffers(points):
    fig, axes = panels("HBM buffers against SRAM buffers",
                       "latency with the data in HBM / latency with it in SRAM, where both fit (1 = no cost)")
    for ax, level in zip(axes, LEVELS):
        ranks = most_ranks(points, level)
        for algo in ALLREDUCE_ALGOS:
            pairs = both_buffers(points, level, algo, ranks)
            if pairs:
                ax.plot([h.bytes for h, _ in pairs], [h.latency_ps / s.latency_ps for h, s in pairs], color=COLORS[algo],
                        marker=MARKERS[algo], markersize=4)
        size_axis(ax)
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        ax.set_ylabel("HBM latency / SRAM latency")
        ax.set_title(f"{LEVEL_TITLES[level]}: {ranks} ranks")
    algo_legend(fig, [])
    return fig


def fig_energy(points):
    fig, axes = panels("Allreduce energy per byte against message size",
                       "energy of the run (every part, static included) / bytes per rank; solid: SRAM, dotted: HBM buffers")
    for ax, level in zip(axes, LEVELS):
        ranks = most_ranks(points, level)
        for algo in ALLREDUCE_ALGOS:
            plot_buffers(ax, points, level, algo, ranks, lambda p: p.energy_fj / 1000.0 / p.bytes)
        size_axis(ax)
        ax.set_yscale("log")
        no_minor_ticks(ax)
        ax.set_ylabel("energy per byte (pJ/B)")
        ax.set_title(f"{LEVEL_TITLES[level]}: {ranks} ranks")
    algo_legend(fig, [Line2D([], [], color="0.3", linestyle="-", label="SRAM"),
                      Line2D([], [], color="0.3", linestyle=":", marker="o", markerfacecolor="white", label="HBM")])
    return fig


def fig_energy_buffers(points):
    fig, axes = panels("What HBM buffers cost over SRAM buffers, in energy",
                       "energy with the data in HBM - energy with it in SRAM (nJ), where both fit")
    for ax, level in zip(axes, LEVELS):
        ranks = most_ranks(points, level)
        lows = []
        for algo in ALLREDUCE_ALGOS:
            pairs = both_buffers(points, level, algo, ranks)
            if pairs:
                ys = [(h.energy_fj - s.energy_fj) / 1e6 for h, s in pairs]
                lows += ys
                ax.plot([h.bytes for h, _ in pairs], ys, color=COLORS[algo], marker=MARKERS[algo], markersize=4)
        size_axis(ax)
        if lows and min(lows) > 0:
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=1.0)
            ax.axhline(0.0, color="0.5", linewidth=0.8)
        no_minor_ticks(ax)
        ax.set_ylabel("HBM energy - SRAM energy (nJ)")
        ax.set_title(f"{LEVEL_TITLES[level]}: {ranks} ranks")
    algo_legend(fig, [])
    return fig


def fig_ops(points):
    """Bus bandwidth of each single-level op of its own: a row per op, a panel per level."""
    ops = [o for o in OWN_OPS if any(p.op == o for p in points)]
    levels = [lv for lv in LEVELS[:3] if any(p.level == lv and p.op in ops for p in points)]
    fig, axes = plt.subplots(len(ops), len(levels), figsize=(6.2 * len(levels), 4.4 * len(ops) + 1.2), squeeze=False)
    fig.suptitle("All-gather, reduce-scatter and all-to-all: bus bandwidth against message size", fontsize=13,
                 fontweight="bold")
    fig.text(0.5, 1.0 - 0.55 / (4.4 * len(ops) + 1.2), "busbw = bytes / latency x (ranks-1)/ranks (nccl-tests); "
             "solid: SRAM, dotted, hollow: HBM buffers; dashed: alpha-beta-gamma model", ha="center", fontsize=9,
             color="0.3")
    used = []
    for row, op in zip(axes, ops):
        for ax, level in zip(row, levels):
            mine = [p for p in points if p.op == op]
            ranks = most_ranks(mine, level)
            for algo in ALGOS:
                if not series(mine, level, algo, "sram", ranks) and not series(mine, level, algo, "hbm", ranks):
                    continue
                used += [algo] if algo not in used else []
                plot_buffers(ax, mine, level, algo, ranks, lambda p: p.busbw)
                a = [p for p in series(mine, level, algo, "hbm", ranks) or series(mine, level, algo, "sram", ranks)
                     if p.analytical_ps > 0]
                if a:
                    ax.plot([p.bytes for p in a], [p.analytical_busbw() for p in a], linestyle="--", linewidth=0.9,
                            color=COLORS[algo], alpha=0.7)
            size_axis(ax)
            ax.set_yscale("log")
            no_minor_ticks(ax)
            ax.set_ylabel("bus bandwidth (GB/s)")
            ax.set_title(f"{OWN_OPS[op]}, {LEVEL_TITLES[level]}: {ranks} ranks", fontsize=10)
    handles = [Line2D([], [], color=COLORS[a], marker=MARKERS[a], label=a) for a in ALGOS if a in used]
    handles += [Line2D([], [], color="0.3", linestyle="-", label="SRAM"),
                Line2D([], [], color="0.3", linestyle=":", marker="o", markerfacecolor="white", label="HBM"),
                Line2D([], [], color="0.3", linestyle="--", label="analytical")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    height = 4.4 * len(ops) + 1.2
    kbplot.fixed_layout(fig, left=0.06, right=0.99, bottom=0.75 / height, top=1.0 - 0.9 / height, wspace=0.22,
                        hspace=0.35)
    return fig


def fig_engines(points, parity):
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 6))
    fig.suptitle("Reference engine, batched model and the analytical model", fontsize=13, fontweight="bold")
    same = sum(1 for p in points if p.latency_ps == p.reference_ps)
    for algo in ALGOS:
        s = [p for p in points if p.algo == algo]
        left.scatter([p.reference_ps / 1e6 for p in s], [p.latency_ps / 1e6 for p in s], s=12, color=COLORS[algo],
                     marker=MARKERS[algo], label=algo)
    lo = min(p.latency_ps for p in points) / 1e6
    hi = max(p.latency_ps for p in points) / 1e6
    left.plot([lo, hi], [lo, hi], color="0.4", linewidth=0.8, linestyle="--")
    left.set_xscale("log")
    left.set_yscale("log")
    no_minor_ticks(left)
    left.set_xlabel("reference engine latency (us)")
    left.set_ylabel("batched model latency (us)")
    left.set_title(f"every point, both engines: {same}/{len(points)} identical latencies, "
                   f"{parity} on every parity figure", fontsize=10)
    left.grid(True, alpha=0.3)
    left.legend(fontsize=9)
    for level, mk in zip(LEVELS, ("o", "s", "^", "P")):
        for algo in ALGOS:
            s = sorted((p for p in points if p.level == level and p.algo == algo and p.analytical_ps > 0
                        and p.ranks == most_ranks(points, level)), key=lambda p: (p.buffer, p.bytes))
            for buffer in ("sram", "hbm"):
                b = [p for p in s if p.buffer == buffer]
                if b:
                    right.plot([p.bytes for p in b], [p.latency_ps / p.analytical_ps for p in b], color=COLORS[algo],
                               marker=mk, markersize=4, linestyle="-" if buffer == "sram" else ":", linewidth=0.8,
                               markerfacecolor=COLORS[algo] if buffer == "sram" else "white")
    size_axis(right)
    right.set_yscale("log")
    no_minor_ticks(right)
    right.axhline(1.0, color="0.4", linewidth=0.8)
    right.set_ylabel("simulated / analytical")
    right.set_title("simulated over the alpha-beta-gamma model, the most ranks of each level", fontsize=10)
    handles = [Line2D([], [], color=COLORS[a], label=a) for a in ALGOS]
    handles += [Line2D([], [], color="0.3", marker=m, linestyle="none", label=f"level {lv}")
                for lv, m in zip(LEVELS, ("o", "s", "^", "P"))]
    handles += [Line2D([], [], color="0.3", linestyle="-", label="SRAM"),
                Line2D([], [], color="0.3", linestyle=":", label="HBM")]
    right.legend(handles=handles, fontsize=8, ncol=2)
    kbplot.fixed_layout(fig, left=0.06, right=0.98, bottom=0.1, top=0.88, wspace=0.16)  # as in algo_legend
    return fig


def read(path: str) -> tuple[list[Point], str]:
    """The document at `path`, checked whole against its schema: its points, and whether the
    engines agreed."""
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    points = parse(doc, path)
    return points, "identical" if doc["parity"]["ok"] is True else "NOT identical"


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu allreduce sweep (schema "
                             f"{SCHEMA} {SCHEMA_MAJOR}.x.y) as four to six PNG figures.", argv)
    points, ok = read(args.input)
    allreduce = [p for p in points if p.op == "allreduce"]
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_latency(allreduce), os.path.join(out, FIG_LATENCY)),
        (lambda: fig_busbw(allreduce), os.path.join(out, FIG_BUSBW)),
        (lambda: fig_buffers(allreduce), os.path.join(out, FIG_BUFFERS)),
        (lambda: fig_engines(points, ok), os.path.join(out, FIG_ENGINES)),
    ]
    if any(p.op in OWN_OPS and p.level in LEVELS[:3] for p in points):
        figures.append((lambda: fig_ops(points), os.path.join(out, FIG_OPS)))
    if allreduce and all(p.energy_fj is not None for p in allreduce):
        figures.append((lambda: fig_energy(allreduce), os.path.join(out, FIG_ENERGY)))
        figures.append((lambda: fig_energy_buffers(allreduce), os.path.join(out, FIG_ENERGY_BUFFERS)))
    for path in kbplot.save_all_atomic(figures):
        print(f"wrote {path}")


if __name__ == "__main__":
    kbplot.run_main(main)
