"""DeepSpeed's runtime output, printed by any job DeepSpeed runs, as rows for a line table (:mod:`.lines`).

DeepSpeed engine and DeepSpeed-Chat logs (the ``deepspeed`` format) print these lines, and so do the
Megatron-DeepSpeed logs the ``megatron`` format reads (under ``MFU_REALDATA``: launcher lines and a config dump in
the HaibaraAiChan logs, a profiler summary in the issue-98 excerpt, a comms table in ALCF's cooldown notes). A format
whose state has ``runtime`` (a :class:`Runtime`) puts :data:`RUNTIME_LINES` in its table and :meth:`Runtime.block`
in a row that sees every line (before its own rows):

- the launcher (deepspeed/launcher/runner.py ``cmd = ...``, launch.py ``WORLD INFO DICT``, ``nnodes=``,
  ``dist_world_size=``, ``exits successfully``; ``--world_info=`` is base64 JSON ``{host: [device, ...]}``,
  decoded without evaluating anything) and the launch command's ``--name value`` arguments the format asks for;
- the engine's config dump (deepspeed/runtime/config.py ``print``: ``[config.py:N:print]  name .... value``);
- the Flops Profiler summary (deepspeed/profiling/flops_profiler/profiler.py ``print_model_profile``), as much of
  it as a block cut short has (times in seconds, FLOPs and parameters as numbers);
- the comms logger's summary (deepspeed/utils/comms_logging.py ``log_all``: ``Comm. Op  Message Size  Count
  Total Latency(ms) ...``), message sizes 1024-based as DeepSpeed prints them; a negative latency or bandwidth is a
  counter that wrapped: counted, left missing.

What they state is kept as ``name -> (value, line, text)``, the first statement of each; :func:`world_facts`
states the world from them. The deepspeed format's table holds these rows; the megatron format's does not (yet).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Collection
from typing import Any

from . import rules
from .base import Parsed
from .lines import At, Line
from .reading import Reader
from .values import number

__all__ = ["LAUNCH_MARKS", "RUNTIME_LINES", "Runtime", "checked", "world_facts"]

# Every capture is bounded, so no pattern backtracks over a long line more than linearly.
_CONFIG = re.compile(r"\[config\.py:\d{1,6}:print\]\s{1,16}(\w{1,64})\s[ .]{0,200}(.{0,200})")
_WORLD_INFO = re.compile(r"--world_info=([A-Za-z0-9+/=_-]{1,65536})")
_HOSTS = re.compile(r"'([^']{0,256})':\s{0,8}\[([0-9,\s]{0,65536})\]")
_WORLD_SIZE = re.compile(r"\bdist_world_size=([^,\s]{0,64})")
_NNODES = re.compile(r"\bnnodes=([^,\s]{0,64}), num_local_procs=([^,\s]{0,64})")
_PREFIX = re.compile(r"^\s{0,64}(?:\[rank\d{1,9}\]:|\d{1,6}:)\s?", re.IGNORECASE)
_SIZE = re.compile(r"(?<![0-9.])([0-9.]{1,32})([KMGTP]?B)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")

_MAX_SECONDS = 1e9  # a duration longer than ~30 years is damage, not a step
# skip reasons of the runtime lines alone
UNREADABLE_WORLD_INFO = "unreadable WORLD INFO DICT"
WORLD_INFO_NOT_BASE64 = "--world_info is not base64"
COMMS_ROW_WITHOUT_OP = "comms row before any operation name"
_PROFILER_LINES = 60  # lines a profiler summary may take
_CONFIG_KEYS = frozenset({
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "fp16_enabled",
    "bfloat16_enabled", "bf16_enabled", "zero_optimization_stage", "zero_enabled", "world_size", "steps_per_print"})
LAUNCH_MARKS = ("--world_info=", "WORLD INFO DICT", "dist_world_size=", "nnodes=", "cmd = ", "exits successfully")
_COMMS_COLUMNS = (("total_latency_ms", "Total Latency(ms)", "duration"),
                  ("avg_latency_ms", "Avg Latency(ms)", "duration"), ("tput_avg_gbps", "tput_avg (Gbps)", "value"),
                  ("busbw_avg_gbps", "busbw_avg (Gbps)", "value"))
_SIZE_UNITS = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4, "PB": 5}
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# The Flops Profiler summary's keys (print_model_profile)
_PROFILER = {
    "world size": "world_size", "data parallel size": "dp_size", "model parallel size": "mp_size",
    "batch size per GPU": "batch_per_gpu", "params per gpu": "params_per_gpu", "params per GPU": "params_per_gpu",
    "params per device": "params_per_gpu", "params of model": "params_of_model",
    "fwd MACs per GPU": "fwd_macs_per_gpu", "fwd flops per GPU": "fwd_flops_per_gpu",
    "fwd flops of model": "fwd_flops_of_model", "fwd latency": "fwd_latency_s", "bwd latency": "bwd_latency_s",
    "step latency": "step_latency_s", "iter latency": "iter_latency_s", "fwd FLOPS per GPU": "fwd_flops_per_s_per_gpu",
    "bwd FLOPS per GPU": "bwd_flops_per_s_per_gpu", "fwd+bwd FLOPS per GPU": "fwd_bwd_flops_per_s_per_gpu",
    "samples/second": "samples_per_s",
}


def checked(reader: Reader, raw: str | None, ln: int, name: str, *, kind: str = "value") -> float:
    """A numeric field's value (``values.number``, Python's float grammar); NaN, counted with line and field, when
    it is not usable.

    ``kind``: ``"value"`` (finite, >= 0), ``"duration"`` (the same, a negative one is a negative duration),
    ``"any"`` (any float, NaN and infinity included: a loss may diverge).
    """
    text = (raw or "").strip()
    v, detail = number(text, nonfinite="keep"), None
    if v is None:
        why = rules.MISSING_FIELD if not text else rules.NON_NUMERIC
    elif kind == "any" or (math.isfinite(v) and v >= 0 and (kind != "duration" or v <= _MAX_SECONDS)):
        return v
    elif kind == "duration" and v < 0:
        why = rules.NEGATIVE_DURATION
    else:
        why, detail = rules.VALUE_OUT_OF_RANGE, "negative or not finite"
    reader.bad(why, line=ln, field=name, example=f"{name}={text}"[:160], detail=detail)
    return math.nan


class Runtime:
    """What the runtime lines state (``launcher``, ``config``, ``args``, ``profiler``: ``name -> (value, line,
    text)``, the first statement of each), the comms rows, and the blocks open now.

    ``args``: the names of the launch command's arguments to keep. ``on_launch(at)``: called after a ``cmd =`` or
    ``WORLD INFO DICT`` line is read (a launch: the format decides what it starts).
    """

    def __init__(self, reader: Reader, args: Collection[str] = (),
                 on_launch: Callable[[At], None] | None = None) -> None:
        self.reader, self.arg_names, self.on_launch = reader, frozenset(args), on_launch
        self.launcher: dict[str, tuple[Any, int, str]] = {}
        self.config: dict[str, tuple[str, int, str]] = {}
        self.args: dict[str, tuple[str, int, str]] = {}
        self.profiler: dict[str, tuple[float, int, str]] = {}
        self.comms: list[dict[str, Any]] = []
        self.exits = 0  # launcher lines saying a process exited successfully
        self.in_comms = False
        self.comm_op: str | None = None
        self.prof_left = 0  # lines an open profiler summary may still take

    def block(self, at: At) -> bool:
        """Read ``at`` when it is a row of an open comms table or a line of an open profiler summary (True); a line
        that is neither closes the comms table."""
        if self.in_comms:
            if _comms_row(self, at):
                return True
            self.in_comms = False
        if self.prof_left > 0:
            self.prof_left -= 1
            if _profiler_line(self, at):
                return True
        return False

    def config_count(self, key: str) -> tuple[int, int, str] | None:
        """A count the config dump states (``(value, line, text)``); a bad one is counted."""
        if key not in self.config:
            return None
        raw, ln, text = self.config[key]
        if (value := rules.as_count(raw)) is None:
            self.reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field=key, example=text[:160])
            return None
        return value, ln, text

    def arg_count(self, *keys: str) -> tuple[int, int, str] | None:
        """The first of ``keys`` the launch command gives as a count: ``(value, line, "--key value")``."""
        for key in keys:
            if key in self.args and (value := rules.as_count(self.args[key][0])) is not None:
                return value, self.args[key][1], f"--{key} {value}"
        return None


# --- rows ------------------------------------------------------------------------------------------
def _comms_opens(state: Any, at: At, m: None) -> bool:
    """The comms summary's header: its rows follow."""
    if "Latency" not in at.text:
        return False
    state.runtime.in_comms, state.runtime.comm_op = True, None
    return True


