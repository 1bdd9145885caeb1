#!/usr/bin/env python3
"""Plot a kernbench-gpu GEMM sweep.

Usage:
    plot_gemm.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/gemm-sweep`` document (any schema_version 1.x.y) and
writes three figures into DIR (created if missing), and two more when the document has
energy columns (1.4.0 on):

    gemm_latency_vs_roofline.png  simulated latency per shape and variant (log
                                  scale, microseconds) with each config's
                                  roofline bound marked on its bar
    gemm_mac_util.png             MAC utilisation (percent) per shape and variant
    gemm_roofline.png             achieved TFLOP/s against arithmetic intensity,
                                  with the roof min(peak, intensity x bandwidth)
                                  of each distinct variant
    gemm_energy.png               energy per MAC (pJ) per shape and variant, by
                                  component (matrix, SRAM, HBM, links, static)
    gemm_pj_per_mac_vs_tile.png   energy per MAC against the tile side (the
                                  document's tile_energy series), by component

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

import numpy as np  # noqa: E402
import matplotlib.transforms as mtransforms  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

SCHEMA = "kernbench-gpu/gemm-sweep"
SCHEMA_MAJOR = 1

FIG_LATENCY = "gemm_latency_vs_roofline.png"
FIG_UTIL = "gemm_mac_util.png"
FIG_ROOFLINE = "gemm_roofline.png"
FIG_ENERGY = "gemm_energy.png"
FIG_TILE = "gemm_pj_per_mac_vs_tile.png"

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3))]


@dataclass
class Config:
    shape: str
    variant: str
    latency_ps: float
    roofline_ps: float
    mac_util: float
    intensity: float
    achieved_tflops: float
    peak_tflops: float
    hbm_gbps: float
    macs: int = 0
    energy: dict | None = None  # kbplot.energy_of: the parts in fJ, or None


@dataclass
class TilePoint:
    tile: int
    macs: int
    energy: dict
    parity: bool = False  # both engines ran it and agree


@dataclass
class Shape:
    name: str
    m: int | None = None
    n: int | None = None
    k: int | None = None


@dataclass
class Variant:
    name: str
    pes: int | None = None
    cubes: int | None = None
    buffers: int | None = None


@dataclass
class Sweep:
    shapes: list[Shape]
    variants: list[Variant]
    configs: dict[tuple[str, str], Config]
    subtitle: str
    tiles: list[TilePoint]
    tile_shape: str = ""
    topology: str = ""


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------

def parse_sweep(doc: dict, where: str) -> Sweep:
    """Check the document against its schema and return what the plots need, in order.

    ``topology`` names the machine; ``shapes`` and ``variants`` are non-empty lists of
    uniquely named entries; every config names a listed shape and variant (at most once
    each pair), and its figures are integers (picoseconds) and finite reals within their
    meaning: a roofline between 1 ps and the latency, a MAC utilisation in 0..1, achieved
    TFLOP/s up to the peak.  Shapes and variants are drawn in the order listed; those no
    config uses are left out.
    """
    kbplot.require_topology(doc, where)

    def named(key: str, what: str, make) -> dict:
        """A non-empty list of uniquely named objects, each made into `make(ctx, obj, name)`."""
        out: dict = {}
        for i, obj in enumerate(kbplot.require_list(doc, key, "top level", where)):
            ctx = f"{key}[{i}]"
            kbplot.require_object(obj, ctx, where)
            name = kbplot.require_str(obj, "name", ctx, where)
            if name in out:
                raise InputError(where, f'{ctx}: duplicate {what} name "{name}"')
            out[name] = make(ctx, obj, name)
        return out

    def integer(obj: dict, ctx: str, key: str, hi: int) -> int:
        return kbplot.require_int(obj, key, ctx, where, lo=1, hi=hi)

    shapes: dict[str, Shape] = named("shapes", "shape", lambda ctx, s, name: Shape(
        name, *(integer(s, ctx, d, 1 << 40) for d in ("m", "n", "k"))))
    variants: dict[str, Variant] = named("variants", "variant", lambda ctx, v, name: Variant(
        name, integer(v, ctx, "pes", 4096), integer(v, ctx, "cubes", 4096), integer(v, ctx, "buffers", 2)))

    configs: dict[tuple[str, str], Config] = {}
    for i, c in enumerate(kbplot.require_list(doc, "configs", "top level", where)):
        ctx = f"configs[{i}]"
        kbplot.require_object(c, ctx, where)
        shape = kbplot.require_str(c, "shape", ctx, where)
        variant = kbplot.require_str(c, "variant", ctx, where)
        if shape not in shapes:
            raise InputError(where, f'{ctx}: shape "{shape}" is not one of the document\'s shapes')
        if variant not in variants:
            raise InputError(where, f'{ctx}: variant "{variant}" is not one of the document\'s variants')
        ctx = f'configs[{i}] ({shape}/{variant})'
        sh = shapes[shape]
        for d, want in (("m", sh.m), ("n", sh.n), ("k", sh.k)):
            if d in c and kbplot.require_int(c, d, ctx, where, lo=1, hi=1 << 40) != want:
                raise InputError(where, f'{ctx}: "{d}" is {c[d]}, but shape "{shape}" has {want}')
        latency = kbplot.require_int(c, "latency_ps", ctx, where, lo=1)
        peak = kbplot.require_real(c, "peak_tflops", ctx, where, hi=1e9, positive=True)
        cfg = Config(
            shape=shape,
            variant=variant,
            latency_ps=latency,
            roofline_ps=kbplot.require_int(c, "roofline_ps", ctx, where, lo=1, hi=latency),
            mac_util=kbplot.require_real(c, "mac_util", ctx, where, hi=1.0),
            intensity=kbplot.require_real(c, "arithmetic_intensity", ctx, where, positive=True),
            achieved_tflops=kbplot.require_real(c, "achieved_tflops", ctx, where, hi=peak * (1 + 1e-9), positive=True),
            peak_tflops=peak,
            hbm_gbps=kbplot.require_real(c, "hbm_gbps", ctx, where, hi=1e9, positive=True),
        )
        cfg.energy = kbplot.energy_of(c, ctx, where)
        if cfg.energy is not None:  # the energy figures' denominator
            cfg.macs = kbplot.require_int(c, "macs", ctx, where, lo=1)
        if (shape, variant) in configs:
            raise InputError(where, f"{ctx}: duplicate config for this shape and variant")
        configs[(shape, variant)] = cfg

    tiles: list[TilePoint] = []
    tile_shape = ""
    for i, t in enumerate(kbplot.require_list(doc, "tile_energy", "top level", where) if "tile_energy" in doc else []):
        ctx = f"tile_energy[{i}]"
        kbplot.require_object(t, ctx, where)
        e = kbplot.energy_of(t, ctx, where)
        if e is None:
            continue  # its energy overflowed: no point to draw
        tile = kbplot.require_int(t, "tile", ctx, where, lo=1, hi=1 << 40)
        if tiles and tile <= tiles[-1].tile:
            raise InputError(where, f'{ctx}: tile {tile} after {tiles[-1].tile}: expected increasing tiles')
        dims = tuple(kbplot.require_int(t, d, ctx, where, lo=1, hi=1 << 40) for d in ("m", "n", "k"))
        shape = f"M = N = K = {dims[0]}" if len(set(dims)) == 1 else f"{dims[0]} x {dims[1]} x {dims[2]}"
        if tile_shape and shape != tile_shape:
            raise InputError(where, f"{ctx}: {shape}, but the series began with {tile_shape}")
        tile_shape = shape
        tiles.append(TilePoint(tile, kbplot.require_int(t, "macs", ctx, where, lo=1), e, t.get("parity") is True))

    used_s = {s for s, _ in configs}
    used_v = {v for _, v in configs}
    return Sweep(
        shapes=[s for n, s in shapes.items() if n in used_s],
        variants=[v for n, v in variants.items() if n in used_v],
        configs=configs,
        subtitle=_subtitle(doc, len(configs)),
        tiles=tiles,
        tile_shape=tile_shape,
        topology=_topology_label(doc),
    )


def _topology_label(doc: dict) -> str:
    topo = doc.get("topology")
    if not isinstance(topo, dict) or not isinstance(topo.get("name"), str):
        return ""
    t = f'topology {topo["name"]}'
    if isinstance(topo.get("hash"), str) and topo["hash"]:
        t += f' ({topo["hash"][:12]})'
    return t


def _subtitle(doc: dict, nconfigs: int) -> str:
    parts = []
    if isinstance(doc.get("bench"), str):
        parts.append(doc["bench"])
    if _topology_label(doc):
        parts.append(_topology_label(doc))
    if isinstance(doc.get("backend"), str):
        parts.append(f'backend {doc["backend"]}')
    parts.append(f"{nconfigs} configs")
    par = doc.get("parity")
    if isinstance(par, dict) and isinstance(par.get("checked"), int) and not isinstance(par.get("checked"), bool):
        mism = par.get("mismatches")
        if isinstance(mism, int) and not isinstance(mism, bool):
            ok = "ok" if mism == 0 else "FAILED"
            parts.append(f'parity {ok}: {par["checked"]} checked, {mism} mismatches')
    return "  \u00b7  ".join(parts)


# --------------------------------------------------------------------------
# Shared drawing helpers
# --------------------------------------------------------------------------

def _shape_label(s: Shape) -> str:
    if s.m is not None and s.n is not None and s.k is not None:
        return f"{s.name}\n{s.m}\u00d7{s.n}\u00d7{s.k}"
    return s.name


def _variant_label(v: Variant) -> str:
    bits = []
    if v.pes is not None:
        bits.append(f"{v.pes} PE" + ("s" if v.pes != 1 else ""))
    if v.cubes is not None:
        bits.append(f"{v.cubes} cube" + ("s" if v.cubes != 1 else ""))
    if v.buffers is not None:
        bits.append({1: "single-buf", 2: "double-buf"}.get(v.buffers, f"{v.buffers} bufs"))
    return f"{v.name} ({', '.join(bits)})" if bits else v.name


def _variant_colours(n: int):
    cmap = plt.get_cmap("viridis")
    if n == 1:
        return [cmap(0.35)]
    return [cmap(0.12 + 0.72 * i / (n - 1)) for i in range(n)]


def _shape_colours(n: int):
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def _titles(fig, ax, title: str, sweep: Sweep) -> None:
    ax.set_title(sweep.subtitle, fontsize=8.5, color="0.35", pad=6)
    fig.suptitle(title, fontsize=13, fontweight="bold")


def _setup_shape_axis(fig, ax, sweep: Sweep) -> None:
    labels = [_shape_label(s) for s in sweep.shapes]
    x = np.arange(len(labels))
    ax.set_xticks(x)
    # Rough fit test: ~0.075 in per character at 9 pt against the group width.
    longest = max(len(line) for lab in labels for line in lab.split("\n"))
    group_in = 8.0 / max(1, len(labels))
    if longest * 0.075 > 0.95 * group_in:
        ax.set_xticklabels(labels, rotation=30, ha="right", rotation_mode="anchor", fontsize=8.5)
    else:
        ax.set_xticklabels(labels, fontsize=9)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_xlabel("GEMM shape (M\u00d7N\u00d7K)")
    ax.tick_params(axis="x", length=0)


def _bar_geometry(nvar: int):
    group = 0.82
    width = group / max(1, nvar)
    offsets = [(-group / 2 + width * (j + 0.5)) for j in range(nvar)]
    return width, offsets


def _legend_right(ax, handles=None, labels=None, **kw):
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     borderaxespad=0.0, fontsize=8.5, frameon=True, **kw)


def _us_formatter(v, _pos):
    if v <= 0:
        return ""
    if v >= 1:
        return f"{v:,.0f}"
    return f"{v:g}"


# --------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------

def fig_latency(sweep: Sweep):
    fig, ax = kbplot.new_figure()
    nvar = len(sweep.variants)
    width, offsets = _bar_geometry(nvar)
    colours = _variant_colours(nvar)
    show_ratio = len(sweep.shapes) * nvar <= 40

    ys = []
    roof_drawn = False
    for j, v in enumerate(sweep.variants):
        xs, lat, roofs = [], [], []
        for i, s in enumerate(sweep.shapes):
            c = sweep.configs.get((s.name, v.name))
            if c is None:
                continue
            xs.append(i + offsets[j])
            lat.append(c.latency_ps / 1e6)
            roofs.append(c.roofline_ps / 1e6)
        if not xs:
            continue
        ax.bar(xs, lat, width * 0.92, color=colours[j], label=_variant_label(v),
               edgecolor="white", linewidth=0.5, zorder=2)
        ys += lat
        for x, l, r in zip(xs, lat, roofs):
            if r <= 0:
                continue
            ys.append(r)
            ax.hlines(r, x - width * 0.46, x + width * 0.46, colors="#d62728", linewidth=2.2,
                      zorder=3, label=None if roof_drawn else "roofline bound of that config")
            roof_drawn = True
            if show_ratio:
                ax.annotate(f"{l / r:.2f}\u00d7", (x, max(l, r)), xytext=(0, 3),
                            textcoords="offset points", ha="center", va="bottom",
                            rotation=90, fontsize=7, color="0.25", zorder=4)

    ax.set_yscale("log")
    lo, hi = min(ys), max(ys)
    ax.set_ylim(lo / 3, hi * (12 if show_ratio else 3))  # headroom for the ratio labels
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(_us_formatter))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("latency (\u00b5s, log scale)")
    ax.grid(axis="y", which="major", color="0.85", zorder=0)
    ax.grid(axis="y", which="minor", color="0.94", zorder=0)
    ax.set_axisbelow(True)
    _setup_shape_axis(fig, ax, sweep)
    title = "GEMM simulated latency vs roofline bound"
    if show_ratio:
        title += " (labels: latency / roofline)"
    _titles(fig, ax, title, sweep)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: handles[i].__class__.__name__ == "LineCollection")
    _legend_right(ax, [handles[i] for i in order], [labels[i] for i in order], title="variant")
    fig.tight_layout()
    return fig


def fig_util(sweep: Sweep):
    fig, ax = kbplot.new_figure()
    nvar = len(sweep.variants)
    width, offsets = _bar_geometry(nvar)
    colours = _variant_colours(nvar)
    show_vals = len(sweep.shapes) * nvar <= 40

    top = 0.0
    for j, v in enumerate(sweep.variants):
        xs, ut = [], []
        for i, s in enumerate(sweep.shapes):
            c = sweep.configs.get((s.name, v.name))
            if c is None:
                continue
            xs.append(i + offsets[j])
            ut.append(c.mac_util * 100.0)
        if not xs:
            continue
        ax.bar(xs, ut, width * 0.92, color=colours[j], label=_variant_label(v),
               edgecolor="white", linewidth=0.5, zorder=2)
        top = max(top, max(ut))
        if show_vals:
            for x, u in zip(xs, ut):
                ax.annotate(f"{u:.0f}" if u >= 10 else f"{u:.1f}", (x, u), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom",
                            fontsize=7, color="0.25")

    ax.axhline(100, color="0.3", linewidth=1, linestyle="--", zorder=1)
    ax.set_ylim(0, max(100.0, top) * 1.1)
    ax.set_ylabel("MAC utilisation (% of peak MAC cycles)")
    ax.grid(axis="y", color="0.88", zorder=0)
    ax.set_axisbelow(True)
    _setup_shape_axis(fig, ax, sweep)
    _titles(fig, ax, "GEMM MAC utilisation per shape and variant", sweep)
    _legend_right(ax, title="variant")
    fig.tight_layout()
    return fig


def has_energy(sweep: Sweep) -> bool:
    return all(c.energy is not None for c in sweep.configs.values())


def fig_energy(sweep: Sweep):
    """pJ per MAC per shape and variant, each bar stacked by the parts of its energy."""
    fig, ax = kbplot.new_figure()
    nvar = len(sweep.variants)
    width, offsets = _bar_geometry(nvar)
    top = 0.0
    for j, v in enumerate(sweep.variants):
        for i, s in enumerate(sweep.shapes):
            c = sweep.configs.get((s.name, v.name))
            if c is None:
                continue
            base = 0.0
            for key, label, colour in kbplot.ENERGY_PARTS:
                pj = c.energy[key] / 1000.0 / c.macs
                if pj > 0:
                    ax.bar(i + offsets[j], pj, width * 0.92, bottom=base, color=colour,
                           edgecolor="white", linewidth=0.4, zorder=2)
                base += pj
            top = max(top, base)
            ax.annotate(str(j + 1), (i + offsets[j], base), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=6, color="0.3")
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("energy per MAC (pJ)")
    ax.grid(axis="y", color="0.88", zorder=0)
    ax.set_axisbelow(True)
    _setup_shape_axis(fig, ax, sweep)
    _titles(fig, ax, "GEMM energy per MAC by component, per shape and variant", sweep)
    handles = [Patch(color=colour, label=label) for _, label, colour in reversed(kbplot.ENERGY_PARTS)]
    handles += [Patch(color="white", label=f"{j + 1}: {_variant_label(v)}") for j, v in enumerate(sweep.variants)]
    _legend_right(ax, handles=handles, labels=[h.get_label() for h in handles], title="component; bar number = variant")
    fig.tight_layout()
    return fig


def fig_tile(sweep: Sweep):
    """pJ per MAC against the tile side: the total, its dynamic part, and each part alone."""
    fig, ax = kbplot.new_figure()
    xs = [t.tile for t in sweep.tiles]
    per_mac = lambda key: [t.energy[key] / 1000.0 / t.macs for t in sweep.tiles]  # noqa: E731
    total = per_mac("energy_fj")
    dynamic = [(t.energy["energy_fj"] - t.energy["energy_static_fj"]) / 1000.0 / t.macs for t in sweep.tiles]
    ax.plot(xs, total, color="black", marker="o", linewidth=2.0, label="total", zorder=4)
    ax.plot(xs, dynamic, color="black", marker="o", linewidth=1.2, linestyle="--", label="dynamic (all but static)", zorder=4)
    for key, label, colour in kbplot.ENERGY_PARTS:
        ys = per_mac(key)
        if max(ys) > 0:
            ax.plot(xs, ys, color=colour, marker="s", markersize=4, linewidth=1.2, label=label, zorder=3)
    for x, t, d in zip(xs, total, dynamic):
        ax.annotate(f"{t:.1f}", (x, t), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7.5)
        ax.annotate(f"{d:.2f}", (x, d), xytext=(0, -11), textcoords="offset points", ha="center", fontsize=7.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_yscale("log")
    ax.set_xlabel("square tile side (tile_m = tile_n = tile_k)")
    ax.set_ylabel("energy per MAC (pJ, log scale)")
    ax.grid(color="0.9", which="both", zorder=0)
    ax.set_axisbelow(True)
    fig.suptitle("GEMM energy per MAC against tile size", fontsize=13, fontweight="bold")
    agree = "both engines agree on every point" if all(t.parity for t in sweep.tiles) else "batched model"
    ax.set_title(f"{sweep.tile_shape} on one double-buffered PE  \u00b7  {sweep.topology}  \u00b7  {agree}",
                 fontsize=8.5, color="0.35", pad=6)
    _legend_right(ax, title="energy per MAC")
    fig.tight_layout()
    return fig


def _fmt_num(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def fig_roofline(sweep: Sweep):
    fig, ax = kbplot.new_figure()
    scol = _shape_colours(len(sweep.shapes))
    shape_idx = {s.name: i for i, s in enumerate(sweep.shapes)}
    var_idx = {v.name: j for j, v in enumerate(sweep.variants)}

    # Distinct roofs, in variant order, each with the variants sharing it.
    roofs: dict[tuple[float, float], list[str]] = {}
    for v in sweep.variants:
        for s in sweep.shapes:
            c = sweep.configs.get((s.name, v.name))
            if c is None:
                continue
            key = (round(c.peak_tflops, 9), round(c.hbm_gbps, 9))
            names = roofs.setdefault(key, [])
            if v.name not in names:
                names.append(v.name)

    xs = [c.intensity for c in sweep.configs.values()]
    ys = [c.achieved_tflops for c in sweep.configs.values()]
    ridges = [peak * 1000.0 / bw for peak, bw in roofs]  # flop/byte where roof bends
    xlo = min(xs + ridges) / 3
    xhi = max(xs + ridges) * 3
    ylo = min(ys + [xlo * bw / 1000.0 for _, bw in roofs]) / 2
    ylo = max(ylo, min(ys) / 10)
    yhi = max(peak for peak, _ in roofs) * 2.5

    grid = np.logspace(np.log10(xlo), np.log10(xhi), 400)
    roof_handles = []
    for r, ((peak, bw), names) in enumerate(roofs.items()):
        ls = LINESTYLES[r % len(LINESTYLES)]
        ax.plot(grid, np.minimum(peak, grid * bw / 1000.0), color="0.25", linestyle=ls,
                linewidth=1.4, zorder=1)
        label = f"{', '.join(names)}: {_fmt_num(peak)} TFLOP/s, {_fmt_num(bw)} GB/s"
        roof_handles.append(Line2D([], [], color="0.25", linestyle=ls, linewidth=1.4, label=label))

    # Points that would sit on top of each other (e.g. two prefill shapes with
    # the same intensity and throughput) are dodged sideways by a few points
    # in display space so every config stays visible; data values are unchanged.
    placed: list[tuple[float, float]] = []
    for c in sweep.configs.values():
        i, j = shape_idx[c.shape], var_idx[c.variant]
        lx, ly = np.log10(c.intensity), np.log10(c.achieved_tflops)
        n_close = sum(1 for px, py in placed if abs(px - lx) < 0.03 and abs(py - ly) < 0.03)
        placed.append((lx, ly))
        dodge = 0.0 if n_close == 0 else 9.0 * ((n_close + 1) // 2) * (1 if n_close % 2 else -1)
        trans = mtransforms.offset_copy(ax.transData, fig=fig, x=dodge, y=0, units="points")
        ax.scatter(c.intensity, c.achieved_tflops, s=60, color=scol[i],
                   marker=MARKERS[j % len(MARKERS)], edgecolors="black", linewidths=0.6,
                   alpha=0.9, zorder=3, transform=trans)

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xlo, xhi)
    ax.set_ylim(ylo, yhi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte read+written, log scale)")
    ax.set_ylabel("achieved throughput (TFLOP/s, log scale)")
    ax.grid(which="major", color="0.85", zorder=0)
    ax.grid(which="minor", color="0.95", zorder=0)
    ax.set_axisbelow(True)

    blank = Patch(visible=False)
    handles, labels, headers = [], [], set()

    def header(text):
        handles.append(blank)
        labels.append(text)
        headers.add(len(labels) - 1)

    header("shape (colour)")
    for i, s in enumerate(sweep.shapes):
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=7,
                              markerfacecolor=scol[i], markeredgecolor="black",
                              markeredgewidth=0.6))
        labels.append(s.name)
    header("variant (marker)")
    for j, v in enumerate(sweep.variants):
        handles.append(Line2D([], [], linestyle="none", marker=MARKERS[j % len(MARKERS)],
                              markersize=7, markerfacecolor="0.8", markeredgecolor="black",
                              markeredgewidth=0.6))
        labels.append(_variant_label(v))
    header("roof: min(peak, intensity \u00d7 HBM bandwidth)")
    for h in roof_handles:
        handles.append(h)
        labels.append(h.get_label())

    leg = _legend_right(ax, handles, labels, handlelength=2.6)
    for idx, text in enumerate(leg.get_texts()):
        if idx in headers:
            text.set_fontweight("bold")
            text.set_x(-28)  # headers flush with the handle column

    _titles(fig, ax, "GEMM roofline: achieved throughput vs arithmetic intensity", sweep)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------

def read(path: str) -> Sweep:
    """The document at `path`, checked whole against its schema: what the figures draw."""
    return parse_sweep(kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR), path)


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu GEMM sweep (schema "
                             f"{SCHEMA} {SCHEMA_MAJOR}.x.y) as three to five PNG figures.", argv)
    sweep = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_latency(sweep), os.path.join(out, FIG_LATENCY)),
        (lambda: fig_util(sweep), os.path.join(out, FIG_UTIL)),
        (lambda: fig_roofline(sweep), os.path.join(out, FIG_ROOFLINE)),
    ]
    if has_energy(sweep):
        figures.append((lambda: fig_energy(sweep), os.path.join(out, FIG_ENERGY)))
    if sweep.tiles:
        figures.append((lambda: fig_tile(sweep), os.path.join(out, FIG_TILE)))
    for path in kbplot.save_all_atomic(figures):
        print(f"wrote {path}")


if __name__ == "__main__":
    kbplot.run_main(main)
