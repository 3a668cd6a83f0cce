"""NVIDIA DCGM: dcgm-exporter ``/metrics`` text (Prometheus) and ``dcgmi dmon`` tables.

DCGM watches the hardware, not the training loop: a Run from it has no step rows and no events.
Everything it read is in two tables:

- ``tables["gpu_metrics"]``, tidy: one row per (sample, entity). ``sample`` is the scrape number
  (1, 2, ...) of ``/metrics`` text or the pass number of a ``dmon`` table; ``time_s`` (seconds
  since the first timestamp) only where samples carry a Prometheus timestamp. The entity columns
  are ``entity`` (``GPU 0``, ``GPU 0 GPU-I 7``, ``GPU-I 21``, with ``<host>/`` in front when
  labelled), ``kind`` (``gpu`` for a whole GPU, ``mig`` for a MIG GPU instance, ``mig_ci`` for a
  compute instance, else the dmon entity type), ``gpu``, ``gpu_instance`` (``GPU_I_ID`` or
  ``GPU-I <id>``), ``mig_profile`` (``GPU_I_PROFILE``, e.g. ``1g.10gb``), ``uuid``,
  ``model_name`` (as printed), ``hostname``, and where labelled ``pod``, ``namespace``,
  ``container``, ``device``, ``pci_bus_id``, ``driver_version``, ``instance``, ``job``. The metric
  columns have readable names: ``tensor_active`` (``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``, dmon
  ``TENSO``), ``sm_active``, ``sm_occupancy``, ``gr_engine_active``, ``dram_active``,
  ``fp64_active``/``fp32_active``/``fp16_active`` (ratios 0..1), ``gpu_util`` and
  ``mem_copy_util`` (percent), ``power_w``, ``sm_clock_mhz``, ``mem_clock_mhz``,
  ``temperature_c``, ``memory_temperature_c``, ``memory_used_mib``/``memory_free_mib``/
  ``memory_total_mib``, ``power_limit_w``, ``pcie_tx_bytes_per_s``/``pcie_rx_bytes_per_s``,
  ``nvlink_tx_bytes_per_s``/``nvlink_rx_bytes_per_s``; any other metric keeps its lower-cased
  name without ``DCGM_FI_`` (``dev_total_energy_consumption``) or its lower-cased dmon short name.
- ``tables["gpu_summary"]``: per entity the number of samples, the mean ``tensor_active``,
  ``sm_active``, ``power_w`` and ``sm_clock_mhz``, and ``apart``: why a whole GPU's mean SM
  clock or power sits apart from its peers (whole GPUs of the same model, at least
  ``Options.min_peers``) by more than ``Options.apart_fraction`` of their median, the hardware
  straggler view; ``""`` otherwise.

Reading rules. Metric names match case-insensitively; the label aliases ``uuid``/``UUID``,
``container_name``/``container``, ``pod_name``/``pod``, ``pod_namespace``/``namespace`` are one
label. The entity key is (host, UUID, gpu, ``GPU_I_ID``): a MIG instance is its own entity, never
merged into nor counted as a whole GPU, and series of one entity with different pod labels still
join in one row. A series is its metric, its entity and any label not read as a column (a second
one of an entity and metric in one sample keeps the first value and is counted as a duplicate).
In a file, a scrape ends at a line of prose (text between scrapes, a shell prompt) or when a
series repeats; ``# HELP``/``# TYPE`` comments, blank lines, a ``>`` quote prefix and
indentation (a reStructuredText code block) are not records. A dmon pass ends when an entity
repeats or a new header starts. ``N/A`` and DCGM's "blank" sentinels (int64 values from 9.2e18,
e.g. ``9223372036854775794``, and the FP64 blank ``140737488355328`` and its codes) are missing
values, never numbers; dmon's multiplexed profiling fields (a row carrying some fields, ``N/A``
for the rest) stay missing. A line that looks like a metric sample but cannot be read (broken
labels, a non-numeric value, a short dmon row) is counted with its line and field.

Facts: ``accelerator`` (the one ``modelName`` as printed), ``n_accelerators`` (distinct whole
GPUs; not given when only MIG instances were seen, which are listed in ``extra`` instead),
``platform`` (the one ``Hostname``), ``n_nodes`` and ``accelerators_per_node`` from the hostnames.
No claims: DCGM measures the hardware, it does not claim model throughput. ``tensor_active`` ×
the accelerator's dense peak is an upper bound on the FLOP/s the tensor cores achieved, never an
MFU (see the note each load carries).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader
from ..values import number

NAME = "dcgm"


@dataclass(frozen=True)
class Options:
    """Options of the dcgm format (besides the RunMeta keywords).

    ``apart_fraction`` (default 0.10): a whole GPU whose mean SM clock or mean power differs from
    the median of its peers by more than this fraction of it is flagged in ``gpu_summary``.
    ``min_peers`` (default 3): the fewest whole GPUs of one model for that comparison (with two,
    neither can be told apart from the other).
    """

    apart_fraction: float = 0.10
    min_peers: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.apart_fraction, (int, float)) or not 0 < self.apart_fraction < 1:
            raise ValueError(f"apart_fraction must be a fraction in (0, 1); got {self.apart_fraction!r}")
        if isinstance(self.min_peers, bool) or not isinstance(self.min_peers, int) or self.min_peers < 2:
            raise ValueError(f"min_peers must be an integer >= 2; got {self.min_peers!r}")


# Prometheus names (lower-case, without DCGM_FI_) and dmon short names -> readable columns.
_PROM_NAMES = {
    "prof_pipe_tensor_active": "tensor_active",
    "prof_sm_active": "sm_active",
    "prof_sm_occupancy": "sm_occupancy",
    "prof_gr_engine_active": "gr_engine_active",
    "prof_dram_active": "dram_active",
    "prof_pipe_fp64_active": "fp64_active",
    "prof_pipe_fp32_active": "fp32_active",
    "prof_pipe_fp16_active": "fp16_active",
    "dev_gpu_util": "gpu_util",
    "dev_mem_copy_util": "mem_copy_util",
    "dev_power_usage": "power_w",
    "dev_sm_clock": "sm_clock_mhz",
    "dev_mem_clock": "mem_clock_mhz",
    "dev_gpu_temp": "temperature_c",
    "dev_memory_temp": "memory_temperature_c",
    "dev_fb_used": "memory_used_mib",
    "dev_fb_free": "memory_free_mib",
    "dev_fb_total": "memory_total_mib",
    "dev_power_mgmt_limit": "power_limit_w",
    "prof_pcie_tx_bytes": "pcie_tx_bytes_per_s",
    "prof_pcie_rx_bytes": "pcie_rx_bytes_per_s",
    "prof_nvlink_tx_bytes": "nvlink_tx_bytes_per_s",
    "prof_nvlink_rx_bytes": "nvlink_rx_bytes_per_s",
}
_DMON_NAMES = {
    "GRACT": "gr_engine_active", "SMACT": "sm_active", "SMOCC": "sm_occupancy",
    "TENSO": "tensor_active", "DRAMA": "dram_active", "FP64A": "fp64_active",
    "FP32A": "fp32_active", "FP16A": "fp16_active", "GPUTL": "gpu_util", "MCUTL": "mem_copy_util",
    "POWER": "power_w", "SMCLK": "sm_clock_mhz", "MMCLK": "mem_clock_mhz",
    "TMPTR": "temperature_c", "MMTMP": "memory_temperature_c", "FBUSD": "memory_used_mib",
    "FBFRE": "memory_free_mib", "FBTTL": "memory_total_mib", "PMLMT": "power_limit_w",
    "PCITX": "pcie_tx_bytes_per_s", "PCIRX": "pcie_rx_bytes_per_s",
    "NVLTX": "nvlink_tx_bytes_per_s", "NVLRX": "nvlink_rx_bytes_per_s",
}
_NON_NEGATIVE = frozenset(_PROM_NAMES.values())
# Label (lower-case) -> entity column; the aliases name one label.
_LABELS = {
    "gpu": "gpu", "uuid": "uuid", "modelname": "model_name", "hostname": "hostname",
    "gpu_i_id": "gpu_instance", "gpu_i_profile": "mig_profile",
    "container": "container", "container_name": "container",
    "pod": "pod", "pod_name": "pod", "namespace": "namespace", "pod_namespace": "namespace",
    "device": "device", "pci_bus_id": "pci_bus_id", "dcgm_fi_driver_version": "driver_version",
    "instance": "instance", "job": "job",
}
_BASE_COLUMNS = ("sample", "entity", "kind", "gpu", "gpu_instance", "mig_profile", "uuid", "model_name", "hostname")
_OPTIONAL_COLUMNS = ("compute_instance", "pod", "namespace", "container", "device", "pci_bus_id", "driver_version",
                     "instance", "job")
_RESERVED = frozenset(_BASE_COLUMNS + _OPTIONAL_COLUMNS + ("time_s", "line"))
_DMON_KINDS = {"GPU": ("gpu", "gpu"), "GPU-I": ("mig", "gpu_instance"), "GPU-CI": ("mig_ci", "compute_instance")}
_SUMMARY_METRICS = ("tensor_active", "sm_active", "power_w", "sm_clock_mhz")
_SUMMARY_ID = ("entity", "kind", "gpu", "gpu_instance", "compute_instance", "mig_profile", "uuid", "model_name",
               "hostname")

_SENTINEL_MIN = 9.2e18  # DCGM_INT64_BLANK = 2**63 - 16 and the codes above it
_FP64_BLANKS = frozenset(140737488355328.0 + i for i in range(4))  # DCGM_FP64_BLANK, NOT_FOUND, ...
_MAX_METRICS = 512
_MAX_LISTED = 64
_MAX_TS_MS = 10**15
_CACHE_MAX = 4096  # label texts remembered (one per series of a scrape)
# The table holds rows × metrics cells; refused when that is far more than the values read (a
# file whose every sample names new metrics), so memory stays a bounded multiple of the input.
_SPARSE_FACTOR = 16
_SPARSE_FLOOR = 1_000_000

_NAME_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"')
_WS_RE = re.compile(r"[ \t]*")
_ESC_RE = re.compile(r"\\(.)")
_ENTITY_TYPE_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,15}")
_TS_RE = re.compile(r"[-+]?[0-9]{1,19}")
_DIGITS_RE = re.compile(r"[0-9]+")

_MALFORMED = "unreadable DCGM metric sample"
_BAD_ID = "entity id is not a non-negative integer"
_TOO_MANY = f"too many distinct metrics (over {_MAX_METRICS}; the rest are not kept)"
_TS_OUT_OF_RANGE = "timestamp out of range (value kept without a time)"
_WIDE_DMON = f"dmon header with over {_MAX_METRICS} fields (its rows are not read)"
_UPPER_BOUND = (
    "tensor_active × the accelerator's dense peak FLOP/s is an upper bound on what the tensor cores "
    "achieved, not a measurement of it: the pipe counts as active in any cycle it works, at any fill "
    "and precision, and a ratio of a MIG instance is of its slice only. MFU needs the model's FLOPs "
    "from the training log; use DCGM to see whether the hardware was busy, throttled or apart."
)


def sniff(path: Path, head: bytes) -> float:
    """0.95 for a DCGM ``/metrics`` sample line or a dmon ``#Entity`` header over entity rows."""
    if Path(path).is_dir() or not head:
        return 0.0
    lines = head.decode("utf-8", errors="replace").splitlines()
    score = 0.0
    header = False
    for raw in lines:
        s = raw.lstrip(" \t>")
        low = s[:64].lower()
        if low.startswith("dcgm_") and "{" in s and ("gpu=" in s.lower() or "uuid=" in s.lower()):
            return 0.95
        if _dmon_header(s) is not None:
            header = True
            score = max(score, 0.7 if any(t in _DMON_NAMES for t in s.split()) else 0.0)
        elif header and _dmon_tokens(s) is not None and s.split()[0].upper() in _DMON_KINDS:
            return 0.95
        elif low.startswith(("# help dcgm_", "# type dcgm_")):
            score = max(score, 0.6)
    return score


