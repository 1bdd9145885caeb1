"""Ctrl-C stops a sweep with KeyboardInterrupt and leaves nothing behind; the GIL is free
while an engine runs."""

import os
import signal
import threading
import time

import pytest

import kernbench_gpu as kb

# About 10^9 configs: far longer than the test waits (it is interrupted within a second).
LONG = {"m": "1:1048576", "n": "1:1024", "k": 64, "group": "none", "max_hours": 0}


def test_ctrl_c_stops_a_sweep_and_writes_nothing(tmp_path):
    out = tmp_path / "never.json"
    seen = []
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            kb.sweep("gemm", out=out, csv=tmp_path / "never.csv", progress=lambda d, t: seen.append(d), **LONG)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 60
    assert seen, "the sweep ran before it was stopped"
    assert list(tmp_path.iterdir()) == []
    # The engine is still usable afterwards.
    assert kb.sweep("gemm", m=[64, 128], n=64, k=64).counts["valid"] == 2


def test_an_exception_in_the_callback_stops_the_sweep():
    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop(done)

    with pytest.raises(Stop):
        kb.sweep("gemm", progress=stop, **LONG)


def test_other_threads_run_while_a_sweep_does():
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        before = len(ticks)
        kb.sweep("gemm", m="1:2000", n="1:1000", k=64, group="none")
        during = len(ticks) - before
    finally:
        done.set()
        t.join()
    assert during > 10, "the GIL was held while the sweep ran"
