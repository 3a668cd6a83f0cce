"""The answer's blocks in reading order, shared by the text and HTML renderings.

Each block is ``(heading, lines, table rows, table head)``: the answer first (MFU with its
numerator and denominator), then missing facts, losses, stragglers, checkpoint advice, checks,
facts used, and the detail.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..analysis.answer import FOLD_SHARE, Answer
from ..readable import brief, num, pct, secs, short_where, si, tflops, value
from ..run import InputRequest
from .spoken import advice_text, denominator_sources, missing_text, point_text, where_text
from .vocabulary import ask, check_interface, phrase

__all__ = ["blocks", "fact_value", "facts_shown"]


def facts_shown(answer: Answer, *, interface: str = "python") -> list[dict[str, str]]:
    """The facts used with their values formatted (``989.4 TFLOP/s``, ``2,048``) and where each
    came from (a default says how to give it in ``interface``'s terms)."""
    check_interface(interface)
    return [{"name": f["name"], "shown": fact_value(f), "where": where_text(f, interface)} for f in answer.facts]



def fact_value(f: dict[str, Any]) -> str:
    v = f["value"]
    if f["name"].startswith("model_flops"):
        return si(float(v), "FLOP")
    if f["name"] == "peak_flops_per_accelerator":
        return tflops(float(v))
    return num(v)


def _waterfall_rows(bd: pd.DataFrame, wall: float) -> tuple[list[list[str]], list[str]]:
    rows, folded = [], []
    for r in bd.to_dict("records"):
        if r["category"] != "ideal_compute" and abs(r["seconds"]) <= max(FOLD_SHARE * wall, 1e-9):
            folded.append(r["category"])
            continue
        rows.append([r["category"], secs(r["seconds"]), pct(r["share"]), pct(r["efficiency_after"]),
                     pct(r["mfu_after"])])
    return rows, folded


def _waterfall_lines(bd: pd.DataFrame, folded: list[str]) -> list[str]:
    """The waterfall's notes: what the exposed_comm slice is, where the run states it (a run that does
    not has no such row: unknown, inside ideal_compute), and the categories folded."""
    note = bd.attrs.get("exposed_comm") or {}
    lines = [f"exposed_comm, the last row, is part of the steady-state step (the steady-state MFU includes it; "
             f"its MFU after is the step with it hidden): {note['basis']}"] if note.get("stated") else []
    return lines + ([f"Folded (0 s or float noise): {', '.join(folded)}"] if folded else [])


def _headline_lines(answer: Answer, interface: str) -> list[str]:
    h = answer.headline
    if not answer.timed:
        return ["MFU: not measurable: the log has no timed steps (see the load note below)."]
    num, den = h["numerator"], h["denominator"]
    reason = h["reasons"]
    lines = []
    for key, label, what in (("steady_state_mfu", "Steady-state MFU", "ideal step"),
                             ("end_to_end_mfu", "End-to-end MFU", "whole wall time")):
        v = h[key]
        flag = f"; {answer.conflict['text']}" if answer.conflict and v is not None and not lines else ""
        lines.append(f"{label}: {pct(v)} ({what}){flag}" if v is not None
                     else f"{label}: unknown: {point_text(reason.get(key), interface) or 'n/a'}")
    if h.get("window_mfu") is not None:
        lines.append(f"Steady-window MFU: {pct(h['window_mfu'])} (mean actual step in the window)")
    if h.get("steady_state_hfu") is not None:
        lines.append(f"Steady-state HFU: {pct(h['steady_state_hfu'])}; "
                     f"end-to-end HFU: {pct(h['end_to_end_hfu'])}")
    if num.get("model_flops_per_step") is not None:
        per_unit = ("" if num["work_unit"] == "step"
                    else f" ({si(num['flops_per_unit'], 'FLOP')} per {num['work_unit']})")
        lines.append(f"  numerator: {si(num['model_flops_per_step'], 'FLOP')} model FLOPs per step"
                     f"{per_unit}, from {brief(num['source'])}")
    else:
        lines.append("  numerator: model FLOPs unknown")
    lines.append(f"  step: ideal {secs(h['ideal_step_s'])}, {h['useful_steps']:,} useful steps, wall time "
                 f"{secs(h['wall_s'])}, goodput {pct(h['goodput'])}")
    if den.get("cluster_peak_flops"):
        lines.append(f"  denominator: {den['n_accelerators']:,} × {tflops(den['peak_flops_per_accelerator'])} "
                     f"= {si(den['cluster_peak_flops'], 'FLOP/s')} ({den['accelerator']} {den['dtype']}"
                     f"{', sparse' if den['sparse'] else ' dense'}, {den['per_text']})")
    else:
        n = den.get("n_accelerators")
        peak = tflops(den.get("peak_flops_per_accelerator"))
        named = f" ({den['accelerator']} {den['dtype'] or ''})" if den.get("accelerator") else ""
        lines.append(f"  denominator: unknown (N = {n if n else 'unknown'}; peak {peak}{named})")
    sources = denominator_sources(answer.facts, interface)
    if sources:
        lines.append("  from: " + "; ".join(f"{k} {v}" for k, v in sources.items()))
    if h.get("time_to_train_s") is not None:
        lines.append(f"Time to train (MLPerf run_start to run_stop): {secs(h['time_to_train_s'])}")
    return lines


def _recsys_why(part: dict[str, Any], interface: str) -> str:
    """Why a recommendation figure is unknown, and the inputs that supply it, in ``interface``'s terms."""
    give = " and ".join(ask(field, interface) for field in part.get("give") or [])
    reason = part.get("reason")  # a request (the all-to-all's link) asks in the interface's terms
    why = phrase(reason, interface) if isinstance(reason, InputRequest) else reason
    return f"{why or 'unknown'}" + (f" (give {give})" if give else "")


def _recsys_lines(answer: Answer, interface: str) -> list[str]:
    """The two-part headline of a recommendation model: dense MFU beside embedding bandwidth utilisation,
    the bytes per sample with their conventions, the memory bandwidth with its source, the all-to-all."""
    r = answer.recsys
    dense, emb, mem = r["dense_mfu"], r["embedding_bandwidth"], r["memory"]
    lines = [f"Model: {r['model']} ({r['model_from']})"]
    if dense["steady_state"] is not None:
        lines.append(f"Dense MFU: {pct(dense['steady_state'])} steady state, {pct(dense['end_to_end'])} end to end "
                     f"({dense['note']})")
    else:
        lines.append(f"Dense MFU: unknown: {_recsys_why(dense, interface)}")
    if emb["steady_state"] is not None and not emb["reason"]:
        lines.append(f"Embedding bandwidth utilisation: {pct(emb['steady_state'])} steady state, "
                     f"{pct(emb['end_to_end'])} end to end")
        lines.append(f"  bytes: {si(r['bytes_per_sample'], 'B')} per sample × "
                     f"{si(emb['samples_per_s']['steady_state'], 'samples/s')} = "
                     f"{si(emb['bytes_per_s']['steady_state'], 'B/s')} (steady state)")
        lines.append(f"  memory: {mem['n_accelerators']:,} × {si(mem['bytes_per_s_per_accelerator'], 'B/s')} = "
                     f"{si(mem['cluster_bytes_per_s'], 'B/s')} ({mem['source']})")
    else:
        lines.append(f"Embedding bandwidth utilisation: unknown: {_recsys_why(emb, interface)}")
    lines.append(f"  per sample: {r['summary']}; optimizer from {r['optimizer_from']}")
    lines += [f"  convention: {c}" for c in r["traffic"]["conventions"]]
    return lines + _alltoall_lines(r["alltoall"], interface)


def _alltoall_lines(a2a: dict[str, Any], interface: str) -> list[str]:
    """The all-to-all of the sharded tables: its bytes per step and its floor against the link, or why unknown."""
    out = []
    if a2a.get("bytes_per_step") is not None:
        out.append(f"All-to-all ({a2a['sharding']}): {si(a2a['bytes_per_step'], 'B')} per step cross ranks")
    if a2a.get("link") and a2a.get("floor_s") is not None and not a2a["reason"]:
        out.append(f"All-to-all floor: {secs(a2a['floor_s'])} at the {a2a['link']} peak, {pct(a2a['share'])} of "
                   "the steady-state step")
    elif a2a.get("bytes_per_step") == 0:
        out[-1] += f": {a2a['reason']}"  # replicated tables: nothing to move, not unknown
    elif a2a["reason"]:
        out.append(f"All-to-all: unknown: {_recsys_why(a2a, interface)}")
    return out


def _loss_lines(answer: Answer) -> list[str]:
    if not answer.losses:
        return ["No loss above float noise."]
    return [f"{i}. {loss['category']}: {secs(loss['seconds'])} ({pct(loss['share'])} of wall time)"
            + (f": {loss['detail']}" if loss.get("detail") else "")
            for i, loss in enumerate(answer.losses, 1)]

def _straggler_lines(answer: Answer) -> list[str]:
    s = answer.stragglers
    lines = [f"Verdict: {s['verdict']}", f"Culprit: {s['culprit']}"]
    if s.get("share") is not None and s.get("kind") != "unknown":
        lines.append(f"Waiting for the slowest rank: {secs(s['seconds'])} ({pct(s['share'])} of wall time)")
    lines.append(f"Basis: {s['basis']}")
    return lines

def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:12])) + (f" … ({len(ranks)} in all)" if len(ranks) > 12 else "") or "none"


