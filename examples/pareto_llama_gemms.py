#!/usr/bin/env python3
"""A design-space study as a plain script: for each GEMM of a LLaMA-3.1-8B layer at prefill
(2048 tokens), the Pareto front of latency against the PEs it uses, over PEs per cube and
cubes, every tile size and split the batched model accepts.

    python3 examples/pareto_llama_gemms.py [--model models/llama-3.1-8b.json] [--tokens 2048] [--out FILE.png]

Needs the kernbench_gpu package (pip install . at the repository root, or PYTHONPATH=build/python
after a build) and matplotlib.
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import kernbench_gpu as kb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def layer_gemms(config, tokens):
    """(name, m, n, k) of one layer's GEMMs: tokens x out features x in features."""
    h, f = config["hidden_size"], config["intermediate_size"]
    kv = config["num_key_value_heads"] * (h // config["num_attention_heads"])
    return [("q, k, v", tokens, h + 2 * kv, h), ("o", tokens, h, h), ("gate, up", tokens, 2 * f, h),
            ("down", tokens, h, f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(HERE, "..", "models", "llama-3.1-8b.json"))
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--out", default="llama_gemm_pareto.png")
    a = ap.parse_args()
    with open(a.model) as f:
        gemms = layer_gemms(json.load(f), a.tokens)

    s = kb.sweep("gemm", zip={"m,n,k": [(m, n, k) for _, m, n, k in gemms]},
                 axes={"pes": [1, 2, 4, 8], "cubes": [1, 2, 4, 8], "tile_m": [32, 64, 128, 256],
                       "tile_n": [32, 64, 128, 256], "split": ["rows", "cols"]},
                 pareto="pes", top=1)
    print(f"{s.counts['evaluated']} configs, {s.counts['valid']} valid, "
          f"{s.json['timing']['configs_per_s']:.3g} configs/s")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (name, m, n, k), front in zip(gemms, s.pareto):
        g = front["group"]
        assert (g["m"], g["n"], g["k"]) == (m, n, k)
        pes = [p["cost"] for p in front["points"]]
        us = [p["latency_ps"] / 1e6 for p in front["points"]]
        ax.plot(pes, us, marker="o", label=f"{name}  ({m} x {n} x {k})")
        fastest = front["points"][-1]
        print(f"{name:9s} fastest: {fastest['latency_ps'] / 1e6:9.1f} us on {fastest['cost']:2d} PEs "
              f"(pes {fastest['pes']}, cubes {fastest['cubes']}, tiles {fastest['tile_m']}x{fastest['tile_n']}, "
              f"split {fastest['split']})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("PEs used (PEs per cube x cubes)")
    ax.set_ylabel("latency (us)")
    ax.set_title(f"LLaMA-3.1-8B layer GEMMs, {a.tokens} tokens: Pareto fronts")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
