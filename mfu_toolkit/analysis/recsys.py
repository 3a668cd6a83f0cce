"""Recommendation models: dense MFU beside embedding bandwidth utilisation, and MLPerf DLRM from every submitter.

A recommendation model's MFU sees only its dense half (MLPs, interaction): embedding lookups and their sparse
updates count zero FLOPs but move most of the bytes. So the headline has two parts:

- **dense MFU**: model FLOPs of the dense and interaction parts against the peak (the MFU of
  :mod:`~mfu_toolkit.analysis.breakdown`; for DLRM every model FLOP is dense, lookups count zero);
- **embedding bandwidth utilisation** (:func:`embedding_bandwidth`): samples/s x the embedding bytes per sample
  (:func:`~mfu_toolkit.flops.recsys.embedding_traffic`: lookups, the sparse update, optimizer state; its
  conventions stated) against N x the accelerator's peak memory bandwidth (``memory_bandwidth.csv``, with its
  source). Where the tables are model-parallel and the sharding is known, the all-to-all bytes of a step are set
  against the interconnect (:func:`~mfu_toolkit.analysis.communication.collective_time_floor`): the share of the
  step the all-to-all needs at the link's per-direction peak.

The model is the preset given (``--preset``), else the reference model the log states (an MLPerf closed-division
log names it: :func:`mfu_toolkit.facts.reference_preset`, the rule that also gives the run its model FLOPs when
it is loaded). Where a run gives no samples/s or the model is not a recommendation model, the figure is unknown
with the reason, never guessed; where it names no accelerator or no count, both figures are unknown with one
reason, which names the facts to give.

:func:`mlperf_dlrm_table` reads MLPerf Training DLRM-DCNv2 result logs, one row each: samples/s from the log's own
counters, dense MFU with the model FLOPs ``mfu analyze`` takes (the reference model's), embedding bandwidth
utilisation, time to train.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import facts, hardware, interconnect, readable
from ..flops import FlopsConfigError, get_preset, model_flops
from ..flops.recsys import SHARDINGS, EmbeddingTraffic, canonical_optimizer, embedding_traffic
from ..run import Run
from .accounting import Accounting, accounted
from .communication import collective_time_floor, request_from
from .reasons import Missing, Reason

__all__ = ["BASES", "MLPERF_SYSTEM_DESCRIPTIONS", "EmbeddingBandwidth", "embedding_bandwidth",
           "mlperf_dlrm_table", "recsys_answer"]

#: where samples/s come from for a Run: the ideal step (as steady-state MFU), the whole wall time, the log's claim
BASES = ("steady", "end_to_end", "claim")
_RECSYS_KINDS = ("dlrm", "hstu")  # the preset kinds with embedding tables: a given preset of these is a recsys model
_NAN = math.nan

_V50 = "https://github.com/mlcommons/training_results_v5.0/blob/0fdc28f013256aea84fa36fdaf1e0fa46094b18c/"
#: What a submission's system description (not its result log) states, by the log's ``submission_platform``:
#: the accelerator and the count, for logs that do not name them. Given to :func:`mlperf_dlrm_table` as
#: ``systems=`` only when asked: the table reads the log alone by default.
MLPERF_SYSTEM_DESCRIPTIONS: dict[str, dict[str, Any]] = {
    "1xNVIDIA HGX H200": {
        "accelerator": "H200 SXM", "n_accelerators": 8,
        "source": "NVIDIA/systems/h200_ngc24.04_merlin_hugectr.json of training_results_v4.1 ('accelerators_per_"
                  "node': '8', 'accelerator_model_name': 'NVIDIA H200-SXM5-141GB'), read from the copy "
                  "https://github.com/swsok/training_results_v4.1/blob/8821c7037ffd06e3775398fd39361a4c591d2235/"
                  "NVIDIA/systems/h200_ngc24.04_merlin_hugectr.json"},
    "1xNVIDIA HGX B200": {
        "accelerator": "B200", "n_accelerators": 8,
        "source": _V50 + "NVIDIA/systems/nyx_n1_ngc25.03_hugectr.json ('accelerators_per_node': '8', "
                  "'accelerator_model_name': 'NVIDIA Blackwell GPU (B200-SXM-180GB)')"},
    "1xD74H-7U": {
        "accelerator": "H200 SXM", "n_accelerators": 8,
        "source": _V50 + "QCT/systems/D74H-7U.json ('accelerators_per_node': '8', 'accelerator_model_name': "
                  "'NVIDIA H200-SXM5-141GB')"},
}


@dataclass(frozen=True)
class EmbeddingBandwidth:
    """Embedding bytes per second against N x the accelerator's memory bandwidth, and the all-to-all of a step
    against the interconnect; every unknown figure is NaN with its reason."""

    model: str
    traffic: EmbeddingTraffic | None
    samples_per_s: float
    samples_per_s_basis: str
    n_accelerators: int | None
    accelerator: str | None
    bandwidth_per_accelerator: float
    bandwidth_source: str
    utilisation: float
    reason: str
    optimizer_from: str = ""
    sharding: str | None = None
    alltoall_bytes_per_step: float = _NAN
    alltoall_floor_s: float = _NAN
    alltoall_share: float = _NAN
    alltoall_link: str | None = None
    alltoall_reason: str = ""
    alltoall_asks: tuple[str, ...] = ()  # the inputs that would make the all-to-all known

    @property
    def bytes_per_sample(self) -> float:
        return self.traffic.per_sample if self.traffic is not None else _NAN

    @property
    def bytes_per_s(self) -> float:
        return self.samples_per_s * self.bytes_per_sample

    @property
    def cluster_bandwidth(self) -> float:
        return (self.n_accelerators or _NAN) * self.bandwidth_per_accelerator

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "traffic"}
        out.update(bytes_per_sample=self.bytes_per_sample, bytes_per_s=self.bytes_per_s,
                   cluster_bandwidth=self.cluster_bandwidth,
                   traffic=None if self.traffic is None else self.traffic.to_dict())
        return out


def _traffic(model: Any, optimizer: str | None, embedding_bytes: Any, run: Run | None) -> tuple[Any, str, str]:
    """(traffic or None, why not, where the optimizer came from)."""
    if model is None:
        return None, ("no recommendation model: give model= (e.g. 'dlrm-dcnv2') or --preset; the embedding bytes "
                      "per sample follow from its tables"), ""
    opt, opt_from = optimizer, "given (optimizer=)" if optimizer is not None else ""
    if opt is None and run is not None:
        params = run.meta.extra.get("params") or {}
        logged = canonical_optimizer(params.get("opt_name"))
        if logged is not None:
            opt, opt_from = logged, f"the log's opt_name {params.get('opt_name')!r}"
    try:
        t = embedding_traffic(get_preset(model).config if isinstance(model, str) else model,
                              optimizer=opt, embedding_bytes=embedding_bytes)
    except FlopsConfigError as exc:
        return None, f"not a model with embedding tables: {exc}", ""
    return t, "", opt_from or ("the model's configuration" if t.optimizer else "not stated")


def _rate(acc: Accounting | None, samples_per_s: float | None, basis: str) -> tuple[float, str, str]:
    """(samples/s, what it is, why unknown)."""
    if samples_per_s is not None:
        return float(samples_per_s), "given (samples_per_s=)", ""
    if acc is None:
        return _NAN, "", "no samples/s: give samples_per_s= (or a Run whose steps count samples)"
    if basis == "claim":
        c = acc.run.meta.claim("samples_per_s")
        if c is None:
            return _NAN, "", "the log claims no samples/s (basis='claim')"
        return float(c["value"]), f"the log's claim at {c.get('where')} ({c.get('counts', '')})", ""
    s = acc.summary
    per_unit = _samples_per_unit(acc)
    if per_unit is None:
        return _NAN, "", (f"the run counts its work in {s.work_unit}s, not samples: samples/s unknown (give the "
                          "global batch)")
    if basis == "steady":
        rate = per_unit / s.ideal_s_per_unit if s.ideal_s_per_unit else _NAN
        return rate, "the ideal step, as the steady-state MFU (evaluations and other losses excluded)", ""
    rate = s.useful_work * per_unit / s.wall_s if s.wall_s > 0 else _NAN
    return rate, "useful samples over the whole wall time, as the end-to-end MFU", ""


def _samples_per_unit(acc: Accounting) -> float | None:
    """Samples in one unit of the accounting's work: 1 for samples, the global batch for steps."""
    unit, batch = acc.summary.work_unit, acc.run.meta.global_batch
    if unit == "sample":
        return 1.0
    return float(batch) if unit == "step" and batch else None


