"""kernbench-gpu in Python: the simulator's engines in process, for notebooks and scripts.

Every call runs the same code as the command line, in this process, and returns what the
command's ``--json`` gives, parsed: the same names, the same values. ::

    import kernbench_gpu as kb
    r = kb.eval("gemm", m=4096, n=4096, k=4096, pes=8)
    r["latency_ps"], r["parity"]
    s = kb.sweep("gemm", axes={"m": "1024:8192:*2", "pes": [1, 2, 4, 8]}, n=4096, k=4096)
    s.best, s.to_pandas()

Bad input raises :class:`InputError` with the command line's one-line message; a fault of
the tool raises :class:`InternalError`; no memory or a device error raises
:class:`EnvironmentError`. Nothing is printed unless asked for.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._core import EnvironmentError, InputError, InternalError  # noqa: A004 (the package's own)

__all__ = [
    "EnvironmentError",
    "EvalResult",
    "InputError",
    "InternalError",
    "SweepResult",
    "Topology",
    "__version__",
    "benches",
    "eval",
    "families",
    "merge",
    "run_bench",
    "serve",
    "ServeResult",
    "sweep_serve",
    "ServeSweepResult",
    "sweep",
    "topology",
]

__version__: str = _core.version()

# The shipped data (topologies, models, figure scripts, committed results): the package's
# own folder when installed by pip, or the build folder's links when run from a build.
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if os.path.isfile(os.path.join(_DATA, "topologies", "default.yaml")):
    _core.set_data_dir(_DATA)

Value = Union[int, str, bool]
Values = Union[Value, Sequence[Value], range]
Progress = Union[None, bool, Callable[[int, int], None]]
TopologyArg = Union[None, str, os.PathLike, "Topology"]


def _one(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _list(v: Any) -> str:
    """A value or a list of them as the command line writes it (V, V1,V2, or LO:HI[:STEP])."""
    if isinstance(v, (str, int)) or not isinstance(v, Iterable):
        return _one(v)
    return ",".join(_one(x) for x in v)


_listing: Optional[Dict[str, Any]] = None


def _list_json() -> Dict[str, Any]:
    global _listing
    if _listing is None:
        _listing = _core.list_document()
    return _listing


def families() -> List[Dict[str, Any]]:
    """Each workload family with its axes (types, ranges, defaults), hardware axes (units),
    presets, result columns (units), Pareto costs and statuses: ``list --json``'s families."""
    return copy.deepcopy(_list_json()["families"])


def benches() -> List[Dict[str, Any]]:
    """Each registered bench (``run --bench NAME``): its name, axes, output files and schema."""
    return copy.deepcopy(_list_json()["benches"])


def _family(name: str) -> Dict[str, Any]:
    """The family a name or alias names; InputError with the command line's message if none."""
    canonical = _core.family_name(str(name))
    return next(f for f in _list_json()["families"] if f["name"] == canonical)


def _flag(fam: Dict[str, Any], key: str) -> str:
    """The flag of a config keyword: an axis, a hardware axis or a preset, by its name
    (tile_m) or its flag's words (tile-m)."""
    k = key.replace("-", "_")
    for a in fam["axes"] + fam["hw_axes"]:
        if a["name"] == k:
            return a["flag"]
    for p in fam["presets"]:
        if p["flag"][2:].replace("-", "_") == k:
            return p["flag"]
    known = [a["name"] for a in fam["axes"] + fam["hw_axes"]] + [p["flag"][2:].replace("-", "_") for p in fam["presets"]]
    raise InputError(f"{key}: not an axis of {fam['name']} (known: {', '.join(known)})")


