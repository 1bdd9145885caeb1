"""kb.sweep and kb.merge against `sweep --json` and `merge --json`."""

import json

import numpy as np
import pytest

import kernbench_gpu as kb
from conftest import cli, cli_json, data_file, without_timing

# A space of each family: (kwargs for kb.sweep, the same on the command line).
SPACES = {
    "gemm": ({"axes": {"m": "64:4096:*2", "tile_m": [32, 64, 128]}, "n": 1024, "k": range(256, 1025, 256), "top": 5},
             ["--m", "64:4096:*2", "--tile-m", "32,64,128", "--n", "1024", "--k", "256,512,768,1024", "--top", "5"]),
    "collective": ({"axes": {"bytes": [4096, 1 << 20], "level": ["pe", "cube"], "algo": ["ring", "hd", "tree"],
                            "ranks": [2, 4, 8], "buffer": ["sram", "hbm"]}, "pareto": "link_bytes", "recheck": 2},
                  ["--bytes", "4096,1048576", "--level", "pe,cube", "--algo", "ring,hd,tree", "--ranks", "2,4,8",
                   "--buffer", "sram,hbm", "--pareto", "link_bytes", "--recheck", "2"]),
    "decode": ({"case": [1, 2, 3, 4], "s_kv": [1024, 8192], "batch": [1, 8]},
               ["--case", "1,2,3,4", "--s-kv", "1024,8192", "--batch", "1,8"]),
    "llm": ({"model": "llama-3.1-8b", "batch": [1, 4], "context": [1024, 4096], "tp": [1, 2, 4],
             "group": ["batch", "context"], "recheck": 0},
            ["--model", "llama-3.1-8b", "--batch", "1,4", "--context", "1024,4096", "--tp", "1,2,4",
             "--group", "batch,context", "--recheck", "0"]),
    # A MoE model routed for each batch, routing and seed (docs/model.md section 13.11).
    "llm-moe": ({"model": "mixtral-8x7b", "topology": data_file("topologies", "ring8.yaml"), "batch": [8, 16], "context": 2048,
                 "ep": 8, "ep_level": "sip", "pp": 1, "routing": ["balanced", "zipf:1.2"], "routing_seed": range(1, 3),
                 "recheck": 2},
                ["--model", "mixtral-8x7b", "--topology", data_file("topologies", "ring8.yaml"), "--batch", "8,16", "--context", "2048",
                 "--ep", "8", "--ep-level", "sip", "--pp", "1", "--routing", "balanced,zipf:1.2", "--routing-seed", "1,2",
                 "--recheck", "2"]),
}


@pytest.mark.parametrize("family", sorted(SPACES))
def test_sweep_is_the_command_lines(family):
    kwargs, flags = SPACES[family]
    name = family.split("-")[0]
    mine = kb.sweep(name, **kwargs)
    _, text, _ = cli("sweep", name, *flags, "--json")
    assert without_timing(mine.json) == without_timing(json.loads(text))
    # to_json is the command's text, but for the wall-clock figures.
    a = mine.to_json().splitlines()
    b = text.splitlines()
    assert len(a) == len(b)
    differ = [x for x, y in zip(a, b) if x != y]
    assert all("configs_per_s" in x or '"seconds"' in x for x in differ), differ
    assert mine.counts["evaluated"] == mine.json["space"]["size"]
    assert mine.counts["valid"] + mine.counts["invalid"] == mine.counts["evaluated"]
    assert sum(mine.invalid.values()) == mine.counts["invalid"]
    assert len(mine.best) == mine.json["space"]["groups"]


def test_hw_zip_group_and_reductions():
    mine = kb.sweep("gemm", axes={"m": [256, 512]}, zip={("n", "k"): [(256, 512), (1024, 1024)]},
                    hw={"dataflow": ["os", "ws"], "cube.hbm.bandwidth_gbps": [410, 819]}, group="none", top=3,
                    pareto="pes", histogram=False)
    theirs = cli_json("sweep", "gemm", "--m", "256,512", "--zip", "n,k=256/512,1024/1024", "--dataflow", "os,ws",
                      "--hw", "cube.hbm.bandwidth_gbps=410,819", "--group", "none", "--top", "3", "--pareto", "pes",
                      "--no-histogram", "--json")
    assert without_timing(mine.json) == without_timing(theirs)
    assert mine.histogram is None and len(mine.top) == 3 and len(mine.best) == 1
    assert mine.pareto and all(p["cost"] >= 1 for p in mine.pareto[0]["points"])