# --- values ----------------------------------------------------------------------------------


def _index(text: str) -> int | None:
    """A GPU, instance or entity id: ASCII digits that fit int64, else None."""
    return rules.as_step(text) if _DIGITS_RE.fullmatch(text) else None


def _snake(text: str) -> str:
    out = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "metric"
    return out if out not in _RESERVED else f"{out}_value"


@functools.lru_cache(maxsize=1024)
def _prom_column(name: str) -> str:
    low = name.lower()
    base = low[len("dcgm_fi_"):] if low.startswith("dcgm_fi_") else low
    return _PROM_NAMES.get(base) or _snake(base)


# --- Prometheus text -------------------------------------------------------------------------


def _labels(s: str, pos: int, out: dict[str, str]) -> int:
    """Read ``name="value", ...}`` from ``pos`` into ``out``; the position after ``}`` or -1."""
    n = len(s)
    while True:
        pos = _WS_RE.match(s, pos).end()
        if pos < n and s[pos] == "}":
            return pos + 1
        m = _LABEL_RE.match(s, pos)
        if m is None:
            return -1
        value = m.group(2)
        out.setdefault(m.group(1), _ESC_RE.sub(lambda e: "\n" if e.group(1) == "n" else e.group(1), value)
                       if "\\" in value else value)
        pos = _WS_RE.match(s, m.end()).end()
        if pos < n and s[pos] == ",":
            pos += 1
        elif pos < n and s[pos] == "}":
            return pos + 1
        else:
            return -1


