"""Communication efficiency: each collective's bus bandwidth against its link's peak, and exposed communication.

**Bus bandwidth** (NCCL's ``busbw``, nccl-tests ``doc/PERFORMANCE.md``,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): ``algbw = S / t`` and
``busbw = algbw × factor``, with factor 2(n−1)/n for AllReduce, (n−1)/n for AllGather, ReduceScatter and AlltoAll,
1 for Broadcast, Reduce and point-to-point (S the total size in bytes, n the communicator's ranks). The page calls
it "a unidirectional bandwidth" that "should reflect the speed of the hardware bottleneck: NVLink, PCI, QPI, or
network", so it is compared with the link's **per-direction** peak (:mod:`mfu_toolkit.interconnect`):
``comm_efficiency = busbw / peak per direction``.

Sizes: a ``collectives`` table's ``msg_size_bytes`` is read as NCCL Inspector writes it (the per-rank count × type
size): for AllGather and ReduceScatter one rank's share, so S = msg × n, as Inspector's ``inspectorComputeOpBw``
computes its traffic size; for the others S = msg. Where the table states a bus bandwidth (Inspector does), ours is
checked against it (``busbw_agrees``); where it states one but no size (Inspector's Prometheus rows), the stated
one is used.

Which link: a communicator inside one node (``nnodes`` 1) is compared with ``link`` when given, else with the
intra-node link of the run's accelerator (``interconnect.link_for_accelerator``), and ``link_basis`` says which.
One spanning nodes is compared only with ``nic`` (a NIC port rate, assuming one port per rank as in DGX/HGX
systems with a NIC per GPU), never with a guess: without it the efficiency is NaN and ``reason`` says why. The
same holds where the table does not say whether the communicator spans nodes. A reason that asks for a link is a
:class:`~mfu_toolkit.run.InputRequest` (:func:`link_request`): its text asks in Python's terms, its fields let a
front end ask in its own (``--nic NAME``, ``NIC=NAME``). ``link`` and ``nic`` enter an analysis once, with the
other options: ``account(run, link=, nic=)``.

**Exposed communication** (:func:`exposed_comm_share`): communication with no compute beside it, the part of the
step a rank waits for (``exposed_comm_s`` of :mod:`mfu_toolkit.io.gpu_time`), as a share of the step time. The
waterfall books the same per-step column as its own slice, ``exposed_comm`` (:mod:`.accounting`, rule 3).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .. import interconnect
from ..interconnect import Link
from ..run import InputRequest, Run

__all__ = ["BUSBW_SOURCE", "LINK_ASKS", "busbw_factor", "check_link_options", "collective_time_floor",
           "comm_efficiency", "exposed_comm_share", "link_request", "request_from"]

BUSBW_SOURCE = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
# canonical collective -> (display name, factor as a function of n, size multiplier in Inspector's convention)
_COLLECTIVES: dict[str, tuple[str, Any, bool]] = {
    "allreduce": ("AllReduce", lambda n: 2.0 * (n - 1) / n, False),
    "allgather": ("AllGather", lambda n: (n - 1) / n, True),
    "allgatherv": ("AllGather", lambda n: (n - 1) / n, True),
    "reducescatter": ("ReduceScatter", lambda n: (n - 1) / n, True),
    "alltoall": ("AlltoAll", lambda n: (n - 1) / n, False),
    "broadcast": ("Broadcast", lambda n: 1.0, False),
    "reduce": ("Reduce", lambda n: 1.0, False),
    "sendrecv": ("SendRecv", lambda n: 1.0, False),
    "send": ("Send", lambda n: 1.0, False),
    "recv": ("Recv", lambda n: 1.0, False),
}
_RTOL, _ATOL = 1e-3, 2e3  # our busbw against the stated one: Inspector prints GB/s with 6 decimals (±500 B/s)
_OUT = ["comm", "coll", "n_ranks", "nnodes", "scope", "records", "ranks", "bytes", "time_s", "algbw_bytes_per_s",
        "busbw_factor", "busbw_bytes_per_s", "busbw_stated_bytes_per_s", "busbw_agrees", "link",
        "peak_per_direction_bytes_per_s", "link_basis", "link_source", "comm_efficiency", "reason"]


def _key(coll: object) -> str | None:
    """``'AllReduce'``, ``'all_reduce'``, ``'nccl:all_reduce'`` -> ``'allreduce'``; None when no formula knows it."""
    if not isinstance(coll, str):
        return None
    key = "".join(ch for ch in coll.lower().removeprefix("nccl:") if ch.isalnum())
    return key if key in _COLLECTIVES else None


def busbw_factor(coll: str, n_ranks: int) -> float:
    """NCCL's bus-bandwidth factor for a collective over ``n_ranks`` (nccl-tests PERFORMANCE.md, "Summary"):
    2(n−1)/n AllReduce; (n−1)/n AllGather, ReduceScatter, AlltoAll; 1 Broadcast, Reduce, Send/Recv."""
    key = _key(coll)
    if key is None:
        raise ValueError(f"coll must be one of {', '.join(sorted({v[0] for v in _COLLECTIVES.values()}))} (any "
                         f"case or separators); got {coll!r}")
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, (int, np.integer)) or n_ranks < 1:
        raise ValueError(f"n_ranks must be a whole number >= 1; got {n_ranks!r}")
    return float(_COLLECTIVES[key][1](int(n_ranks)))


def collective_time_floor(coll: str, size_bytes: float, n_ranks: int, link: str | Link) -> float:
    """The least time a collective of total size ``S`` (nccl-tests' convention: AllGather/ReduceScatter/AlltoAll
    count all ranks' data) can take at the link's per-direction peak: ``S × factor / peak`` seconds. Raises
    ``ValueError`` when the link's source states no per-direction figure or the figure is not per rank."""
    found = interconnect.get_link(link)
    peak = found.per_direction_bytes_per_s
    if peak is None or not found.per_accelerator:
        why = _link_unusable(found)
        error = ValueError(f"{found.name}: {why}")
        if isinstance(why, InputRequest):  # what to give, as data (request_from reads it)
            error.request = why.with_stem(f"{found.name}: {why.stem}")  # type: ignore[attr-defined]
        raise error
    return float(size_bytes) * busbw_factor(coll, n_ranks) / peak


def request_from(exc: BaseException, prefix: str = "") -> str:
    """Why a link is unknown, from an error: an :class:`~mfu_toolkit.run.InputRequest` (its text unchanged, after
    ``prefix``) where the error says what to give (:func:`collective_time_floor`'s, or
    :class:`~mfu_toolkit.interconnect.NoListedLinkError`), else the error's text on one line."""
    request = getattr(exc, "request", None)
    if isinstance(request, InputRequest):
        return request.with_stem(prefix + request.stem)
    if isinstance(exc, interconnect.NoListedLinkError):
        return InputRequest(prefix + exc.stem, exc.asks, exc.python, exc.detail, exc.examples)
    return prefix + " ".join(str(exc).split())


#: what a link request asks for, by its code, and the request in Python's terms
LINK_ASKS: dict[str, str] = {
    "nic": "give nic=NAME (e.g. nic='NDR' or nic='400GbE')",
    "link_or_nic": "give link=NAME (intra-node) or nic=NAME with the node count",
    "link": "give link=NAME",
    "link_rate": "give link=NAME of a per-GPU rate (in Python, a Link you state)",
}
# code -> (fields asked, per field: words said after its request, values given as examples)
_LINK_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "nic": (("nic",), (), (("NDR", "400GbE"),)),
    "link_or_nic": (("link", "nic"), ("(intra-node)", "with the node count"), ()),
    "link": (("link",), (), ()),
    "link_rate": (("link",), ("of a per-GPU rate",), ()),
}


