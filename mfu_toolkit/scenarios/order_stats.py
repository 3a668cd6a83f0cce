"""Order statistics of a synchronous job: every step waits for the slowest of its ranks.

- :func:`expected_max`        E[max of ``n`` iid rank times]: exact by numerical integration for
  normal, lognormal and exponential rank times, exact for an empirical sample, Monte Carlo for a
  sampler.
- :func:`sync_step_time`      that expectation as the job grows: why the same jitter costs more at
  scale.
- :func:`expected_sync_step`  lognormal rank times with some persistently slow ranks, vectorised
  over job sizes (the straggler explorer's curve).

The maximum of independent ranks has the product of their CDFs, ``F_max = F^(n−k) · F_slow^k``,
and ``E[max] = ∫_0^∞ (1 − F_max) dx − ∫_{−∞}^0 F_max dx`` (David & Nagaraja, *Order Statistics*,
3rd ed., §2.1 and §3.1); every closed distribution here is integrated by the same trapezoid rule
on ``log F`` computed stably near 1.

Numpy, math and pandas only: :mod:`mfu_toolkit.analysis` imports this module (its
``expected_max`` and ``sync_step_time`` are these), so it imports nothing from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DISTRIBUTIONS", "expected_max", "sync_step_time", "expected_sync_step"]

#: The rank-time distributions :func:`expected_max` integrates exactly (by name).
DISTRIBUTIONS = ("normal", "lognormal", "exponential")


def check_number(name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
                 strict: bool = False) -> float:
    """``value`` as a float, or a ValueError naming the parameter, its bounds and the value."""
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if strict else value >= lo
    if ok and hi is not None:
        ok = value <= hi
    if not ok:
        rng = []
        if lo is not None:
            rng.append(f"{'>' if strict else '>='} {lo:g}")
        if hi is not None:
            rng.append(f"<= {hi:g}")
        bounds = (" " + " and ".join(rng)) if rng else ""
        raise ValueError(f"{name} must be a finite number{bounds}; got {value!r}")
    return float(value)


def check_int(name: str, value: Any, *, lo: int, hi: int | None = None) -> int:
    """``value`` as an int, or a ValueError naming the parameter, its bounds and the value."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= lo
    ok = ok and (hi is None or value <= hi)
    if not ok:
        rng = f">= {lo}" + (f" and <= {hi}" if hi is not None else "")
        raise ValueError(f"{name} must be an integer {rng}; got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# the shared quadrature


_erfc = np.vectorize(math.erfc, otypes=[float])


def _norm_cdf(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF, Φ(z) = erfc(−z/√2)/2."""
    return 0.5 * _erfc(-z / math.sqrt(2.0))


def _norm_sf(z: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(z / math.sqrt(2.0))


def _log_cdf(cdf: np.ndarray, sf: np.ndarray) -> np.ndarray:
    """log F, as log1p(−sf) where F is close to 1 (there 1 − sf would round the tail away)."""
    with np.errstate(divide="ignore"):
        return np.where(sf < 0.5, np.log1p(-sf), np.log(np.maximum(cdf, 1e-300)))


def _pow_cdf(cdf: np.ndarray, sf: np.ndarray, n: float) -> np.ndarray:
    """F^n, computed as exp(n · log F)."""
    return np.exp(n * _log_cdf(cdf, sf))


def _integrate(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫ y dx by the trapezoid rule, along the last axis."""
    return np.sum((y[..., 1:] + y[..., :-1]) * np.diff(x), axis=-1) / 2.0


def _lognormal_max(ns: np.ndarray, ks: np.ndarray, z: np.ndarray, *, mean: float, cv: float,
                   slowdown: float = 1.0) -> np.ndarray:
    """E[max] of lognormal rank times (mean ``mean``, CV ``cv``), ``ks`` of the ``ns`` ranks
    ``slowdown`` × as long, for each job size, integrated on the standard-normal grid ``z``.

    A slow rank's log time is shifted by ln(slowdown); ``E[M] = ∫_0^∞ (1 − F_max) dx`` is taken in
    ``z`` with ``dx = x·s·dz``, and below the grid's left end (where ``F_max ≈ 0``) it adds ``x(z_0)``.
    """
    s2 = math.log1p(cv * cv)  # a lognormal's moments: mean e^{μ+s²/2}, CV² = e^{s²} − 1
    s = math.sqrt(s2)
    mu = math.log(mean) - s2 / 2.0
    log_f = _log_cdf(_norm_cdf(z), _norm_sf(z))
    if ks.any() and slowdown != 1.0:
        zs = z - math.log(slowdown) / s
        log_fs = _log_cdf(_norm_cdf(zs), _norm_sf(zs))
    else:
        log_fs = log_f
    fmax = np.exp(np.outer(ns - ks, log_f) + np.outer(ks, log_fs))  # (sizes, grid)
    x = np.exp(mu + s * z)
    return x[0] + _integrate((1.0 - fmax) * x * s, z)


# --------------------------------------------------------------------------------------------
# iid ranks


def expected_max(
    n: int,
    *,
    dist: str | Sequence[float] | np.ndarray | Callable[[np.random.Generator, int], np.ndarray] = "normal",
    mean: float = 1.0,
    std: float = 0.1,
    n_mc: int = 2000,
    seed: int = 0,
) -> float:
    """E[max of ``n`` iid rank step times]: the synchronous step time of ``n`` ranks.

    ``dist``: ``"normal"``, ``"lognormal"`` or ``"exponential"`` (shifted so that it has the
    given ``mean`` and ``std``: ``mean − std + Exp(std)``) — exact, by numerical integration of
    ``E[M] = ∫_0^∞ (1 − F(x)^n) dx − ∫_{−∞}^0 F(x)^n dx`` (e.g. David & Nagaraja, *Order
    Statistics*, 3rd ed., §3.1); an array of observed times — exact for the empirical
    distribution, ``Σ x_(i) [(i/m)^n − ((i−1)/m)^n]``; or a callable ``(rng, size) -> samples`` —
    Monte Carlo with ``n_mc`` replications.
    """
    n = check_int("n", n, lo=1)
    if isinstance(dist, str):
        return _closed_max(n, dist, mean, std)
    if callable(dist):
        return _monte_carlo_max(n, dist, check_int("n_mc", n_mc, lo=1), seed)
    x = np.sort(np.asarray(dist, dtype=float).ravel())
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"dist samples must be a non-empty array of finite numbers; got {x.size} values")
    m = x.size
    i = np.arange(1, m + 1)
    w = (i / m) ** n - ((i - 1) / m) ** n
    return float(np.sum(w * x))


def _closed_max(n: int, dist: str, mean: float, std: float) -> float:
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"dist must be one of {', '.join(DISTRIBUTIONS)}, an array of samples or a callable; "
                         f"got {dist!r}")
    check_number("mean", mean)
    check_number("std", std, lo=0.0)
    if std == 0 or n == 1:
        return float(mean)
    if dist == "normal":
        return float(mean + std * _std_normal_max(n))
    if dist == "lognormal":
        if mean <= 0:
            raise ValueError(f"mean must be > 0 for a lognormal; got {mean!r}")
        z = np.linspace(-12.0, max(8.0, math.sqrt(2 * math.log(n)) + 8.0), 40001)
        return float(_lognormal_max(np.array([float(n)]), np.zeros(1), z, mean=mean, cv=std / mean)[0])
    return _exponential_max(n, mean, std)