class Topology:
    """A resolved topology: a file (default: topologies/default.yaml) with fields set.

    ``fields`` maps every field's path to its value (enums by name), ``summary`` is
    ``topo show --json``; ``show()`` prints ``topo show``, ``diagram(path)`` draws it."""

    def __init__(self, path: Union[None, str, os.PathLike] = None, sets: Optional[Mapping[str, Any]] = None):
        self.path: Optional[str] = None if path is None else os.fspath(path)
        self.sets: Dict[str, Any] = dict(sets or {})
        self.summary: Dict[str, Any] = _core.topology_document(self._file(), _set_values(self.sets))
        self.fields: Dict[str, Any] = self.summary.pop("fields")
        self.name: str = self.summary["name"]

    def _file(self) -> str:
        return self.path if self.path is not None else os.path.join(_core.data_dir(), "topologies", "default.yaml")

    def words(self) -> List[str]:
        """The command-line flags that give this topology (--topology FILE --set PATH=V ...)."""
        return _topology_words(self, None)

    def show(self) -> None:
        """Prints what ``kernbench-gpu topo show`` prints."""
        print(self.text(), end="")

    def text(self) -> str:
        """What ``kernbench-gpu topo show`` prints, as text."""
        return _core.topology_text(self._file(), _set_values(self.sets))

    def diagram(self, path: Union[str, os.PathLike]) -> str:
        """Draws the topology to PATH (.dot, .svg or .png); returns the path."""
        _core.topology_diagram(self._file(), _set_values(self.sets), os.fspath(path))
        return os.fspath(path)

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, path={self.path!r}, sets={self.sets!r})"


def topology(path: Union[None, str, os.PathLike] = None, **set: Any) -> Topology:
    """The topology in PATH (default: topologies/default.yaml) with fields set, e.g.
    ``topology(**{"pe.sram_kib": 512})``."""
    return Topology(path, set)


def _set_values(sets: Optional[Mapping[str, Any]]) -> List[str]:
    """PATH=VALUE overrides, as the typed API takes them."""
    return [f"{k}={_one(v)}" for k, v in (sets or {}).items()]


def _set_words(sets: Optional[Mapping[str, Any]]) -> List[str]:
    words: List[str] = []
    for k, v in (sets or {}).items():
        words += ["--set", f"{k}={_one(v)}"]
    return words


def _topology_args(t: TopologyArg, sets: Optional[Mapping[str, Any]]) -> Tuple[Optional[str], List[str]]:
    """The typed API's topology: its path (None: the default) and PATH=VALUE overrides."""
    if isinstance(t, Topology):
        path, all_sets = t.path, {**t.sets, **(sets or {})}
    else:
        path, all_sets = (None if t is None else os.fspath(t)), dict(sets or {})
    return path, _set_values(all_sets)


def _topology_words(t: TopologyArg, sets: Optional[Mapping[str, Any]]) -> List[str]:
    """--topology FILE and --set PATH=V flags: a path, or a Topology's with `sets` added."""
    if isinstance(t, Topology):
        path, sets = t.path, {**t.sets, **(sets or {})}
    else:
        path = None if t is None else os.fspath(t)
    return (["--topology", path] if path is not None else []) + _set_words(sets)