def link_request(stem: str, asks: str, *, link_given: bool = False) -> InputRequest:
    """Why a collective's efficiency is unknown, ending with what to give: an
    :class:`~mfu_toolkit.run.InputRequest` whose text asks in Python's terms (``give nic=NAME``, the
    :data:`LINK_ASKS` entry of ``asks``) and whose fields (``link``, ``nic``) let a front end ask in its own;
    ``link_given`` (a ``link`` was given but does not apply) adds ``link= is intra-node only``."""
    if asks not in LINK_ASKS:
        raise ValueError(f"asks must be one of {', '.join(LINK_ASKS)}; got {asks!r}")
    fields, detail, examples = _LINK_FIELDS[asks]
    unused = (("link", "is intra-node only"),) if link_given else ()
    tail = "".join(f"; {field}= {why}" for field, why in unused)
    return InputRequest(stem, fields, LINK_ASKS[asks] + tail, detail, examples, unused)


class _LinkRequestType(type):
    def __instancecheck__(cls, obj: Any) -> bool:  # any request for a link or a NIC, as before
        return isinstance(obj, InputRequest) and bool(obj.asks) and set(obj.asks) <= {"link", "nic"}


class _LinkRequest(InputRequest, metaclass=_LinkRequestType):
    """``LinkRequest(stem, asks, link_given=)``, the old name of :func:`link_request` (an InputRequest)."""

    def __new__(cls, stem: str, asks: str, *, link_given: bool = False) -> InputRequest:  # type: ignore[misc]
        return link_request(stem, asks, link_given=link_given)


