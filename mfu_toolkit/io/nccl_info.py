"""``NCCL_DEBUG=INFO`` lines read out of any text log, as data: version, communicators, init timings, network.

NCCL writes each INFO line as ``host:pid:tid [cudaDev] NCCL INFO <message>`` (``src/debug.cc``,
``ncclDebugLog``; with ``NCCL_DEBUG_TIMESTAMP_LEVELS`` a ``[date time]`` stamp comes first, and
launchers or Markdown may put ``[rank0]:``, ``0:`` or ``>`` before it). :class:`NcclScanner` looks
for the needle ``NCCL INFO`` with one substring search before any regex, so a training log's other
lines cost next to nothing, and each message is read by one anchored pattern: linear in the input.
A line on which two processes' output ran together is read message by message. A message no rule
knows is counted (``n_lines - n_read``), never an error.

Messages read, with NCCL's own spellings (sources cited per rule below; versions 2.12 to 2.30):

- ``NCCL version 2.22.3+cuda12.4`` (``src/init.cc``, ``showVersion``), also without the INFO
  prefix (``NCCL_DEBUG=VERSION``).
- Communicators (``src/init.cc``, ``ncclCommInitRankFunc``): ``comm 0x… rank R nranks N cudaDev C
  nvmlDev V busId B commId 0x… - Init START|COMPLETE``; from 2.21 the API comes first
  (``ncclCommInitRank``, ``ncclCommSplit``, …), a split's line carries ``parent 0x… [splitCount S]
  color C key K`` (2.21+), 2.28+ puts ``[Rank R]`` before it; ``comm 0x… rank R nRanks N nNodes M
  localRanks L localRank l MNNVL x`` (``initTransportsRank``); ``bootstrapSplit: comm … parent …
  rank … nranks … color … key … prev … next … - DONE`` (``src/bootstrap.cc``, INFO up to 2.2x).
  ``cudaDev`` is the process's CUDA index, ``nvmlDev`` the physical GPU; they differ under
  ``CUDA_VISIBLE_DEVICES``.
- Init timings, in **seconds** (the ns timers divided by 1e9): ``Init timings: rank R nranks N
  total T (kernels …, bootstrap …, allgathers …, topo …, graphs …, connections …, rest …)`` (2.22)
  and ``Init timings - <API>: rank R nranks N total T (kernels …, alloc …, bootstrap …, …)`` (2.23+).
- Network: ``Using network IB|Socket|<plugin>`` (``src/init.cc``); ``NET/IB : No device found.``
  and ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>``
  (``src/transport/net_ib.cc``, later ``net_ib/init.cc``); ``NET/Socket : Using [0]eth0:10.0.0.1<0>``
  (``src/transport/net_socket.cc``).
- Channel connections (``src/transport/p2p.cc``, ``shm.cc``, ``net.cc``, ``coll_net.cc``):
  ``Channel 00/0 : 6[a01c0] -> 7[a01d0] via P2P/IPC/read``, ``… [send] via NET/IB/0/GDRDMA``,
  ``Channel 03 : 0[0] -> 1[1] via SHM/direct/direct``. The bracket holds the GPU's bus id in hex up
  to 2.18.1 (``%lx``) and its nvmlDev from 2.18.3 (``%d``).
- Channels and trees: the ring listing ``Channel 21/24 :    0   1 …`` (``src/graph/rings.cc``,
  rank 0 only; 24 channels), ``Trees [0] 1/-1/-1->0->-1 [1] …`` (``src/init.cc``; one entry per
  channel), ``24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p
  channels per peer`` (``src/init.cc``).
- ``NCCL_IB_DISABLE set by environment to 1.`` (``src/misc/param.cc``).

**World size.** A line's ``nranks`` is its communicator's size; a split communicator (a process
group) is smaller than the world. :meth:`NcclInfo.world` gives the size of the largest
communicator only when a root communicator (not split) has it; old ``Init timings:`` lines (no API
named) count as root only in a log that shows no split at all.

**Socket fallback.** NCCL tries a network plugin, then IB (RoCE included), then sockets, in that
order (``src/net.cc``: ``ncclNets = {plugin, &ncclNetIb, &ncclNetSocket}``), so ``Using network
Socket`` means no IB/RoCE device or plugin was usable: :meth:`NcclInfo.socket_fallback` names it as a
fact with its reason (IB found no device, IB disabled by the environment, or none given) and
whether collectives' traffic went over it (channels ``via NET/Socket``).

Every text loader reads them in one place, :class:`NcclStage`: a format with ``TEXT_LOG = True`` gets
its lines from ``Reader.lines()`` without NCCL's, which the stage reads, counts once in the LoadReport and
states beside the format's records (facts ``n_ranks`` and ``n_nodes`` at their file:line, compared with
the world size the framework states; ``meta.extra['nccl']`` and ``['nccl_facts']``; ``nccl_*`` tables;
notes). The scanner alone, over any ``(line, text)`` pairs::

    scanner = NcclScanner()
    for ln, text in lines:
        if scanner.feed(ln, text):
            continue  # NCCL's line, not one of the framework's
        ...
    info = scanner.result()  # info.facts(), info.summary(), info.frames(), info.notes()
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .values import number

if TYPE_CHECKING:  # the stage puts NCCL's facts beside a format's records (base imports reading imports this)
    from .base import Parsed
    from .reading import Reader

__all__ = ["NEEDLE", "NcclInfo", "NcclScanner", "NcclStage", "scan"]

NEEDLE = "NCCL INFO"
_VERSION_WORD = "NCCL version "
_TEXT_CHARS = 200  # characters of a line kept as a fact's text

_HOST_CHARS = 300  # the most characters a ``host:pid:tid`` token is looked for in
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(\S*?)(?:\+cuda(\d+\.\d+))?\s*$")
_TIMINGS = re.compile(r"Init timings(?: - (\w+))?: rank (\d+) nranks (\d+) total (\S+) \(([^)]*)\)")
_PART = re.compile(r"(\w+) (\S+?)(?:,|$)")
_STATE = re.compile(r"-\s*(Init|Destroy|Abort|Revoke) (START|COMPLETE)\s*$")
_CONNECT = re.compile(
    r"Channel (\d+)(?:/(\d+))? : (\d+)\[([0-9a-fA-F]+)\] -> (\d+)\[([0-9a-fA-F]+)\]"
    r"(?: \[(send|receive)\])? via (.*)$")
_COLLNET = re.compile(r"CollNet (\d+)/(\d+) : (\d+) \[(send|receive)\] via (.*)$")
_RING = re.compile(r"Channel (\d+)/(\d+) :((?:\s+-?\d+)*)\s*$")
_COUNTS = re.compile(r"(\d+) coll channels, (?:(\d+) collnet channels, )?(?:(\d+) nvls channels, )?"
                     r"(\d+) p2p channels, (\d+) p2p channels per peer")
_IB_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+):(\d+)/(\w+)")
_SOCK_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+):([^\s<]+)")
_ENV = re.compile(r"(NCCL_\w+) set by environment to ")
_NET_VIA = re.compile(r"NET/(.+?)/(\d+)(?:\((\d+)\))?(/GDRDMA)?")
_NVLS = re.compile(r"NVLS multicast support is (not )?available on dev (\d+)")
_INT_COLUMNS = frozenset({"line", "pid", "rank", "nranks", "cuda_dev", "nvml_dev", "color", "key", "n_nodes",
                          "local_ranks", "nodes_line", "channel", "conn_index", "src_rank", "dst_rank", "net_dev",
                          "index"})
_SPLIT_APIS = ("ncclCommSplit", "ncclCommShrink", "ncclCommGrow")
_NIL = ("(nil)", "0x0", "(null)")


def _int(text: str | None) -> int | None:
    """An integer NCCL printed with ``%d`` (None when absent or not one)."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _prefix(text: str, lo: int, hi: int) -> tuple[str, int, int] | None:
    """``(host, pid, start)`` of the ``host:pid:tid [cudaDev] `` that ends at ``hi`` (src/debug.cc), read
    backwards in constant time; the host is as NCCL printed it (``-`` for special characters, or a
    redaction such as ``<host>``), with a launcher's ``[rank0]:`` before it left out."""
    if hi - lo < 8 or text[hi - 2:hi] != "] ":
        return None
    b = text.rfind("[", max(lo, hi - 16), hi - 2)
    if b < lo + 1 or text[b - 1] != " " or not _digits(text[b + 1:hi - 2].lstrip("-")):
        return None
    floor = max(lo, b - _HOST_CHARS)
    space = text.rfind(" ", floor, b - 1)
    first = space + 1 if space >= 0 else floor
    parts = text[first:b - 1].rsplit(":", 2)
    if len(parts) < 3 or not (_digits(parts[1]) and _digits(parts[2])):
        return None
    host = parts[0].rsplit(":", 1)[-1]
    if not host:
        return None
    return host, int(parts[1]), first + len(parts[0]) - len(host)


