"""``mfu calc``: MFU (and HFU) from FLOPs, step time, accelerator count and peak.

It uses only ``formulas`` and ``hardware`` (no pandas), so it starts as fast as a bare script.
"""

from __future__ import annotations

import argparse
import sys

from .. import formulas
from . import EXIT_INCONSISTENT, EXIT_OK, UsageError, count_arg

TYPE_CHECKING = False  # typing stays unimported on the fast path
if TYPE_CHECKING:
    from typing import Any


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"value must be a finite number greater than zero, got {value!r}")
    return number


def _nonneg_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"value cannot be negative, got {value!r}")
    return number


# --- mfu calc --------------------------------------------------------------------------------

# mfu_toolkit.flops.RECOMPUTE_MODES, spelled out so `mfu calc` parses without importing flops.
_RECOMPUTE_MODES = ("none", "selective", "selective-eq8", "full")
# mfu_toolkit.flops.recsys.OPTIMIZERS and ROW_DTYPES, spelled out for the same reason.
_OPTIMIZERS = ("sgd", "adagrad", "rowwise_adagrad", "adam")
_ROW_DTYPES = ("fp32", "fp16", "bf16", "int8")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calc",
        description=(
            "MFU = model FLOPs per step / step time / (GPUs x peak per GPU). Give the peak with "
            "--peak-tflops-per-gpu, or name the accelerator (--accelerator, --dtype) to take it, "
            "with its source, from the registry. Give the FLOPs per step, or a model (--preset / "
            "--config) and a throughput."
        ),
    )
    g = p.add_argument_group("work per step")
    g.add_argument("--model-flops-per-step", type=_positive,
                   help="model FLOPs of one global step (fwd+bwd, no recomputation)")
    g.add_argument("--hardware-flops-per-step", type=_positive, help="FLOPs including recomputation; adds HFU")
    g.add_argument("--step-seconds", type=_positive, help="mean wall time of one step, seconds")
    g.add_argument("--samples-per-step", type=_nonneg_int, default=0, help="global batch in samples (prints samples/s)")
    g.add_argument("--tokens-per-step", type=_nonneg_int, default=0, help="global batch in tokens (prints tokens/s)")
    m = p.add_argument_group("or a model and a throughput")
    m.add_argument("--preset", help="a model preset (see `mfu flops --list`)")
    m.add_argument("--config", help="a model config TOML file")
    m.add_argument("--tokens-per-second", type=_positive, help="job-wide tokens per second")
    m.add_argument("--samples-per-second", type=_positive, help="job-wide samples per second")
    m.add_argument("--seq-len", type=count_arg,
                   help="training sequence length (transformers); required for presets that publish none")
    m.add_argument("--batch", type=count_arg, help="global batch in samples, with --step-seconds")
    m.add_argument("--causal", action="store_true",
                   help="count the causal mask in attention ((T + 1) / 2 keys per query; off by default, "
                        "as in PaLM Appendix B)")
    m.add_argument("--recompute", choices=_RECOMPUTE_MODES, default=None,
                   help="activation recomputation used by the run (adds HFU): selective, selective-eq8 "
                        "(Korthikanti et al. eq. 8), full (layers, not the logits, as Megatron)")
    m.add_argument("--optimizer", choices=_OPTIMIZERS, default=None,
                   help="recommendation models: the embedding tables' sparse optimizer, whose state adds to the "
                        "embedding bytes (default: the model's, e.g. adagrad for dlrm-dcnv2)")
    m.add_argument("--embedding-dtype", choices=_ROW_DTYPES, default=None,
                   help="recommendation models: precision of the embedding rows (default: the model's)")
    h = p.add_argument_group("hardware")
    h.add_argument("--gpus", type=count_arg, required=True,
                   help="number of accelerators N, counted as framework devices (a world size: one per GPU, "
                        "two per MI250X (GCDs), four per Trainium2 at LNC=2); with --per package, packages")
    h.add_argument("--peak-tflops-per-gpu", type=_positive, help="peak TFLOP/s of one accelerator")
    h.add_argument("--accelerator", help="take the peak from the registry (e.g. H100, 'NVIDIA A100-SXM4-80GB')")
    h.add_argument("--dtype", default=None, help="dtype of the peak with --accelerator (default bf16)")
    h.add_argument("--sparse", action="store_true", help="use the 2:4 sparse peak (rarely right for training)")
    h.add_argument("--per", choices=("device", "package"), default="device",
                   help="what --gpus counts, hence what the peak is per: device (default; the datasheet's "
                        "package peak divided by its devices) or package (the datasheet's figure)")
    p.add_argument("--json", action="store_true", help="print a machine-readable result with every denominator")
    p.set_defaults(func=_run_calc)