def _sample(s: str, cache: dict[str, dict[str, str]]) -> tuple[str, dict[str, str] | None, list[str], str] | None:
    """``(name, labels or None, [value, timestamp?], label text)`` of a sample line, else None.

    ``labels`` is None when the line has braces that cannot be read. ``cache`` maps label texts
    already read (a scrape repeats them) to their labels.
    """
    m = _NAME_RE.match(s)
    if m is None:
        return None
    name, pos = m.group(0), m.end()
    labels: dict[str, str] | None = {}
    braced = pos < len(s) and s[pos] == "{"
    text = ""
    if braced:
        close = s.rfind("}")
        labels = cache.get(s[pos + 1 : close]) if close > pos else None
        if labels is not None:
            text, pos = s[pos + 1 : close], close + 1
        else:
            labels = {}
            end = _labels(s, pos + 1, labels)
            if end < 0:
                return name, None, [], ""
            text, pos = s[pos + 1 : end - 1], end
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            cache[text] = labels
    elif not name.lower().startswith("dcgm_"):
        return None
    rest = s[pos:]
    toks = rest.split()
    if (rest and not rest[0].isspace()) or not 1 <= len(toks) <= 2:
        return (name, None, [], "") if braced else None
    if not braced and toks[0][0] not in "0123456789+-.":
        return None  # prose that starts with a metric name
    return name, labels, toks, text


