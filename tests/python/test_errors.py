"""Errors: the command line's one-line message, as the package's exceptions; nothing printed."""

import os
import subprocess
import sys

import pytest

import kernbench_gpu as kb
from conftest import cli, data_file


def cli_line(*words):
    rc, out, err = cli(*words, check=False)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0][len("error: "):]


def bad_topology(tmp_path):
    """The default topology with no SIPs."""
    text = open(data_file("topologies", "default.yaml")).read()
    assert "sips: 1\n" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("sips: 1\n", "sips: 0\n"))
    return bad


def test_input_errors_carry_the_command_lines_message(tmp_path):
    bad = bad_topology(tmp_path)
    cases = [
        (lambda: kb.eval("gemm", m=0, n=8, k=8), ["eval", "gemm", "--m", "0", "--n", "8", "--k", "8"]),
        (lambda: kb.eval("gemm", m=8, n=8, k=8, split="diagonal"),
         ["eval", "gemm", "--m", "8", "--n", "8", "--k", "8", "--split", "diagonal"]),
        (lambda: kb.eval("gemm", topology=bad, m=8, n=8, k=8),
         ["eval", "gemm", "--topology", bad, "--m", "8", "--n", "8", "--k", "8"]),
        (lambda: kb.eval("gemm", set={"pe.sram_kib": -1}, m=8, n=8, k=8),
         ["eval", "gemm", "--set", "pe.sram_kib=-1", "--m", "8", "--n", "8", "--k", "8"]),
        (lambda: kb.eval("nosuch"), ["eval", "nosuch", "--json"]),
        (lambda: kb.sweep("gemm", m="4:1", n=8, k=8), ["sweep", "gemm", "--m", "4:1", "--n", "8", "--k", "8"]),
        (lambda: kb.sweep("gemm", m=8, n=8, k=8, pareto="nonsense"),
         ["sweep", "gemm", "--m", "8", "--n", "8", "--k", "8", "--pareto", "nonsense"]),
        (lambda: kb.run_bench("no-such-bench"), ["run", "--bench", "no-such-bench"]),
        (lambda: kb.topology("/nonexistent/t.yaml"), ["topo", "show", "/nonexistent/t.yaml"]),
    ]
    for call, words in cases:
        with pytest.raises(kb.InputError) as e:
            call()
        assert str(e.value) == cli_line(*words)


def test_input_error_is_a_value_error_and_names_file_line_col(tmp_path):
    bad = bad_topology(tmp_path)
    with pytest.raises(ValueError, match=r"bad\.yaml:\d+:\d+: system\.sips"):
        kb.topology(bad)


def test_an_unknown_keyword_names_the_axes():
    with pytest.raises(kb.InputError, match=r"tile_q: not an axis of gemm \(known: m, n, k"):
        kb.eval("gemm", m=8, n=8, k=8, tile_q=4)


def test_no_memory_is_the_environments(tmp_path):
    # Under a 2 GiB address-space limit, every latency of 2^29 configs (4 GiB) cannot be held:
    # in a child process, so that the limit is its own.
    script = tmp_path / "oom.py"
    script.write_text(
        "import resource, kernbench_gpu as kb\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "try:\n"
        "    kb.sweep('gemm', m='1:1048576', n='1:512', k=64, group='none', max_hours=0, return_latencies=True,\n"
        "             max_latencies=1 << 30)\n"
        "except kb.EnvironmentError as e:\n"
        "    print('EnvironmentError:', e)\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=os.environ.copy())
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("EnvironmentError: out of memory"), p.stdout


def test_nothing_is_printed(capfd):
    kb.eval("gemm", m=64, n=64, k=64)
    kb.sweep("gemm", m="1:4096", n=64, k=64, recheck=2)
    with pytest.raises(kb.InputError):
        kb.eval("gemm", m=0, n=8, k=8)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_exception_classes():
    assert issubclass(kb.InputError, ValueError)
    assert issubclass(kb.InternalError, RuntimeError)
    assert issubclass(kb.EnvironmentError, OSError)