def _memory(accelerator: str | None, n: int | None) -> tuple[float, str, str]:
    """(bytes/s per accelerator, source, why unknown)."""
    if not accelerator:
        return _NAN, "", "the accelerator is unknown (the log does not name it; give it to set its bandwidth)"
    try:
        bw = hardware.get_memory_bandwidth(accelerator)
    except hardware.RegistryError as exc:
        return _NAN, "", f"no sourced memory bandwidth for {accelerator!r}: {' '.join(str(exc).split())}"
    if not n:
        return bw.bytes_per_s, bw.describe(), "the accelerator count N is unknown (the log does not state it)"
    return bw.bytes_per_s, bw.describe(), ""


def _alltoall(t: EmbeddingTraffic, sharding: str | None, n: int | None, gbs: float | None, rate: float,
              link: Any, n_nodes: Any, accelerator: str | None) -> dict[str, Any]:
    """The all-to-all of a step against the link: bytes crossing ranks, the floor time and its share of the step."""
    if sharding is None:
        return {"alltoall_reason": "the sharding of the tables (table-wise, column-wise, data-parallel) is not "
                                   "stated, so the all-to-all bytes are unknown", "alltoall_asks": ("sharding",)}
    if sharding not in SHARDINGS:
        raise ValueError(f"sharding must be one of {', '.join(SHARDINGS)}; got {sharding!r}")
    if not n or not gbs:
        return {"alltoall_reason": "the accelerator count or the global batch is unknown"}
    total = t.alltoall_per_step(gbs, n, sharding)
    out: dict[str, Any] = {"sharding": sharding, "alltoall_bytes_per_step": total}
    if total == 0.0:
        return {**out, "alltoall_floor_s": 0.0, "alltoall_share": 0.0,
                "alltoall_reason": "nothing crosses ranks (one shard, or replicated tables)"}
    if link is None and n_nodes != 1:
        return {**out, "alltoall_reason": "the job spans nodes (or does not say it does not): the link is the NIC "
                                          "each rank sends through, which the run does not state",
                "alltoall_asks": ("nic",)}
    try:
        found = interconnect.get_link(link) if link is not None else interconnect.link_for_accelerator(accelerator)
        floor = collective_time_floor("alltoall", gbs * t.alltoall_per_sample / n, n, found)
    except ValueError as exc:  # a request for a link stays one: a front end asks in its own terms
        return {**out, "alltoall_reason": request_from(exc, "no link to set it against: ")}
    step_s = gbs / rate if rate > 0 else _NAN
    return {**out, "alltoall_floor_s": floor, "alltoall_share": floor / step_s, "alltoall_link": found.name,
            "alltoall_reason": "" if math.isfinite(step_s) else "samples/s unknown: the step time is unknown"}


