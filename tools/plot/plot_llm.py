#!/usr/bin/env python3
"""Plot a kernbench-gpu whole-model inference study (milestone-llm-inference).

Usage:
    plot_llm.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/llm-inference`` document (any schema_version 1.x.y) and writes
five figures into DIR (created if missing):

    llm_decode.png      TPOT and tokens/s against batch at each context, each point
                        under its best mapping, with the memory bound drawn
    llm_prefill.png     TTFT against prompt length, with the compute bound
    llm_breakdown.png   the decode step by kind of kernel at batch 1 and 64 (stacked)
    llm_mappings.png    tokens/s of every (tp, pp) mapping at batch 1 and 64
    llm_design.png      tokens/s against HBM bandwidth per PE array size

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

SCHEMA = "kernbench-gpu/llm-inference"
SCHEMA_MAJOR = 1

KINDS = [("gemm_ps", "GEMMs", "#4c72b0"), ("attention_ps", "attention", "#dd8452"),
         ("vector_ps", "vector kernels", "#55a868"), ("allreduce_ps", "TP allreduces", "#c44e52"),
         ("transfer_ps", "stage transfers", "#8172b2")]


def rows(doc: dict, key: str, where: str, fields: list[str]) -> list[dict]:
    """The rows of one part: each with a status, its listed integer fields, and (when valid)
    the step, tokens/s, the bounds and the time by kind."""
    out = []
    for i, r in enumerate(kbplot.require_list(doc, key, "top level", where)):
        ctx = f"{key}[{i}]"
        kbplot.require_object(r, ctx, where)
        row = {"status": kbplot.require_str(r, "status", ctx, where)}
        for f in fields:
            row[f] = kbplot.require_int(r, f, ctx, where, lo=1, hi=1 << 40)
        m = kbplot.require_dict(r, "mapping", ctx, where)
        row["tp"] = kbplot.require_int(m, "tp", ctx + ".mapping", where, lo=1)
        row["tp_level"] = kbplot.require_choice(m, "tp_level", ctx + ".mapping", where, ["pe", "cube", "sip", "hier"])
        row["tp_algo"] = kbplot.require_str(m, "tp_algo", ctx + ".mapping", where)
        row["pp"] = kbplot.require_int(m, "pp", ctx + ".mapping", where, lo=1)
        row["microbatches"] = kbplot.require_int(m, "microbatches", ctx + ".mapping", where, lo=1)
        if row["status"] == "valid":
            for k in ["step_ps", "compute_bound_ps", "memory_bound_ps"] + [k for k, _, _ in KINDS]:
                row[k] = kbplot.require_int(r, k, ctx, where, lo=0 if k != "step_ps" else 1)
            row["tokens_per_s"] = kbplot.require_real(r, "tokens_per_s", ctx, where)
        out.append(row)
    return out


def label(r: dict) -> str:
    s = f"tp{r['tp']} {r['tp_level']}"
    if r["pp"] > 1:
        s += f" pp{r['pp']}" + (f"x{r['microbatches']}mb" if r["microbatches"] > 1 else "")
    return s


def log2_axis(ax, values) -> None:
    """A base-2 log x axis ticked at exactly `values`, written out."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(values)
    ax.set_xticklabels([str(v) for v in values])
    ax.minorticks_off()


def label_changes(ax, points, x, y, **kw) -> None:
    """Each point's mapping, where it differs from the point before it along the line."""
    last = None
    for r in points:
        if label(r) != last:
            ax.annotate(label(r), (r[x], y(r)), textcoords="offset points", **kw)
        last = label(r)