def _pairs(tokens: list[str]) -> dict[str, str]:
    """``name value`` pairs of a communicator line (``comm 0x… rank 0 nranks 4 …``)."""
    return {tokens[i]: tokens[i + 1] for i in range(0, len(tokens) - 1, 2)}


@dataclass
class NcclInfo:
    """What the NCCL INFO lines of one log say, each record with its ``line`` (1-based).

    Tables are lists of dicts (``frames()`` gives DataFrames): ``communicators`` (one per process
    and communicator, with ``host``, ``pid``, ``rank``, ``nranks``, ``cuda_dev``, ``nvml_dev``,
    ``bus_id``, ``comm_id``, ``parent``, ``color``, ``key``, ``split``, ``api``, ``n_nodes``,
    ``local_ranks``, ``state``), ``init_timings`` (``total_s`` and one ``<part>_s`` per part),
    ``networks`` (``Using network``), ``nics`` (``NET/IB``/``NET/Socket`` devices), ``connections``
    (channel connections with ``transport``), ``rings``, ``trees``, ``channel_counts``.
    """

    n_lines: int = 0  # NCCL INFO messages seen
    n_read: int = 0  # of them, messages a rule read
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)
    communicators: list[dict[str, Any]] = field(default_factory=list)
    init_timings: list[dict[str, Any]] = field(default_factory=list)
    networks: list[dict[str, Any]] = field(default_factory=list)
    nics: list[dict[str, Any]] = field(default_factory=list)
    connections: list[dict[str, Any]] = field(default_factory=list)
    rings: list[dict[str, Any]] = field(default_factory=list)
    trees: list[dict[str, Any]] = field(default_factory=list)
    channel_counts: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, dict[str, Any]] = field(default_factory=dict)
    ib_missing: list[int] = field(default_factory=list)
    nvls: list[dict[str, Any]] = field(default_factory=list)
    p2p_chunksize: dict[str, int] = field(default_factory=dict)  # bytes as printed -> first line

    def __bool__(self) -> bool:
        return self.n_lines > 0 or bool(self.versions)

    # --- what the lines amount to ---------------------------------------------------------
    @property
    def version(self) -> str | None:
        """The NCCL version printed first (``2.22.3``), or None."""
        return next(iter(self.versions), None)

    def transports(self) -> list[str]:
        """The transports channels were connected through (``P2P/IPC``, ``SHM``, ``NET/IB``, …)."""
        return sorted({c["transport"] for c in self.connections if c.get("transport")})

    def network_names(self) -> list[str]:
        """The networks processes chose (``Using network IB``), in first-seen order."""
        return list(dict.fromkeys(n["network"] for n in self.networks))

    def world(self) -> dict[str, Any] | None:
        """``{value, line, text, why}``: the world size, where a root communicator states it (see the module)."""
        sizes = [c["nranks"] for c in self.communicators if c.get("nranks")]
        sizes += [t["nranks"] for t in self.init_timings if t.get("nranks")]
        if not sizes:
            return None
        top = max(sizes)
        any_split = any(c.get("split") for c in self.communicators) or any(t.get("split")
                                                                            for t in self.init_timings)
        for c in sorted(self.communicators, key=lambda c: c["line"]):
            if c.get("nranks") == top and c.get("split") is False:
                return {"value": top, "line": c["line"], "text": c["text"],
                        "why": "the largest communicator, a root one (not split)"}
        for t in self.init_timings:
            if t["nranks"] == top and (t["split"] is False or (t["split"] is None and not any_split)):
                why = "the largest communicator" + (", a root one (its API)" if t["split"] is False
                                                     else "; the log shows no split communicator")
                return {"value": top, "line": t["line"], "text": t["text"], "why": why}
        return None

    def n_nodes(self) -> dict[str, Any] | None:
        """``{value, line, text}``: ``nNodes`` of the world communicator, where a line states it."""
        w = self.world()
        if w is None:
            return None
        for c in sorted(self.communicators, key=lambda c: c["line"]):
            if c.get("nranks") == w["value"] and not c.get("split") and c.get("n_nodes"):
                return {"value": c["n_nodes"], "line": c["nodes_line"], "text": c["nodes_text"]}
        return None

    def splits(self) -> list[dict[str, Any]]:
        """The split communicators (``bootstrapSplit``, ``ncclCommSplit``, a ``parent``)."""
        return [c for c in self.communicators if c.get("split")]

    def socket_fallback(self) -> dict[str, Any] | None:
        """``{value: True, line, text, reason, traffic}`` when NCCL used sockets (see the module), else None."""
        chose = [n for n in self.networks if n["network"].lower() == "socket"]
        via = [c for c in self.connections if c.get("transport") == "NET/Socket"]
        if not chose and not via:
            return None
        first = min(chose + via, key=lambda r: r["line"])
        disabled = self.env.get("NCCL_IB_DISABLE")
        if disabled is not None and disabled["value"].strip() not in ("0", ""):
            reason = (f"IB was disabled by the environment (NCCL_IB_DISABLE={disabled['value']}, "
                      f"line {disabled['line']})")
        elif self.ib_missing:
            reason = f"NCCL found no IB/RoCE device (NET/IB : No device found, line {self.ib_missing[0]})"
        else:
            reason = "no IB/RoCE device or network plugin was usable (NCCL tries a plugin, then IB, then sockets)"
        others = sorted({n["network"] for n in self.networks} - {n["network"] for n in chose})
        if via:
            traffic = f"{len(via)} channel connection(s) carry collectives over TCP sockets (via NET/Socket)"
        elif self.connections:
            traffic = "no channel goes via NET/Socket here: the connections seen are intra-node"
        else:
            traffic = "no channel connection lines: whether collectives crossed nodes over it is not logged"
        n_proc = len({(n["host"], n["pid"]) for n in chose})
        return {"value": True, "line": first["line"], "text": first["text"], "reason": reason, "traffic": traffic,
                "processes": n_proc, "other_networks": others}

    def facts(self) -> list[dict[str, Any]]:
        """What the lines state, as ``{name, value, line, text}``: ``nccl_version``, ``n_ranks`` (the
        world only), ``n_nodes``, ``network``, ``transport``, ``socket_fallback``, ``n_channels``,
        ``n_tree_channels``, ``init_total_s`` (the slowest rank of the world)."""
        out: list[dict[str, Any]] = []
        for v, at in self.versions.items():
            out.append({"name": "nccl_version", "value": v, "line": at["line"], "text": at["text"]})
        for name, got in (("n_ranks", self.world()), ("n_nodes", self.n_nodes())):
            if got is not None:
                out.append({"name": name, "value": got["value"], "line": got["line"], "text": got["text"]})
        seen: set[tuple[str, str]] = set()
        for name, rows, key in (("network", self.networks, "network"), ("transport", self.connections, "transport")):
            for r in rows:
                if r.get(key) and (name, r[key]) not in seen:
                    seen.add((name, r[key]))
                    out.append({"name": name, "value": r[key], "line": r["line"], "text": r["text"]})
        fb = self.socket_fallback()
        if fb is not None:
            out.append({"name": "socket_fallback", "value": True, "line": fb["line"], "text": fb["text"]})
        if self.rings:
            r = self.rings[0]
            out.append({"name": "n_channels", "value": r["n_channels"], "line": r["line"], "text": r["text"]})
        if self.trees:
            t = self.trees[0]
            out.append({"name": "n_tree_channels", "value": t["n_channels"], "line": t["line"], "text": t["text"]})
        slow = max((t for t in self.init_timings if t.get("total_s") is not None), key=lambda t: t["total_s"],
                   default=None)
        if slow is not None:
            out.append({"name": "init_total_s", "value": slow["total_s"], "line": slow["line"], "text": slow["text"]})
        return out

    def notes(self) -> list[str]:
        """What a reader of the tables should know, one sentence each: the world size's basis (or the split
        communicators that state none), a fallback to sockets with its reason, the messages left unread."""
        out: list[str] = []
        world, splits = self.world(), self.splits()
        if world is None and splits:
            sizes = sorted({c["nranks"] for c in splits if c.get("nranks")})
            out.append(f"{len(splits)} split communicator(s) of {', '.join(map(str, sizes))} ranks: a split's "
                       "nranks is its group's size, not the world's, and no root communicator states the world size "
                       "(n_ranks not stated)")
        elif world is not None:
            out.append(f"n_ranks {world['value']} from line {world['line']}: {world['why']}")
        fb = self.socket_fallback()
        if fb is not None:
            out.append(f"NCCL fell back to sockets (TCP), line {fb['line']} '{fb['text'][:60]}' "
                       f"({fb['processes']} process(es)): {fb['reason']}; {fb['traffic']}")
        unread = self.n_lines - self.n_read
        if unread:
            out.append(f"{unread:,} NCCL INFO line(s) of kinds this reader does not use (left unread)")
        return out

    def summary(self) -> dict[str, Any]:
        """A JSON-able digest for ``meta.extra``: version, world, networks, transports, fallback, counts."""
        w, fb = self.world(), self.socket_fallback()
        totals = [t["total_s"] for t in self.init_timings if t.get("total_s") is not None]
        return {
            "nccl_version": self.version,
            "nccl_versions": list(self.versions),
            "cuda_version": next((v["cuda"] for v in self.versions.values() if v.get("cuda")), None),
            "world_size": None if w is None else {k: w[k] for k in ("value", "line", "why")},
            "n_communicators": len(self.communicators),
            "n_split_communicators": len(self.splits()),
            "networks": self.network_names(),
            "transports": self.transports(),
            "nics": sorted({n["device"] for n in self.nics}),
            "n_channels": sorted({r["n_channels"] for r in self.rings}),
            "n_tree_channels": sorted({t["n_channels"] for t in self.trees}),
            "init_total_s_max": max(totals) if totals else None,
            "socket_fallback": fb,
            "env": {k: v["value"] for k, v in self.env.items()},
            "info_lines": self.n_lines,
            "info_lines_unread": self.n_lines - self.n_read,
        }

    def frames(self) -> dict[str, Any]:
        """The non-empty tables as DataFrames (``communicators`` with the process's NICs and network)."""
        import pandas as pd

        nics: dict[tuple[Any, Any], list[str]] = {}
        for n in self.nics:
            nics.setdefault((n["host"], n["pid"]), []).append(n["device"])
        nets = {(n["host"], n["pid"]): n["network"] for n in self.networks}
        comms = [{**c, "nics": ",".join(dict.fromkeys(nics.get((c["host"], c["pid"]), []))) or None,
                  "network": nets.get((c["host"], c["pid"]))} for c in self.communicators]
        tables = {"communicators": comms, "init_timings": self.init_timings, "connections": self.connections,
                  "nics": self.nics, "networks": self.networks}
        out = {}
        for name, rows in tables.items():
            if rows:
                df = pd.DataFrame(rows).drop(columns=["text", "nodes_text"], errors="ignore")
                for col in _INT_COLUMNS.intersection(df.columns):
                    df[col] = df[col].astype("Int64")
                out[name] = df
        return out


