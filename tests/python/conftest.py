"""Shared by the Python package's tests: the command-line tool to compare with."""

import json
import os
import subprocess

import kernbench_gpu as kb

CLI = os.environ.get("KB_CLI_EXE", "")
# The tool reads the package's data folder, so that results name the same topology files.
os.environ["KERNBENCH_DATA_DIR"] = kb._core.data_dir()


def cli(*words, check=True):
    """Runs the tool; returns (exit code, stdout, stderr)."""
    assert CLI, "KB_CLI_EXE names the kernbench-gpu binary (ctest sets it)"
    p = subprocess.run([CLI, *[str(w) for w in words]], capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr
    return p.returncode, p.stdout, p.stderr


def cli_json(*words):
    return json.loads(cli(*words)[1])


def without_timing(doc):
    """A sweep document without its wall-clock figures (they differ between runs)."""
    d = dict(doc)
    d.pop("timing", None)
    return d


def data_file(*parts):
    """A file of the package's data folder (topologies/...)."""
    return os.path.join(kb._core.data_dir(), *parts)