def __getattr__(name: str) -> Any:
    if name == "LinkRequest":  # folded into run.InputRequest; the old name goes in the next release
        warnings.warn("mfu_toolkit.analysis.communication.LinkRequest is now mfu_toolkit.run.InputRequest (built by "
                      "communication.link_request); the old name goes in the next release", DeprecationWarning,
                      stacklevel=2)
        return _LinkRequest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_link_options(*, link: Any = None, nic: Any = None) -> None:
    """Raise :class:`~mfu_toolkit.interconnect.UnknownLinkError` naming the parameter (``nic='XDR9': ...``)
    where ``link`` or ``nic`` names no link of the table; ``None`` and a :class:`Link` pass."""
    for param, value in (("link", link), ("nic", nic)):
        if value is not None:  # an unknown name is an error naming the parameter, before anything is computed
            try:
                interconnect.get_link(value)
            except interconnect.UnknownLinkError as exc:
                raise interconnect.UnknownLinkError(f"{param}={value!r}: {exc}", name=exc.name,
                                                    suggestions=exc.suggestions) from None


def _link_unusable(link: Link) -> str:
    if link.per_direction_bytes_per_s is None:
        return (f"the source does not say whether {link.value:g} {link.unit} is one direction or both, so it gives "
                "no per-direction peak")
    return link_request(f"the table gives {link.value:g} {link.unit} per link, not per accelerator: a rank's "
                       "collective bandwidth depends on how many of its links the collective uses", "link_rate")


def _num(t: pd.DataFrame, column: str) -> pd.Series:
    """A column as floats (NaN where missing or not a number; all NaN when the table lacks it)."""
    if column not in t:
        return pd.Series(math.nan, index=t.index, dtype=float)
    return pd.to_numeric(t[column], errors="coerce").astype(float)


def _records(table: pd.DataFrame) -> pd.DataFrame:
    """Per record: canonical collective, n, S, time, our algbw/busbw, the stated busbw and whether they agree."""
    t = table.copy()
    t["coll_key"] = t["coll"].map(_key)
    n = _num(t, "n_ranks")
    factor = [_COLLECTIVES[k][1](v) if k is not None and v >= 1 else math.nan
              for k, v in zip(t["coll_key"], n.fillna(0).to_numpy(), strict=True)]
    total = np.where([k is not None and _COLLECTIVES[k][2] for k in t["coll_key"]], n, 1.0)
    size = _num(t, "msg_size_bytes") * total
    time = _num(t, "exec_time_s")
    t["S"], t["time"], t["factor"] = size, time, np.asarray(factor, dtype=float)
    t["busbw"] = (size / time.where(time > 0)) * t["factor"]
    stated = _num(t, "busbw_bytes_per_s")
    t["stated"] = stated.where(stated > 0)
    diff = (t["busbw"] - t["stated"]).abs()
    t["agrees"] = (diff <= np.maximum(_RTOL * t["stated"], _ATOL)).where(t["busbw"].notna() & t["stated"].notna())
    t["coll"] = [_COLLECTIVES[k][0] if k else c for k, c in zip(t["coll_key"], t["coll"], strict=True)]
    comm = t["comm_name"] if "comm_name" in t else pd.Series(None, index=t.index, dtype=object)
    ident = t["comm_id"] if "comm_id" in t else pd.Series(None, index=t.index, dtype=object)
    t["comm"] = comm.where(comm.notna(), ident).fillna("(not stated)").astype(str)
    t["nnodes"] = _num(t, "nnodes")
    t["n_ranks"] = n
    return t


