"""An endpoint's declared range, and 95 % intervals of a mean over seeds that stay inside it by construction (issue 35).

A caller says what values an endpoint can take with ``bounds=(lo, hi)`` (closed; ±inf for an open side):

    ACCURACY   = (0, 1)       an accuracy, a fraction, a collapse rate
    DIFFERENCE = (−1, 1)      a paired difference of two [0, 1] endpoints
    RATIO      = (0, inf)     a positive ratio; a ratio minus 1 (what ``interval_sign`` reads against 0) is (−1, inf)
    UNBOUNDED  = (−inf, inf)  no declared range: every method below is then the plain one

The transform (the *link* g) is chosen by the range, and the interval is Student-t for the **mean** on g's scale by
the delta method (Casella & Berger 2002, *Statistical Inference*, 2nd ed., Thm 5.5.24: se(g(x̄)) ≈ g'(x̄) · s / √n),
then mapped back, so it never leaves the range and is ≈ Student-t away from the edges:

    both sides finite   g(x) = log((x − lo) / (hi − x))   the logit of (x − lo)/(hi − lo): for an accuracy the logit
                        (the logit interval of a proportion, Brown, Cai & DasGupta 2001, Statist. Sci. 16:101-133);
                        for a difference d in (−1, 1) it is 2·atanh(d), Fisher's z (Fisher 1921, Metron 1:3-32)
    lower side only     g(x) = log(x − lo)                a ratio on the log scale (Katz et al. 1978, Biometrics
                        34:469-474)
    upper side only     g(x) = −log(hi − x)
    neither             g(x) = x                          plain Student-t (and plain bootstrap-t)

Degenerate cases, explicit (never a silent NaN):
    1) fewer than 2 values: (NaN, NaN), as every interval in :mod:`~gspo_lab.experiments.stats`;
    2) all values equal — also all on a bound (an absorbing collapse: every seed 0.000), the only way a mean within
       the range sits on a bound: the point (x̄, x̄). No spread was seen; such an arm's verdict rests on its count
       (k/n seeds at the bound, Wilson), not on an interval;
    3) a value outside ``bounds``: ValueError naming the argument;
    4) a bootstrap resample of one repeated value (no spread, so no t*): t* = 0, as the bootstrap-t already does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gspo_lab.experiments.quantiles import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, T_975

__all__ = ["ACCURACY", "DIFFERENCE", "RATIO", "UNBOUNDED", "Link", "link", "check_bounds", "leaves_range",
           "transformed_t", "transformed_bootstrap_t", "transformed_t_ci", "transformed_bootstrap_t_ci"]  # fmt: skip

ACCURACY = (0.0, 1.0)
DIFFERENCE = (-1.0, 1.0)
RATIO = (0.0, math.inf)
UNBOUNDED = (-math.inf, math.inf)


@dataclass(frozen=True)
class Link:
    """The transform g of a range: ``g`` and its derivative ``dg`` on the range's interior, ``inv`` from the real
    line back onto the range, and ``mid``, a point of the interior (a stand-in where g is not evaluated)."""

    g: Callable[[np.ndarray], np.ndarray]
    dg: Callable[[np.ndarray], np.ndarray]
    inv: Callable[[np.ndarray], np.ndarray]
    mid: float


def _bounds(bounds) -> tuple[float, float]:
    lo, hi = (float(b) for b in bounds)
    if not lo < hi:
        raise ValueError(f"bounds must be (lo, hi) with lo < hi, got {bounds!r}")
    return lo, hi


def link(bounds) -> Link:
    """The transform chosen by ``bounds`` (module docstring's table)."""
    lo, hi = _bounds(bounds)
    if math.isfinite(lo) and math.isfinite(hi):
        # lo + (hi − lo)·expit(θ), expit(θ) = (1 + tanh(θ/2)) / 2: stays in [lo, hi] in floating point
        return Link(lambda x: np.log(x - lo) - np.log(hi - x), lambda x: 1 / (x - lo) + 1 / (hi - x),
                    lambda th: lo + (hi - lo) * 0.5 * (1 + np.tanh(th / 2)), (lo + hi) / 2)  # fmt: skip
    if math.isfinite(lo):
        return Link(lambda x: np.log(x - lo), lambda x: 1 / (x - lo), lambda th: lo + np.exp(th), lo + 1)
    if math.isfinite(hi):
        return Link(lambda x: -np.log(hi - x), lambda x: 1 / (hi - x), lambda th: hi - np.exp(-th), hi - 1)
    return Link(lambda x: x, np.ones_like, lambda th: th, 0.0)


def check_bounds(values, bounds, name: str = "values") -> None:
    """Raise ValueError, naming ``name``, if a finite value of ``values`` lies outside the closed ``bounds``."""
    lo, hi = _bounds(bounds)
    x = np.asarray(values, dtype=float)
    bad = np.isfinite(x) & ((x < lo) | (x > hi))
    if bad.any():
        first = np.flatnonzero(bad.ravel())[0]
        raise ValueError(f"{name} must lie in the declared bounds [{lo}, {hi}]; {int(bad.sum())} of {x.size} do not, "
                         f"the first {float(x.ravel()[first])!r} at position {first}")  # fmt: skip


def leaves_range(ci: np.ndarray, bounds) -> np.ndarray:
    """For intervals ``ci`` (R, 2): whether each reaches outside the closed ``bounds``; (R,) bool."""
    lo, hi = _bounds(bounds)
    return (ci[:, 0] < lo) | (ci[:, 1] > hi)


def _t_quantile(n: int) -> float:
    return T_975[n - 2] if n - 1 <= len(T_975) else 1.959964


def _flat(mean: np.ndarray, se: np.ndarray, bounds) -> np.ndarray:
    """No spread (degenerate case 2), or a mean that rounds onto a bound (values a denormal apart)."""
    lo, hi = _bounds(bounds)
    return (se == 0) | (mean <= lo) | (mean >= hi)


def _scale(lk: Link, mean: np.ndarray, se: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """g(mean) and its delta-method se g'(mean)·se, with the interior stand-in where ``flat`` (g is not needed there,
    and on a bound it would be ±inf)."""
    m = np.where(flat, lk.mid, mean)
    return lk.g(m), lk.dg(m) * se


def transformed_t(x: np.ndarray, bounds) -> np.ndarray:
    """95 % Student-t intervals of the mean of each row of ``x`` (R, n), on the scale of ``bounds``' link by the delta
    method, mapped back (module docstring); (R, 2). A row of equal values gives its point."""
    check_bounds(x, bounds, "x")
    R, n = x.shape
    lk, mean, se = link(bounds), x.mean(1), x.std(1, ddof=1) / np.sqrt(n)
    flat = _flat(mean, se, bounds)
    theta, se_theta = _scale(lk, mean, se, flat)
    half = _t_quantile(n) * se_theta
    ci = np.stack([lk.inv(theta - half), lk.inv(theta + half)], 1)
    return np.where(flat[:, None], mean[:, None], ci)


def transformed_bootstrap_t(x: np.ndarray, bounds, *, resamples: int = 999, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """95 % bootstrap-t intervals of the mean of each row of ``x`` (R, n) on the scale of ``bounds``' link: the t
    statistic (g(x̄*) − g(x̄)) / (g'(x̄*)·se*) of ``resamples`` seeded resamples replaces Student's t (Efron &
    Tibshirani 1993, *An Introduction to the Bootstrap*, §12.5-12.6: the bootstrap-t is best run on a scale where the
    statistic is closer to pivotal); (R, 2). A row of equal values gives its point."""
    check_bounds(x, bounds, "x")
    R, n = x.shape
    lk, mean, se = link(bounds), x.mean(1), x.std(1, ddof=1) / np.sqrt(n)
    flat = _flat(mean, se, bounds)
    theta, se_theta = _scale(lk, mean, se, flat)
    boot = x[:, np.random.default_rng(seed).integers(0, n, (resamples, n))]  # (R, resamples, n), shared draws
    boot_se = boot.std(2, ddof=1) / np.sqrt(n)
    boot_mean = boot.mean(2)
    boot_flat = _flat(boot_mean, boot_se, bounds)
    boot_theta, boot_se_theta = _scale(lk, boot_mean, boot_se, boot_flat)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = (boot_theta - theta[:, None]) / boot_se_theta
    t_star = np.where(boot_flat, 0.0, t_star)  # degenerate case 4
    q_hi, q_lo = np.quantile(t_star, [0.975, 0.025], axis=1)
    ci = np.stack([lk.inv(theta - q_hi * se_theta), lk.inv(theta - q_lo * se_theta)], 1)
    return np.where(flat[:, None], mean[:, None], ci)


def _finite(values) -> np.ndarray:
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def transformed_t_ci(values, bounds=UNBOUNDED) -> tuple[float, float]:
    """:func:`transformed_t` of one set of per-seed ``values`` (missing and non-finite ones dropped, as
    :func:`~gspo_lab.experiments.stats.t_interval` does); (NaN, NaN) for fewer than 2."""
    x = _finite(values)
    check_bounds(x, bounds)
    if len(x) < 2:
        return (math.nan, math.nan)
    lo, hi = transformed_t(x[None], bounds)[0]
    return float(lo), float(hi)


def transformed_bootstrap_t_ci(values, bounds=UNBOUNDED) -> tuple[float, float]:
    """:func:`transformed_bootstrap_t` of one set of per-seed ``values`` with the page's 10,000 seeded resamples;
    (NaN, NaN) for fewer than 2."""
    x = _finite(values)
    check_bounds(x, bounds)
    if len(x) < 2:
        return (math.nan, math.nan)
    lo, hi = transformed_bootstrap_t(x[None], bounds, resamples=BOOTSTRAP_RESAMPLES)[0]
    return float(lo), float(hi)
