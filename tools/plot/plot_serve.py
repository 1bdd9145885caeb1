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
from array import array
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbplot  # noqa: E402  (selects the Agg backend before pyplot is used)
from kbplot import InputError, plt  # noqa: E402

SCHEMA = "kernbench-gpu/serve"
SCHEMA_MAJOR = 1


def read_csv(path: str, columns: list[str]) -> dict[str, array]:
    """The listed columns of a CSV the summary names, as numbers, row by row (a run of
    millions of requests stays a few arrays of floats)."""
    out = {c: array("d") for c in columns}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for i, r in enumerate(csv.DictReader(f)):
                try:
                    for c in columns:
                        out[c].append(float(r[c]))
                except (KeyError, TypeError, ValueError):
                    raise InputError(path, f"row {i + 2}: expected numbers in columns {', '.join(columns)}") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
    if not out[columns[0]]:
        raise InputError(path, "no rows")
    return out


def thin(n: int, most: int) -> list[int]:
    """About `most` evenly spaced indices of n at most, the last included."""
    step = max(1, n // most)
    return list(range(0, n, step)) + ([n - 1] if n > 0 and (n - 1) % step else [])


def cdf(ax, values: list[float], label: str, color: str, limit: float | None) -> None:
    xs = sorted(values)
    n = len(xs)
    shown = thin(n, 4000)
    ax.step([xs[i] for i in shown], [(i + 1) / n for i in shown], where="post", color=color, label=label)
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


def fig_latency(doc: dict, reqs: dict[str, array]):
    slo = doc["slo"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    cdf(axes[0], reqs["ttft_ms"], "TTFT", "#4c72b0", slo["ttft_ms"])
    axes[0].set_xlabel("time to first token (ms)")
    tpot = [t for t, o in zip(reqs["tpot_ms"], reqs["output_tokens"]) if o > 1]
    if tpot:
        cdf(axes[1], tpot, "TPOT", "#55a868", slo["tpot_ms"])
    axes[1].set_xlabel("time per output token (ms)")
    cdf(axes[2], reqs["e2e_s"], "end to end", "#8172b2", None)
    axes[2].set_xlabel("end-to-end latency (s)")
    w = doc["workload"]
    fig.suptitle(f"Latency of {len(reqs['e2e_s'])} requests, arrivals {w['arrivals']} "
                 f"(goodput {doc['report']['goodput_per_s']:.2f} req/s at the SLO)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def fig_timeline(doc: dict, cols: dict[str, array]):
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    n = len(cols["start_s"])
    instance = cols["instance"]
    instances = sorted({int(k) for k in instance})
    lim = doc["limits"]
    peak = 100.0 * max(cols["kv_use"])

    def series(rows: list[int], name: str, scale: float = 1.0) -> tuple[list[float], list[float]]:
        shown = [rows[i] for i in thin(len(rows), 20000)]  # a long run, thinned for the eye
        return [cols["start_s"][j] for j in shown], [scale * cols[name][j] for j in shown]

    if len(instances) == 1:
        rows = list(range(n))
        a1.step(*series(rows, "running"), where="post", color="#4c72b0", label="running (batch)")
        a1.step(*series(rows, "waiting"), where="post", color="#dd8452", label="waiting")
        a2.step(*series(rows, "kv_use", 100.0), where="post", color="#55a868", label="KV cache in use")
        title = "Continuous batching"
    else:  # disaggregated: each instance's batch and KV use, prefill ones blue, decode ones green
        p = doc["disagg"]["prefill"]
        for k in instances:
            mine = [j for j in range(n) if int(instance[j]) == k]
            color = plt.cm.Blues(0.55 + 0.4 * k / max(1, p)) if k < p else plt.cm.Greens(0.55 + 0.4 * (k - p) / len(instances))
            label = (f"prefill {k}" if k < p else f"decode {k - p}") if len(instances) <= 8 else None
            a1.step(*series(mine, "running"), where="post", linewidth=0.9, color=color, label=label)
            a2.step(*series(mine, "kv_use", 100.0), where="post", linewidth=0.9, color=color, label=label)
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
    fig.suptitle(f"{title} over {n} steps (max {lim['max_num_seqs']} sequences, "
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
