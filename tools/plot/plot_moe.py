#!/usr/bin/env python3
"""Plot a kernbench-gpu mixture-of-experts inference study (milestone-moe-inference).

Usage:
    plot_moe.py --in FILE.json --out DIR

Reads a ``kernbench-gpu/moe-inference`` document (any schema_version 1.x.y) and writes
five figures into DIR (created if missing):

    moe_decode.png      decode tokens/s per SIP against tokens/s per user (a batch sweep),
                        one line per serving strategy, one panel per model
    moe_breakdown.png   the decode step's shares by kind of kernel at batch 64, per model and strategy
    moe_skew.png        TPOT against routing skew, per count of redundant experts
    moe_bandwidth.png   the dispatch's bandwidth a rank against a micro-batch's tokens, per link level, with
                        each level's link rate
    moe_prefill.png     TTFT against prompt length

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

SCHEMA = "kernbench-gpu/moe-inference"
SCHEMA_MAJOR = 1

STRATEGIES = {"ep-cube": ("EP inside a SIP (over cubes)", "#4c72b0"),
              "ep-sip": ("EP across SIPs", "#c44e52"),
              "tp": ("tensor-parallel attention", "#55a868")}
KINDS = [("expert_ps", "routed experts", "#4c72b0"), ("dispatch_ps", "dispatch", "#dd8452"),
         ("combine_ps", "combine", "#c44e52"), ("attention_ps", "attention", "#8172b2"),
         ("gemm_ps", "other GEMMs", "#55a868"), ("vector_ps", "vector kernels", "#937860"),
         ("allreduce_ps", "TP allreduces", "#da8bc3"), ("transfer_ps", "stage transfers", "#8c8c8c")]


def rows(doc: dict, key: str, where: str, ints: list[str], reals: list[str]) -> list[dict]:
    """The rows of one part: model, strategy and status; when valid, the listed figures."""
    out = []
    for i, r in enumerate(kbplot.require_list(doc, key, "top level", where)):
        ctx = f"{key}[{i}]"
        kbplot.require_object(r, ctx, where)
        row = {"model": kbplot.require_str(r, "model", ctx, where),
               "strategy": kbplot.require_choice(r, "strategy", ctx, where, list(STRATEGIES)),
               "status": kbplot.require_str(r, "status", ctx, where)}
        if row["status"] == "valid":
            for f in ints:
                row[f] = kbplot.require_int(r, f, ctx, where, lo=1 if f in ("step_ps", "batch", "prompt") else 0)
            for f in reals:
                row[f] = kbplot.require_real(r, f, ctx, where)
        out.append(row)
    return out


def models_of(rs: list[dict]) -> list[str]:
    seen = []
    for r in rs:
        if r["model"] not in seen:
            seen.append(r["model"])
    return seen


def fig_decode(decode: list[dict]):
    models = models_of(decode)
    fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 4.8), squeeze=False)
    for ax, model in zip(axes[0], models):
        for s, (label, color) in STRATEGIES.items():
            ok = sorted((r for r in decode if r["model"] == model and r["strategy"] == s and r["status"] == "valid"),
                        key=lambda r: r["batch"])
            if not ok:
                continue
            xs = [r["tokens_per_s_per_user"] for r in ok]
            ys = [r["tokens_per_s_per_sip"] for r in ok]
            ax.plot(xs, ys, marker="o", color=color, label=label)
            for r, x, y in zip(ok, xs, ys):
                ax.annotate(str(r["batch"]), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7, color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens/s per user (1 / TPOT, log)")
        ax.set_ylabel("tokens/s per SIP used (log)")
        ax.set_title(f"{model}: decode, context 4096 (labels: batch)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle("Throughput against interactivity on ring8, each point under its strategy's best mapping", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def fig_breakdown(decode: list[dict]):
    bars = [r for r in decode if r["status"] == "valid" and r["batch"] == 64]
    fig, ax = kbplot.new_figure((9.5, 4.8))
    labels = [f"{r['model']}\n{r['strategy']}" for r in bars]
    bottom = [0.0] * len(bars)
    for key, label, color in KINDS:
        vals = [100.0 * r[key] / r["step_ps"] for r in bars]
        ax.bar(range(len(bars)), vals, bottom=bottom, color=color, label=label, width=0.6)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(bars):
        ax.annotate(f"{r['step_ps'] / 1e9:.1f} ms", (i, bottom[i]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of the decode step (critical path by kind)")
    ax.set_title("Decode step at batch 64 by kind of kernel (labels: TPOT)")
    ax.legend(fontsize=7, ncol=4, loc="upper center")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def fig_skew(skew: list[dict], skews: list[str]):
    models = models_of(skew)
    fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 4.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        mine = [r for r in skew if r["model"] == model and r["status"] == "valid"]
        counts = sorted({r["redundant_experts"] for r in mine})
        width = 0.8 / max(1, len(counts))
        for j, n in enumerate(counts):
            for i, sk in enumerate(skews):
                hit = [r for r in mine if r["redundant_experts"] == n and r["routing"] == sk]
                if not hit:
                    continue
                r = hit[0]
                x = i + (j - (len(counts) - 1) / 2) * width
                ax.bar(x, r["step_ps"] / 1e9, width=width * 0.95, color=plt.cm.viridis(j / max(1, len(counts) - 1) * 0.8),
                       label=f"{n} redundant experts" if i == 0 else None)
                ax.annotate(f"{r['load_imbalance']:.2f}", (x, r["step_ps"] / 1e9), textcoords="offset points",
                            xytext=(0, 2), ha="center", fontsize=6)
        ax.set_xticks(range(len(skews)))
        ax.set_xticklabels(skews)
        ax.set_xlabel("routing (zipf:ALPHA: expert popularity 1 / rank^ALPHA)")
        ax.set_ylabel("TPOT (ms)")
        ax.set_title(f"{model}: EP across SIPs, batch 128 (labels: load imbalance)")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("The cost of routing skew, and what redundant experts (EPLB) recover", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def fig_bandwidth(bw: list[dict]):
    models = models_of(bw)
    fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 4.9), squeeze=False)
    colors = {"cube": "#4c72b0", "sip": "#c44e52"}
    for ax, model in zip(axes[0], models):
        for level, color in colors.items():
            ok = sorted((r for r in bw if r["model"] == model and r["level"] == level), key=lambda r: r["tokens"])
            if not ok:
                continue
            ax.plot([r["tokens"] for r in ok], [r["dispatch_algbw_gbps"] for r in ok], marker="o", color=color,
                    label=f"dispatch, ranks over {level}s")
            ax.plot([r["tokens"] for r in ok], [r["combine_algbw_gbps"] for r in ok], marker="x", linestyle=":",
                    color=color, label=f"combine, ranks over {level}s")
            ax.axhline(ok[0]["link_gbps"], color=color, linestyle="--", alpha=0.6, linewidth=1)
            ax.annotate(f"one {level} link: {ok[0]['link_gbps']} GB/s", (ok[0]["tokens"], ok[0]["link_gbps"]),
                        textcoords="offset points", xytext=(2, 3), fontsize=7, color=color)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, None)
        ax.set_xlabel("tokens a micro-batch (log2)")
        ax.set_ylabel("GB/s a rank (its bytes / the all-to-all's time)")
        ax.set_title(f"{model}: expert-parallel all-to-alls of one layer")
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle("Dispatch and combine bandwidth against each level's link rate (8 ranks, each point's decode mapping)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.94))
    return fig


def fig_prefill(prefill: list[dict]):
    fig, ax = kbplot.new_figure()
    for model, color in zip(models_of(prefill), ["#c44e52", "#4c72b0", "#55a868"]):
        ok = sorted((r for r in prefill if r["model"] == model and r["status"] == "valid"), key=lambda r: r["prompt"])
        if not ok:
            continue
        ax.plot([r["prompt"] for r in ok], [r["step_ps"] / 1e9 for r in ok], marker="o", color=color, label=model)
        for r in ok:
            ax.annotate(r["strategy"], (r["prompt"], r["step_ps"] / 1e9), textcoords="offset points", xytext=(3, -10),
                        fontsize=6, color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens (8 prompts, log2)")
    ax.set_ylabel("TTFT (ms, log)")
    ax.set_title("Prefill time to first token against prompt length (best strategy and mapping)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def read(path: str):
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    skews = [str(s) for s in kbplot.require_list(doc, "skews", "top level", path)]
    figures = ["step_ps"] + [k for k, _, _ in KINDS]
    decode = rows(doc, "decode", path, ["batch"] + figures, ["tokens_per_s_per_sip", "tokens_per_s_per_user"])
    skew = rows(doc, "skew", path, ["batch", "redundant_experts", "step_ps"], ["load_imbalance"])
    for i, r in enumerate(doc["skew"]):
        skew[i]["routing"] = kbplot.require_str(r, "routing", f"skew[{i}]", path)
    prefill = rows(doc, "prefill", path, ["prompt", "step_ps"], [])
    bw = []
    for i, r in enumerate(kbplot.require_list(doc, "bandwidth", "top level", path)):
        ctx = f"bandwidth[{i}]"
        kbplot.require_object(r, ctx, path)
        bw.append({"model": kbplot.require_str(r, "model", ctx, path),
                   "level": kbplot.require_choice(r, "level", ctx, path, ["pe", "cube", "sip", "hier"]),
                   "tokens": kbplot.require_int(r, "tokens", ctx, path, lo=1),
                   "link_gbps": kbplot.require_int(r, "link_gbps", ctx, path, lo=1),
                   "dispatch_algbw_gbps": kbplot.require_real(r, "dispatch_algbw_gbps", ctx, path),
                   "combine_algbw_gbps": kbplot.require_real(r, "combine_algbw_gbps", ctx, path)})
    if not any(r["status"] == "valid" for r in decode):
        raise InputError(path, "decode: no valid point (no mapping fits the machine): nothing to draw")
    if not bw:
        raise InputError(path, "bandwidth: no row (no expert-parallel decode point fits): nothing to draw")
    return skews, decode, skew, bw, prefill


def main(argv=None) -> None:
    args = kbplot.parse_args("Plot a kernbench-gpu mixture-of-experts inference study (schema "
                             f"{SCHEMA} {SCHEMA_MAJOR}.x.y) as five PNG figures.", argv)
    skews, decode, skew, bw, prefill = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_decode(decode), os.path.join(out, "moe_decode.png")),
        (lambda: fig_breakdown(decode), os.path.join(out, "moe_breakdown.png")),
        (lambda: fig_skew(skew, skews), os.path.join(out, "moe_skew.png")),
        (lambda: fig_bandwidth(bw), os.path.join(out, "moe_bandwidth.png")),
        (lambda: fig_prefill(prefill), os.path.join(out, "moe_prefill.png")),
    ]
    for p in kbplot.save_all_atomic(figures):
        print(f"wrote {p}")


if __name__ == "__main__":
    kbplot.run_main(main)
