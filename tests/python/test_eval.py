"""kb.eval against `eval --json`, for every family; kb.families() against `list --json`."""

import pytest

import kernbench_gpu as kb
from conftest import cli, cli_json, data_file

# One config of each family: (kwargs for kb.eval, the same on the command line).
CASES = {
    "gemm": ({"m": 512, "n": 1024, "k": 256, "pes": 4, "tile_m": 128},
             ["--m", "512", "--n", "1024", "--k", "256", "--pes", "4", "--tile-m", "128"]),
    "collective": ({"bytes": 65536, "level": "cube", "algo": "ring", "ranks": 4, "buffer": "hbm", "chunks": 2},
                   ["--bytes", "65536", "--level", "cube", "--algo", "ring", "--ranks", "4", "--buffer", "hbm",
                   "--chunks", "2"]),
    "decode": ({"case": 4, "s_kv": 8192, "allreduce": True},
               ["--case", "4", "--s-kv", "8192", "--allreduce"]),
    "llm": ({"model": "llama-tiny-random", "batch": 2, "context": 64},
            ["--model", "llama-tiny-random", "--batch", "2", "--context", "64"]),
}


def test_every_family_has_a_case():
    assert sorted(f["name"] for f in kb.families()) == sorted(CASES)


@pytest.mark.parametrize("family", sorted(CASES))
def test_eval_is_the_command_lines(family):
    kwargs, flags = CASES[family]
    mine = kb.eval(family, **kwargs)
    theirs = cli_json("eval", family, *flags, "--json")
    assert mine == theirs
    assert mine["parity"] is True
    assert mine["latency_ps"] > 0


@pytest.mark.parametrize("engine", ["reference", "batched"])
def test_eval_one_engine(engine):
    kwargs, flags = CASES["gemm"]
    mine = kb.eval("gemm", engine=engine, **kwargs)
    assert mine == cli_json("eval", "gemm", *flags, "--engine", engine, "--json")
    assert ("reference" in mine) == (engine == "reference")
    assert ("batched" in mine) == (engine == "batched")


def test_eval_with_a_topology_and_sets(tmp_path):
    t = kb.topology(**{"pe.sram_kib": 1024, "cube.hbm.bandwidth_gbps": 410})
    mine = kb.eval("gemm", topology=t, m=256, n=256, k=256)
    theirs = cli_json("eval", "gemm", "--m", "256", "--n", "256", "--k", "256", "--set", "pe.sram_kib=1024",
                      "--set", "cube.hbm.bandwidth_gbps=410", "--json")
    assert mine == theirs
    assert mine["topology"]["fields"]["pe.sram_kib"] == 1024
    ring8 = kb.eval("allreduce", topology=data_file("topologies", "ring8.yaml"), bytes=4096, level="sip", algo="ring", ranks=8, buffer="sram")
    assert ring8["topology"]["name"] == "ring8"


def test_eval_a_collective_op_by_either_name():
    mine = kb.eval("allreduce", op="alltoall", algo="pairwise", bytes=65536, level="cube", ranks=4, buffer="sram",
                   data=True)
    assert mine == cli_json("eval", "collective", "--op", "alltoall", "--algo", "pairwise", "--bytes", "65536",
                            "--level", "cube", "--ranks", "4", "--buffer", "sram", "--data", "--json")
    assert mine["family"] == "collective" and mine["parity"] is True and mine["data"]["ok"] is True
    fam = next(f for f in kb.families() if f["name"] == "collective")
    assert fam["aliases"] == ["allreduce"] and fam["data_mode"] is True


def test_eval_trace_and_hardware_axis(tmp_path):
    trace = tmp_path / "t.json"
    mine = kb.eval("gemm", m=128, n=128, k=128, dataflow="ws", trace=trace, engine="reference")
    assert trace.is_file() and trace.stat().st_size > 0
    assert mine["dataflow"] == "ws"


def test_families_describe_axes_and_columns():
    listing = cli_json("list", "--json")
    assert kb.families() == listing["families"]
    assert kb.benches() == listing["benches"]
    gemm = next(f for f in kb.families() if f["name"] == "gemm")
    m = next(a for a in gemm["axes"] if a["name"] == "m")
    assert m["type"] == "integer" and m["min"] == 1 and m["default"] is None
    split = next(a for a in gemm["axes"] if a["name"] == "split")
    assert split["type"] == "enum" and "rows" in split["values"]
    lat = next(c for c in gemm["columns"] if c["name"] == "latency_ps")
    assert lat["unit"] == "ps" and lat["type"] == "integer" and lat["parity"]
    assert any(h["unit"] for h in gemm["hw_axes"])
    assert "milestone-1h-gemm" in [b["name"] for b in kb.benches()]


def test_topology_fields_show_and_diagram(tmp_path, capsys):
    t = kb.topology(**{"pe.sram_kib": 512})
    assert t.fields["pe.sram_kib"] == 512 and t.fields["pe.matrix.dataflow"] == "os"
    assert t.summary["pes"] == 64
    t.show()
    shown = capsys.readouterr().out
    assert shown == t.text() == cli("topo", "show", data_file("topologies", "default.yaml"), "--set", "pe.sram_kib=512")[1]
    dot = t.diagram(tmp_path / "t.dot")
    assert open(dot).read().startswith("graph topology {")