def fig_decode(decode: list[dict], contexts: list[int]):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
    colors = ["#4c72b0", "#c44e52", "#55a868", "#8172b2"]
    for ci, ctx in enumerate(contexts):
        pts = sorted((r for r in decode if r["context"] == ctx), key=lambda r: r["batch"])
        ok = [r for r in pts if r["status"] == "valid"]
        col = colors[ci % len(colors)]
        if ok:
            a1.plot([r["batch"] for r in ok], [r["step_ps"] / 1e9 for r in ok], marker="o", color=col,
                    label=f"context {ctx}: TPOT (best mapping)")
            a2.plot([r["batch"] for r in ok], [r["tokens_per_s"] for r in ok], marker="o", color=col,
                    label=f"context {ctx}")
            # Labels of alternate contexts on opposite sides of their lines, so that close lines'
            # labels do not overlap.
            below = ci % 2 == 0
            label_changes(a1, ok, "batch", lambda r: r["step_ps"] / 1e9, fontsize=7, xytext=(4, -12 if below else 6),
                          color=col, ha="left")
        a1.plot([r["batch"] for r in pts], [r["memory_bound_ps"] / 1e9 for r in pts], linestyle="--", color=col,
                alpha=0.7, label=f"context {ctx}: memory bound")
        over = [r for r in pts if r["status"] != "valid"]
        if over:
            a2.annotate(f"context {ctx}: batch >= {over[0]['batch']} fits no mapping",
                        (0.02, 0.95 - 0.06 * ci), xycoords="axes fraction", fontsize=8, color=col, va="top")
    batches = sorted({r["batch"] for r in decode})
    for a in (a1, a2):
        log2_axis(a, batches)
        a.set_xlabel("batch (sequences)")
        a.grid(alpha=0.3, which="both")
    a1.set_yscale("log")
    a1.set_ylabel("time per output token (ms, log)")
    a1.set_title("decode step against batch")
    a1.legend(fontsize=7)
    a2.set_yscale("log")
    a2.set_ylabel("tokens/s (log)")
    a2.set_title("decode throughput against batch")
    a2.legend(fontsize=8, loc="lower right")
    fig.suptitle("LLaMA-3.1-70B decode, best mapping per point", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def fig_prefill(prefill: list[dict]):
    fig, ax = kbplot.new_figure()
    ok = sorted((r for r in prefill if r["status"] == "valid"), key=lambda r: r["prompt"])
    if not ok:
        raise InputError("prefill", "no valid point")
    xs = [r["prompt"] for r in ok]
    ax.plot(xs, [r["step_ps"] / 1e12 for r in ok], marker="o", color="#4c72b0", label="TTFT (best mapping)")
    ax.plot(xs, [r["compute_bound_ps"] / 1e12 for r in ok], linestyle="--", color="0.3", label="compute bound")
    ax.plot(xs, [r["attention_ps"] / 1e12 for r in ok], marker=".", color="#dd8452", label="of which attention")
    for r in ok:
        ax.annotate(f"{r['step_ps'] / 1e12:.2f} s, {label(r)}", (r["prompt"], r["step_ps"] / 1e12), fontsize=7,
                    xytext=(4, -10), textcoords="offset points")
    log2_axis(ax, xs)
    ax.set_yscale("log")
    ax.set_xlabel("prompt length (tokens), batch 1")
    ax.set_ylabel("time to first token (s, log)")
    ax.set_title("LLaMA-3.1-70B prefill: time to first token against prompt length")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def fig_breakdown(bars: list[dict]):
    fig, ax = kbplot.new_figure()
    if not bars:
        raise InputError("breakdown", "no valid point")
    x = list(range(len(bars)))
    bottom = [0.0] * len(bars)
    for key, name, color in KINDS:
        vals = [r[key] / 1e9 for r in bars]
        ax.bar(x, vals, bottom=bottom, color=color, label=name, width=0.5)
        for i, v in enumerate(vals):
            if v > 0.04 * sum(r[k] / 1e9 for k, _, _ in KINDS for r in [bars[i]]):
                ax.annotate(f"{v:.2f} ms", (i, bottom[i] + v / 2), ha="center", va="center", fontsize=8, color="white")
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(bars):
        ax.annotate(f"{r['step_ps'] / 1e9:.2f} ms", (i, bottom[i]), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(x)
    ax.set_xticklabels([f"batch {r['batch']}\n{label(r)}, {r['tp_algo']}" for r in bars])
    ax.set_ylabel("ms of the decode step (kernels in turn)")
    ax.set_title("LLaMA-3.1-70B decode step by kind of kernel, context 4096, best mapping")
    ax.set_ylim(top=max(bottom) * 1.12)
    ax.legend(fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def fig_mappings(maps: list[dict]):
    batches = sorted({r["batch"] for r in maps})
    tps = sorted({r["tp"] for r in maps})
    pps = sorted({r["pp"] for r in maps})
    fig, axes = plt.subplots(1, len(batches), figsize=(6.5 * len(batches), 4.6))
    if len(batches) == 1:
        axes = [axes]
    for ax, b in zip(axes, batches):
        grid = [[float("nan")] * len(tps) for _ in pps]
        mine = [r for r in maps if r["batch"] == b]
        vals = [r["tokens_per_s"] for r in mine if r["status"] == "valid"]
        mid = (min(vals) + max(vals)) / 2 if vals else 0
        for r in mine:
            i, j = pps.index(r["pp"]), tps.index(r["tp"])
            ok = r["status"] == "valid"
            grid[i][j] = r["tokens_per_s"] if ok else float("nan")
            mb = f", {r['microbatches']} mb" if ok and r["microbatches"] > 1 else ""
            text = f"{r['tokens_per_s']:.0f} tokens/s\n{r['tp_algo']}{mb}" if ok else r["status"]
            ax.annotate(text, (j, i), ha="center", va="center", fontsize=7,
                        color=("white" if r["tokens_per_s"] < mid else "black") if ok else "0.4")
        im = ax.imshow(grid, cmap="viridis", aspect="auto", alpha=0.85, origin="lower")
        fig.colorbar(im, ax=ax, label="tokens/s")
        ax.set_xticks(range(len(tps)))
        ax.set_xticklabels([str(t) for t in tps])
        ax.set_yticks(range(len(pps)))
        ax.set_yticklabels([str(p) for p in pps])
        ax.set_xlabel("tensor-parallel ranks (cubes of a stage's SIP)")
        ax.set_ylabel("pipeline stages (SIPs)")
        ax.set_title(f"batch {b}, context 4096")
    fig.suptitle("LLaMA-3.1-70B decode tokens/s of every (tp, pp) mapping (best algorithm, case and micro-batches each)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def fig_design(design: list[dict]):
    fig, ax = kbplot.new_figure()
    colors = {16: "#55a868", 32: "#4c72b0", 64: "#c44e52"}
    for arr in sorted({r["matrix"] for r in design}):
        ok = sorted((r for r in design if r["matrix"] == arr and r["status"] == "valid"),
                    key=lambda r: r["hbm_bandwidth_gbps"])
        if not ok:
            continue
        ax.plot([r["hbm_bandwidth_gbps"] for r in ok], [r["tokens_per_s"] for r in ok], marker="o",
                color=colors.get(arr, "0.3"), label=f"{arr}x{arr} PE arrays")
        label_changes(ax, ok, "hbm_bandwidth_gbps", lambda r: r["tokens_per_s"], fontsize=7, xytext=(3, -10))
    log2_axis(ax, sorted({r["hbm_bandwidth_gbps"] for r in design}))
    ax.set_yscale("log")
    ax.set_xlabel("HBM bandwidth per cube (GB/s)")
    ax.set_ylabel("tokens/s (log)")
    ax.set_title("LLaMA-3.1-70B decode, batch 64, context 4096: tokens/s against HBM bandwidth and array size")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def read(path: str):
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    contexts = kbplot.require_list(doc, "context_values", "top level", path)
    decode = rows(doc, "decode", path, ["batch", "context"])
    for i, r in enumerate(doc["decode"]):
        r_ = decode[i]
        r_["memory_bound_ps"] = kbplot.require_int(r, "memory_bound_ps", f"decode[{i}]", path, lo=1)
    prefill = rows(doc, "prefill", path, ["prompt"])
    bars = [r for r in rows(doc, "breakdown", path, ["batch", "context"]) if r["status"] == "valid"]
    maps = rows(doc, "mappings", path, ["batch"])
    design = rows(doc, "design", path, ["hbm_bandwidth_gbps", "matrix"])
    # Figures that would be empty: the document is refused before anything is drawn.
    if not any(r["status"] == "valid" for r in prefill):
        raise InputError(path, "prefill: no valid point (no prompt length fits the machine): nothing to draw")
    if not bars:
        raise InputError(path, "breakdown: no valid point: nothing to draw")
    return contexts, decode, prefill, bars, maps, design


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu whole-model inference study (schema "
                             f"{SCHEMA} {SCHEMA_MAJOR}.x.y) as five PNG figures.", argv)
    contexts, decode, prefill, bars, maps, design = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_decode(decode, contexts), os.path.join(out, "llm_decode.png")),
        (lambda: fig_prefill(prefill), os.path.join(out, "llm_prefill.png")),
        (lambda: fig_breakdown(bars), os.path.join(out, "llm_breakdown.png")),
        (lambda: fig_mappings(maps), os.path.join(out, "llm_mappings.png")),
        (lambda: fig_design(design), os.path.join(out, "llm_design.png")),
    ]
    for p in kbplot.save_all_atomic(figures):
        print(f"wrote {p}")


if __name__ == "__main__":
    kbplot.run_main(main)