class EvalResult(dict):  # type: ignore[type-arg]
    """One config's figures: ``eval FAMILY --json``'s document. A dict (``r["latency_ps"]``,
    equal to the parsed JSON), whose keys are also attributes (``r.latency_ps``,
    ``r.reference``, ``r.parity``); ``to_pandas()`` gives one row per engine."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{name}: not a figure of this result (known: {', '.join(self)})") from None

    def to_pandas(self) -> Any:
        """A pandas DataFrame: the config's axes and each engine's figures, one row per engine
        that ran (an ``engine`` column: reference, batched)."""
        import pandas as pd  # optional: only this method needs it

        rows = [{**self["config"], "engine": e, **self[e]} for e in ("reference", "batched") if e in self]
        return pd.DataFrame(rows)


def _config_names(fam: Dict[str, Any], config: Mapping[str, Any],
                  bare: bool = True) -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str]]:
    """Config keywords as the typed API takes them: axis, hardware axis and preset texts (with
    `bare`, True stands for a flag given alone, as eval takes ``--allreduce``)."""
    axes: Dict[str, str] = {}
    hw: Dict[str, str] = {}
    presets: Dict[str, str] = {}
    hw_names = {a["name"] for a in fam["hw_axes"]}
    for key, value in config.items():
        flag = _flag(fam, key)
        text = "" if value is True and bare else _list(value)
        name = next((a["name"] for a in fam["axes"] + fam["hw_axes"] if a["flag"] == flag), None)
        if name is None:
            presets[flag] = text
        elif name in hw_names:
            hw[name] = text
        else:
            axes[name] = text
    return axes, hw, presets


def eval(family: str, topology: TopologyArg = None, engine: str = "both", trace: Union[None, str, os.PathLike] = None,
         backend: str = "auto", set: Optional[Mapping[str, Any]] = None, data: bool = False, seed: Optional[int] = None,
         max_ops: Optional[int] = None, **config: Value) -> EvalResult:  # noqa: A001 (the command's name)
    """One config of a family on the reference engine and/or the batched model: every
    figure, as ``eval FAMILY --json`` gives them, as an :class:`EvalResult`. Config keywords
    are the family's axes by name (``tile_m=128``), its hardware axes, or its presets
    (``model="llama-3.1-8b"``); a keyword set to True gives its flag alone. It runs in this
    process by the typed API, without command words or JSON text."""
    fam = _family(family)
    axes, hw, presets = _config_names(fam, config)
    path, set_words = _topology_args(topology, set)
    return EvalResult(_core.eval(family, axes, hw, presets, path, set_words, engine, backend,
                                 "" if trace is None else os.fspath(trace), data,
                                 None if seed is None else _one(seed), None if max_ops is None else _one(max_ops)))


class ServeResult:
    """A serving run: ``summary`` (what ``serve --json`` gives: the workload, the limits, the
    KV cache, the report's TTFT, TPOT, ITL and E2E at mean, P50, P90 and P99, throughput and
    goodput, and the reference engine's re-check), and ``requests``, a pandas DataFrame of
    one row a request (the columns of ``requests.csv``)."""

    def __init__(self, summary: Dict[str, Any], requests_csv: str):
        self.summary = summary
        self._csv = requests_csv

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    @property
    def requests(self) -> Any:
        import io

        import pandas as pd

        return pd.read_csv(io.StringIO(self._csv))

    def __repr__(self) -> str:
        r = self.summary["report"]
        return (f"ServeResult({self.summary['workload']['requests']} requests, TTFT p90 {r['ttft_ms']['p90']:.4g} ms, "
                f"TPOT p90 {r['tpot_ms']['p90']:.4g} ms, goodput {r['goodput_per_s']:.4g}/s)")


def serve(topology: TopologyArg = None, set: Optional[Mapping[str, Any]] = None, *,  # noqa: A002
          arrivals: str, isl: Value = 1024, osl: Value = 128, lengths: Union[None, str, os.PathLike] = None,
          requests: Optional[int] = None, seed: int = 1, max_num_seqs: int = 256, max_batched_tokens: int = 8192,
          chunked_prefill: Union[bool, str] = True, kv_block: int = 16, slo_ttft: float = 2000, slo_tpot: float = 50,
          disagg: Optional[str] = None, recheck: int = 2, out: Union[None, str, os.PathLike] = None, backend: str = "auto",
          **config: Value) -> ServeResult:
    """A serving run of a whole model, as ``kernbench-gpu serve`` runs it: requests arriving
    (``arrivals="poisson:2"``, ``"gamma:RATE:CV"``, ``"closed:N"`` or a trace file), scheduled
    as vLLM v1 schedules them, each step timed by the llm family. Config keywords are the llm
    family's (``model="llama-3.1-70b"``, ``tp=8``, ``tp_level="sip"``). SLOs in ms. With
    ``out``, the summary, the CSV files and the figures are written there too. ``disagg="P:D"``
    serves with P prefill and D decode instances."""
    import tempfile

    fam = _family("llm")
    axes, hw, presets = _config_names(fam, config)
    path, set_words = _topology_args(topology, set)
    if isinstance(chunked_prefill, bool):
        chunked_prefill = "on" if chunked_prefill else "off"
    options = {"arrivals": str(arrivals), "isl": _one(isl), "osl": _one(osl), "requests": "" if requests is None else _one(requests),
               "seed": _one(seed), "max_num_seqs": _one(max_num_seqs), "max_batched_tokens": _one(max_batched_tokens),
               "chunked_prefill": str(chunked_prefill), "kv_block": _one(kv_block), "slo_ttft": str(slo_ttft),
               "slo_tpot": str(slo_tpot), "recheck": _one(recheck)}
    if lengths is not None:
        options["lengths"] = os.fspath(lengths)
    if disagg is not None:
        options["disagg"] = str(disagg)
    with tempfile.TemporaryDirectory() as tmp:
        folder = tmp if out is None else os.fspath(out)
        options["out"] = folder
        summary = _core.serve(axes, hw, presets, path, set_words, backend, options, out is not None)
        with open(os.path.join(folder, "requests.csv"), encoding="utf-8") as f:
            csv_text = f.read()
    return ServeResult(summary, csv_text)


class ServeSweepResult:
    """``sweep serve``'s result: ``json`` (what ``sweep serve --json`` gives: the counts, the
    SLO, each mapping's re-check), ``configs``, a pandas DataFrame of one row a config (its
    swept fields, status, percentiles, throughputs, ``meets_slo`` and ``on_front``), and
    ``front``, the rows of the SLO-aware Pareto front in the curve's order."""

    def __init__(self, document: Dict[str, Any]):
        self.json = document

    def __getitem__(self, key: str) -> Any:
        return self.json[key]

    @property
    def configs(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.json["configs"], columns=self.json["columns"])

    @property
    def front(self) -> Any:
        return self.configs.iloc[list(self.json["front"])].reset_index(drop=True)

    def __repr__(self) -> str:
        n = self.json["counts"]
        return f"ServeSweepResult({n['configs']} configs, {n['meet_slo']} meet the SLO, {n['front']} on the front)"