class NcclScanner:
    """Feed it a log's lines; ``feed`` says whether a line was NCCL's, ``result`` gives the :class:`NcclInfo`.

    >>> s = NcclScanner()
    >>> s.feed(1, "node1:12:34 [0] NCCL INFO Using network IB")
    True
    >>> s.result().network_names()
    ['IB']
    """

    def __init__(self) -> None:
        self.info = NcclInfo()
        self._comms: dict[tuple[Any, Any, str], dict[str, Any]] = {}
        self._pending_split: set[tuple[Any, Any]] = set()  # processes whose next Init line is a split

    def feed(self, line: int, text: str) -> bool:
        """Read one line; True when it held an NCCL INFO message (or NCCL's bare version line)."""
        at = text.find(NEEDLE)
        if at < 0:
            v = text.find(_VERSION_WORD, 0, 80)
            if v < 0 or text[:v].strip(" >\t"):
                return False
            return self._version(line, None, None, text[v:])
        start = 0
        while at >= 0:
            nxt = text.find(NEEDLE, at + len(NEEDLE))
            after = None if nxt < 0 else _prefix(text, at + len(NEEDLE), nxt)
            end = len(text) if nxt < 0 else (nxt if after is None else after[2])
            here = _prefix(text, start, at)
            host, pid = (here[0], here[1]) if here else (None, None)
            self.info.n_lines += 1
            if self._message(line, host, pid, text[at + len(NEEDLE):end].strip()):
                self.info.n_read += 1
            start, at = end, nxt
        return True

    def result(self) -> NcclInfo:
        """What was read so far (communicators in first-seen order)."""
        self.info.communicators = list(self._comms.values())
        return self.info

    # --- one message ---------------------------------------------------------------------------
    def _message(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """Dispatch one message on its first words; True when a rule read it."""
        if msg.startswith("Channel "):
            return self._channel(line, host, pid, msg)
        if msg.startswith("CollNet "):
            return self._collnet(line, host, pid, msg)
        if msg.startswith("Init timings"):
            return self._timings(line, host, pid, msg)
        if msg.startswith("NET/IB") or msg.startswith("NET/Socket"):
            return self._nics(line, host, pid, msg)
        if msg.startswith("Using network "):
            self.info.networks.append({"line": line, "host": host, "pid": pid, "network": msg[14:].strip(),
                                       "text": msg[:_TEXT_CHARS]})
            return True
        if msg.startswith("Trees"):
            n = msg.count(" [")
            self.info.trees.append({"line": line, "host": host, "pid": pid, "n_channels": n,
                                    "text": msg[:_TEXT_CHARS]})
            return True
        if msg.startswith("NCCL version "):
            return self._version(line, host, pid, msg)
        if msg.startswith("bootstrapSplit: "):
            return self._comm(line, host, pid, msg[16:], bootstrap=True)
        if " comm " in msg[:48] or msg.startswith("comm "):
            return self._comm(line, host, pid, msg)
        return self._other(line, host, pid, msg)

    def _other(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """Channel counts, environment settings, NVLS support; False for anything else."""
        if msg[:1].isdigit() and (m := _COUNTS.match(msg)):
            keys = ("coll", "collnet", "nvls", "p2p", "p2p_per_peer")
            self.info.channel_counts.append({"line": line, "host": host, "pid": pid,
                                             **{k: _int(v) for k, v in zip(keys, m.groups(), strict=True)}})
            return True
        if msg.startswith("NCCL_") and (m := _ENV.match(msg)):
            value = msg[m.end():].strip().rstrip(".")
            self.info.env.setdefault(m.group(1), {"value": value, "line": line})
            return True
        if msg.startswith("P2P Chunksize set to "):
            self.info.p2p_chunksize.setdefault(msg[21:].strip(), line)
            return True
        if msg.startswith("NVLS multicast") and (m := _NVLS.match(msg)):
            self.info.nvls.append({"line": line, "host": host, "pid": pid, "available": m.group(1) is None,
                                   "dev": int(m.group(2))})
            return True
        return False

    def _version(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        m = _VERSION.match(msg)
        if m is None:
            return False
        self.info.versions.setdefault(m.group(1), {"line": line, "text": msg[:_TEXT_CHARS], "suffix": m.group(2),
                                                   "cuda": m.group(3)})
        return True

    def _timings(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """``Init timings[ - API]: rank R nranks N total T (part t, …)``, seconds (src/init.cc)."""
        m = _TIMINGS.match(msg)
        if m is None:
            return False
        api = m.group(1)
        row: dict[str, Any] = {"line": line, "host": host, "pid": pid, "api": api, "rank": int(m.group(2)),
                               "nranks": int(m.group(3)), "split": None if api is None else api in _SPLIT_APIS,
                               "total_s": number(m.group(4)), "spelling": "new" if api else "old"}
        for p in _PART.finditer(m.group(5)):
            row[f"{p.group(1)}_s"] = number(p.group(2))
        row["text"] = msg[:_TEXT_CHARS]
        self.info.init_timings.append(row)
        return True

    def _comm(self, line: int, host: str | None, pid: int | None, msg: str, *, bootstrap: bool = False) -> bool:
        """A communicator line (src/init.cc) or ``bootstrapSplit:`` (src/bootstrap.cc); merged per
        process and communicator pointer."""
        state = None
        if bootstrap:
            body = msg[: msg.rfind(" - ")] if msg.rstrip().endswith("DONE") and " - " in msg else msg
        elif m := _STATE.search(msg):
            if m.group(1) != "Init":  # Destroy / Abort / Revoke: read, but no communicator of its own
                return True
            state, body = m.group(2), msg[: m.start()]
        else:
            body = msg
        tokens = body.split()
        if tokens[:1] == ["[Rank"]:
            tokens = tokens[2:]
        api = None
        if tokens and tokens[0] != "comm" and not bootstrap:
            api, tokens = tokens[0], tokens[1:]
            if not api.startswith("nccl"):
                return False
        kv = _pairs(tokens)
        rank, nranks = _int(kv.get("rank")), _int(kv.get("nranks", kv.get("nRanks")))
        if rank is None or nranks is None:
            return False
        if "comm" not in kv:  # 2.18/2.19 bootstrapSplit names no communicator: its next Init line is the split
            self._pending_split.add((host, pid))
            return True
        row = self._row(line, host, pid, kv["comm"], msg)
        parent = kv.get("parent")
        split = (bootstrap or (parent is not None and parent not in _NIL) or (api in _SPLIT_APIS)
                 or (state == "START" and (host, pid) in self._pending_split))
        if state == "START":
            self._pending_split.discard((host, pid))
        row.update({k: v for k, v in (("rank", rank), ("nranks", nranks), ("api", api), ("state", state),
                                      ("parent", parent if parent not in _NIL else None),
                                      ("color", _int(kv.get("color"))), ("key", _int(kv.get("key"))),
                                      ("comm_id", kv.get("commId")), ("bus_id", kv.get("busId")),
                                      ("cuda_dev", _int(kv.get("cudaDev"))), ("nvml_dev", _int(kv.get("nvmlDev"))))
                    if v is not None})
        row["split"] = True if split or row["split"] else (False if (api or state) else row["split"])
        if "nNodes" in kv:
            row.update(n_nodes=_int(kv["nNodes"]), local_ranks=_int(kv.get("localRanks")),
                       nodes_line=line, nodes_text=msg[:_TEXT_CHARS])
        return True

    def _row(self, line: int, host: str | None, pid: int | None, comm: str, msg: str) -> dict[str, Any]:
        """The communicator row of (host, pid, pointer), created on its first line."""
        key = (host, pid, comm)
        row = self._comms.get(key)
        if row is None:
            row = {"line": line, "host": host, "pid": pid, "comm": comm, "rank": None, "nranks": None,
                   "cuda_dev": None, "nvml_dev": None, "bus_id": None, "comm_id": None, "parent": None,
                   "color": None, "key": None, "split": None, "api": None, "n_nodes": None, "local_ranks": None,
                   "state": None, "text": msg[:_TEXT_CHARS], "nodes_line": None, "nodes_text": None}
            self._comms[key] = row
        return row

    def _channel(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """A channel connection (transport/*.cc) or the ring listing (graph/rings.cc)."""
        if " -> " in msg:
            m = _CONNECT.match(msg)
            if m is None:
                return False
            ch, conn, src, src_dev, dst, dst_dev, direction, via = m.groups()
            # the bracket: bus id in hex up to 2.18.1 (``%lx``), nvmlDev from 2.18.3 (``%d``); transport/p2p.cc
            dev_kind = "nvml_dev" if _digits(src_dev) and _digits(dst_dev) and len(src_dev) < 4 else "bus_id"
            row = {"line": line, "host": host, "pid": pid, "channel": int(ch), "conn_index": _int(conn),
                   "src_rank": int(src), "src_dev": src_dev, "dst_rank": int(dst), "dst_dev": dst_dev,
                   "dev_kind": dev_kind, "direction": direction, **_via(via), "text": msg[:_TEXT_CHARS]}
            self.info.connections.append(row)
            return True
        m = _RING.match(msg)
        if m is None:
            return False
        self.info.rings.append({"line": line, "host": host, "pid": pid, "channel": int(m.group(1)),
                                "n_channels": int(m.group(2)), "n_ranks": len(m.group(3).split()),
                                "text": msg[:_TEXT_CHARS]})
        return True

    def _collnet(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """``CollNet 00/0 : 3 [send] via COLLNET/SHARP/0`` (src/transport/coll_net.cc)."""
        m = _COLLNET.match(msg)
        if m is None:
            return False
        ch, conn, rank, direction, via = m.groups()
        self.info.connections.append({"line": line, "host": host, "pid": pid, "channel": int(ch),
                                      "conn_index": int(conn), "src_rank": int(rank), "src_dev": None,
                                      "dst_rank": None, "dst_dev": None, "direction": direction, **_via(via),
                                      "text": msg[:_TEXT_CHARS]})
        return True

    def _nics(self, line: int, host: str | None, pid: int | None, msg: str) -> bool:
        """``NET/IB : No device found.``, ``NET/IB : Using [0]mlx5_0:1/IB …; OOB …``, ``NET/Socket : Using …``."""
        head = msg.split(":", 1)
        if len(head) < 2:
            return False
        kind, rest = head[0].strip()[4:], head[1].strip()
        if kind == "IB" and rest.startswith("No device found"):
            self.info.ib_missing.append(line)
            return True
        if not rest.startswith("Using"):
            return False
        devs = rest.split(";", 1)[0]
        pattern = _IB_DEV if kind == "IB" else _SOCK_DEV
        found = 0
        for d in pattern.finditer(devs):
            found += 1
            link = d.group(4) if kind == "IB" else "Socket"
            self.info.nics.append({"line": line, "host": host, "pid": pid, "kind": kind, "index": int(d.group(1)),
                                   "device": d.group(2), "port": d.group(3), "link": link})
        return found > 0


def _via(text: str) -> dict[str, Any]:
    """``transport`` (``P2P/IPC``, ``SHM``, ``NET/IB``, ``COLLNET/SHARP``) and its details from ``via …``."""
    via = text.strip()
    out: dict[str, Any] = {"via": via[:80], "transport": None, "net_dev": None, "gdr": None}
    parts = via.split("/")
    head = parts[0]
    if head == "NET" and (m := _NET_VIA.match(via)):
        out.update(transport=f"NET/{m.group(1)}", net_dev=int(m.group(2)), gdr=m.group(4) is not None)
    elif head == "SHM":
        out["transport"] = "SHM"
    elif head in ("P2P", "COLLNET") and len(parts) > 1:
        out["transport"] = f"{head}/{parts[1].split()[0]}"
    elif head:
        out["transport"] = head.split()[0]
    return out


class NcclStage:
    """The stage every text log goes through: NCCL's own lines taken out of the log's lines as its format reads
    them, and what they state put beside the format's records.

    A format that reads a training log line by line says so with ``TEXT_LOG = True``; the loading pipeline
    (:func:`mfu_toolkit.io.base.load`) then gives its Reader a stage, and ``Reader.lines()`` passes the lines of
    the log's own file through :meth:`without`. A line NCCL wrote (:meth:`NcclScanner.feed`; one substring test
    for ``NCCL`` comes first, so other lines cost one ``in``) is read here and never reaches the format: it is no
    line the format left unread or skipped. After ``parse``, :meth:`state` counts those lines once in the
    report's ``lines_read`` and adds what they say (see :meth:`state`). A log without NCCL's lines is loaded
    exactly as before: nothing is added.

    When the last line of a file is NCCL's and no line break follows it, the format is given an empty last
    line in its place, as for a file that ends with a line break, so no line of its own is taken for
    half-written.
    """

    def __init__(self) -> None:
        self.scanner = NcclScanner()
        self.taken = 0  # lines of the first pass over the file that were NCCL's
        self._passes = 0

    def without(self, lines: Iterable[tuple[int, str]]) -> Iterable[tuple[int, str]]:
        """``lines`` less NCCL's. The first pass over the file is recorded; a later pass (a format that reads
        its file twice) has NCCL's lines taken out too, and recorded no second time."""
        record = self._passes == 0
        self._passes += 1
        return self._take(lines, self.scanner if record else NcclScanner(), record)

    def _take(self, lines: Iterable[tuple[int, str]], scanner: NcclScanner, record: bool) -> Iterable[tuple[int, str]]:
        feed = scanner.feed
        cut: int | None = None  # the number of the last line read, while it was NCCL's
        for ln, text in lines:
            if "NCCL" in text and feed(ln, text):
                self.taken += record
                cut = ln
                continue
            cut = None
            yield ln, text
        if cut is not None:
            yield cut, ""

    def state(self, parsed: Parsed, reader: Reader) -> None:
        """Count NCCL's lines in ``lines_read`` and put what they state beside ``parsed``'s records.

        ``n_ranks`` and ``n_nodes`` of the world communicator (:meth:`NcclInfo.world`) become facts at their
        file:line where the log's own lines state none; where they do (``n_ranks``, else ``n_accelerators`` for
        the world size), the two are compared, and a difference is a note naming both lines (the log's own value
        stays its fact). ``meta.extra['nccl']`` gets :meth:`NcclInfo.summary`, ``meta.extra['nccl_facts']``
        every fact of :meth:`NcclInfo.facts` at its file:line (the NCCL version, networks, transports, a socket
        fallback, the slowest init), the tables (``nccl_communicators``, ``nccl_init_timings`` with the init
        time of each rank, …) go beside the format's, and the report gets one note of what was read and the
        notes of :meth:`NcclInfo.notes`.
        """
        if not self.taken:
            return
        info = self.scanner.result()
        reader.report.lines_read += self.taken
        at = reader.name
        parsed.extra["nccl"] = info.summary()
        parsed.extra["nccl_facts"] = [{"name": f["name"], "value": f["value"], "where": f"{at}:{f['line']}",
                                       "text": f["text"]} for f in info.facts()]
        for name, df in info.frames().items():
            parsed.tables.setdefault(f"nccl_{name}", df)
        reader.note(_digest(info, self.taken))
        for name, got in (("n_ranks", info.world()), ("n_nodes", info.n_nodes())):
            if got is not None:
                _cross_check(parsed, reader, name, got)
        for text in info.notes():
            reader.note(f"NCCL's lines: {text}")


def _digest(info: NcclInfo, taken: int) -> str:
    """One note: how many lines were NCCL's, its version(s), the slowest init, the networks chosen."""
    parts = [f"{taken:,} line(s) are NCCL's own (NCCL_DEBUG=INFO), read as NCCL's, not the log's "
             "(meta.extra['nccl'], tables nccl_*)"]
    if info.versions:
        versions = ", ".join(f"{v} (line {at['line']})" for v, at in info.versions.items())
        parts.append(f"NCCL {versions}" + (": several versions in one log (several launches?)"
                                           if len(info.versions) > 1 else ""))
    timed = [t for t in info.init_timings if t.get("total_s") is not None]
    if timed:
        slow = max(timed, key=lambda t: t["total_s"])
        parts.append(f"communicator init took up to {slow['total_s']:g} s (rank {slow['rank']} of {slow['nranks']}, "
                     f"line {slow['line']}; {len(timed)} rank init(s) timed)")
    if nets := info.network_names():
        parts.append("network " + ", ".join(nets))
    return "; ".join(parts)


def _cross_check(parsed: Parsed, reader: Reader, name: str, got: dict[str, Any]) -> None:
    """NCCL's ``name`` (world size or nodes) as a fact where the log states none; else compared with the log's."""
    where = f"{reader.name}:{got['line']}"
    names = (name, "n_accelerators") if name == "n_ranks" else (name,)
    own = next((f for n in names for f in parsed.facts if f.name == n), None)
    if own is None:
        parsed.fact(name, got["value"], where, got["text"])
        return
    if _equal(own.value, got["value"]):
        return
    what = "world size" if name == "n_ranks" else "node count"
    said = f" ({own.text.strip()[:80]!r})" if own.text.strip() else ""
    reader.note(f"the {what} differs: the log's own {own.name} is {own.value} at {own.where}{said}, NCCL's "
                f"root communicator has {name} {got['value']} at {where} ({got['text'][:80]!r}); the log's own "
                "value stays its fact (one log of several jobs or launches, or ranks the framework does not count?)")


def _equal(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def scan(lines: Iterable[tuple[int, str]]) -> NcclInfo:
    """The :class:`NcclInfo` of ``(line_number, text)`` pairs (what ``Reader.lines()`` yields)."""
    s = NcclScanner()
    for ln, text in lines:
        s.feed(ln, text)
    return s.result()