def _hang_block(answer: Answer) -> tuple[str, list[str], list[list[str]], list[str]]:
    """Where a hung job stopped: the first culprit in words, every blocking point in the table."""
    first = answer.hang[0]
    said = {"not reached": "never reached", "not completed": "never completed", "stuck": "are stuck in",
            "p2p unmatched": "wait for the peer of"}.get(first["kind"], first["kind"])
    lines = [f"Rank(s) {_ranks(first['missing_ranks'])} {said} {first['profiling_name']} ({first['size']} "
             f"{first['dtype']}) in process group {first['pg_name']} ({first['pg_desc']}), sequence id "
             f"{first['seq_id']}; rank(s) {_ranks(first['reached_ranks'])} reached it and wait for them."]
    if first.get("no_dump_ranks"):
        lines.append(f"No dump from rank(s) {_ranks(first['no_dump_ranks'])}: their state is unknown.")
    rows = [[str(h["pg_name"]), h["kind"], h["profiling_name"], f"{h['size']} {h['dtype']}",
             _ranks(h["missing_ranks"]), _ranks(h["reached_ranks"])] for h in answer.hang]
    return ("Hang (Flight Recorder)", lines, rows, ["group", "kind", "collective", "size", "missing", "reached"])


_PART_WORDS = {"detection_s": "detection", "teardown_s": "teardown", "restart_s": "restart",
               "checkpoint_load_s": "checkpoint load", "recomputation_s": "recomputation",
               "unattributed_s": "unattributed"}