def _profiler_opens(state: Any, at: At, m: None) -> bool:
    """``DeepSpeed Flops Profiler``: its summary follows."""
    state.runtime.prof_left = _PROFILER_LINES
    return True


def _config(state: Any, at: At, m: None) -> bool:
    """A line of the config dump (the names of :data:`_CONFIG_KEYS` kept)."""
    if "config.py" not in at.text:
        return False
    if (m := _CONFIG.search(at.text)) is not None and m.group(1) in _CONFIG_KEYS:
        state.runtime.config.setdefault(m.group(1), (m.group(2).strip(), at.ln, at.text))
    return True


def _launcher(state: Any, at: At, m: None) -> bool:
    """World size and devices from the launcher; the launch command's arguments."""
    rt, ln, text = state.runtime, at.ln, at.text
    if "exits successfully" in text:
        rt.exits += 1
        return True
    if "cmd = " in text:
        _arguments(rt, at)
    if "--world_info=" in text:
        m = _WORLD_INFO.search(text)
        _world_info(rt, at, m.group(1) if m else "")
    elif "WORLD INFO DICT" in text:
        hosts = {h: len([t for t in ids.split(",") if t.strip()]) for h, ids in _HOSTS.findall(text)}
        if hosts:
            rt.launcher.setdefault("hosts", (hosts, ln, text))
        else:
            at.bad(UNREADABLE_WORLD_INFO, "WORLD INFO DICT", text[:160])
    counts = [("dist_world_size", m.group(1))] if (m := _WORLD_SIZE.search(text)) is not None else []
    if (m := _NNODES.search(text)) is not None:
        counts += [("nnodes", m.group(1)), ("num_local_procs", m.group(2))]
    for name, raw in counts:
        if (value := rules.as_count(raw)) is None:
            at.bad(rules.VALUE_OUT_OF_RANGE, name, text[:160])
        else:
            rt.launcher.setdefault(name, (value, ln, text))
    if rt.on_launch is not None and ("cmd = " in text or "WORLD INFO DICT" in text):
        rt.on_launch(at)
    return True