# --- dmon tables -----------------------------------------------------------------------------


def _dmon_header(s: str) -> list[str] | None:
    """The field names of a ``#Entity GRACT SMACT ...`` header line, else None."""
    if not s.startswith("#"):
        return None
    toks = s[1:].split()
    if len(toks) < 2 or toks[0].lower() != "entity":
        return None
    return toks[1:]


def _dmon_tokens(s: str) -> list[str] | None:
    """``[type, id, value, ...]`` of a line shaped like a dmon row (``GPU 0 ...``), else None."""
    toks = s.split(None, 2)
    if len(toks) < 2 or not _DIGITS_RE.fullmatch(toks[1]) or not _ENTITY_TYPE_RE.fullmatch(toks[0]):
        return None
    return s.split()


@dataclass
class _Collector:
    """One pass over the lines: samples, rows of the current sample, counts for the notes."""

    reader: Reader
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: dict[str, None] = field(default_factory=dict)
    sample: int = 0
    fresh: bool = True
    seen: set[Any] = field(default_factory=set)
    current: dict[Any, dict[str, Any]] = field(default_factory=dict)
    dmon: list[tuple[str, str]] | None = None  # the open dmon table: (field as printed, column)
    sources: dict[str, None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    unknown_labels: dict[str, None] = field(default_factory=dict)
    pending: tuple[str, int, str | None, str, str | None] | None = None  # a dropped line that may be the last
    n_values: int = 0  # metric cells read (missing ones included)
    label_cache: dict[str, dict[str, str]] = field(default_factory=dict)
    entity_cache: dict[str, tuple[Any, dict[str, Any], Any]] = field(default_factory=dict)
    stated: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)  # first line of a model/host

    def count(self, what: str, line: int) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        self.first.setdefault(what, line)

    def bad(self, reason: str, line: int, field: str | None, example: str, detail: str | None = None) -> None:
        """Count (or, strict, raise on) a bad record, after any line held back before it."""
        self.flush()
        self.reader.bad(reason, line=line, field=field, example=example[:160], detail=detail)

    def drop(self, reason: str, line: int, field: str | None, example: str, detail: str | None = None) -> None:
        """Count a line that is not kept; held back, so an unended last line is called half-written."""
        self.flush()
        self.pending = (reason, line, field, example, detail)

    def flush(self, last_line: int | None = None) -> None:
        if self.pending is not None:
            reason, line, fld, example, detail = self.pending
            self.pending = None
            if line == last_line:
                reason, detail = rules.HALF_WRITTEN, None
            self.bad(reason, line, fld, example, detail)

    def row(self, ident: Any, key: Any, line: int, attrs: dict[str, Any]) -> dict[str, Any]:
        """The row of ``key`` in the current sample; a repeated ``ident`` starts the next one."""
        if self.fresh or self.sample == 0 or ident in self.seen:
            self.sample += 1
            self.seen, self.current, self.fresh = set(), {}, False
        self.seen.add(ident)
        row = self.current.get(key)
        if row is None:
            row = {"sample": self.sample, **attrs, "line": line, "_key": key}
            self.current[key] = row
            self.rows.append(row)
        else:
            self._merge_attrs(row, attrs, line)
        return row

    def _merge_attrs(self, row: dict[str, Any], attrs: dict[str, Any], line: int) -> None:
        for k, v in attrs.items():
            if v is None:
                continue
            if row.get(k) is None:
                row[k] = v
            elif row[k] != v:
                self.count(f"label {k}", line)

    def column(self, name: str, line: int, field: str, example: str) -> bool:
        """Register a metric column; False (counted) past ``_MAX_METRICS`` of them."""
        if name in self.columns:
            return True
        if len(self.columns) >= _MAX_METRICS:
            self.reader.bad(_TOO_MANY, line=line, field=field, example=example[:160])
            return False
        self.columns[name] = None
        return True

    def value(self, tok: str, column: str, line: int, field: str, example: str) -> float | None:
        """The number in ``tok``; None for N/A, NaN, a blank sentinel or a counted bad value.

        A value is a plain decimal (``values.number(plain=True)``: no words, no whitespace); the
        words ``N/A``, ``nan`` (any signs before it) and ``inf``/``infinity`` are named and counted.
        """
        low = tok.lower()
        if low == "n/a":
            self.count("na", line)
            return None
        v = number(tok, plain=True, nonfinite="keep")
        if v is None:
            word = low.lstrip("+-")
            if word == "nan":
                self.count("nan", line)
            elif word in ("inf", "infinity"):
                self.bad(rules.VALUE_OUT_OF_RANGE, line, field, example, "infinite")
            else:
                self.bad(rules.NON_NUMERIC, line, field, example)
            return None
        if math.isinf(v):
            self.bad(rules.VALUE_OUT_OF_RANGE, line, field, example, "infinite")
            return None
        if v >= _SENTINEL_MIN or v in _FP64_BLANKS:
            self.count("blank", line)
            return None
        if v < 0 and column in _NON_NEGATIVE:
            self.bad(rules.VALUE_OUT_OF_RANGE, line, field, example, "negative")
            return None
        return v

    def put(self, row: dict[str, Any], column: str, v: float | None, line: int, field: str, example: str) -> None:
        """Set one metric cell; a second series of one entity and metric keeps the first value."""
        self.n_values += 1
        if column not in row:
            row[column] = v
        elif v is not None and row[column] is not None and row[column] != v:
            self.bad(rules.DUPLICATE, line, field, example, "another series of this entity and metric in one sample")
        elif row[column] is None:
            row[column] = v


