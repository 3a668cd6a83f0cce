"""MFU, HFU, throughput and scaling arithmetic on floats and numpy arrays.

    MFU = model FLOPs per second / (N × peak FLOP/s per accelerator)

(PaLM, Chowdhery et al. 2022, Appendix B.) HFU is the same ratio with the FLOPs the hardware
actually executed, recomputation included. Units here are plain SI: FLOP, FLOP/s, seconds;
``1 TFLOP/s = 1e12 FLOP/s``. This module imports no pandas so the CLI starts fast.

An MFU above 100 % is never returned: it raises :class:`MFUAbove100Error`, whose message shows
the computed numbers and the usual causes.
"""

from __future__ import annotations

import math

from .deprecation import renamed

TYPE_CHECKING = False  # typing is not imported at run time: `mfu calc` must start fast
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    Number = float | int | np.ndarray

__all__ = [
    "MFUAbove100Error",
    "MFUResult",
    "achieved_flops_per_second",
    "cluster_peak_flops",
    "compute_mfu",
    "hfu",
    "mfu",
    "mfu_from_tokens",
    "samples_per_second",
    "scaling_efficiency",
    "tokens_per_second",
]


TERA = 1e12

LIKELY_CAUSES = (
    "the peak is for a slower dtype than the run computed in (e.g. the bf16 peak for an fp8 run); "
    "a sparse (2:4) peak errs the other way and reads MFU low",
    "the model FLOPs include activation recomputation (that is HFU, not MFU)",
    "the FLOPs are 1000x off: per step vs per sample, or TFLOP entered as FLOP",
    "a per-GPU throughput was divided again by the GPU count, or N is too small",
)


