"""Shared helpers for the kernbench-gpu plot scripts.

Every plot script follows the same contract:

* ``--in FILE.json --out DIR`` on the command line (see :func:`parse_args`);
* the input is a versioned JSON document carrying ``schema`` (a name such as
  ``"kernbench-gpu/gemm-sweep"``) and ``schema_version`` (a semver string);
  a script accepts any version with the major it was written for
  (see :func:`load_json`);
* on any problem with the input it prints exactly one line,
  ``error: FILE: <what is wrong>``, to stderr and exits with status 2
  (see :func:`fail` and :class:`InputError`);
* figures are written atomically: each is rendered to a temporary file in the
  output directory and moved into place with ``os.replace`` only once every
  figure has rendered, so a failed run leaves no partial output
  (see :func:`save_all_atomic`, :func:`save_atomic`); figures handed over as
  functions that build them are built and rendered in forked processes, one per
  core, with the same all-or-nothing result.

Only the standard library and matplotlib (with its numpy dependency) are used.
The Agg backend is selected here, before pyplot is imported, so importing this
module first is enough to make any plot script headless.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import select
import sys
import tempfile
from typing import Any, Iterable, NoReturn, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (must follow matplotlib.use)

__all__ = [
    "InputError",
    "fail",
    "parse_args",
    "load_json",
    "parse_semver",
    "require",
    "require_str",
    "require_num",
    "require_list",
    "require_dict",
    "require_int",
    "require_real",
    "require_choice",
    "require_object",
    "require_topology",
    "MAX_INT",
    "MAX_REAL",
    "ensure_out_dir",
    "new_figure",
    "fixed_layout",
    "save_atomic",
    "save_all_atomic",
    "plt",
    "FIGSIZE",
    "DPI",
    "run_main",
    "describe",
]

FIGSIZE = (11, 6)
DPI = 150

_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)


class InputError(Exception):
    """A problem with an input or output path, reported as one line.

    ``where`` is the file (or directory) the message is about.
    """

    def __init__(self, where: str, msg: str):
        super().__init__(msg)
        self.where = where
        self.msg = msg


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def fail(msg: str, where: str | None = None) -> NoReturn:
    """Print ``error: WHERE: MSG`` (one line) to stderr and exit with status 2."""
    line = f"error: {where}: {msg}" if where else f"error: {msg}"
    print(_one_line(line), file=sys.stderr)
    sys.exit(2)


class _ArgParser(argparse.ArgumentParser):
    """argparse that reports usage errors as one ``error:`` line, exit 2."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        fail(f"{message} (usage: {self.prog} --in FILE.json --out DIR)", self.prog)


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the common ``--in FILE --out DIR`` arguments.

    Returns a namespace with ``input`` and ``out`` attributes. With the one argument
    ``--args-on-stdin`` the arguments are read from standard input instead, each ended by a
    NUL byte: the simulator starts a bench's script early, so that importing matplotlib
    overlaps the simulation, and hands them over once the input exists. An empty standard
    input (the bench failed, and abandons the script) is an error, writing nothing.
    """
    if argv is None:
        argv = sys.argv[1:]
    if list(argv) == ["--args-on-stdin"]:
        data = sys.stdin.buffer.read()
        if not data:
            fail("--args-on-stdin: no arguments on standard input")
        argv = [os.fsdecode(a) for a in data.split(b"\0")[:-1]]
    p = _ArgParser(description=description)
    p.add_argument("--in", dest="input", required=True, metavar="FILE.json",
                   help="input JSON written by the simulator")
    p.add_argument("--out", dest="out", required=True, metavar="DIR",
                   help="directory to write the PNG figures into (created if missing)")
    return p.parse_args(argv)


def parse_semver(text: Any) -> tuple[int, int, int] | None:
    """Return (major, minor, patch) for a semver string, else None."""
    if not isinstance(text, str):
        return None
    m = _SEMVER_RE.match(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def load_json(path: str, schema_name: str, major: "int | tuple") -> dict:
    """Read ``path`` and check its ``schema`` and ``schema_version``.

    The document must be a JSON object whose ``schema`` equals ``schema_name``
    and whose ``schema_version`` is a semver string with major ``major`` (or one
    of the majors, where ``major`` is a tuple of those a script reads).
    Raises :class:`InputError` (``where`` = path) on any problem.
    """
    majors = major if isinstance(major, tuple) else (major,)
    major = " or ".join(f"{m}.x.y" for m in majors)
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a JSON file") from None
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None

    def _reject_constant(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    def _int64(digits: str) -> int:
        v = int(digits)
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError(f"the integer {digits[:24]}{'...' if len(digits) > 24 else ''} is outside int64")
        return v

    def _finite(digits: str) -> float:
        v = float(digits)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"the number {digits[:24]} is not finite")
        return v

    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_int=_int64, parse_float=_finite)
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise InputError(path, "invalid JSON: nested too deeply for a results document") from None
    except ValueError as e:
        raise InputError(path, f"invalid JSON: {e}") from None

    if not isinstance(doc, dict):
        raise InputError(path, f"top level is a JSON {_json_type(doc)}, expected an object")
    if "schema" not in doc:
        raise InputError(path, f'missing "schema" (expected "{schema_name}")')
    if doc["schema"] != schema_name:
        raise InputError(path, f'schema is {json.dumps(doc["schema"])}, expected "{schema_name}"')
    if "schema_version" not in doc:
        raise InputError(path, f'missing "schema_version" (expected {major})')
    ver = doc["schema_version"]
    parsed = parse_semver(ver)
    if parsed is None:
        raise InputError(path, f"schema_version {json.dumps(ver)} is not a semver string "
                               f"(expected {major})")
    if parsed[0] not in majors:
        raise InputError(path, f'unsupported schema_version "{ver}" '
                               f"(this script reads {major})")
    return doc


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


# --- field validation -------------------------------------------------------
# Each helper takes the containing object, the key, and a context string used
# in the message (e.g. 'configs[3]'); ``where`` is the file being read.

def require(obj: dict, key: str, ctx: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise InputError(where, f"{ctx} is a {_json_type(obj)}, expected an object")
    if key not in obj:
        raise InputError(where, f'{ctx}: missing "{key}"')
    return obj[key]


def require_str(obj: dict, key: str, ctx: str, where: str) -> str:
    v = require(obj, key, ctx, where)
    if not isinstance(v, str) or not v:
        raise InputError(where, f'{ctx}: "{key}" is {json.dumps(v)}, expected a non-empty string')
    return v


def require_num(obj: dict, key: str, ctx: str, where: str, *,
                min_value: float | None = None, positive: bool = False) -> float:
    v = require(obj, key, ctx, where)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(where, f'{ctx}: "{key}" is {json.dumps(v)}, expected a number')
    if positive and not v > 0:
        raise InputError(where, f'{ctx}: "{key}" is {v}, expected a positive number')
    if min_value is not None and v < min_value:
        raise InputError(where, f'{ctx}: "{key}" is {v}, expected >= {min_value}')
    return v


def require_list(obj: dict, key: str, ctx: str, where: str, *, nonempty: bool = True) -> list:
    v = require(obj, key, ctx, where)
    if not isinstance(v, list):
        raise InputError(where, f'{ctx}: "{key}" is a {_json_type(v)}, expected an array')
    if nonempty and not v:
        raise InputError(where, f'{ctx}: "{key}" is empty')
    return v


def require_dict(obj: dict, key: str, ctx: str, where: str) -> dict:
    v = require(obj, key, ctx, where)
    if not isinstance(v, dict):
        raise InputError(where, f'{ctx}: "{key}" is a {_json_type(v)}, expected an object')
    return v


# The largest integer a results document holds (picoseconds, bytes, counts: the simulator
# keeps them below 2^62), and the largest real figure (GB/s, TFLOP/s, ratios) that means
# anything; 1e308 is a number, not a result.
MAX_INT = 1 << 62
MAX_REAL = 1e15


def require_object(v: Any, ctx: str, where: str) -> dict:
    if not isinstance(v, dict):
        raise InputError(where, f"{ctx} is a {_json_type(v)}, expected an object")
    return v


def require_int(obj: dict, key: str, ctx: str, where: str, *, lo: int = 0, hi: int = MAX_INT) -> int:
    """An integer field (a JSON integer, not 1.0 or true) in lo..hi."""
    v = require(obj, key, ctx, where)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(where, f'{ctx}: "{key}" is {json.dumps(v)[:40]}, expected an integer')
    if not lo <= v <= hi:
        raise InputError(where, f'{ctx}: "{key}" is {v}, expected {lo}..{hi}')
    return v


def require_real(obj: dict, key: str, ctx: str, where: str, *, lo: float = 0.0, hi: float = MAX_REAL,
                 positive: bool = False) -> float:
    """A finite number in lo..hi (above lo when ``positive``)."""
    v = require_num(obj, key, ctx, where)
    if positive and not v > lo:
        raise InputError(where, f'{ctx}: "{key}" is {v}, expected a number above {lo:g}')
    if not lo <= v <= hi:
        raise InputError(where, f'{ctx}: "{key}" is {v:g}, expected {lo:g}..{hi:g}')
    return float(v)


def require_choice(obj: dict, key: str, ctx: str, where: str, choices: Sequence[Any]) -> Any:
    v = require(obj, key, ctx, where)
    if isinstance(v, bool) or v not in choices:
        raise InputError(where, f'{ctx}: "{key}" is {json.dumps(v)[:40]}, expected one of '
                                f'{", ".join(json.dumps(c) for c in choices)}')
    return v


# The parts of a record's energy (docs/model.md section 14), in drawing order, with their
# labels and colours (the same in every figure).
ENERGY_PARTS = [
    ("energy_matrix_fj", "matrix (MACs)", "#4c72b0"),
    ("energy_vector_fj", "vector", "#8172b2"),
    ("energy_sram_fj", "SRAM", "#55a868"),
    ("energy_hbm_fj", "HBM", "#c44e52"),
    ("energy_links_fj", "links", "#dd8452"),
    ("energy_static_fj", "static", "#999999"),
]


def energy_of(obj: dict, ctx: str, where: str) -> dict[str, int] | None:
    """A record's energy parts and ``energy_fj`` (integers, fJ), checked to add up; None when
    the record has no energy columns (a document from before them) or its energy overflowed
    (``energy_status`` "energy_overflow": the columns are null), so the energy figures are
    left out rather than drawn wrong."""
    if "energy_fj" not in obj:
        return None
    status = require_choice(obj, "energy_status", ctx, where, ("ok", "energy_overflow"))
    if status != "ok":
        return None
    top = (1 << 63) - 1
    out = {k: require_int(obj, k, ctx, where, hi=top) for k, _, _ in ENERGY_PARTS}
    total = require_int(obj, "energy_fj", ctx, where, hi=top)
    if sum(out.values()) != total:
        raise InputError(where, f'{ctx}: the energy parts add up to {sum(out.values())}, "energy_fj" is {total}')
    out["energy_fj"] = total
    return out


def require_topology(doc: dict, where: str) -> dict:
    """Every results document names the topology it was simulated on."""
    t = require_dict(doc, "topology", "top level", where)
    require_str(t, "name", "topology", where)
    if not isinstance(t.get("hash"), str):
        raise InputError(where, 'topology: "hash" is missing or not a string')
    return t


# --- output -----------------------------------------------------------------

def ensure_out_dir(path: str) -> str:
    """Create the output directory if needed; raise InputError if impossible."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise InputError(path, "exists and is not a directory") from None
    except OSError as e:
        raise InputError(path, f"cannot create output directory: {e.strerror or e}") from None
    if not os.path.isdir(path):
        raise InputError(path, "exists and is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(path, "output directory is not writable")
    return path


def new_figure(figsize: tuple[float, float] = FIGSIZE):
    """A (fig, ax) pair with the house size; layout is tightened at save time."""
    fig, ax = plt.subplots(figsize=figsize, dpi=DPI)
    return fig, ax


def fixed_layout(fig, **margins):
    """Lay `fig` out with fixed margins (``fig.subplots_adjust(**margins)``) that hold every
    label, and save it at its own size: without the tight crop, which draws the whole figure
    once more to measure it (half of a large figure's save time)."""
    fig.subplots_adjust(**margins)
    fig._kb_fixed_layout = True
    return fig


def _render_to_temp(fig, path: str) -> str:
    d = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            crop = None if getattr(fig, "_kb_fixed_layout", False) else "tight"
            fig.savefig(f, format="png", dpi=DPI, bbox_inches=crop)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600; give the figure the usual umask-derived mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        _unlink_quiet(tmp)
        raise
    return tmp


def _unlink_quiet(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def describe(fig) -> list[dict]:
    """What a figure shows, panel by panel (axes holding something): its title, axis labels,
    the lines, bars and scatter points drawn, the images' shapes, the annotations, and the
    legend's entries. With the environment
    variable KERNBENCH_PLOT_DESCRIBE=FILE, save_all_atomic writes this for every figure to
    FILE as JSON (the figure tests read it)."""
    panels = []
    for ax in fig.get_axes():
        if not ax.get_visible() or not ax.axison and not ax.tables:
            continue
        legend = ax.get_legend()
        panels.append({
            "title": ax.get_title(),
            "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(),
            "lines": sum(1 for ln in ax.get_lines() if len(ln.get_xdata()) > 0),
            "bars": sum(1 for p in ax.patches if type(p).__name__ == "Rectangle"),
            "points": sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets")),
            "tables": len(ax.tables),
            "images": [list(im.get_array().shape) for im in ax.images],
            "texts": len(ax.texts),
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
        })
    return panels


def _stage(fig, path: str) -> str:
    """Render `fig` to a temp file beside `path`; a file that cannot be written is an InputError."""
    try:
        return _render_to_temp(fig, path)
    except OSError as e:
        raise InputError(os.path.dirname(path) or ".", f"cannot write {os.path.basename(path)}: {e.strerror or e}") from None


def _stage_in_children(builders: list[tuple[Any, str]], workers: int) -> tuple[list[tuple[str, str]], dict]:
    """Build and render each (builder, path) in a forked child, at most ``workers`` at a time.

    A child builds its figure, renders it to a temp file beside ``path`` and reports the
    temp file (and, with KERNBENCH_PLOT_DESCRIBE, the figure's description) on a pipe. Returns
    the staged (temp, path) pairs in the builders' order and the descriptions by file name;
    on any failure every temp file is removed and the first error is raised.
    """
    running: dict[int, tuple[int, int]] = {}  # pid -> (index, read end)
    results: dict[int, dict] = {}
    pending = list(range(len(builders)))

    buffers: dict[int, bytearray] = {}

    def reap_one() -> None:  # reads the children's reports; reaps each at the end of its report
        fds = {fd: pid for pid, (_, fd) in running.items()}
        ready, _, _ = select.select(list(fds), [], [])
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                buffers.setdefault(fd, bytearray()).extend(chunk)
                continue
            pid = fds[fd]
            index, _ = running.pop(pid)
            os.close(fd)
            os.waitpid(pid, 0)
            try:
                results[index] = json.loads(bytes(buffers.pop(fd, b"")).decode("utf-8"))
            except ValueError:
                results[index] = {"error": "a figure's renderer stopped without a report"}

    try:
        while pending or running:
            while pending and len(running) < workers:
                index = pending.pop(0)
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the child: never returns
                    os.close(r)
                    code = 0
                    try:
                        build, path = builders[index]
                        fig = build()
                        report = {"describe": describe(fig) if os.environ.get("KERNBENCH_PLOT_DESCRIBE") else None}
                        report["tmp"] = _stage(fig, path)
                    except InputError as e:
                        report = {"input_error": [e.where, e.msg]}
                    except BaseException as e:  # reported to the parent, which raises it there
                        report = {"error": f"{type(e).__name__}: {e}"}
                    try:
                        data = json.dumps(report).encode("utf-8")
                        while data:
                            data = data[os.write(w, data):]
                    except BaseException:
                        code = 1
                    os._exit(code)
                os.close(w)
                running[pid] = (index, r)
            reap_one()
    except BaseException:
        for pid, (_, fd) in running.items():
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
            os.close(fd)
        for rep in results.values():
            if rep.get("tmp"):
                _unlink_quiet(rep["tmp"])
        raise
    staged = [(results[i]["tmp"], path) for i, (_, path) in enumerate(builders) if results[i].get("tmp")]
    for i in range(len(builders)):
        rep = results[i]
        if "tmp" in rep:
            continue
        for tmp, _ in staged:
            _unlink_quiet(tmp)
        if "input_error" in rep:
            raise InputError(*rep["input_error"])
        raise RuntimeError(rep.get("error", "a figure failed to render"))
    described = {os.path.basename(path): results[i]["describe"] for i, (_, path) in enumerate(builders)}
    return staged, described


def save_all_atomic(figures: Iterable[tuple[Any, str]]) -> list[str]:
    """Render every (fig, path) to a temp file beside ``path``, then move all
    into place with ``os.replace``.

    A figure may be given as a function that builds it: such figures are built and rendered
    in forked processes, as many at once as the machine has cores (matplotlib's layout and
    rendering are most of a plot script's time), with the same all-or-nothing result.

    If any render fails, all temp files are removed and nothing is replaced, so
    the output directory is left as it was.  Figures are closed afterwards.
    Returns the list of written paths.
    """
    figures = list(figures)
    workers = min(len(figures), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    if figures and all(callable(f) for f, _ in figures):
        if workers > 1 and hasattr(os, "fork"):
            staged, described = _stage_in_children(figures, workers)
            _write_description(described)
            return _move_into_place(staged)
        figures = [(build(), path) for build, path in figures]
    _write_description({os.path.basename(path): describe(fig) for fig, path in figures})
    staged: list[tuple[str, str]] = []
    try:
        for fig, path in figures:
            staged.append((_stage(fig, path), path))
    except BaseException:
        for tmp, _ in staged:
            _unlink_quiet(tmp)
        raise
    finally:
        for fig, _ in figures:
            plt.close(fig)
    return _move_into_place(staged)


def _write_description(described: dict) -> None:
    """With KERNBENCH_PLOT_DESCRIBE=FILE, what each figure shows, by file name (see describe)."""
    if os.environ.get("KERNBENCH_PLOT_DESCRIBE"):
        with open(os.environ["KERNBENCH_PLOT_DESCRIBE"], "w", encoding="utf-8") as f:
            json.dump(described, f, indent=1)


def _move_into_place(staged: list[tuple[str, str]]) -> list[str]:
    """os.replace every staged (temp, path); on a failure the temp files left are removed."""
    try:
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            _unlink_quiet(tmp)
        raise
    return [p for _, p in staged]


def save_atomic(fig, path: str) -> str:
    """Render one figure to a temp file in its directory, then os.replace it."""
    return save_all_atomic([(fig, path)])[0]


def run_main(main) -> None:
    """Call ``main()``, turning InputError into the one-line error / exit 2."""
    try:
        main()
    except InputError as e:
        fail(e.msg, e.where)