def embedding_bandwidth(
    run_or_model: Any,
    *,
    model: Any = None,
    samples_per_s: float | None = None,
    basis: str = "steady",
    accelerator: str | None = None,
    n_accelerators: int | None = None,
    optimizer: str | None = None,
    embedding_bytes: Any = None,
    sharding: str | None = None,
    global_batch: float | None = None,
    link: Any = None,
) -> EmbeddingBandwidth:
    """Embedding bandwidth utilisation: samples/s x embedding bytes per sample / (N x memory bandwidth).

    ``run_or_model`` is a Run (or its Accounting): samples/s by ``basis`` (``BASES``: ``steady`` the ideal step
    as the steady-state MFU, ``end_to_end``, ``claim`` the log's own), the accelerator, N, the global batch and
    the optimizer (the log's ``opt_name``) from the run, the model from ``model=`` or the run's preset. Or a
    model (a preset name, a config, a ``model_flops`` result) with ``samples_per_s``, ``accelerator`` and
    ``n_accelerators`` given. ``sharding`` (``table_wise``/``column_wise``/``data_parallel``) and ``link`` set
    the all-to-all of a step against the interconnect; without them it is unknown, with the reason.
    """
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(BASES)}; got {basis!r}")
    acc = accounted(run_or_model) if isinstance(run_or_model, (Run, Accounting)) else None
    meta = acc.run.meta if acc is not None else None
    if acc is None and model is None:
        model = run_or_model
    elif model is None:
        model = _run_model(meta)[0]
    t, why, opt_from = _traffic(model, optimizer, embedding_bytes, acc.run if acc is not None else None)
    rate, rate_basis, rate_why = _rate(acc, samples_per_s, basis)
    acc_name = accelerator or (meta.accelerator if meta is not None else None)
    n = n_accelerators or (meta.n_accelerators if meta is not None else None)
    bw, bw_source, bw_why = _memory(acc_name, n)
    reason = why or rate_why or bw_why
    util = _NAN if reason or t is None else rate * t.per_sample / (n * bw)
    gbs = global_batch or (meta.global_batch if meta is not None else None)
    nodes = meta.fact("n_nodes") if meta is not None else None
    extra = {} if t is None else _alltoall(t, sharding, n, gbs, rate, link, (nodes or {}).get("value"), acc_name)
    name = t.name if t is not None else str(model or "unknown")
    return EmbeddingBandwidth(model=name, traffic=t, samples_per_s=rate, samples_per_s_basis=rate_basis,
                              n_accelerators=n, accelerator=acc_name, bandwidth_per_accelerator=bw,
                              bandwidth_source=bw_source, utilisation=util, reason=reason, optimizer_from=opt_from,
                              **extra)