def test_version_is_the_command_lines():
    assert cli("--version")[1].strip() == "kernbench-gpu " + kb.__version__


def test_eval_is_a_typed_result_in_process():
    kwargs, flags = CASES["gemm"]
    r = kb.eval("gemm", **kwargs)
    assert isinstance(r, kb.EvalResult) and isinstance(r, dict)
    assert r.latency_ps == r["latency_ps"] == r.reference["latency_ps"] == r.batched["latency_ps"]
    assert r.parity is True and r.config["m"] == 512
    with pytest.raises(AttributeError, match="nosuch: not a figure"):
        r.nosuch
    # No command line runs: the module has the typed API's calls, and no way to run words.
    assert not hasattr(kb._core, "run") and not hasattr(kb._core, "cli_run")
    assert kb.eval("gemm", **kwargs) == r


def test_eval_to_pandas_has_a_row_per_engine():
    pytest.importorskip("pandas", reason="pandas is optional; tools/setup.sh installs it")
    df = kb.eval("gemm", **CASES["gemm"][0]).to_pandas()
    assert list(df["engine"]) == ["reference", "batched"] and (df["latency_ps"] > 0).all()


def test_eval_errors_are_the_command_lines_in_process():
    # Every check is the runner's: the same lines as the command line, which parses first.
    cases = [
        ({"n": 8, "k": 8}, ["--n", "8", "--k", "8"]),
        ({"m": "", "n": 8, "k": 8}, ["--m", "", "--n", "8", "--k", "8"]),
        ({"m": "8,16", "n": 8, "k": 8}, ["--m", "8,16", "--n", "8", "--k", "8"]),
        ({"m": 8, "n": 8, "k": 8, "engine": "fast"}, ["--m", "8", "--n", "8", "--k", "8", "--engine", "fast"]),
        ({"m": 8, "n": 8, "k": 8, "max_ops": 0}, ["--m", "8", "--n", "8", "--k", "8", "--max-ops", "0"]),
        ({"m": 8, "n": 8, "k": 8, "backend": "tpu"}, ["--m", "8", "--n", "8", "--k", "8", "--backend", "tpu"]),
    ]
    for kwargs, words in cases:
        with pytest.raises(kb.InputError) as e:
            kb.eval("gemm", **kwargs)
        rc, _, err = cli("eval", "gemm", *words, check=False)
        assert rc == 2 and err.strip() == "error: " + str(e.value), (kwargs, err)


def test_an_edited_topology_is_read_again(tmp_path):
    t = tmp_path / "t.yaml"
    text = open(data_file("topologies", "default.yaml")).read()
    t.write_text(text)
    first = kb.eval("gemm", topology=t, m=256, n=256, k=256, engine="batched")
    t.write_text(text.replace("bandwidth_gbps: 819", "bandwidth_gbps: 205"))
    second = kb.eval("gemm", topology=t, m=256, n=256, k=256, engine="batched")
    assert second["topology"]["fields"]["cube.hbm.bandwidth_gbps"] == 205
    assert second["topology"]["hash"] != first["topology"]["hash"]


def test_llm_steps_run_on_tuned_kernels_unless_told_auto():
    mapping = dict(model="llama-3.1-8b", tp=8, tp_level="cube", pp=1, tp_algo="ring", attention_case=4, batch=32,
                   engine="batched")
    best, auto = kb.eval("llm", **mapping), kb.eval("llm", kernel_tuning="auto", **mapping)
    assert best.config["kernel_tuning"] == "best" and auto.config["kernel_tuning"] == "auto"
    assert [k["name"] for k in best.kernels if k["kind"] == "gemm"] == ["qkv", "o_proj", "gate_up", "down", "lm_head"]
    assert all(b["latency_ps"] <= a["latency_ps"] for b, a in zip(best.kernels, auto.kernels))
    # auto, the analytical choice, lands near the tuned kernels
    assert best.gemm_ps <= auto.gemm_ps <= best.gemm_ps * 1.05 and best.attention_ps <= auto.attention_ps


def test_a_mixture_of_experts_step_from_python():
    """A MoE model expert-parallel over SIPs, skewed routing: the command line's figures; redundant copies even the load."""
    step = dict(model="mixtral-8x7b", topology=data_file("topologies/ring8.yaml"), batch=16, context=2048, ep=8,
                ep_level="sip", routing="zipf:1.2", routing_seed=3)
    mine = kb.eval("llm", **step)
    theirs = cli_json("eval", "llm", "--model", "mixtral-8x7b", "--topology", data_file("topologies/ring8.yaml"),
                      "--batch", "16", "--context", "2048", "--ep", "8", "--ep-level", "sip", "--routing", "zipf:1.2",
                      "--routing-seed", "3", "--json")
    assert mine == theirs
    assert mine["parity"] is True and mine.config["attention"] == "dp" and mine["routing"] == "zipf:1.2"
    assert mine["load_imbalance"] > 1 and mine["dispatch_ps"] > 0 and mine["combine_ps"] > 0
    even = kb.eval("llm", redundant_experts=8, engine="batched", **step)
    assert even["load_imbalance"] < mine["load_imbalance"]