def _monte_carlo_max(n: int, dist: Callable[[np.random.Generator, int], np.ndarray], n_mc: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_mc, int(2e7 // n)))
    maxima = []
    done = 0
    while done < n_mc:
        b = min(chunk, n_mc - done)
        x = np.asarray(dist(rng, b * n), dtype=float)
        if x.shape != (b * n,):
            raise ValueError(f"dist callable must return {b * n} samples for size={b * n}; got shape {x.shape}")
        maxima.append(x.reshape(b, n).max(axis=1))
        done += b
    return float(np.mean(np.concatenate(maxima)))


def _std_normal_max(n: int) -> float:
    hi = max(8.0, math.sqrt(2 * math.log(n)) + 8.0)
    z = np.linspace(-hi, hi, 40001)
    fn = _pow_cdf(_norm_cdf(z), _norm_sf(z), n)
    pos = z >= 0
    return float(_integrate(1.0 - fn[pos], z[pos]) - _integrate(fn[~pos | (z == 0)], z[~pos | (z == 0)]))


def _exponential_max(n: int, mean: float, std: float) -> float:
    shift = mean - std
    hi = std * (math.log(n) + 40.0)
    x = np.linspace(0.0, hi, 40001)
    sf = np.exp(-x / std)
    fn = _pow_cdf(1.0 - sf, sf, n)
    return float(shift + _integrate(1.0 - fn, x))


def sync_step_time(
    n_ranks: Iterable[int] | int,
    *,
    dist: str | Sequence[float] | np.ndarray | Callable[[np.random.Generator, int], np.ndarray] = "normal",
    mean: float = 1.0,
    std: float = 0.1,
    n_mc: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Expected synchronous step time as the job grows: why the same jitter costs more at scale.

    Columns: ``n_ranks``, ``expected_step_s`` (E[max]), ``slowdown`` (E[max] / mean of one rank),
    ``overhead`` (slowdown − 1) and ``method`` (``exact``, ``empirical`` or ``monte_carlo``).
    """
    ns = [n_ranks] if isinstance(n_ranks, (int, np.integer)) else list(n_ranks)
    if isinstance(dist, str):
        method, base = "exact", mean
    elif callable(dist):
        method = "monte_carlo"
        base = float(np.mean(np.asarray(dist(np.random.default_rng(seed), 100000), dtype=float)))
    else:
        method, base = "empirical", float(np.mean(np.asarray(dist, dtype=float)))
    rows = []
    for n in ns:
        e = expected_max(n, dist=dist, mean=mean, std=std, n_mc=n_mc, seed=seed)
        rows.append({"n_ranks": int(n), "expected_step_s": e, "slowdown": e / base, "overhead": e / base - 1,
                     "method": method})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# jitter and slow ranks


def expected_sync_step(
    ranks: int | np.ndarray | list[int],
    *,
    jitter_cv: float,
    slow_ranks: int = 0,
    slowdown: float = 1.0,
    base_step_s: float = 1.0,
) -> np.ndarray:
    """E[step time of a synchronous job] = E[max over ranks of the rank times], for each job size.

    A healthy rank's time is lognormal with mean ``base_step_s`` and coefficient of variation
    ``jitter_cv``; ``slow_ranks`` of the ranks (all of them, when fewer) take ``slowdown`` × as
    long. Ranks are independent, so the maximum's CDF is the product of theirs,
    ``F_max(x) = F(x)^(n−k) · F(x/s)^k``, and ``E[max] = ∫_0^∞ (1 − F_max(x)) dx`` for
    non-negative times (David & Nagaraja, *Order Statistics*, 3rd ed., §2.1 and §3.1), integrated
    numerically in ``log x``, vectorised over job sizes. Agrees with :func:`expected_max`
    (``dist="lognormal"``) when no rank is slow.
    """
    ns = np.atleast_1d(np.asarray(ranks))
    if ns.dtype.kind not in "iu" or ns.size == 0 or (ns < 1).any():
        raise ValueError(f"ranks must be integers >= 1; got {ranks!r}")
    cv = check_number("jitter_cv", jitter_cv, lo=0.0, hi=2.0)
    k = check_int("slow_ranks", slow_ranks, lo=0)
    sd = check_number("slowdown", slowdown, lo=1.0)
    base = check_number("base_step_s", base_step_s, lo=0.0, strict=True)
    ns = ns.astype(float)
    ks = np.minimum(float(k), ns)
    if cv == 0.0:
        return np.where(ks > 0, base * sd, base)
    shift = math.log(sd) / math.sqrt(math.log1p(cv * cv))  # a slow rank's CDF, shifted on the z grid
    z_hi = math.sqrt(2.0 * math.log(max(float(ns.max()), 2.0))) + 8.0
    bulk = np.linspace(-12.0, z_hi, 2500)
    z = np.unique(np.concatenate([bulk, bulk + shift, np.linspace(-12.0, z_hi + shift, 600)]))
    e = _lognormal_max(ns, ks, z, mean=base, cv=cv, slowdown=sd)
    # one rank: no maximum to take, the mean itself (exact, not the quadrature's 1e-8 error)
    return np.where(ns == 1, np.where(ks > 0, base * sd, base), e)