def _group(records: pd.DataFrame) -> pd.DataFrame:
    """Per (communicator, collective, n, nodes): counts and time-weighted bandwidths."""
    r = records.assign(bus_bytes=records["busbw"] * records["time"],
                       stated_bytes=records["stated"] * records["time"],
                       stated_time=records["time"].where(records["stated"].notna()))
    keys = ["comm", "coll", "n_ranks", "nnodes"]
    g = r.groupby(keys, dropna=False, sort=True)
    out = g.agg(records=("coll", "size"), ranks=("rank", "nunique") if "rank" in r else ("coll", "size"),
                bytes=("S", lambda s: s.sum(min_count=1)), time_s=("time", lambda s: s.sum(min_count=1)),
                bus=("bus_bytes", lambda s: s.sum(min_count=1)), stated=("stated_bytes", lambda s: s.sum(min_count=1)),
                stated_time=("stated_time", lambda s: s.sum(min_count=1)), factor=("factor", "first"),
                agrees=("agrees", lambda s: bool(s.dropna().all()) if s.notna().any() else None),
                known=("busbw", lambda s: bool(s.notna().all()))).reset_index()
    out["algbw_bytes_per_s"] = out["bytes"] / out["time_s"]
    out["busbw_stated_bytes_per_s"] = out["stated"] / out["stated_time"]
    ours = (out["bus"] / out["time_s"]).where(out["known"])
    out["busbw_bytes_per_s"] = ours.where(ours.notna(), out["busbw_stated_bytes_per_s"])
    out["busbw_factor"] = out.pop("factor")
    out["busbw_agrees"] = out.pop("agrees")
    out["from_stated"] = ours.isna() & out["busbw_stated_bytes_per_s"].notna()
    return out.drop(columns=["bus", "stated", "stated_time", "known"])


def _fact(run: Run, name: str) -> Any:
    f = run.meta.fact(name)
    return None if f is None else f.get("value")


def _scope(nnodes: float, run: Run) -> str:
    """intra_node / inter_node from the communicator's node count, else the run's stated n_nodes, else unknown."""
    if not math.isfinite(nnodes):
        stated = _fact(run, "n_nodes")
        nnodes = float(stated) if isinstance(stated, (int, float)) and not isinstance(stated, bool) else math.nan
    if math.isfinite(nnodes) and nnodes >= 1:
        return "intra_node" if nnodes == 1 else "inter_node"
    return "unknown"


def _network_hint(run: Run) -> str:
    nets = sorted({str(f.get("value")) for f in run.meta.extra.get("nccl_facts") or [] if f.get("name") == "network"})
    return f" (NCCL's log names the network {', '.join(nets)} but no port rate)" if nets else ""


def _choose_link(scope: str, nnodes: float, run: Run, link: Any, nic: Any) -> tuple[Link | None, str, str]:
    """(link, basis, reason): the link a group is compared with, how it was chosen, or why there is none."""
    if scope == "inter_node":
        if nic is None:
            return None, "", link_request(f"the communicator spans {int(nnodes)} nodes: it is compared only with "
                                          f"the NIC's port rate, which the run does not state{_network_hint(run)}",
                                          "nic", link_given=link is not None)
        return (interconnect.get_link(nic), "given NIC (nic=); assumes one port of this rate per rank, as in "
                "systems with a NIC per GPU", "")
    if link is not None:
        where = "" if scope == "intra_node" else "; the table does not say whether the communicator spans nodes"
        return interconnect.get_link(link), "given (link=)" + where, ""
    if scope == "unknown":
        return None, "", link_request("the table does not say whether the communicator spans nodes (no nnodes): "
                                      "the link is not guessed", "link_or_nic")
    acc = run.meta.accelerator
    if not acc:
        return None, "", link_request("the run names no accelerator to infer its intra-node link from", "link")
    try:
        found = interconnect.link_for_accelerator(acc)
    except ValueError as exc:  # unknown accelerator, or one whose link the table does not fix
        return None, "", (request_from(exc, "no intra-node link for the run's accelerator: ")
                          if isinstance(exc, interconnect.NoListedLinkError)
                          else f"no intra-node link for the run's accelerator: {exc}")
    return found, f"inferred from the run's accelerator {acc} (interconnect.csv)", ""