def _resolve_peak(args: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    """Peak FLOP/s per accelerator and a description of where it came from."""
    if args.dtype is not None:  # an unknown dtype is an error whether or not an accelerator is given
        from .. import hardware

        try:
            hardware.canonical_dtype(args.dtype)
        except hardware.RegistryError:
            raise UsageError(f"--dtype {args.dtype}: not a dtype the peak registry knows; expected one of "
                             f"{', '.join(hardware.DTYPES)}") from None
    if args.accelerator and args.peak_tflops_per_gpu:
        raise UsageError("give either --accelerator or --peak-tflops-per-gpu, not both")
    if args.peak_tflops_per_gpu:
        if args.dtype or args.sparse:
            raise UsageError("--dtype and --sparse apply to --accelerator; "
                             "with --peak-tflops-per-gpu the peak is yours")
        return args.peak_tflops_per_gpu * formulas.TERA, {
            "peak_source": "given on the command line", "per": args.per, "n_counts": _COUNTS[args.per],
            "denominator": f"{args.gpus:,} {_COUNTS[args.per]} × {args.peak_tflops_per_gpu:,.6g} TFLOP/s per "
                           f"{args.per} (given on the command line)",
        }
    if not args.accelerator:
        raise UsageError("the peak is missing: give --peak-tflops-per-gpu or --accelerator NAME [--dtype D]")
    from .. import hardware

    dtype = args.dtype or "bf16"
    try:
        peak = hardware.get_peak(args.accelerator, dtype, sparse=args.sparse, per=args.per)
    except (hardware.DeviceNameError, hardware.SliceRefusedError) as exc:  # asked in Python's terms: say the flags
        from ..render.vocabulary import phrase_error

        raise UsageError(phrase_error(exc, "cli")) from None
    except hardware.RegistryError as exc:
        raise UsageError(str(exc).splitlines()[0] if "\n" not in str(exc) else " ".join(str(exc).split())) from None
    dpp = peak.devices_per_package
    package, device = (peak.tflops * dpp, peak.tflops) if peak.per == "device" else (peak.tflops, peak.tflops / dpp)
    both = (f"{package:,.6g} {peak.unit} per {peak.accelerator} package = {device:,.6g} per device × {dpp}" if dpp > 1
            else f"{peak.accelerator}: 1 device per package")
    return peak.flops, {
        "accelerator": peak.accelerator,
        "dtype": dtype,
        "sparse": peak.sparse,
        "per": peak.per,
        "n_counts": _COUNTS[peak.per],
        "devices_per_package": dpp,
        "peak_flops_per_package": package * formulas.TERA,
        "peak_flops_per_device": device * formulas.TERA,
        "denominator": f"{args.gpus:,} {_COUNTS[peak.per]} × {peak.tflops:,.6g} {peak.unit} per {peak.per} ({both})",
        "peak_source": peak.source,
        "peak_description": peak.describe(),
    }


_COUNTS = {"device": "devices", "package": "packages"}  # what --gpus counts, by --per


def _model_work(args: argparse.Namespace) -> dict[str, Any]:
    """FLOPs per step and step time, from direct flags or a model + throughput."""
    if args.preset or args.config:
        if args.model_flops_per_step:
            raise UsageError("give either --model-flops-per-step or --preset/--config, not both")
        return _work_from_model(args)
    if args.tokens_per_second or args.samples_per_second:
        raise UsageError("--tokens-per-second/--samples-per-second need a model: add --preset NAME or --config FILE")
    if args.causal or args.seq_len:
        flag = "--causal" if args.causal else "--seq-len"
        raise UsageError(f"{flag} applies to model FLOPs: add --preset NAME or --config FILE")
    missing = [f for f, v in (("--model-flops-per-step", args.model_flops_per_step),
                              ("--step-seconds", args.step_seconds)) if not v]
    if missing:
        raise UsageError(f"missing {' and '.join(missing)} (or give --preset NAME with a throughput)")
    return {
        "model_flops_per_step": args.model_flops_per_step,
        "hardware_flops_per_step": args.hardware_flops_per_step,
        "step_seconds": args.step_seconds,
        "samples_per_step": args.samples_per_step or None,
        "tokens_per_step": args.tokens_per_step or None,
    }


def _work_from_model(args: argparse.Namespace) -> dict[str, Any]:
    """Turn a model's per-token/per-sample FLOPs and a throughput into per-step numbers.

    With a throughput and no step time, one second of the job stands for a step: MFU is a rate,
    so ``FLOPs per second / peak`` is the same whatever the step.
    """
    try:
        from ..flops import flops_per_unit
    except ImportError as exc:  # pragma: no cover - the flops room ships with the package
        raise UsageError(f"model FLOPs are unavailable: {exc}") from None
    try:
        mf = flops_per_unit(args.preset, args.config, seq_len=args.seq_len,
                            causal=True if args.causal else None, recompute=args.recompute or "none")
    except (ValueError, KeyError, OSError) as exc:  # a request for an input is said with the flags
        from ..render.vocabulary import phrase_error

        raise UsageError(" ".join(phrase_error(exc, "cli").split())) from None
    given = [n for n, v in (("--tokens-per-second", args.tokens_per_second),
                            ("--samples-per-second", args.samples_per_second),
                            ("--step-seconds", args.step_seconds)) if v]
    if len(given) != 1:
        raise UsageError("with a model give exactly one of --tokens-per-second, --samples-per-second, "
                         f"or --step-seconds with --batch; got {', '.join(given) or 'none'}")
    per_sample = mf.training_per_sample
    hw_per_sample = mf.hardware_per_sample if args.recompute else None
    tokens_per_sample = getattr(mf, "tokens_per_sample", None)
    if args.tokens_per_second:
        if not tokens_per_sample:
            raise UsageError(f"{mf.name} is not a token model; use --samples-per-second")
        samples_per_s = args.tokens_per_second / tokens_per_sample
        step_seconds, samples = 1.0, samples_per_s
    elif args.samples_per_second:
        step_seconds, samples = 1.0, args.samples_per_second
    else:
        if not args.batch:
            raise UsageError("--step-seconds with a model needs --batch (samples per global step)")
        step_seconds, samples = args.step_seconds, float(args.batch)
    return {
        "model_flops_per_step": per_sample * samples,
        "hardware_flops_per_step": None if hw_per_sample is None else hw_per_sample * samples,
        "step_seconds": step_seconds,
        "samples_per_step": samples,
        "tokens_per_step": samples * tokens_per_sample if tokens_per_sample else None,
        "model": mf.name,
        "model_flops_per_sample": per_sample,
        "model_conventions": mf.conventions.to_dict(),
        "model_conventions_summary": mf.conventions.summary(),
        **_traffic_work(args, mf),
    }


def _traffic_work(args: argparse.Namespace, mf: Any) -> dict[str, Any]:
    """The embedding bytes per sample of a recommendation model, with their conventions (else nothing)."""
    if mf.kind not in ("dlrm", "hstu"):
        if args.optimizer or args.embedding_dtype:
            raise UsageError("--optimizer and --embedding-dtype apply to recommendation models (dlrm, hstu)")
        return {}
    from ..flops.recsys import embedding_traffic

    t = embedding_traffic(mf, optimizer=args.optimizer, embedding_bytes=args.embedding_dtype)
    return {"model_embedding_traffic": t.to_dict(), "model_embedding_summary": t.summary()}


def _embedding_bandwidth(args: argparse.Namespace, work: dict[str, Any], peak_info: dict[str, Any]) -> dict[str, Any]:
    """Embedding bytes per second against N x the accelerator's memory bandwidth (memory_bandwidth.csv), or why
    unknown; nothing for a model without embedding tables."""
    traffic = work.get("model_embedding_traffic")
    if traffic is None:
        return {}
    bytes_per_s = work["samples_per_step"] / work["step_seconds"] * traffic["bytes_per_sample"]
    out: dict[str, Any] = {"embedding_bytes_per_s": bytes_per_s, "embedding_bandwidth_utilisation": None}
    if not peak_info.get("accelerator"):
        return {**out, "embedding_bandwidth_reason": "the peak was given as a number, naming no accelerator: give "
                                                     "--accelerator for its memory bandwidth"}
    from .. import hardware

    try:
        bw = hardware.get_memory_bandwidth(peak_info["accelerator"])
    except hardware.RegistryError as exc:
        return {**out, "embedding_bandwidth_reason": " ".join(str(exc).split())}
    per_device = peak_info["per"] == "device"
    each = bw.bytes_per_s / (peak_info.get("devices_per_package", 1) if per_device else 1)
    return {**out, "embedding_bandwidth_utilisation": bytes_per_s / (args.gpus * each),
            "memory_bandwidth_per_accelerator": each, "memory_bandwidth_source": bw.describe()}


def _run_calc(args: argparse.Namespace) -> int:
    peak, peak_info = _resolve_peak(args)
    work = _model_work(args)
    try:
        res = formulas.compute_mfu(
            model_flops_per_step=work["model_flops_per_step"],
            step_s=work["step_seconds"],
            n_accelerators=args.gpus,
            peak_flops_per_accelerator=peak,
            hardware_flops_per_step=work["hardware_flops_per_step"],
            samples_per_step=work["samples_per_step"],
            tokens_per_step=work["tokens_per_step"],
            accelerator=peak_info.get("accelerator"),
            dtype=peak_info.get("dtype"),
            sparse=peak_info.get("sparse", False),
            peak_source=peak_info.get("peak_source"),
        )
    except formulas.MFUAbove100Error as exc:
        return _report_inconsistent(args, work, peak, peak_info, exc)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    extra = {k: v for k, v in work.items() if k.startswith("model") and k not in ("model_flops_per_step",)}
    embedding = _embedding_bandwidth(args, work, peak_info)
    if args.json:
        import json

        out = {**res.to_dict(), **peak_info, **extra, **embedding, "ok": True}
        print(json.dumps(out, indent=2, sort_keys=True))
        return EXIT_OK
    if "model" in work:
        print(f"Model: {work['model']} ({work['model_flops_per_sample']:.4g} training FLOPs per sample)")
        print(f"FLOPs conventions: {work['model_conventions_summary']}")
    for line in res.lines():
        print(line)
    for line in _embedding_lines(args, work, embedding):
        print(line)
    if "peak_description" in peak_info:
        print(f"Peak: {peak_info['peak_description']}")
        print(_n_line(args, peak_info))
    return EXIT_OK


def _embedding_lines(args: argparse.Namespace, work: dict[str, Any], e: dict[str, Any]) -> list[str]:
    """Dense MFU beside embedding bandwidth utilisation, with the byte convention."""
    if not e:
        return []
    lines = ["Dense MFU: the MFU above (dense and interaction FLOPs; embedding lookups count zero)",
             f"Embedding bytes: {work['model_embedding_summary']}"]
    rate = f"{e['embedding_bytes_per_s'] / 1e12:,.4g} TB/s"
    if e["embedding_bandwidth_utilisation"] is None:
        return [*lines, f"Embedding bandwidth utilisation: unknown ({rate} moved): {e['embedding_bandwidth_reason']}"]
    return [*lines, f"Embedding bandwidth utilisation: {e['embedding_bandwidth_utilisation']:.2%} ({rate} of "
                    f"{args.gpus:,} x {e['memory_bandwidth_per_accelerator'] / 1e12:,.4g} TB/s; "
                    f"{e['memory_bandwidth_source']})"]


def _n_line(args: argparse.Namespace, peak_info: dict[str, Any]) -> str:
    """What N counts and the denominator it multiplies, with --per's other choice."""
    said = ("--gpus counts framework devices (--per package if it counts packages: chips, cards)"
            if args.per == "device" else "--gpus counts packages (--per package)")
    return f"Denominator: {peak_info['denominator']}; {said}"


def _report_inconsistent(args: argparse.Namespace, work: dict[str, Any], peak: float,
                         peak_info: dict[str, Any], exc: formulas.MFUAbove100Error) -> int:
    """Print what was computed, then why it cannot be right; exit 1."""
    achieved = work["model_flops_per_step"] / work["step_seconds"]
    cluster = args.gpus * peak
    if args.json:
        import json

        print(json.dumps({
            "ok": False, "error": "mfu_above_100", "kind": exc.kind, "value": exc.value,
            "model_flops_per_step": work["model_flops_per_step"], "step_seconds": work["step_seconds"],
            "n_accelerators": args.gpus, "peak_flops_per_accelerator": peak,
            "achieved_flops_per_second": achieved, "cluster_peak_flops": cluster,
            "likely_causes": list(formulas.LIKELY_CAUSES), **peak_info,
        }, indent=2, sort_keys=True))
    else:
        print(f"Model throughput: {achieved / formulas.TERA:,.2f} TFLOP/s")
        print(f"Cluster peak: {cluster / formulas.TERA:,.2f} TFLOP/s")
        print(f"{exc.kind}: {exc.value:.2%}  <- impossible: above 100%")
        if "peak_description" in peak_info:
            print(_n_line(args, peak_info))
    print(f"mfu calc: error: {exc}", file=sys.stderr)
    return EXIT_INCONSISTENT