def _prom_entity(c: _Collector, labels: dict[str, str], line: int, raw: str) -> tuple[Any, dict[str, Any], Any] | None:
    """``(key, entity columns, other labels)`` of a sample; None (counted) when it names no entity."""
    attrs: dict[str, Any] = {}
    other = []
    for k, v in labels.items():
        col = _LABELS.get(k.lower())
        if col is None:
            other.append((k, v))
            if len(c.unknown_labels) < _MAX_LISTED:
                c.unknown_labels[k] = None
            continue
        if v.strip() and attrs.get(col) is None:
            attrs[col] = v.strip()
    for col, label in (("gpu", "gpu"), ("gpu_instance", "GPU_I_ID")):
        if col in attrs:
            n = _index(attrs[col])
            if n is None:
                c.bad(_BAD_ID, line, label, raw)
                return None
            attrs[col] = n
    if attrs.get("gpu") is None and attrs.get("uuid") is None:
        c.bad(rules.MISSING_FIELD, line, "gpu", raw, "no gpu or UUID label")
        return None
    for col in ("model_name", "hostname"):
        if attrs.get(col) and (col, attrs[col]) not in c.stated and len(c.stated) < _MAX_LISTED:
            c.stated[(col, attrs[col])] = (line, raw.strip())
    host = attrs.get("hostname") or attrs.get("instance")
    gi = attrs.get("gpu_instance")
    attrs["kind"] = "gpu" if gi is None else "mig"
    where = f"GPU {attrs['gpu']}" if attrs.get("gpu") is not None else str(attrs["uuid"])
    attrs["entity"] = (f"{host}/" if host else "") + where + (f" GPU-I {gi}" if gi is not None else "")
    return ("p", host, attrs.get("uuid"), attrs.get("gpu"), gi), attrs, tuple(sorted(other))


def _prom_line(c: _Collector, line: int, s: str, raw: str) -> bool:
    """Read a sample line; False when ``s`` is not one (then it is noise)."""
    got = _sample(s, c.label_cache)
    if got is None:
        return False
    name, labels, toks, text = got
    if labels is None:
        if name.lower().startswith("dcgm_"):
            c.drop(_MALFORMED, line, name, raw)
            return True
        return False
    if not name.lower().startswith("dcgm_"):
        c.count("other metric", line)
        return True
    c.sources["prometheus"] = None
    if len(toks) == 2 and not _TS_RE.fullmatch(toks[1]):
        c.drop(_MALFORMED, line, name, raw, "timestamp is not an integer")
        return True
    entity = c.entity_cache.get(text) if text else None
    if entity is None:
        entity = _prom_entity(c, labels, line, raw)
        if entity is None:
            return True
        if len(c.entity_cache) >= _CACHE_MAX:
            c.entity_cache.clear()
        c.entity_cache[text] = entity
    key, attrs, other = entity
    column = _prom_column(name)
    if not c.column(column, line, name, raw):
        return True
    # A series is its metric, its entity and any label not read as a column (pod labels may
    # change between scrapes: a series that repeats with new ones starts the next scrape too).
    ident = (column, key, other)
    row = c.row(ident, key, line, attrs)
    c.put(row, column, c.value(toks[0], column, line, name, raw), line, name, raw)
    if len(toks) == 2:
        ts = int(toks[1])
        if abs(ts) > _MAX_TS_MS:
            c.bad(_TS_OUT_OF_RANGE, line, "timestamp", raw)
        else:
            row.setdefault("_ts_ms", ts)
    return True