def _downtime_block(answer: Answer) -> tuple[str, list[str], list[list[str]], list[str]]:
    """The downtime of each restart by cause: a one-line summary with each part's share, what each
    episode's parts came from (up to five episodes), and the table with a totals row."""
    *episodes, total = answer.downtime
    n = len(episodes)
    shares = ", ".join(f"{w} {pct(total['share'][k])}" if _known(total[k]) else f"{w} not logged"
                       for k, w in _PART_WORDS.items())
    lines = [f"{n:,} restart{'s' if n != 1 else ''} cost {secs(total['total_s'])}: {shares}."]
    inside, noise = total["inside_s"], max(FOLD_SHARE * answer.headline["wall_s"], 1e-9)
    other = sum(inside[c] for c in ("checkpoint_load", "init", "unaccounted"))
    slice_s = inside["failure_downtime"] + inside["lost_work"]
    lines.append(f"From the waterfall: failure_downtime and lost_work {secs(slice_s)}"
                 + (f"; checkpoint_load, init and unaccounted time inside the episodes {secs(other)}"
                    if other > noise else "") + ". A part whose events the log lacks is unknown: its time stays "
                 "unattributed.")
    if total["outside_s"] > noise:
        lines.append(f"Outside every restart episode (a last failure, say): {secs(total['outside_s'])} of "
                     "failure_downtime and lost_work.")
    if n <= 5:
        lines += [f"- attempt {e['attempt']} → {e['next_attempt']}: {e['observed']}" for e in episodes]
    rows = [[f"{e['attempt']} → {e['next_attempt']}", *(_part(e[k]) for k in _PART_WORDS), secs(e["total_s"])]
            for e in episodes]
    rows.append(["all", *(_part(total[k]) for k in _PART_WORDS), secs(total["total_s"])])
    return ("Downtime by cause", lines, rows, ["attempt", *_PART_WORDS.values(), "total"])


def _known(v: float | None) -> bool:
    return v is not None and not math.isnan(v)


def _part(v: float | None) -> str:
    """A part's seconds; "unknown" where the log does not show it (its time is unattributed)."""
    return secs(v) if _known(v) else "unknown"


def _comm_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        eff = pct(r["comm_efficiency"]) + f" of {r['link']}" if r.get("comm_efficiency") is not None else "unknown"
        out.append([str(r.get("coll")), f"{r.get('n_ranks')} / {r.get('nnodes')}", f"{r.get('records'):,}",
                    si(r.get("bytes") or 0.0, "B"), secs(r.get("time_s")),
                    si(r.get("busbw_bytes_per_s") or 0.0, "B/s"), eff])
    return out