def test_llama4_scout_from_python():
    """Llama-4-Scout's two kinds of layer: chunked attention and layers without RoPE, as the command line gives them."""
    step = dict(model="llama-4-scout-17b-16e", topology=data_file("topologies/ring8.yaml"), batch=16, context=16384,
                ep=8, ep_level="sip", pp=1)
    mine = kb.eval("llm", **step)
    theirs = cli_json("eval", "llm", "--model", "llama-4-scout-17b-16e", "--topology", data_file("topologies/ring8.yaml"),
                      "--batch", "16", "--context", "16384", "--ep", "8", "--ep-level", "sip", "--pp", "1", "--json")
    assert mine == theirs
    assert mine["parity"] is True and mine.config["nope_every"] == 4 and mine.config["attn_chunk"] == 8192
    assert mine["latency_ps"] == 36 * mine["layer_ps"] + 12 * mine["nope_layer_ps"] + mine["head_ps"]
    # every layer global: the chunked layers then attend to all 16,384 positions
    whole = kb.eval("llm", attn_chunk=0, engine="batched", **step)
    assert whole["layer_ps"] > mine["layer_ps"]


def test_moe_and_latent_attention_data_mode_from_python():
    """A tiny DeepSeek-V3 with values: its router's routing, latent attention and shared expert against float64."""
    mine = kb.eval("llm", model="deepseek-v3-tiny-random", tp=1, pp=1, batch=4, context=24, data=True, seed=5)
    theirs = cli_json("eval", "llm", "--model", "deepseek-v3-tiny-random", "--tp", "1", "--pp", "1", "--batch", "4",
                      "--context", "24", "--data", "--seed", "5", "--json")
    assert mine == theirs
    d = mine["data"]
    assert d["relative_error"] <= 1 / 512 and len(d["layers_ps"]) == 3
    assert d["dense_layer_ps"] == mine["dense_layer_ps"] and d["head_ps"] == mine["head_ps"]
    softmax = kb.eval("llm", model="deepseek-v3-tiny-random", tp=1, pp=1, batch=4, context=24, data=True, seed=5,
                      router="softmax")
    assert softmax["data"]["max_abs_error"] != d["max_abs_error"]


def test_serve_from_python_is_the_command_lines_run():
    """kb.serve: the summary `serve --json` prints, and a frame of one row a request."""
    args = dict(model="mixtral-tiny-random", tp=2, tp_level="cube", arrivals="poisson:300", isl="uniform:8:120",
                osl="uniform:2:16", requests=40, max_num_seqs=8, max_batched_tokens=96, recheck=1)
    mine = kb.serve(**args)
    theirs = cli_json("serve", "--model", "mixtral-tiny-random", "--tp", "2", "--tp-level", "cube", "--arrivals",
                      "poisson:300", "--isl", "uniform:8:120", "--osl", "uniform:2:16", "--requests", "40",
                      "--max-num-seqs", "8", "--max-batched-tokens", "96", "--recheck", "1", "--json")
    assert mine["report"] == theirs["report"] and mine["recheck"]["identical"] == 1
    frame = mine.requests
    assert len(frame) == 40 and list(frame.columns[:4]) == ["request", "arrival_s", "input_tokens", "output_tokens"]
    assert abs(frame["ttft_ms"].mean() - mine["report"]["ttft_ms"]["mean"]) < 1e-3
    with pytest.raises(kb.InputError, match="--arrivals poisson:0"):
        kb.serve(model="llama-tiny-random", arrivals="poisson:0")


def test_sweep_serve_from_python_is_the_command_lines_sweep():
    """kb.sweep_serve: the document `sweep serve --json` prints, its configs and front as frames."""
    mine = kb.sweep_serve(model="llama-tiny-random", tp=1, tp_level=["cube", "sip"], arrivals=["poisson:500", "poisson:4000"],
                          isl="uniform:8:120", osl="uniform:2:16", requests=40, max_num_seqs=[2, 8], max_batched_tokens=96,
                          slo_ttft=0.05, slo_tpot=0.011, recheck=1)
    theirs = cli_json("sweep", "serve", "--model", "llama-tiny-random", "--tp", "1", "--tp-level", "cube,sip", "--arrivals",
                      "poisson:500,poisson:4000", "--isl", "uniform:8:120", "--osl", "uniform:2:16", "--requests", "40",
                      "--max-num-seqs", "2,8", "--max-batched-tokens", "96", "--slo-ttft", "0.05", "--slo-tpot", "0.011",
                      "--recheck", "1", "--json")
    assert mine.json == theirs
    configs = mine.configs
    assert len(configs) == 8 and list(configs.columns[:4]) == ["config", "model", "tp", "tp_level"]
    assert list(mine.front["config"]) == mine["front"] and mine.front["on_front"].all()
    with pytest.raises(kb.InputError, match="--slo-percentile 95"):
        kb.sweep_serve(model="llama-tiny-random", arrivals="poisson:5", slo_percentile=95)