def _efficiency_columns(groups: pd.DataFrame, run: Run, link: Any, nic: Any) -> pd.DataFrame:
    rows = []
    for nnodes, bus, from_stated, factor in zip(groups["nnodes"], groups["busbw_bytes_per_s"], groups["from_stated"],
                                                groups["busbw_factor"], strict=True):
        scope, coll_known = _scope(nnodes, run), math.isfinite(factor)
        found, basis, reason = _choose_link(scope, nnodes, run, link, nic)
        if factor == 0:
            found, basis, reason = None, "", "a communicator of one rank: nothing crosses a link"
        peak = None if found is None else found.per_direction_bytes_per_s
        if found is not None and (peak is None or not found.per_accelerator):
            why = _link_unusable(found)
            reason = (why.with_stem(f"{found.name}: {why.stem}") if isinstance(why, InputRequest)
                      else f"{found.name}: {why}")
            peak = None
        if not reason and not (isinstance(bus, float) and math.isfinite(bus)):
            reason = ("no bus bandwidth: the collective has no NCCL formula or the table gives no size and time"
                      if not coll_known else "no bus bandwidth: the table gives no size and time, nor a busbw")
        eff = bus / peak if peak and not reason else math.nan
        if math.isfinite(eff) and eff > 1.0:
            reason = ("above the link's peak: in-network reduction (NVLS, SHARP) moves less data than the formula "
                      "assumes, or the collective did not run over this link")
        elif from_stated and not reason:
            reason = "busbw as the table states it (no size to recompute it from)"
        rows.append({"scope": scope, "link": None if found is None else found.name, "link_basis": basis,
                     "link_source": None if found is None else found.source,
                     "peak_per_direction_bytes_per_s": peak if peak else math.nan, "comm_efficiency": eff,
                     "reason": reason})
    frame = pd.DataFrame(rows, index=range(len(groups)))
    # object, not str: an InputRequest keeps its fields for the front ends (pandas would make it a plain str)
    frame["reason"] = pd.Series([r["reason"] for r in rows], index=frame.index, dtype=object)
    return pd.concat([groups.reset_index(drop=True), frame], axis=1)


def _no_table_reason(run: Run) -> str:
    """Why a run has no collectives to measure, in terms of what it does hold."""
    if "collectives" in run.tables:
        cols = set(run.tables["collectives"].columns)
        return (f"the collectives table holds no message sizes and execution times (columns: "
                f"{', '.join(sorted(cols)[:12])}): bus bandwidth cannot be computed")
    if "comm_s" in run.steps.columns:
        return ("the run times communication kernels per step (comm_s) but states no message sizes (a trace's "
                "NCCL kernels, as loaded, carry no bytes): bus bandwidth cannot be computed; exposed_comm_share() "
                "reads what the trace does give")
    return "the run holds no collectives table (NCCL Inspector dumps give one)"


def comm_efficiency(run: Run, *, link: str | Link | None = None, nic: str | Link | None = None) -> pd.DataFrame:
    """Per communicator and collective: records, bytes, time, algbw and busbw (NCCL's formulas), the busbw the
    table states and whether ours agrees, the link compared with (given, or inferred from the run's accelerator
    for a communicator inside one node; ``nic`` for one spanning nodes) and ``comm_efficiency`` = busbw / the
    link's per-direction peak, NaN with ``reason`` where no sourced peak applies. See the module docstring.

    Columns: ``comm, coll, n_ranks, nnodes, scope, records, ranks, bytes, time_s, algbw_bytes_per_s, busbw_factor,
    busbw_bytes_per_s, busbw_stated_bytes_per_s, busbw_agrees, link, peak_per_direction_bytes_per_s, link_basis,
    link_source, comm_efficiency, reason`` (bandwidths in bytes/s, decimal). ``attrs``: ``busbw_source``,
    ``size_convention``, and ``reason`` when the run holds no collectives (then the frame is empty)."""
    check_link_options(link=link, nic=nic)
    table = run.tables.get("collectives")
    out = pd.DataFrame(columns=_OUT)
    out.attrs.update(busbw_source=BUSBW_SOURCE, size_convention=(
        "msg_size_bytes as NCCL Inspector writes it: AllGather/ReduceScatter one rank's share (S = msg x n)"))
    if table is None or "coll" not in table or not ({"msg_size_bytes", "exec_time_s"} <= set(table.columns)
                                                    or "busbw_bytes_per_s" in table):
        out.attrs["reason"] = _no_table_reason(run)
        return out
    groups = _group(_records(table))
    result = _efficiency_columns(groups, run, link, nic)
    result["n_ranks"] = result["n_ranks"].astype("Int64")
    result["nnodes"] = result["nnodes"].astype("Int64")
    result = result[_OUT]
    result.attrs.update(out.attrs)
    return result


