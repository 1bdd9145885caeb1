#!/usr/bin/env python3
"""Plot a kernbench-gpu serving run (`kernbench-gpu serve --out DIR`).

Usage:
    plot_serve.py --in DIR/summary.json --out DIR

Reads a ``kernbench-gpu/serve`` document (any schema_version 1.x.y) and the per-request
and per-step CSV files it names (beside it), and writes two figures into DIR:

    serve_latency.png   the CDFs of TTFT, TPOT and end-to-end latency, with the SLO's limits
    serve_timeline.png  requests running and waiting, and the KV cache's use, over the run

On a missing/unreadable file, wrong schema or malformed data it prints one line
``error: FILE: <what is wrong>`` to stderr, exits 2 and writes nothing.  On
success it prints ``wrote DIR/NAME.png`` for each figure.
"""

from __future__ import annotations

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbplot  # noqa: E402  (selects the Agg backend before pyplot is used)
from kbplot import InputError, plt  # noqa: E402

SCHEMA = "kernbench-gpu/serve"
SCHEMA_MAJOR = 1


def read_csv(path: str, columns: list[str]) -> list[dict]:
    """The rows of a CSV the summary names, each listed column a number."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
    if not rows:
        raise InputError(path, "no rows")
    out = []
    for i, r in enumerate(rows):
        try:
            out.append({c: float(r[c]) for c in columns})
        except (KeyError, TypeError, ValueError):
            raise InputError(path, f"row {i + 2}: expected numbers in columns {', '.join(columns)}") from None
    return out


def cdf(ax, values: list[float], label: str, color: str, limit: float | None) -> None:
    xs = sorted(values)
    n = len(xs)
    ax.step(xs, [(i + 1) / n for i in range(n)], where="post", color=color, label=label)
    if limit is not None:
        ax.axvline(limit, color="#c44e52", linestyle="--", linewidth=1, label=f"SLO {limit:g}")
    for p in (0.5, 0.9, 0.99):
        v = xs[min(n - 1, max(0, int(-(-p * n // 1)) - 1))]
        ax.plot([v], [p], marker="o", color=color, markersize=3)
        ax.annotate(f"P{int(p * 100)} {v:.4g}", (v, p), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("fraction of requests")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")


def fig_latency(doc: dict, reqs: list[dict]):
    slo = doc["slo"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    cdf(axes[0], [r["ttft_ms"] for r in reqs], "TTFT", "#4c72b0", slo["ttft_ms"])
    axes[0].set_xlabel("time to first token (ms)")
    tpot = [r["tpot_ms"] for r in reqs if r["output_tokens"] > 1]
    if tpot:
        cdf(axes[1], tpot, "TPOT", "#55a868", slo["tpot_ms"])
    axes[1].set_xlabel("time per output token (ms)")
    cdf(axes[2], [r["e2e_s"] for r in reqs], "end to end", "#8172b2", None)
    axes[2].set_xlabel("end-to-end latency (s)")
    w = doc["workload"]
    fig.suptitle(f"Latency of {len(reqs)} requests, arrivals {w['arrivals']} "
                 f"(goodput {doc['report']['goodput_per_s']:.2f} req/s at the SLO)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def fig_timeline(doc: dict, steps: list[dict]):
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    instances = sorted({int(s["instance"]) for s in steps})
    lim = doc["limits"]
    peak = max(100.0 * s["kv_use"] for s in steps)
    if len(instances) == 1:
        t = [s["start_s"] for s in steps]
        a1.step(t, [s["running"] for s in steps], where="post", color="#4c72b0", label="running (batch)")
        a1.step(t, [s["waiting"] for s in steps], where="post", color="#dd8452", label="waiting")
        a2.step(t, [100.0 * s["kv_use"] for s in steps], where="post", color="#55a868", label="KV cache in use")
        title = "Continuous batching"
    else:  # disaggregated: each instance's batch and KV use, prefill ones blue, decode ones green
        p = doc["disagg"]["prefill"]
        for k in instances:
            mine = [s for s in steps if int(s["instance"]) == k]
            color = plt.cm.Blues(0.55 + 0.4 * k / max(1, p)) if k < p else plt.cm.Greens(0.55 + 0.4 * (k - p) / len(instances))
            label = (f"prefill {k}" if k < p else f"decode {k - p}") if len(instances) <= 8 else None
            t = [s["start_s"] for s in mine]
            a1.step(t, [s["running"] for s in mine], where="post", linewidth=0.9, color=color, label=label)
            a2.step(t, [100.0 * s["kv_use"] for s in mine], where="post", linewidth=0.9, color=color, label=label)
        title = f"Disaggregated: {p} prefill and {doc['disagg']['decode']} decode instances"
    a1.set_ylabel("requests")
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8, loc="upper right")
    a2.set_ylim(0, 105 if peak > 50 else max(1.0, 1.25 * peak))  # a light load still shows its shape
    a2.set_ylabel("KV cache blocks in use (%)")
    a2.set_xlabel("time (s)")
    a2.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="upper right", title=f"{lim['kv_blocks']} blocks of {lim['kv_block']} tokens an instance",
              title_fontsize=7)
    fig.suptitle(f"{title} over {len(steps)} steps (max {lim['max_num_seqs']} sequences, "
                 f"{lim['max_batched_tokens']} tokens a step); {doc['report']['preemptions']} preemptions", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def read(path: str):
    doc = kbplot.load_json(path, SCHEMA, SCHEMA_MAJOR)
    kbplot.require_topology(doc, path)
    for key in ("slo", "workload", "limits", "report"):
        kbplot.require_dict(doc, key, "top level", path)
    files = kbplot.require_dict(doc, "files", "top level", path)
    here = os.path.dirname(os.path.abspath(path))
    reqs = read_csv(os.path.join(here, kbplot.require_str(files, "requests", "files", path)),
                    ["ttft_ms", "tpot_ms", "e2e_s", "output_tokens"])
    steps = read_csv(os.path.join(here, kbplot.require_str(files, "steps", "files", path)),
                     ["instance", "start_s", "running", "waiting", "kv_use"])
    return doc, reqs, steps


def main(argv=None) -> None:
    args = kbplot.parse_args(f"Plot a kernbench-gpu serving run (schema {SCHEMA} {SCHEMA_MAJOR}.x.y) as two PNG figures.",
                             argv)
    doc, reqs, steps = read(args.input)
    out = kbplot.ensure_out_dir(args.out)
    figures = [
        (lambda: fig_latency(doc, reqs), os.path.join(out, "serve_latency.png")),
        (lambda: fig_timeline(doc, steps), os.path.join(out, "serve_timeline.png")),
    ]
    for p in kbplot.save_all_atomic(figures):
        print(f"wrote {p}")


if __name__ == "__main__":
    kbplot.run_main(main)