# --------------------------------------------------------------------------------------------
# the answer's two-part headline


def _run_model(meta: Any) -> tuple[str | None, str]:
    """The recommendation preset of a run and where it came from: the preset given (``--preset``), else the
    reference model the log states (:func:`mfu_toolkit.facts.reference_preset`, the one rule that also gives
    the FLOPs); (None, "") when neither is a recommendation model."""
    name = meta.extra.get("preset")
    if isinstance(name, str):
        try:
            preset = get_preset(name)
        except FlopsConfigError:
            return None, ""
        return (preset.name, "the preset given") if preset.kind in _RECSYS_KINDS else (None, "")
    stated = meta.fact("reference_model", source=facts.STATED)
    preset = facts.reference_preset(stated.get("value")) if stated is not None else None
    if preset is None:
        return None, ""
    return preset.name, f"{stated.get('text') or 'the reference model'}, stated in the log at " \
                        f"{readable.short_where(stated.get('where'))}"


def _hardware_unknown(meta: Any, accelerator: str | None = None, n: int | None = None) -> Reason | str:
    """One reason for both numbers where the accelerator count or the accelerator is unknown (dense MFU needs
    N and the peak FLOP/s, embedding bandwidth N and the memory bandwidth: both need the two facts); its
    ``missing`` names the facts to give, as the answer's missing facts do. "" when both are known."""
    acc_name, count = accelerator or meta.accelerator, n or meta.n_accelerators
    words = (["the log does not state the accelerator count N"] * (not count)
             + ["the log does not name the accelerator, so its peak FLOP/s and memory bandwidth are unknown"]
             * (not acc_name))
    if not words:
        return ""
    missing = (Missing("n_accelerators"),) * (not count) + (Missing("peak_flops_per_accelerator"),) * (not acc_name)
    return Reason(" and ".join(words), code="peak_unknown", missing=missing)