def sweep_serve(topology: TopologyArg = None, set: Optional[Mapping[str, Any]] = None, *,  # noqa: A002
                arrivals: Values, isl: Value = 1024, osl: Value = 128, lengths: Union[None, str, os.PathLike] = None,
                requests: Optional[int] = None, seed: int = 1, max_num_seqs: Values = 256, max_batched_tokens: Values = 8192,
                chunked_prefill: Union[bool, str, Sequence[Union[bool, str]]] = True, kv_block: Values = 16,
                slo_ttft: float = 2000, slo_tpot: float = 50, slo_percentile: int = 90, disagg: Optional[Values] = None,
                recheck: int = 2, out: Union[None, str, os.PathLike] = None, csv: Union[None, str, os.PathLike] = None,
                backend: str = "auto", **config: Values) -> ServeSweepResult:
    """Serving runs of every combination, as ``kernbench-gpu sweep serve`` runs them: lists
    (or single values) of ``arrivals``, ``max_num_seqs``, ``max_batched_tokens``,
    ``chunked_prefill``, ``kv_block``, ``disagg`` ("P:D" or "none") and the llm family's config
    keywords (``model=["llama-3.1-70b", "mixtral-8x7b"]``, ``tp=[2, 4, 8]``). Each config is the
    ``serve`` run of its values; the front holds the configs whose TTFT and TPOT at
    ``slo_percentile`` meet the SLO and that no other such config beats on tokens/s per SIP and
    per user. ``out`` and ``csv`` also write the JSON and the configs' CSV."""
    fam = _family("llm")
    axes, hw, presets = _config_names(fam, config)
    path, set_words = _topology_args(topology, set)

    def prefill(v: Any) -> str:
        return "on" if v is True else "off" if v is False else str(v)

    chunked = ",".join(prefill(v) for v in chunked_prefill) if isinstance(chunked_prefill, (list, tuple)) else prefill(chunked_prefill)
    options = {"arrivals": _list(arrivals), "isl": _one(isl), "osl": _one(osl), "requests": "" if requests is None else _one(requests),
               "seed": _one(seed), "max_num_seqs": _list(max_num_seqs), "max_batched_tokens": _list(max_batched_tokens),
               "chunked_prefill": chunked, "kv_block": _list(kv_block), "slo_ttft": str(slo_ttft), "slo_tpot": str(slo_tpot),
               "slo_percentile": _one(slo_percentile), "recheck": _one(recheck)}
    if lengths is not None:
        options["lengths"] = os.fspath(lengths)
    if disagg is not None:
        options["disagg"] = _list(disagg)
    if out is not None:
        options["out"] = os.fspath(out)
    if csv is not None:
        options["csv"] = os.fspath(csv)
    return ServeSweepResult(_core.sweep_serve(axes, hw, presets, path, set_words, backend, options))


