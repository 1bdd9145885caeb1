# Type stubs of the extension module (src/python/module.cpp); use the package's functions.
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

class Latencies:  # every config's latency_ps: a buffer of int64 (numpy.asarray takes it without a copy)
    def __buffer__(self, flags: int) -> memoryview: ...

class Document:  # a sweep's JSON document, kept whole
    def text(self) -> str: ...

class InputError(ValueError): ...
class InternalError(RuntimeError): ...
class EnvironmentError(OSError): ...  # noqa: A001

def version() -> str: ...
def set_data_dir(path: str) -> None: ...
def data_dir() -> str: ...
def cuda_device_count() -> int: ...
def eval(  # noqa: A001
    family: str,
    axes: Mapping[str, str],
    hw_axes: Mapping[str, str],
    presets: Mapping[str, str],
    topology: Optional[str],
    sets: Sequence[str],
    engine: str,
    backend: str,
    trace: str,
    data: bool,
    seed: Optional[str],
    max_ops: Optional[str],
) -> Dict[str, Any]: ...
def serve(
    axes: Mapping[str, str],
    hw_axes: Mapping[str, str],
    presets: Mapping[str, str],
    topology: Optional[str],
    sets: Sequence[str],
    backend: str,
    options: Mapping[str, str],
    figures: bool,
) -> Dict[str, Any]: ...
def sweep_serve(
    axes: Mapping[str, str],
    hw_axes: Mapping[str, str],
    presets: Mapping[str, str],
    topology: Optional[str],
    sets: Sequence[str],
    backend: str,
    options: Mapping[str, str],
) -> Dict[str, Any]: ...
def sweep(
    family: str,
    axes: Mapping[str, str],
    hw_axes: Mapping[str, str],
    presets: Mapping[str, str],
    hw: Sequence[str],
    zips: Sequence[str],
    options: Mapping[str, Any],
    topology: Optional[str],
    sets: Sequence[str],
    progress: Optional[Callable[[int, int], None]],
    latencies: bool,
    max_latencies: int,
) -> Tuple[Dict[str, Any], Document, Optional[Latencies]]: ...
def merge(files: Sequence[str], out: str, csv: str) -> Tuple[Dict[str, Any], Document]: ...
def run_bench(bench: str, topology: Optional[str], sets: Sequence[str], out: str, backend: str, fast: bool) -> str: ...
def list_document() -> Dict[str, Any]: ...
def topology_document(path: str, sets: Sequence[str]) -> Dict[str, Any]: ...
def topology_text(path: str, sets: Sequence[str]) -> str: ...
def topology_diagram(path: str, sets: Sequence[str], out: str) -> None: ...
def family_name(name: str) -> str: ...