def _gives(reason: Reason | str) -> list[str]:
    """The inputs that supply what ``reason`` misses: ``n_accelerators`` and/or ``accelerator``."""
    fields = [m.field for m in getattr(reason, "missing", ())]
    return ["n_accelerators"] * ("n_accelerators" in fields) + ["accelerator"] * (
        "peak_flops_per_accelerator" in fields)


def _dense(acc: Accounting, why: Reason | str, model_from: str) -> dict[str, Any]:
    """Dense MFU on the two bases with its numerator and its source, or why unknown (``why`` first); the note
    names the source, or says it is the model's own rule (``model_from``)."""
    s = acc.summary
    per_sample = acc.flops_per_unit if acc.work_unit == "sample" else None
    if per_sample is None and acc.work_unit == "step" and acc.flops_per_unit and acc.run.meta.global_batch:
        per_sample = acc.flops_per_unit / float(acc.run.meta.global_batch)
    source = acc.flops_source or ""
    reason = why or ("" if s.steady_state_mfu is not None else s.reasons.get("steady_state_mfu") or "unknown")
    note = "model FLOPs of the dense and interaction parts (lookups count zero): the MFU above"
    if per_sample:
        origin = readable.first(source)
        origin = "the model's preset (the rule above)" if origin == model_from else origin
        note = (f"{per_sample:,.0f} model FLOPs per sample, all in the dense and interaction parts (lookups count "
                f"zero), from {origin}: the MFU above")
    return {"steady_state": s.steady_state_mfu, "end_to_end": s.end_to_end_mfu, "note": note,
            "flops_per_sample": per_sample, "source": source, "reason": reason, "give": _gives(reason)}


def recsys_answer(acc: Accounting) -> dict[str, Any]:
    """The answer's two-part headline for a recommendation model (empty for other models): dense MFU (the
    steady-state and end-to-end MFU, its FLOPs per sample and their source) beside embedding bandwidth
    utilisation on the same two bases, the bytes per sample with their conventions, the bandwidth with its
    source, and the all-to-all (unknown without the sharding). Where the accelerator count or the accelerator
    is unknown, both numbers are unknown with one reason, and ``give`` names the inputs that supply it."""
    name, where = _run_model(acc.run.meta)
    if name is None:
        return {}
    # the all-to-all crosses the NIC where one is given (a job over nodes), else the intra-node link
    steady = embedding_bandwidth(acc, model=name, basis="steady", sharding=acc.sharding, link=acc.nic or acc.link)
    e2e = embedding_bandwidth(acc, model=name, basis="end_to_end")
    t = steady.traffic
    if t is None:
        return {}
    why = _hardware_unknown(acc.run.meta)
    emb_reason = why or steady.reason
    return {
        "model": name, "model_from": where,
        "dense_mfu": _dense(acc, why, where),
        "embedding_bandwidth": {
            "steady_state": None if emb_reason else steady.utilisation,
            "end_to_end": None if emb_reason else e2e.utilisation, "reason": emb_reason, "give": _gives(emb_reason),
            "samples_per_s": {"steady_state": steady.samples_per_s, "end_to_end": e2e.samples_per_s},
            "bytes_per_s": {"steady_state": steady.bytes_per_s, "end_to_end": e2e.bytes_per_s}},
        "bytes_per_sample": t.per_sample, "traffic": t.to_dict(), "summary": t.summary(),
        "optimizer_from": steady.optimizer_from,
        "memory": {"accelerator": steady.accelerator, "n_accelerators": steady.n_accelerators,
                   "bytes_per_s_per_accelerator": steady.bandwidth_per_accelerator,
                   "cluster_bytes_per_s": steady.cluster_bandwidth, "source": steady.bandwidth_source},
        "alltoall": _alltoall_part(t, steady),
    }