class MFUAbove100Error(ValueError):
    """A utilisation above 100 %: the inputs are inconsistent, not the hardware superb."""

    def __init__(self, *, kind: str, achieved_flops: float, peak_flops: float, value: float) -> None:
        self.kind = kind
        self.achieved_flops = achieved_flops
        self.peak_flops = peak_flops
        self.value = value
        causes = "\n".join(f"  - {c}" for c in LIKELY_CAUSES)
        super().__init__(
            f"{kind} = {value:.2%} is above 100%: the model achieves "
            f"{achieved_flops / TERA:,.2f} TFLOP/s against a cluster peak of "
            f"{peak_flops / TERA:,.2f} TFLOP/s. No accelerator exceeds its peak, so an input is "
            f"wrong. Likely causes:\n{causes}"
        )


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check(name: str, value: Any, *, positive: bool = True, allow_zero: bool = False) -> Any:
    """Validate a scalar or array: finite, and > 0 (or >= 0). The error names the parameter.

    Plain numbers never touch numpy, so the command line starts without importing it.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number or an array of numbers; got {value!r}")
    rule = ">= 0" if allow_zero else "> 0"
    if _is_scalar(value):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite; got {value!r}")
        if positive and (v < 0 if allow_zero else v <= 0):
            raise ValueError(f"{name} must be {rule}; got {value!r}")
        return v
    import numpy as np

    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers; got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if positive:
        bad = arr < 0 if allow_zero else arr <= 0
        if np.any(bad):
            shown = value if arr.ndim == 0 else arr[bad][:3].tolist()
            raise ValueError(f"{name} must be {rule}; got {shown!r}")
    return float(arr) if arr.ndim == 0 else arr


def _check_count(name: str, value: Any) -> Any:
    out = _check(name, value)
    whole = out == math.floor(out) if isinstance(out, float) else (out == out.round()).all()
    if not whole:
        raise ValueError(f"{name} must be a whole number of accelerators; got {value!r}")
    return out


@renamed(step_seconds="step_s")
def achieved_flops_per_second(flops_per_step: Number, step_s: Number) -> Number:
    """Model FLOP/s achieved: FLOPs of one step divided by its wall time."""
    return _check("flops_per_step", flops_per_step) / _check("step_s", step_s)


def cluster_peak_flops(n_accelerators: Number, peak_flops_per_accelerator: Number) -> Number:
    """The denominator N × P in FLOP/s."""
    return _check_count("n_accelerators", n_accelerators) * _check(
        "peak_flops_per_accelerator", peak_flops_per_accelerator
    )


@renamed(step_seconds="step_s")
def samples_per_second(samples_per_step: Number, step_s: Number) -> Number:
    return _check("samples_per_step", samples_per_step) / _check("step_s", step_s)


@renamed(step_seconds="step_s")
def tokens_per_second(tokens_per_step: Number, step_s: Number) -> Number:
    return _check("tokens_per_step", tokens_per_step) / _check("step_s", step_s)


def _ratio(kind: str, achieved: Any, peak: Any, *, allow_above_100: bool) -> Any:
    if isinstance(achieved, float) and isinstance(peak, float):
        value = achieved / peak
        if value > 1.0 and not allow_above_100:
            raise MFUAbove100Error(kind=kind, achieved_flops=achieved, peak_flops=peak, value=value)
        return value
    import numpy as np

    a, p = np.broadcast_arrays(np.asarray(achieved, dtype=float), np.asarray(peak, dtype=float))
    value = a / p
    if not allow_above_100 and np.any(value > 1.0):
        i = int(np.argmax(value))
        raise MFUAbove100Error(kind=kind, achieved_flops=float(a.flat[i]), peak_flops=float(p.flat[i]),
                               value=float(value.flat[i]))
    return float(value) if value.ndim == 0 else value


@renamed(step_seconds="step_s")
def mfu(
    *,
    model_flops_per_step: Number,
    step_s: Number,
    n_accelerators: Number,
    peak_flops_per_accelerator: Number,
    allow_above_100: bool = False,
) -> Number:
    """Model FLOPs Utilization as a fraction (0.1953 = 19.53 %).

    ``model_flops_per_step`` counts forward + backward of the whole global batch, without
    recomputation (PaLM Appendix B). ``peak_flops_per_accelerator`` is in FLOP/s (dense).
    """
    achieved = _check("model_flops_per_step", model_flops_per_step) / _check("step_s", step_s)
    peak = cluster_peak_flops(n_accelerators, peak_flops_per_accelerator)
    return _ratio("MFU", achieved, peak, allow_above_100=allow_above_100)


@renamed(step_seconds="step_s")
def hfu(
    *,
    hardware_flops_per_step: Number,
    step_s: Number,
    n_accelerators: Number,
    peak_flops_per_accelerator: Number,
    allow_above_100: bool = False,
) -> Number:
    """Hardware FLOPs Utilization: like MFU but counting recomputed FLOPs too (HFU >= MFU)."""
    achieved = _check("hardware_flops_per_step", hardware_flops_per_step) / _check("step_s", step_s)
    peak = cluster_peak_flops(n_accelerators, peak_flops_per_accelerator)
    return _ratio("HFU", achieved, peak, allow_above_100=allow_above_100)


def mfu_from_tokens(
    *,
    flops_per_token: Number,
    tokens_per_second: Number,
    n_accelerators: Number,
    peak_flops_per_accelerator: Number,
    allow_above_100: bool = False,
) -> Number:
    """MFU from a job-wide token throughput (PaLM's form: tokens/s × FLOPs/token / (N × P))."""
    achieved = _check("flops_per_token", flops_per_token) * _check("tokens_per_second", tokens_per_second)
    peak = cluster_peak_flops(n_accelerators, peak_flops_per_accelerator)
    return _ratio("MFU", achieved, peak, allow_above_100=allow_above_100)


def scaling_efficiency(
    *, throughput: Number, n_accelerators: Number, base_throughput: Number, base_n_accelerators: Number
) -> Number:
    """Throughput at N relative to ideal linear scaling from a base point (1.0 = linear)."""
    t = _check("throughput", throughput)
    n = _check_count("n_accelerators", n_accelerators)
    bt = _check("base_throughput", base_throughput)
    bn = _check_count("base_n_accelerators", base_n_accelerators)
    return (t / bt) / (n / bn)


_RESULT_FIELDS = (
    "mfu", "model_flops_per_step", "step_seconds", "n_accelerators", "peak_flops_per_accelerator",
    "achieved_flops_per_second", "cluster_peak_flops", "hfu", "hardware_flops_per_step",
    "samples_per_step", "samples_per_second", "tokens_per_step", "tokens_per_second",
    "accelerator", "dtype", "sparse", "peak_source",
)


class MFUResult:
    """One MFU with every denominator, so the number can be checked and compared.

    Immutable. (A plain class rather than a dataclass: ``mfu calc`` must start in a few ms.)
    """

    __slots__ = _RESULT_FIELDS
    mfu: float
    model_flops_per_step: float
    step_seconds: float
    n_accelerators: int
    peak_flops_per_accelerator: float
    achieved_flops_per_second: float
    cluster_peak_flops: float
    hfu: float | None
    hardware_flops_per_step: float | None
    samples_per_step: float | None
    samples_per_second: float | None
    tokens_per_step: float | None
    tokens_per_second: float | None
    accelerator: str | None
    dtype: str | None
    sparse: bool
    peak_source: str | None

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(_RESULT_FIELDS)
        if unknown:
            raise TypeError(f"MFUResult got unknown field(s) {sorted(unknown)}")
        for name in _RESULT_FIELDS:
            default = False if name == "sparse" else None
            object.__setattr__(self, name, values.get(name, default))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MFUResult is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MFUResult):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _RESULT_FIELDS)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in _RESULT_FIELDS))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in _RESULT_FIELDS if getattr(self, f) is not None)
        return f"MFUResult({shown})"

    @property
    def model_tflops_per_second(self) -> float:
        return self.achieved_flops_per_second / TERA

    @property
    def cluster_peak_tflops(self) -> float:
        return self.cluster_peak_flops / TERA

    def lines(self) -> list[str]:
        """The four lines of the classic ``mfu.py`` output, in its exact format."""
        out = [
            f"Model throughput: {self.model_tflops_per_second:,.2f} TFLOP/s",
            f"Cluster peak: {self.cluster_peak_tflops:,.2f} TFLOP/s",
            f"MFU: {self.mfu:.2%}",
        ]
        if self.hfu is not None:
            out.append(f"HFU: {self.hfu:.2%}")
        if self.samples_per_second is not None:
            out.append(f"Sample throughput: {self.samples_per_second:,.2f} samples/s")
        if self.tokens_per_second is not None:
            out.append(f"Token throughput: {self.tokens_per_second:,.2f} tokens/s")
        return out

    def to_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in _RESULT_FIELDS}
        d["model_tflops_per_second"] = self.model_tflops_per_second
        d["cluster_peak_tflops"] = self.cluster_peak_tflops
        return d