def _dmon_start(c: _Collector, line: int, fields: list[str], raw: str) -> None:
    """Open a dmon table under a ``#Entity`` header (its columns named as in ``_DMON_NAMES``)."""
    c.dmon, c.fresh = None, True
    if len(fields) > _MAX_METRICS:
        c.drop(_WIDE_DMON, line, "#Entity", raw)
        return
    cols: list[tuple[str, str]] = []
    taken: dict[str, int] = {}
    for f in fields:
        name = _DMON_NAMES.get(f.upper()) or _snake(f)
        taken[name] = taken.get(name, 0) + 1
        cols.append((f, name if taken[name] == 1 else f"{name}_{taken[name]}"))
    c.dmon = cols
    c.sources["dmon"] = None


def _dmon_row(c: _Collector, line: int, toks: list[str], raw: str) -> None:
    fields = c.dmon or []
    etype, eid, vals = toks[0], toks[1], toks[2:]
    if len(vals) != len(fields):
        c.drop(rules.WRONG_FIELD_COUNT, line, fields[-1][0] if fields else None, raw,
               f"expected {len(fields)} values after the entity")
        return
    n = _index(eid)
    if n is None:
        c.bad(_BAD_ID, line, "Entity", raw)
        return
    kind, id_col = _DMON_KINDS.get(etype.upper(), (etype.lower(), None))
    attrs: dict[str, Any] = {"entity": f"{etype} {n}", "kind": kind}
    if id_col is not None:
        attrs[id_col] = n
    row = c.row(("d", etype.upper(), n), ("d", etype.upper(), n), line, attrs)
    for (printed, col), tok in zip(fields, vals, strict=True):
        if c.column(col, line, printed, raw):
            c.put(row, col, c.value(tok, col, line, printed, raw), line, printed, raw)


def _noise(c: _Collector, line: int, s: str) -> None:
    """A line that is not a record; prose after records ends the current sample."""
    low = s.lower()
    if low.startswith(("# help", "# type")):
        return
    if "dcgmi dmon" in low and len(c.commands) < _MAX_LISTED:
        c.commands.append(s[:200])
    c.dmon = None
    c.fresh = True
    c.count("noise", line)


def _read(reader: Reader) -> _Collector:
    c = _Collector(reader)
    last = 0
    for line, raw in reader.lines():
        last = line if raw else 0  # the file's last line is "" when it ends with a line break
        reader.report.lines_read += 1
        s = raw.lstrip(" \t>").rstrip()
        if not s:
            continue
        c.flush()
        fields = _dmon_header(s)
        if fields is not None:
            _dmon_start(c, line, fields, raw)
            continue
        if c.dmon is not None:
            if s.lower() == "id":
                continue
            toks = _dmon_tokens(s)
            if toks is not None:
                _dmon_row(c, line, toks, raw)
                continue
        if not _prom_line(c, line, s, raw):
            _noise(c, line, s)
    c.flush(last_line=last)
    return c