def _comm_block(answer: Answer, interface: str) -> tuple[str, list[str], list[list[str]] | None, list[str] | None]:
    """Exposed communication, and each collective's bus bandwidth against its link (or why unknown, a
    request for the link said in ``interface``'s terms)."""
    c = answer.communication
    lines = []
    if c.get("exposed_share") is not None:
        most = c.get("exposed_share_max")
        bound = f" (at most {pct(most)})" if most is not None and most > c["exposed_share"] + 1e-12 else ""
        lines.append(f"Exposed communication: {pct(c['exposed_share'])} of the time{bound}; {c['exposed_basis']}")
    slow = c.get("stragglers")
    if slow:
        lines.append(f"Stragglers in communication: {slow['verdict']}")
        if slow["kind"] == "comm" and slow["recovered_s"]:
            lines.append(f"Fixing them recovers {secs(slow['recovered_s'])} ({pct(slow['wall_share'])} of wall "
                         f"time); {slow['method']}")
    rows = c.get("collectives") or []
    reasons = list(dict.fromkeys(point_text(r["reason"], interface) for r in rows
                                 if r.get("comm_efficiency") is None and r.get("reason")))
    lines += [f"Efficiency unknown: {why}" for why in reasons]
    if rows:
        lines.append(f"Bus bandwidth by nccl-tests' formulas ({c.get('busbw_source')}), against the link's "
                     "peak per direction")
    head = ["collective", "ranks / nodes", "records", "size", "time", "bus bandwidth", "efficiency"]
    return ("Communication", lines, _comm_rows(rows) or None, head if rows else None)


def _holds_lines(answer: Answer) -> list[str]:
    h = answer.holds
    lines = [f"Steps: {h['step_rows']:,} rows ({h['timed_step_rows']:,} timed)"]
    if h["events"]:
        lines.append("Events: " + ", ".join(f"{k} × {v}" for k, v in h["events"].items()))
    if h["tables"]:
        tables = ", ".join(f"{k} ({r:,} rows × {c} columns)" for k, (r, c) in h["tables"].items())
        lines.append("Tables: " + tables)
    lines.append(f"Facts stated: {h['facts_stated']}; claims: {h['claims']}")
    return lines

def blocks(answer: Answer, interface: str = "python") -> list[tuple[str, list[str], list[list[str]] | None,
                                                                    list[str] | None]]:
    """(heading, lines, table rows, table head) in reading order, requests for missing facts in
    ``interface``'s terms; shared by text and HTML."""
    check_interface(interface)
    out: list[tuple[str, list[str], list[list[str]] | None, list[str] | None]] = []
    out.append(("The answer", _headline_lines(answer, interface), None, None))
    if answer.recsys:
        out.append(("Dense MFU and embedding bandwidth", _recsys_lines(answer, interface), None, None))
    if answer.hang:
        out.append(_hang_block(answer))
    if answer.missing:
        out.append(("Missing facts", [f"- {missing_text(m, interface)}" for m in answer.missing], None, None))
    if answer.timed:
        out.append(("Largest losses", _loss_lines(answer), None, None))
    out.append(("Stragglers", _straggler_lines(answer), None, None))
    if answer.checkpoint is not None:
        out.append(("Checkpoint interval", [advice_text(answer.checkpoint, interface)], None, None))
    if answer.downtime:
        out.append(_downtime_block(answer))
    if answer.communication:
        out.append(_comm_block(answer, interface))
    out.append(("Checks", [], [[c.status.upper(), c.name, point_text(c.message, interface)] for c in answer.checks],
                ["status", "check", "message"]))
    out.append(("Facts used", [] if answer.facts else ["none"],
                [[f["name"], fact_value(f), where_text(f, interface)] for f in answer.facts] or None,
                ["fact", "value", "from"]))
    if answer.holds.get("nccl"):
        rows = [[f["name"], fact_value(f), f"stated in the log at {short_where(f['where'])}"]
                for f in answer.holds["nccl"]]
        out.append(("From NCCL's lines", [], rows, ["fact", "value", "from"]))
    if not answer.timed:
        out.append(("What the log holds", _holds_lines(answer), None, None))
        return out
    rows, folded = _waterfall_rows(answer.breakdown, answer.headline["wall_s"])
    out.append(("Waterfall", _waterfall_lines(answer.breakdown, folded),
                rows, ["category", "seconds", "share", "efficiency after", "MFU after"]))
    out.append(("Scorecard", [], [[r["family"], r["metric"], value(r["value"], r["unit"]),
                                   point_text(r["note"], interface)]
                                  for r in answer.scorecard.to_dict("records")],
                ["family", "metric", "value", "note"]))
    w = answer.window
    out.append(("Steady-state window", [f"{w.get('n_steps', 0):,} steps: {w.get('reason', '')}"], None, None))
    return out