def _world_info(rt: Runtime, at: At, token: str) -> None:
    """``--world_info=<base64 JSON {host: [device, ...]}>``."""
    try:
        if not token:
            raise ValueError("empty")
        raw = base64.b64decode(token + "=" * (-len(token) % 4),
                               altchars=b"-_" if "-" in token or "_" in token else None, validate=True)
    except ValueError:  # binascii.Error is one
        at.bad(WORLD_INFO_NOT_BASE64, "world_info", token[:120])
        return
    value, ok = at.reader.json(raw, line=at.ln)
    if not ok:
        return
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()) or not value:
        at.bad(rules.NOT_AN_OBJECT, "world_info", raw[:120].decode("utf-8", "replace"),
               detail="--world_info is not {host: [devices]}")
        return
    rt.launcher.setdefault("hosts", ({str(h): len(v) for h, v in value.items()}, at.ln, at.text))


def _arguments(rt: Runtime, at: At) -> None:
    """``--name value`` / ``--name=value`` arguments of the launch command, the first of each name asked for."""
    tokens = at.text.split()
    for i, tok in enumerate(tokens):
        name, sep, value = tok[2:].partition("=")
        if not tok.startswith("--") or name not in rt.arg_names or name in rt.args:
            continue
        if not sep:
            value = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].startswith("--") else ""
        if value:
            rt.args[name] = (value, at.ln, at.text)


def _profiler_line(rt: Runtime, at: At) -> bool:
    """A ``key:   value unit`` line of the profiler summary (prefix ``0: `` allowed)."""
    body = _PREFIX.sub("", at.text, count=1).strip()
    if body.startswith("---") and rt.profiler:
        rt.prof_left = 0  # the aggregated profile follows: the summary is over
        return True
    key, sep, value = body.partition(":")
    key = " ".join(key.split("=", 1)[0].split())
    if (name := _PROFILER.get(key) if sep else None) is None:
        return False  # notation lines, or another record printed while the block was open
    parts = value.split()
    amount = checked(at.reader, parts[0] if parts else "", at.ln, key)
    unit = parts[1] if len(parts) > 1 else ""
    if name.endswith("latency_s") and unit not in _SECONDS:
        at.bad(rules.UNKNOWN_TIME_UNIT, key, at.text[:160], detail=repr(unit))
        return True
    scale = _SECONDS[unit] if name.endswith("latency_s") else _SI[unit[:1] if unit[:1] in "KMGTP" else ""]
    rt.profiler.setdefault(name, (amount * scale, at.ln, at.text))
    return True