class SweepResult:
    """A sweep's summary: what ``sweep --json`` (or ``merge --json``) gives.

    ``best`` (a group's values and its best config), ``top``, ``pareto`` (the fronts) and
    ``histogram``; ``counts`` (evaluated, valid, invalid) and ``invalid`` (by status);
    ``latencies``: every config's latency_ps (-1: invalid) when asked for."""

    def __init__(self, document: Any, latencies: Any = None, *, value: Optional[Dict[str, Any]] = None):
        # The document: its JSON text, or the module's Document with its value as objects.
        self._text: Optional[str] = document if isinstance(document, str) else None
        self._document = None if isinstance(document, str) else document
        self.json: Dict[str, Any] = json.loads(document) if isinstance(document, str) else value
        self.latencies = latencies

    @property
    def best(self) -> List[Dict[str, Any]]:
        return self.json["best_per_group"]

    @property
    def top(self) -> List[Dict[str, Any]]:
        return self.json.get("top", [])

    @property
    def pareto(self) -> List[Dict[str, Any]]:
        p = self.json.get("pareto")
        return p["fronts"] if p else []

    @property
    def histogram(self) -> Optional[Dict[str, Any]]:
        return self.json.get("histogram")

    @property
    def invalid(self) -> Dict[str, int]:
        return self.json.get("invalid", {})

    @property
    def counts(self) -> Dict[str, int]:
        j = self.json
        return {"evaluated": j["evaluated"], "valid": j["valid"], "invalid": j["evaluated"] - j["valid"]}

    def to_json(self, path: Union[None, str, os.PathLike] = None) -> str:
        """The JSON text, exactly as ``sweep --json`` prints it; written to PATH when given."""
        if self._text is None:
            self._text = self._document.text()
        if path is not None:
            tmp = os.fspath(path) + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(self._text)
            os.replace(tmp, os.fspath(path))
        return self._text

    def to_pandas(self, which: str = "best") -> Any:
        """A pandas DataFrame of the best config per group (``which="best"``), the top
        configs (``"top"``) or the Pareto points (``"pareto"``, with a group_index column)."""
        import pandas as pd  # optional: only this method needs it

        if which == "best":
            rows = [dict(b["best"]) for b in self.best if b.get("best")]
        elif which == "top":
            rows = [dict(r) for r in self.top]
        elif which == "pareto":
            rows = [dict(p, group_index=f["group_index"]) for f in self.pareto for p in f["points"]]
        else:
            raise InputError(f"to_pandas: which={which!r}: expected best, top or pareto")
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        c = self.counts
        return f"SweepResult({self.json.get('family')!r}, evaluated={c['evaluated']}, valid={c['valid']})"


def _progress_callback(progress: Progress) -> Tuple[Optional[Callable[[int, int], None]], Any]:
    if progress is None or progress is False:
        return None, None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError as e:
            raise InputError("progress=True: draws a tqdm bar, and tqdm is not installed (pip install tqdm)") from e
        bar = tqdm(total=0, unit="configs", unit_scale=True)

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        return update, bar
    if not callable(progress):
        raise InputError("progress: expected a callable (done, total), True for a tqdm bar, or None")
    return progress, None


def _chunk(backend: str, chunk: Optional[int]) -> Optional[int]:
    # A sweep polls for Ctrl-C and reports progress between chunks: on the CPU, chunks of 2^18
    # configs keep that under a second (the results do not depend on the chunk).
    if chunk is not None:
        return chunk
    if backend == "omp" or (backend == "auto" and _core.cuda_device_count() == 0):
        return 1 << 18
    return None