def _alltoall_part(t: EmbeddingTraffic, bw: EmbeddingBandwidth) -> dict[str, Any]:
    """The all-to-all of the answer: bytes per sample and per step, the floor time against the link and its
    share of the step, or why unknown with the input that supplies it (``give``: the sharding, or the NIC)."""
    why = bw.alltoall_reason
    per_step = bw.alltoall_bytes_per_step
    return {"bytes_per_sample": t.alltoall_per_sample, "sharding": bw.sharding,
            "bytes_per_step": per_step if math.isfinite(per_step) else None, "floor_s": _finite(bw.alltoall_floor_s),
            "reason": why, "give": list(bw.alltoall_asks), "share": bw.alltoall_share, "link": bw.alltoall_link}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------------------------
# MLPerf DLRM-DCNv2 from every submitter

_ROUND = re.compile(r"^v(\d+\.\d+)_([A-Za-z0-9]+)_")


def _load(item: Any) -> Run:
    if isinstance(item, Run):
        return item
    from ..io import load_run  # a path: the loaders sit above the analyses, so they are imported when asked

    return load_run(Path(item))


def _file_fields(run: Run) -> dict[str, Any]:
    """File, round and submitter (from a file named ``v<round>_<submitter>_…``), the log's org and platform."""
    m = run.meta
    name = Path(m.source_path).name if m.source_path else m.name
    hit = _ROUND.match(name or "")
    return {"file": name, "round": hit.group(1) if hit else None,
            "submitter": hit.group(2) if hit else m.extra.get("org"), "submission_org": m.extra.get("org"),
            "platform": m.extra.get("platform"), "global_batch": m.global_batch}


def _hardware_fields(run: Run, systems: dict[str, Any] | None) -> dict[str, Any]:
    """Accelerator and N as the log states them, else from ``systems`` (a system description, said so)."""
    m = run.meta
    acc, n = m.accelerator, m.n_accelerators
    acc_from = "the log" if acc else ""
    n_from = "the log" if n else ""
    desc = (systems or {}).get(m.extra.get("platform") or "")
    if desc is not None and not acc:
        acc, acc_from = desc["accelerator"], desc["source"]
    if desc is not None and not n:
        n, n_from = desc["n_accelerators"], desc["source"]
    return {"accelerator": acc, "accelerator_from": acc_from, "n_accelerators": n, "n_from": n_from}


def _rates(run: Run) -> dict[str, Any]:
    """Samples/s from the log's own counters: its tracked_stats throughput, the epoch_num counters over the timed
    run (the same time), and over the training intervals alone (evaluations excluded)."""
    m, st = run.meta, run.steps
    claim = m.claim("samples_per_s")
    ttt = m.extra.get("time_to_train_s")
    trained = float(st["samples"].sum()) if "samples" in st else _NAN
    train_s = float((st["end_s"] - st["start_s"]).sum()) if len(st) else _NAN
    return {
        "samples_per_s": float(claim["value"]) if claim else _NAN,
        "samples_per_s_counter": (f"tracked_stats throughput at {Path(str(claim['where'])).name} (run_start to "
                                  "run_stop, evaluations included)") if claim else "no tracked_stats throughput",
        "samples_trained": trained,
        "samples_per_s_epoch_num": trained / ttt if ttt else _NAN,
        "training_s": train_s, "samples_per_s_training": trained / train_s if train_s else _NAN,
        "time_to_train_s": float(ttt) if ttt else _NAN,
    }


def _model_fields(run: Run, preset: str | None) -> dict[str, Any]:
    """The model, its training FLOPs per sample and where both came from: the preset given (``preset=``), else
    the run's own, as ``mfu analyze`` takes them (the reference model the log states, :func:`_run_model`)."""
    if preset is not None:
        mf = model_flops(preset)
        return {"model": mf.name, "model_from": "the preset given (preset=)",
                "training_flops_per_sample": mf.training_per_sample, "flops_from": f"preset {mf.name!r} given"}
    name, where = _run_model(run.meta)
    fps = run.meta.model_flops_per_sample
    return {"model": name, "model_from": where or "unknown: the log states no reference model of a recommendation "
                                                  "preset (a closed-division recommendation benchmark)",
            "training_flops_per_sample": float(fps) if fps else _NAN, "flops_from": run.meta.model_flops_source or ""}