def _comms_row(rt: Runtime, at: At) -> bool:
    """A line of the comms summary: an operation name or a row; False ends the table."""
    tokens = at.text.split()
    if tokens and tokens[0].endswith(":") and tokens[0][:-1].isdigit():
        tokens = tokens[1:]  # launcher prefix "0:"
    if len(tokens) == 1 and _IDENT.fullmatch(tokens[0]):
        rt.comm_op = tokens[0]
        return True
    if (m := _SIZE.fullmatch(tokens[0]) if tokens else None) is not None:
        size, unit, rest = m.group(1), m.group(2), tokens[1:]
    elif len(tokens) > 1 and tokens[1] in _SIZE_UNITS:
        size, unit, rest = tokens[0], tokens[1], tokens[2:]
    else:
        return False
    if len(rest) != 5:
        return False
    if rt.comm_op is None:
        at.bad(COMMS_ROW_WITHOUT_OP, "Comm. Op", at.text[:160])
        return True
    if (count := rules.as_step(rest[0])) is None:
        at.bad(rules.NON_NUMERIC, "Count", at.text[:160])
    row = {"op": rt.comm_op, "message_size": f"{size} {unit}", "count": count, "line": at.ln,
           "message_bytes": checked(at.reader, size, at.ln, "Message Size") * 1024.0 ** _SIZE_UNITS[unit]}
    for raw, (col, name, kind) in zip(rest[1:], _COMMS_COLUMNS, strict=True):
        value = number(raw, nonfinite="keep")
        if value is not None and value < 0:  # the comms logger's counters wrap: a negative total is no time
            why = rules.NEGATIVE_DURATION if kind == "duration" else rules.VALUE_OUT_OF_RANGE
            at.bad(why, name, at.text.strip()[:160], detail="counter overflow")
            row[col] = math.nan
        else:
            row[col] = checked(at.reader, raw, at.ln, name, kind=kind)
    rt.comms.append(row)
    return True


# Rows for a format's table, in this order (a line holding the marks of two is read by the first).
RUNTIME_LINES = (
    Line("Comm. Op", None, _comms_opens),
    Line("DeepSpeed Flops Profiler", None, _profiler_opens),
    Line(":print]", None, _config),
    Line(LAUNCH_MARKS, None, _launcher),
)


# --- facts -----------------------------------------------------------------------------------------
def world_facts(out: Parsed, rt: Runtime) -> int | None:
    """``n_ranks`` (``dist_world_size=``, else the profiler's ``world size:``), ``n_accelerators``, ``n_nodes`` and
    ``accelerators_per_node`` (the launcher's device list, one device per rank; else ``nnodes=`` for the nodes);
    returns the world size."""

    def fact(name: str, value: Any, said: tuple[Any, int, str]) -> None:
        out.fact(name, value, f"{rt.reader.name}:{said[1]}", said[2])

    ranks, launcher = None, rt.launcher
    if "dist_world_size" in launcher:
        ranks = launcher["dist_world_size"][0]
        fact("n_ranks", ranks, launcher["dist_world_size"])
    elif "world_size" in rt.profiler:
        ranks = rules.as_count(rt.profiler["world_size"][0])
        fact("n_ranks", ranks, rt.profiler["world_size"])
    if "hosts" in launcher:
        said = launcher["hosts"]
        hosts = said[0]
        devices = rules.as_count(sum(hosts.values()))
        fact("n_accelerators", devices, said)
        fact("n_nodes", rules.as_count(len(hosts)), said)
        if len(set(hosts.values())) == 1:
            fact("accelerators_per_node", rules.as_count(next(iter(hosts.values()))), said)
        ranks = ranks or devices
    elif "nnodes" in launcher:
        fact("n_nodes", launcher["nnodes"][0], launcher["nnodes"])
    return ranks