# --- tables, facts and notes -----------------------------------------------------------------


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Entity ids as nullable integers, text columns as text (so a saved Run reads back equal)."""
    for col in df.columns:
        if col in ("gpu", "gpu_instance", "compute_instance"):
            df[col] = pd.array(df[col].tolist(), dtype="Int64")
        elif col in _RESERVED and col not in ("sample", "time_s", "line"):
            df[col] = df[col].astype("str")
    return df


def _frame(c: _Collector) -> tuple[pd.DataFrame, float | None]:
    """The ``gpu_metrics`` table and the first timestamp (epoch seconds) or None."""
    stamps = [r["_ts_ms"] for r in c.rows if "_ts_ms" in r]
    t0 = min(stamps) / 1000.0 if stamps else None
    optional = [k for k in _OPTIONAL_COLUMNS if any(r.get(k) is not None for r in c.rows)]
    order = list(_BASE_COLUMNS[:1]) + (["time_s"] if t0 is not None else []) + list(_BASE_COLUMNS[1:])
    order += optional + ["line"]
    named = [m for m in dict.fromkeys(_PROM_NAMES.values()) if m in c.columns]
    order += named + [m for m in c.columns if m not in named]
    records = []
    for r in c.rows:
        rec = {k: r.get(k) for k in order}
        if t0 is not None:
            rec["time_s"] = r["_ts_ms"] / 1000.0 - t0 if "_ts_ms" in r else None
        records.append(rec)
    df = _typed(pd.DataFrame.from_records(records, columns=order))
    for col in [*(["time_s"] if t0 is not None else []), *c.columns]:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    df["sample"] = df["sample"].astype("int64")
    df["line"] = df["line"].astype("int64")
    return df, t0


def _summary_rows(c: _Collector, options: Options) -> list[dict[str, Any]]:
    """Per entity (first-seen order): its columns, first line, samples and metric means."""
    acc: dict[Any, dict[str, Any]] = {}
    for r in c.rows:
        e = acc.get(r["_key"])
        if e is None:
            e = acc[r["_key"]] = {k: r.get(k) for k in _SUMMARY_ID}
            e.update(_line=r["line"], n_samples=0, _sum=dict.fromkeys(_SUMMARY_METRICS, 0.0),
                     _n=dict.fromkeys(_SUMMARY_METRICS, 0))
        e["n_samples"] += 1
        for m in _SUMMARY_METRICS:
            if r.get(m) is not None:
                e["_sum"][m] += r[m]
                e["_n"][m] += 1
    rows = list(acc.values())
    for e in rows:
        for m in _SUMMARY_METRICS:
            e[f"{m}_mean"] = e["_sum"][m] / e["_n"][m] if e["_n"][m] else None
        e["apart"] = ""
    _apart(rows, options)
    return rows


def _apart(rows: list[dict[str, Any]], options: Options) -> None:
    """Fill ``apart``: a whole GPU's mean SM clock or power far from its model peers' median."""
    models: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] == "gpu":
            models.setdefault(r["model_name"], []).append(r)
    for model, peers in models.items():
        for metric, label, unit in (("sm_clock_mhz_mean", "SM clock", "MHz"), ("power_w_mean", "power", "W")):
            have = [p for p in peers if p[metric] is not None]
            if len(have) < options.min_peers:
                continue
            med = median(p[metric] for p in have)
            if med <= 0:
                continue
            for p in have:
                dev = (p[metric] - med) / med
                if abs(dev) > options.apart_fraction:
                    side = "below" if dev < 0 else "above"
                    why = (f"{label} {p[metric]:.4g} {unit} is {abs(dev):.0%} {side} the median {med:.4g} {unit} "
                           f"of {len(have)} {model or 'whole'} GPUs")
                    p["apart"] = "; ".join(x for x in (p["apart"], why) if x)


def _summary_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    cols = [*_SUMMARY_ID, "n_samples", *(f"{m}_mean" for m in _SUMMARY_METRICS), "apart"]
    df = _typed(pd.DataFrame.from_records([{k: r[k] for k in cols} for r in rows], columns=cols))
    df["apart"] = df["apart"].astype("str")
    for m in _SUMMARY_METRICS:
        df[f"{m}_mean"] = pd.to_numeric(df[f"{m}_mean"], errors="coerce").astype("float64")
    df["n_samples"] = df["n_samples"].astype("int64")
    return df


def _device_of(model: str, entities: list[dict[str, Any]]) -> str:
    """What the sampled devices are: ``model`` when a whole GPU was sampled, else the MIG slice
    (``"NVIDIA H100 80GB HBM3 MIG 1g.10gb"``), which the peak registry refuses rather than giving a
    slice the whole GPU's peak."""
    if any(e["kind"] == "gpu" for e in entities):
        return model
    profiles = sorted({e["mig_profile"] for e in entities if e["mig_profile"]})
    return f"{model} MIG {profiles[0]}" if len(profiles) == 1 else f"{model} MIG"


def _hardware_facts(out: Parsed, reader: Reader, c: _Collector, entities: list[dict[str, Any]]) -> None:
    """accelerator, n_accelerators, platform, n_nodes, accelerators_per_node from the entities."""
    at = f"{reader.name}:"
    models = list(dict.fromkeys(e["model_name"] for e in entities if e["model_name"]))
    if len(models) == 1:
        line, text = c.stated.get(("model_name", models[0]), (entities[0]["_line"], ""))
        out.fact("accelerator", _device_of(models[0], entities), f"{at}{line}", text)
    elif models:
        reader.note(f"several GPU models in one file ({', '.join(models[:8])}); no accelerator fact")
    whole = [e for e in entities if e["kind"] == "gpu"]
    if whole:
        names = ", ".join(e["entity"] for e in whole[:8]) + (", ..." if len(whole) > 8 else "")
        out.fact("n_accelerators", len(whole), f"{at}{whole[0]['_line']}", f"{len(whole)} distinct whole GPUs: {names}")
    hosts = list(dict.fromkeys(e["hostname"] for e in entities if e["hostname"]))
    if not hosts:
        return
    line, text = c.stated.get(("hostname", hosts[0]), (entities[0]["_line"], ""))
    where = f"{at}{line}"
    if len(hosts) == 1:
        out.fact("platform", hosts[0], where, text)
    out.fact("n_nodes", len(hosts), where, f"{len(hosts)} distinct Hostname labels")
    per = {h: sum(1 for w in whole if w["hostname"] == h) for h in hosts}
    if whole and all(w["hostname"] for w in whole) and len(set(per.values())) == 1:
        n = next(iter(per.values()))
        out.fact("accelerators_per_node", n, where, f"{n} whole GPUs on each of {len(hosts)} hosts")