def sweep(family: str, axes: Optional[Mapping[str, Values]] = None, hw: Optional[Mapping[str, Values]] = None,
          zip: Optional[Mapping[Union[str, Tuple[str, ...]], Iterable[Sequence[Value]]]] = None,  # noqa: A002
          group: Union[None, str, Sequence[str]] = None, top: Optional[int] = None, pareto: Optional[str] = None,
          recheck: Optional[int] = None, shard: Optional[Tuple[int, int]] = None, topology: TopologyArg = None,
          set: Optional[Mapping[str, Any]] = None, backend: str = "auto", histogram: bool = True,  # noqa: A002
          space: Union[None, str, os.PathLike] = None, chunk: Optional[int] = None, max_hours: Optional[float] = None,
          max_ops: Optional[int] = None, progress: Progress = None, return_latencies: bool = False,
          max_latencies: int = 1 << 26, out: Union[None, str, os.PathLike] = None,
          csv: Union[None, str, os.PathLike] = None, **config: Values) -> SweepResult:
    """A space of a family's configs on the batched model, reduced as ``sweep FAMILY --json``
    reduces it. ``axes`` (and config keywords) give each axis a value or a list (a list, a
    range, or the command line's text such as ``"1:1024:*2"``); ``hw`` sweeps hardware axes
    or topology fields by path; ``zip`` gives fields that take their values together
    (``{"m,n,k": [(32, 10240, 8192), ...]}``). ``progress``: a callable (done, total) called
    between chunks, or True for a tqdm bar. ``return_latencies``: also every config's
    latency_ps in index order (-1: invalid), as a NumPy array, for at most ``max_latencies``
    configs. Ctrl-C stops the sweep with KeyboardInterrupt and writes nothing. It runs in this
    process by the typed API, without command words."""
    fam = _family(family)
    ax, hw_axes, presets = _config_names(fam, {**(axes or {}), **config}, bare=False)
    hw_lists: List[str] = []
    for key, value in (hw or {}).items():
        if "." in key:
            hw_lists.append(f"{key}={_list(value)}")
        else:
            a, h, p = _config_names(fam, {key: value}, bare=False)
            ax.update(a), hw_axes.update(h), presets.update(p)
    zips = []
    for names, tuples in (zip or {}).items():
        n = names if isinstance(names, str) else ",".join(names)
        zips.append(n + "=" + ",".join("/".join(_one(v) for v in t) for t in tuples))
    options: Dict[str, Any] = {"backend": backend, "chunk": _chunk(backend, chunk), "top": top, "pareto": pareto,
                               "recheck": recheck, "max_hours": max_hours, "max_ops": max_ops, "histogram": histogram}
    if group is not None:
        options["group"] = group if isinstance(group, str) else (",".join(group) or "none")
    if shard is not None:
        options["shard"] = f"{shard[0]}/{shard[1]}"
    for key, path in (("space", space), ("out", out), ("csv", csv)):
        if path is not None:
            options[key] = os.fspath(path)
    for key in ("top", "recheck", "max_ops", "chunk"):
        if options[key] is not None:
            options[key] = _one(options[key])
    if max_hours is not None:
        options["max_hours"] = _one(max_hours)
    path, set_words = _topology_args(topology, set)
    callback, bar = _progress_callback(progress)
    try:
        value, document, lat = _core.sweep(family, ax, hw_axes, presets, hw_lists, zips, options, path, set_words,
                                           callback, return_latencies, max_latencies)
    finally:
        if bar is not None:
            bar.close()
    if lat is not None:
        import numpy as np  # only latencies need it

        lat = np.asarray(lat)  # the module's buffer, not a copy
    return SweepResult(document, lat, value=value)


def merge(paths: Sequence[Union[str, os.PathLike]], out: Union[None, str, os.PathLike] = None,
          csv: Union[None, str, os.PathLike] = None) -> SweepResult:
    """The shards of one sweep (their ``--out`` files) merged: ``merge --json``, by the typed API."""
    value, document = _core.merge([os.fspath(p) for p in paths], "" if out is None else os.fspath(out),
                                  "" if csv is None else os.fspath(csv))
    return SweepResult(document, value=value)


def run_bench(name: str, out: Union[None, str, os.PathLike] = None, fast: bool = False, topology: TopologyArg = None,
              set: Optional[Mapping[str, Any]] = None, backend: str = "auto") -> Dict[str, Any]:  # noqa: A002
    """Runs a bench (``run --bench NAME``, by the typed API): its JSON, CSV and figures written
    to OUT (default: benches/1H_milestone_output/DOMAIN). Returns the folder (``out``), the
    files written (``files``) and the results document (``results``, its JSON parsed)."""
    path, set_words = _topology_args(topology, set)
    folder = _core.run_bench(name, path, set_words, "" if out is None else os.fspath(out), backend, fast)
    info = next(b for b in _list_json()["benches"] if b["name"] == name)
    with open(os.path.join(folder, info["json"]), encoding="utf-8") as f:
        results = json.load(f)
    return {"out": folder, "files": sorted(os.listdir(folder)), "results": results}