# --- exposed communication ------------------------------------------------------------------------------------


def _span(frame: pd.DataFrame, start: str, end: str) -> pd.Series:
    return (pd.to_numeric(frame[end], errors="coerce") - pd.to_numeric(frame[start], errors="coerce")).astype(float)


def exposed_comm_share(run: Run) -> pd.DataFrame:
    """Exposed (non-overlapped) communication as a share of step time, for the waterfall's own slice.

    From the steps' ``exposed_comm_s`` (traces loaded through :mod:`mfu_toolkit.io.gpu_time`: communication
    kernels with no compute kernel running beside them), else from a per-device table with ``exposed_comm_s`` and
    its window (``first_s``/``last_s``: a capture without steps), else only an upper bound from ``comm_s``,
    ``compute_s`` and ``gpu_busy_s`` (exposed ≤ comm and ≤ busy − compute), else nothing. One row per step (or
    device): ``rank``/``device``, ``step``, ``span_s``, ``comm_s``, ``exposed_comm_s``, ``exposed_comm_share``,
    ``exposed_comm_share_max``. ``attrs``: ``share`` (Σ exposed / Σ span, NaN when unknown), ``share_max``,
    ``basis`` and ``reason``."""
    steps = run.steps
    cols = ["rank", "step", "span_s", "comm_s", "exposed_comm_s", "exposed_comm_share", "exposed_comm_share_max"]
    if "exposed_comm_s" in steps and steps["exposed_comm_s"].notna().any():
        out = steps[["rank", "step"]].assign(span_s=_span(steps, "start_s", "end_s"), comm_s=steps.get("comm_s"),
                                             exposed_comm_s=steps["exposed_comm_s"].astype(float))
        basis = "per step: communication kernels with no compute kernel beside them (io.gpu_time)"
    else:
        device = next((t for t in run.tables.values() if isinstance(t, pd.DataFrame)
                       and {"exposed_comm_s", "first_s", "last_s"} <= set(t.columns)), None)
        if device is not None:
            out = device.assign(span_s=_span(device, "first_s", "last_s"), step=pd.NA)
            out = out[[c for c in ("device", "step", "span_s", "comm_s", "exposed_comm_s") if c in out]]
            cols[0] = "device"
            basis = "per device over the capture window (no steps): communication with no compute beside it"
        else:
            return _exposed_bound(run, cols)
    out = out.reset_index(drop=True)
    out["exposed_comm_share"] = out["exposed_comm_s"] / out["span_s"].where(out["span_s"] > 0)
    out["exposed_comm_share_max"] = out["exposed_comm_share"]
    out = out[[c for c in cols if c in out]]
    total = float(out["exposed_comm_s"].sum()) / float(out["span_s"].where(out["exposed_comm_s"].notna()).sum())
    out.attrs.update(share=total, share_max=total, basis=basis, reason="")
    return out


def _exposed_bound(run: Run, cols: list[str]) -> pd.DataFrame:
    """Only an upper bound, from per-step comm, compute and busy time; or nothing, with the reason."""
    steps = run.steps
    need = {"comm_s", "compute_s", "gpu_busy_s"}
    if not need <= set(steps.columns) or steps[sorted(need)].isna().all().any():
        out = pd.DataFrame(columns=cols)
        out.attrs.update(share=math.nan, share_max=math.nan, basis="", reason=(
            "the run times no communication against compute per step (no exposed_comm_s, nor comm_s, compute_s "
            "and gpu_busy_s): exposed communication is unknown"))
        return out
    span = _span(steps, "start_s", "end_s")
    comm = steps["comm_s"].astype(float)
    bound = np.minimum(comm, (steps["gpu_busy_s"] - steps["compute_s"]).astype(float).clip(lower=0.0))
    out = steps[["rank", "step"]].assign(span_s=span, comm_s=comm, exposed_comm_s=math.nan,
                                         exposed_comm_share=math.nan,
                                         exposed_comm_share_max=bound / span.where(span > 0)).reset_index(drop=True)
    share_max = float(bound.sum()) / float(span.where(bound.notna()).sum())
    out.attrs.update(share=math.nan, share_max=share_max,
                     basis="upper bound: exposed <= comm_s and <= gpu_busy_s - compute_s",
                     reason=("the trace, as loaded, gives compute and communication time per step but not their "
                             "overlap: only an upper bound on exposed communication is known"))
    return out
