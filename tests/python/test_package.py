"""The package itself: version, stubs, benches."""

import inspect
import os

import kernbench_gpu as kb


def test_stubs_name_what_the_module_has():
    stub = open(os.path.join(os.path.dirname(kb.__file__), "_core.pyi")).read()
    public = sorted(n for n in dir(kb._core) if not n.startswith("_"))
    for name in public:
        assert f"def {name}(" in stub or f"class {name}(" in stub or f"class {name}:" in stub, name
    assert os.path.isfile(os.path.join(os.path.dirname(kb.__file__), "py.typed"))


def test_public_functions_are_annotated():
    for name in kb.__all__:
        obj = getattr(kb, name)
        if inspect.isfunction(obj):
            sig = inspect.signature(obj)
            assert sig.return_annotation is not inspect.Signature.empty, name
            for p in sig.parameters.values():
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    assert p.annotation is not inspect.Parameter.empty, f"{name}({p.name})"


def test_run_bench_fast_rerenders_the_committed_results(tmp_path):
    r = kb.run_bench("milestone-1h-gemm", out=tmp_path, fast=True)
    assert r["out"] == str(tmp_path)
    assert "gemm_sweep.json" in r["files"] and any(f.endswith(".png") for f in r["files"])
    assert r["results"]["schema"] == "kernbench-gpu/gemm-sweep"