def _mig(out: Parsed, reader: Reader, entities: list[dict[str, Any]]) -> None:
    """MIG instances in ``extra``; without whole GPUs, a note that n_accelerators is not given."""
    mig = [e for e in entities if e["kind"] in ("mig", "mig_ci")]
    if not mig:
        return
    keep = ("entity", "gpu", "gpu_instance", "compute_instance", "mig_profile", "uuid")
    out.extra["mig_instances"] = [{k: e.get(k) for k in keep if e.get(k) is not None} for e in mig[:_MAX_LISTED]]
    out.extra["n_mig_instances"] = len(mig)
    profiles = sorted({e["mig_profile"] for e in mig if e["mig_profile"]})[:_MAX_LISTED]
    out.extra["mig_profiles"] = profiles
    if any(e["kind"] == "gpu" for e in entities):
        return
    parents = len({e["uuid"] for e in mig if e["uuid"]})
    reader.note(
        f"only MIG instances were sampled ({len(mig)}: {', '.join(e['entity'] for e in mig[:8])}"
        + (f"; profiles {', '.join(profiles)}" if profiles else "")
        + (f"; on {parents} physical GPU(s) by UUID" if parents else "")
        + "): a MIG instance is a slice of a GPU, not one, so n_accelerators is not given; "
        "they are listed in the run's metadata (extra['mig_instances'])"
    )


def _notes(c: _Collector, reader: Reader, entities: list[dict[str, Any]]) -> None:
    n = c.counts
    if n.get("noise"):
        reader.note(f"{n['noise']} line(s) of prose, prompts or other text were not DCGM records "
                    f"(first at line {c.first['noise']})")
    if n.get("blank"):
        reader.note(f"{n['blank']} value(s) were DCGM's blank sentinel (int64 from 9.2e18, or the FP64 blank; "
                    f"first at line {c.first['blank']}): kept as missing, not numbers")
    if n.get("nan"):
        reader.note(f"{n['nan']} value(s) were NaN (first at line {c.first['nan']}): kept as missing")
    if n.get("other metric"):
        reader.note(f"{n['other metric']} sample(s) of metrics that are not DCGM's "
                    f"(first at line {c.first['other metric']}) were not read")
    for k in [k for k in n if k.startswith("label ")]:
        reader.note(f"one entity carried different {k[6:]} labels within one sample (first at line {c.first[k]}); "
                    "the first is kept")
    if c.unknown_labels:
        reader.note(f"labels not kept as columns: {', '.join(c.unknown_labels)}")
    apart = [e for e in entities if e["apart"]]
    if apart:
        reader.note("hardware stragglers: " + "; ".join(f"{e['entity']}: {e['apart']}" for e in apart[:16]))
    reader.note(
        f"tables['gpu_metrics'] holds {len(c.rows)} rows ({c.sample} sample(s) × entity); DCGM knows no "
        "training steps, so the Run's steps and events are empty"
    )
    reader.note(_UPPER_BOUND)


def parse(reader: Reader, options: Options) -> Parsed:
    """Read dcgm-exporter text or dmon tables; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the dcgm loader reads one text file")
    c = _read(reader)
    if not c.rows:
        reader.fail("no DCGM samples: no DCGM_FI_* metric line with a gpu/UUID label "
                    "and no dmon row under a #Entity header")
    cells = len(c.rows) * max(len(c.columns), 1)
    if cells > _SPARSE_FACTOR * c.n_values + _SPARSE_FLOOR:
        reader.fail(
            f"the samples are too sparse to tabulate: {len(c.rows):,} rows × {len(c.columns)} metrics "
            f"for {c.n_values:,} values (each sample names other metrics); split the file by metric"
        )
    metrics, t0 = _frame(c)
    entities = _summary_rows(c, options)
    out = Parsed(tables={"gpu_metrics": metrics, "gpu_summary": _summary_frame(entities)}, timing="exact",
                 time_unit="epoch_ms" if t0 is not None else None)
    _hardware_facts(out, reader, c, entities)
    _mig(out, reader, entities)
    _notes(c, reader, entities)
    out.extra.update({
        "sources": list(c.sources),
        "n_samples": c.sample,
        "whole_gpus": sum(1 for e in entities if e["kind"] == "gpu"),
        "metrics": list(c.columns)[:_MAX_METRICS],
        "hardware_view": _UPPER_BOUND,
    })
    drivers = sorted({str(v) for v in metrics.get("driver_version", pd.Series(dtype=object)).dropna()})
    if drivers:
        out.extra["driver_versions"] = drivers[:_MAX_LISTED]
    if c.commands:
        out.extra["dmon_commands"] = c.commands
    if t0 is not None:
        out.extra["t0_epoch_s"] = t0
    return out


load = loader_for(NAME)