def _figures(row: dict[str, Any], run: Run, dtype: str) -> dict[str, Any]:
    """Dense MFU and embedding bandwidth utilisation on the timed-run and training-only rates, or why unknown
    (the model first, then the accelerator count and the accelerator, in the words of the answer's reason)."""
    acc, n, fps = row["accelerator"], row["n_accelerators"], row["training_flops_per_sample"]
    opt = canonical_optimizer((run.meta.extra.get("params") or {}).get("opt_name"))
    t = embedding_traffic(get_preset(row["model"]).config, optimizer=opt) if row["model"] else None
    reason = "" if t is not None and math.isfinite(fps) else f"no model: {row['model_from']}"
    reason = reason or str(_hardware_unknown(run.meta, acc, n))
    peak = bw = _NAN
    if acc:
        try:
            peak = hardware.get_peak(acc, dtype, per="package").flops
            bw = hardware.get_memory_bandwidth(acc).bytes_per_s
        except hardware.RegistryError as exc:
            reason = reason or " ".join(str(exc).split())
    per_sample = t.per_sample if t is not None else _NAN
    out = {"optimizer": opt, "peak_flops_per_accelerator": peak, "embedding_bytes_per_sample": per_sample,
           "hbm_bytes_per_s_per_accelerator": bw, "reason": reason}
    for key, rate in (("", row["samples_per_s"]), ("_training", row["samples_per_s_training"])):
        ok = not reason
        out["dense_mfu" + key] = rate * fps / (n * peak) if ok else _NAN
        out["embedding_bw_utilisation" + key] = rate * per_sample / (n * bw) if ok else _NAN
    return out


def mlperf_dlrm_table(
    runs: Any,
    *,
    preset: str | None = None,
    systems: dict[str, Any] | None = None,
    dtype: str = "bf16",
) -> pd.DataFrame:
    """One row per MLPerf DLRM result log (a path or a loaded Run): file, round, submitter (from the file name
    ``v<round>_<submitter>_…``), the log's submission_org and platform, accelerator and N (the log's; else from
    ``systems``, e.g. :data:`MLPERF_SYSTEM_DESCRIPTIONS`, with the source; else unknown), global batch, samples/s
    from the log's counters (``samples_per_s``: its tracked_stats throughput, run_start to run_stop with the
    evaluations; ``samples_per_s_epoch_num``: epoch_num x train_samples over the same time;
    ``samples_per_s_training``: over the training intervals alone), time to train, the model and its training
    FLOPs per sample as ``mfu analyze`` takes them (``model_from``, ``flops_from``: the reference model the log
    states by the MLPerf closed-division rule; ``preset=`` replaces it for every row, as ``--preset`` does), dense
    MFU (the ``dtype`` peak: the logs state no precision) and embedding bandwidth utilisation on the timed-run and
    training-only rates, with the optimizer the log names (``opt_name``); where one is unknown, ``reason`` says
    why in the answer's words. ``attrs`` holds the conventions."""
    items = [runs] if isinstance(runs, (str, Path, Run)) else list(runs)
    rows = []
    for item in items:
        run = _load(item)
        row = {**_file_fields(run), **_hardware_fields(run, systems), **_rates(run), **_model_fields(run, preset)}
        row.update(_figures(row, run, dtype))
        row["time_to_train_min"] = row["time_to_train_s"] / 60.0
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):
        table["n_accelerators"] = table["n_accelerators"].astype("Int64")
    models = sorted({m for m in (r["model"] for r in rows) if m})
    table.attrs.update(preset=preset, models=models, dtype=dtype,
                       peak_per="package (the MLPerf system counts accelerators)")
    if models:
        mf = model_flops(models[0])
        table.attrs.update(flops_conventions=mf.conventions.summary(), preset_source=mf.source,
                           bytes_conventions=list(embedding_traffic(mf).describe()))
    return table