def test_latencies_are_every_configs():
    s = kb.sweep("gemm", m="1:64", n=64, k=64, tile_m=[1, 128], return_latencies=True, top=1)
    lat = s.latencies
    assert isinstance(lat, np.ndarray) and lat.dtype == np.int64 and lat.shape == (128,)
    assert int((lat == -1).sum()) == s.counts["invalid"] == 64  # a 128-row tile of at most 64 rows is invalid
    assert (lat[1::2] == -1).all() and (lat[0::2] > 0).all()  # tile_m varies fastest
    valid = lat[lat >= 0]
    assert int(valid.min()) == s.top[0]["latency_ps"] and int(np.argmin(np.where(lat >= 0, lat, 2**62))) == s.top[0]["index"]
    # Each one is its config's: the top list, asked for every valid config, names them.
    every = kb.sweep("allreduce", bytes=[4096, 65536], level=["pe", "cube"], algo=["ring", "hd", "tree"], ranks=8,
                     buffer=["sram", "hbm"], return_latencies=True, top=24, recheck=0)
    assert len(every.top) == every.counts["valid"] == 24
    assert sorted((t["index"], t["latency_ps"]) for t in every.top) == list(enumerate(every.latencies.tolist()))
    with pytest.raises(kb.InputError, match="more than the 100"):
        kb.sweep("gemm", m="1:64", n=64, k=64, tile_m=[1, 128], return_latencies=True, max_latencies=100)


def test_shards_merge_to_the_whole(tmp_path):
    whole = kb.sweep("gemm", m="64:8192:*2", n=[512, 1024], k=512, top=4)
    paths = []
    for i in range(3):
        p = tmp_path / f"s{i}.json"
        kb.sweep("gemm", m="64:8192:*2", n=[512, 1024], k=512, top=4, shard=(i, 3), out=p)
        paths.append(p)
    merged = kb.merge(paths, out=tmp_path / "merged.json")
    assert merged.best == whole.best and merged.top == whole.top
    assert without_timing(merged.json) == without_timing(cli_json("merge", *paths, "--json"))


def test_progress_callback_sees_every_config():
    seen = []
    s = kb.sweep("gemm", m="1:1024", n=[64, 128], k=[64, 128, 256], chunk=1000, progress=lambda d, t: seen.append((d, t)))
    total = s.counts["evaluated"]
    assert seen and all(t == total for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == total


def test_progress_bar_with_tqdm(monkeypatch):
    tqdm_auto = pytest.importorskip("tqdm.auto", reason="tqdm is optional; tools/setup.sh installs it")
    bars = []

    class Bar:  # records what the package does with its bar
        def __init__(self, **kw):
            self.kw, self.total, self.n, self.refreshed, self.closed = kw, None, 0, 0, False
            bars.append(self)

        def refresh(self):
            self.refreshed += 1

        def close(self):
            self.closed = True

    monkeypatch.setattr(tqdm_auto, "tqdm", Bar)
    s = kb.sweep("gemm", m="1:256", n=64, k=64, chunk=64, progress=True)
    assert len(bars) == 1 and bars[0].closed
    assert bars[0].total == bars[0].n == s.counts["evaluated"] == 256 and bars[0].refreshed == 4


def test_no_latencies_of_a_shard(tmp_path):
    with pytest.raises(kb.InputError, match="not of a shard"):
        kb.sweep("gemm", m="1:64", n=64, k=64, shard=(0, 2), out=tmp_path / "s.json", return_latencies=True)
    assert list(tmp_path.iterdir()) == []


def test_a_space_file_is_read_again_by_the_next_call(tmp_path):
    space = tmp_path / "s.yaml"
    space.write_text("family: gemm\naxes:\n  m: [64, 128]\n  n: 64\n  k: 64\n")
    assert kb.sweep("gemm", space=space).counts["evaluated"] == 2
    space.write_text("family: gemm\naxes:\n  m: [64, 128, 256, 512]\n  n: 64\n  k: 64\n")
    assert kb.sweep("gemm", space=space).counts["evaluated"] == 4


def test_a_million_configs_as_the_command_line():
    mine = kb.sweep("gemm", m="1:1000", n="1:1000", k=64, group="none")
    theirs = cli_json("sweep", "gemm", "--m", "1:1000", "--n", "1:1000", "--k", "64", "--group", "none", "--json")
    assert mine.counts["evaluated"] == 10**6
    assert without_timing(mine.json) == without_timing(theirs)


def test_to_pandas():
    pytest.importorskip("pandas", reason="pandas is optional; tools/setup.sh installs it")
    s = kb.sweep("gemm", m=[256, 512], n=256, k=256, pes=[1, 2, 4], top=2, pareto="pes")
    best = s.to_pandas()
    assert list(best["m"]) == [256, 512] and "latency_ps" in best.columns
    assert len(s.to_pandas("top")) == 2
    assert "group_index" in s.to_pandas("pareto").columns


def test_to_json_writes_the_text(tmp_path):
    s = kb.sweep("gemm", m=[256, 512], n=256, k=256)
    p = tmp_path / "s.json"
    assert s.to_json(p) == p.read_text()
    assert json.loads(p.read_text()) == s.json