@renamed(step_seconds="step_s")
def compute_mfu(
    *,
    model_flops_per_step: float,
    step_s: float,
    n_accelerators: int,
    peak_flops_per_accelerator: float,
    hardware_flops_per_step: float | None = None,
    samples_per_step: float | None = None,
    tokens_per_step: float | None = None,
    accelerator: str | None = None,
    dtype: str | None = None,
    sparse: bool = False,
    peak_source: str | None = None,
) -> MFUResult:
    """MFU (and HFU when hardware FLOPs are given) with all denominators, as an MFUResult.

    Raises :class:`MFUAbove100Error` when MFU or HFU exceeds 100 %.
    """
    for name, v in (("model_flops_per_step", model_flops_per_step), ("step_s", step_s),
                    ("peak_flops_per_accelerator", peak_flops_per_accelerator)):
        if not _is_scalar(v):
            raise TypeError(f"compute_mfu takes scalars; {name} is an array (use mfu() for arrays)")
    n = _check_count("n_accelerators", n_accelerators)
    common = dict(step_s=step_s, n_accelerators=n, peak_flops_per_accelerator=peak_flops_per_accelerator)
    value = mfu(model_flops_per_step=model_flops_per_step, **common)
    h = None
    if hardware_flops_per_step is not None:
        if hardware_flops_per_step < model_flops_per_step:
            raise ValueError(
                f"hardware_flops_per_step ({hardware_flops_per_step:.4g}) must be >= "
                f"model_flops_per_step ({model_flops_per_step:.4g}): recomputation only adds FLOPs"
            )
        h = hfu(hardware_flops_per_step=hardware_flops_per_step, **common)
    sps = None if not samples_per_step else samples_per_second(samples_per_step, step_s)
    tps = None if not tokens_per_step else tokens_per_second(tokens_per_step, step_s)
    return MFUResult(
        mfu=float(value),
        model_flops_per_step=float(model_flops_per_step),
        step_seconds=float(step_s),
        n_accelerators=int(n),
        peak_flops_per_accelerator=float(peak_flops_per_accelerator),
        achieved_flops_per_second=float(achieved_flops_per_second(model_flops_per_step, step_s)),
        cluster_peak_flops=float(cluster_peak_flops(n, peak_flops_per_accelerator)),
        hfu=None if h is None else float(h),
        hardware_flops_per_step=None if hardware_flops_per_step is None else float(hardware_flops_per_step),
        samples_per_step=None if not samples_per_step else float(samples_per_step),
        samples_per_second=None if sps is None else float(sps),
        tokens_per_step=None if not tokens_per_step else float(tokens_per_step),
        tokens_per_second=None if tps is None else float(tps),
        accelerator=accelerator,
        dtype=dtype,
        sparse=sparse,
        peak_source=peak_source,
    )

