"""Ctrl-C stops a sweep with KeyboardInterrupt and leaves nothing behind; the GIL is free
while an engine runs; calls from several threads each get their own answer."""

import os
import signal
import threading

import pytest

import kernbench_gpu as kb

# About 10^9 configs: a sweep far longer than any of these tests lets it run.
LONG = {"m": "1:1048576", "n": "1:1024", "k": 64, "group": "none", "max_hours": 0, "chunk": 1 << 16}


def test_ctrl_c_stops_a_sweep_and_writes_nothing(tmp_path):
    out = tmp_path / "never.json"
    seen = []
    started = threading.Event()

    def progress(done, total):
        seen.append(done)
        started.set()

    # SIGINT from another thread once the sweep has run a chunk: it arrives while the engine
    # runs without the GIL, and the next poll between chunks raises it.
    def interrupt():
        started.wait()
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            kb.sweep("gemm", out=out, csv=tmp_path / "never.csv", progress=progress, **LONG)
    finally:
        started.set()
        t.join()
    assert seen and seen[-1] < 2**30  # stopped long before the end
    assert list(tmp_path.iterdir()) == []
    # The engine is still usable afterwards.
    assert kb.sweep("gemm", m=[64, 128], n=64, k=64).counts["valid"] == 2


def test_an_exception_in_the_callback_stops_the_sweep(tmp_path):
    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop(done)

    with pytest.raises(Stop):
        kb.sweep("gemm", progress=stop, out=tmp_path / "never.json", **LONG)
    assert list(tmp_path.iterdir()) == []


def test_another_thread_runs_while_a_sweep_does():
    # A thread waits for the first progress call, then marks that it ran. Between chunks the
    # engine computes without the GIL, so by a later call the mark is set; were the GIL held,
    # the thread could only run inside a callback, where it would be found not to have run.
    go, ran = threading.Event(), threading.Event()
    calls = []

    def progress(done, total):
        calls.append(ran.is_set())
        go.set()

    t = threading.Thread(target=lambda: (go.wait(), ran.set()))
    t.start()
    try:
        kb.sweep("gemm", m="1:4096", n="1:256", k=64, group="none", chunk=1 << 16, progress=progress)
    finally:
        go.set()
        t.join()
    assert len(calls) >= 4 and calls[0] is False
    assert calls[-1] is True


def test_threads_calling_at_once_each_get_their_own_answer(tmp_path):
    errors, docs = [], {}

    def work(i):
        try:
            for j in range(5):
                s = kb.sweep("gemm", m=[64 * (i + 1), 128 * (i + 1)], n=64, k=64, out=tmp_path / f"o{i}.json",
                             csv=tmp_path / f"o{i}.csv")
                docs[(i, j)] = s.json["space"]["axes"][0]["values"]
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for (i, _), values in docs.items():
        assert values == [64 * (i + 1), 128 * (i + 1)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"o{i}.{e}" for i in range(4) for e in ("json", "csv"))
