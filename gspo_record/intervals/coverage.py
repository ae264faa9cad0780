"""Which 95 % interval of a mean over seeds covers the true mean 95 % of the time at 5 and 10 seeds (issue 22, item 1),
stays inside the endpoint's range and shows the stored 5/5 effects (issue 35, item 1)?

Checked by simulation on per-seed distributions like the stored ones, declared here before the check was run:

    coverage(method, population, n)    # the share of R simulated n-seed samples whose interval holds the true mean

The populations (:data:`POPULATIONS`) mimic late held-out accuracy per seed in the stored arms (finding 10's table of
arms, seeds 10-14, 30-34, 60-64): a *steady* arm (no collapse: mean 0.45-0.80, sd 0.01-0.08 — GSPO, the relative caps;
here N(0.6, 0.05)); a *skewed* one (GRPO under a loose cap: most seeds low, a few higher; here 0.05 + 0.5 Beta(2, 5));
and *mixed* arms, where a run collapses with probability p at a random time, so its late accuracy falls anywhere in
U(0.02, 0.3), and otherwise trains (N(0.5, 0.06)) — p = 0.8 is GRPO without a cap (4/5 collapsed), 0.5 the 2×2's C
and D, 0.2 a rare collapse (dual-clip, 1/5). Paired differences: a collapsing arm minus a steady one, and two mixed
arms.

The methods (:data:`METHODS`): the percentile bootstrap (the page's interval through findings part 2), the Student-t
interval (the successors' specs, issue 24), and the bootstrap-t (studentized bootstrap: the t statistic's own
bootstrap distribution replaces Student's t; Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, §12.5).

What the check shows (tests/test_coverage.py pins it; 2,000 samples each, seeded): the percentile bootstrap covers
78-86 % at 5 seeds, even for a steady arm; Student-t reaches 94 % for steady and skewed arms but 92 % for a collapsing
arm minus a steady one; the bootstrap-t holds ≥ 93 % at 5 and at 10 seeds on every population but those with a mode
of probability 0.2 (:data:`RARE`). Such a mode is missed by all 5 seeds a third of the time, and then no interval
built from the seeds can hold the mean: there every method covers 70-94 %. An arm with a rare collapse — or a rare
survivor — must rest its verdict on the collapse count (Wilson) as well.

Issue 35 (stats version 4's interval, chosen on coverage, range, width and power): every population now declares
the range its endpoint takes (:data:`STUDY`: accuracies (0, 1), differences (−1, 1), a ratio (0, inf)); beside them
three shapes *near a bound* (an arm collapsed on every seed, 0 on 3 seeds in 10; accuracies near 0.1 with a long right
tail; a fraction near 1e-4) and four *power* cases, 5/5-sign effects of the stored sizes (dense GSPO − GRPO no cap
0.37, GRPO cap 1 − no cap 0.455, cap 10 − no cap 0.312: bells of the sd their Student-t intervals imply; the noise
ratio 1.72, log-normal with the stored seeds' log-sd 0.29). Two more methods respect the range (:data:`RANGE_METHODS`,
gspo_lab/experiments/endpoint_range.py): ``transformed_t`` (Student-t for the mean on the range's logit / log scale by
the delta method) and ``transformed_bootstrap_t`` (the bootstrap-t on that scale); the page's stats section still
tables :data:`METHODS`, issue 22's three. ``python -m gspo_record.intervals.interval_study`` prints the whole table
(2,000 samples per cell, seed 0; ~30 s); its rule picks **transformed_t**:

    method                   min coverage   leaves the range   power (mean of   mean median width
                             on required    (worst population)  4 cases, n 5+10)  (required, n 5+10)
    percentile                  0.832            0 %              0.998             0.185
    t                           0.930           89 %              0.962             0.270
    bootstrap_t                 0.944           78 %              0.903             0.341
    transformed_t               0.934            0 %              0.980             0.264
    transformed_bootstrap_t     0.944            0 %              0.908             0.299

* Coverage on the required shapes (steady, skewed, half-bimodal p 0.5 and its difference) at 5 / 10 seeds:
  transformed t 0.946 / 0.947, 0.942 / 0.938, 0.934 / 0.959, 0.955 / 0.953. Its lowest, the half-bimodal arm at 5
  seeds, clears the bar by little: 0.937 and 0.932 on two other seeds at 20,000 samples (Student-t: 0.934, 0.930).
* The range: the bootstrap-t leaves [0, 1] in 1.8 % of samples of a *steady* arm at 5 seeds, 12 % of skewed ones,
  56 % of half-bimodal ones, 78 % of an arm collapsed on every seed (the page's [-4.19, 0.308] and [0.0107, 1.74]);
  Student-t leaves it in 12 % of half-bimodal samples, 89 % of the collapsed arm's, 65 % of the tiny fraction's. The
  transformed methods never do, by construction.
* Near a bound transformed t also covers better than t (collapsed arm 0.945 vs 0.861 at 5 seeds, accuracies near
  0.1 0.924 vs 0.886, the tiny fraction 0.871 vs 0.785) — not 93 % everywhere: a log-normal fraction's mean at 5
  seeds is not reached by any method here (0.69-0.89).
* Power at 5 seeds against the stored 5/5 effects (share of intervals excluding 0, or 1 for the ratio): transformed
  t 1.00, 0.97, 0.99, 0.89; t 1.00, 0.98, 1.00, 0.72; bootstrap-t 0.87, 0.82, 0.85, 0.70 (the page's "no difference
  shown" on 5/5 effects); the transformed bootstrap-t 0.86, 0.81, 0.84, 0.77. At 10 seeds every method reaches 1.00.
  The percentile bootstrap's power (1.00 everywhere) is that of an interval too narrow to cover.
* The rare-mode shapes stay below the bar for every method (transformed t: rare collapse 0.83 / 0.90, rare − steady
  0.90 / 0.91; collapsing − steady 0.925 / 0.938), with one exception: on the p 0.8 collapsing arm, whose rare mode is
  a survivor on the far side from the bound, transformed t covers 0.944 / 0.928 (20,000 samples) — at the bar. So
  the recommendation of issue 22 stands: where a mode of probability ~0.2 may be missed, the collapse count (Wilson)
  decides the verdict, not the interval of the mean.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gspo_lab.experiments import endpoint_range as er
from gspo_lab.experiments.stats import BOOTSTRAP_SEED, T_975

__all__ = ["POPULATIONS", "METHODS", "RANGE_METHODS", "ALL_METHODS", "RARE", "Shape", "STUDY", "GROUPS", "intervals",
           "coverage", "simulate"]  # fmt: skip


def _steady(rng, size):
    return rng.normal(0.6, 0.05, size)


def _skewed(rng, size):
    return 0.05 + 0.5 * rng.beta(2.0, 5.0, size)


def _mixed(p: float):
    def draw(rng, size):
        collapsed = rng.random(size) < p
        return np.where(collapsed, rng.uniform(0.02, 0.3, size), rng.normal(0.5, 0.06, size))

    return draw


POPULATIONS = {
    "steady": _steady,
    "skewed": _skewed,
    "collapsing (p 0.8)": _mixed(0.8),
    "half (p 0.5)": _mixed(0.5),
    "rare collapse (p 0.2)": _mixed(0.2),
    "collapsing − steady": lambda rng, size: _mixed(0.8)(rng, size) - _steady(rng, size),
    "half − half": lambda rng, size: _mixed(0.5)(rng, size) - _mixed(0.5)(rng, size),
    "rare − steady": lambda rng, size: _mixed(0.2)(rng, size) - _steady(rng, size),
}
"""Per-seed distributions like the stored ones (module docstring): name -> draw(rng, size)."""
RARE = ("collapsing (p 0.8)", "rare collapse (p 0.2)", "rare − steady")
"""The populations with a mode of probability 0.2: no interval of a mean covers them at 93 % (the unseen-mode limit)."""


def _collapsed_near_zero(rng, size):
    # an arm collapsed on every seed (MoE SAPO's late accuracy: 0.039, 0.0047, 0.017, 0, 0): 0 on 3 seeds in 10
    return np.where(rng.random(size) < 0.3, 0.0, 0.15 * rng.beta(0.7, 3.0, size))


def _low_one_higher(rng, size):
    # accuracies near 0.1 with a long right tail (dense CISPO: 0.038, 0.056, 0.29, 0.13, 0.27; the page's
    # 0.148 [0.0107, 1.74]): most samples of 5 hold one or two seeds well above the rest
    return 0.01 + 0.6 * rng.beta(0.8, 4.0, size)


def _tiny_fraction(rng, size):
    # a fraction near 1e-4 (a clipped-token fraction; the page's 1.56e-04 [-2.77e-04, 5.90e-04]), log-normal
    return np.exp(rng.normal(np.log(1e-4), 1.2, size))


_BETA33_SD = (9 / (36 * 7)) ** 0.5  # sd of Beta(3, 3)


def _bell(mean: float, sd: float):
    """A symmetric bell of ``mean`` and ``sd`` on mean ± 2.65 sd (a scaled Beta(3, 3)): a paired difference whose
    seeds share a sign, bounded as a difference of accuracies is."""
    return lambda rng, size: mean + sd / _BETA33_SD * (rng.beta(3.0, 3.0, size) - 0.5)


def _log_normal(mean: float, sigma: float):
    """A positive ratio of ``mean`` with log-scale sd ``sigma``."""
    return lambda rng, size: np.exp(rng.normal(np.log(mean) - sigma**2 / 2, sigma, size))


@dataclass(frozen=True)
class Shape:
    """A per-seed population of the study: ``draw(rng, size)``, the endpoint's declared ``bounds``, its ``group``
    (:data:`GROUPS`) and, for a power case, the ``null`` an interval must exclude to show the effect."""

    draw: Callable
    bounds: tuple[float, float]
    group: str
    null: float | None = None


GROUPS = {
    "required": "coverage >= 0.93 demanded (issue 35: steady, skewed, half-bimodal)",
    "rare": "a mode of probability 0.2: coverage reported (no method reaches 0.93; the Wilson count decides)",
    "other": "coverage reported",
    "near a bound": "coverage and range reported (where Student-t leaves the range)",
    "power": "a 5/5-sign effect of a stored size: power = share of intervals excluding the null",
}
_GROUP_OF = {"steady": "required", "skewed": "required", "half (p 0.5)": "required", "half − half": "required",
             "collapsing − steady": "other", **dict.fromkeys(RARE, "rare")}  # fmt: skip
STUDY = {
    **{
        name: Shape(draw, er.DIFFERENCE if "−" in name else er.ACCURACY, _GROUP_OF[name])
        for name, draw in POPULATIONS.items()
    },  # fmt: skip
    "collapsed (near 0)": Shape(_collapsed_near_zero, er.ACCURACY, "near a bound"),
    "low, one higher (near 0.1)": Shape(_low_one_higher, er.ACCURACY, "near a bound"),
    "tiny fraction (near 1e-4)": Shape(_tiny_fraction, er.ACCURACY, "near a bound"),
    # stored 5/5-sign effects (issue 35), sd from their Student-t intervals at n = 5: sd = half-width · √5 / 2.776
    "dense GSPO − GRPO, no cap (0.37)": Shape(_bell(0.37, 0.135), er.DIFFERENCE, "power", 0.0),
    "dense GRPO cap 1 − no cap (0.455)": Shape(_bell(0.455, 0.191), er.DIFFERENCE, "power", 0.0),
    "dense GRPO cap 10 − no cap (0.312)": Shape(_bell(0.312, 0.122), er.DIFFERENCE, "power", 0.0),
    "noise ratio GRPO ÷ GSPO, L 16 (1.72)": Shape(_log_normal(1.72, 0.29), er.RATIO, "power", 1.0),
}
"""Every population of the study with its declared range (module docstring)."""


def _t_quantile(n: int) -> float:
    return T_975[n - 2] if n - 1 <= len(T_975) else 1.959964


def intervals(
    x: np.ndarray, method: str, *, bounds=er.UNBOUNDED, resamples: int = 999, seed: int = BOOTSTRAP_SEED
) -> np.ndarray:
    """95 % intervals of the mean of each row of ``x`` (R, n) by ``method``; returns (R, 2). ``bounds`` is the
    endpoint's declared range, used by the transformed methods only (the others ignore it, as the page does)."""
    if method not in ALL_METHODS:
        raise ValueError(f"method must be one of {sorted(ALL_METHODS)}, got {method!r}")
    R, n = x.shape
    if n < 2:
        raise ValueError(f"x needs at least 2 values per row, got shape {x.shape}")
    if method == "transformed_t":
        return er.transformed_t(x, bounds)
    if method == "transformed_bootstrap_t":
        return er.transformed_bootstrap_t(x, bounds, resamples=resamples, seed=seed)
    mean, se = x.mean(1), x.std(1, ddof=1) / np.sqrt(n)
    if method == "t":
        half = _t_quantile(n) * se
        return np.stack([mean - half, mean + half], 1)
    idx = np.random.default_rng(seed).integers(0, n, (resamples, n))
    boot = x[:, idx]  # (R, resamples, n): every row resampled with the same index draws
    boot_mean = boot.mean(2)
    if method == "percentile":
        return np.quantile(boot_mean, [0.025, 0.975], axis=1).T
    boot_se = boot.std(2, ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = (boot_mean - mean[:, None]) / boot_se
    t_star = np.where(np.isfinite(t_star), t_star, 0.0)  # a resample of one repeated value: no spread, t* = 0
    q_hi, q_lo = np.quantile(t_star, [0.975, 0.025], axis=1)
    return np.stack([mean - q_hi * se, mean - q_lo * se], 1)


METHODS = ("percentile", "t", "bootstrap_t")
"""Issue 22's three methods: the page's stats section (version 3) tables their coverage."""
RANGE_METHODS = ("transformed_t", "transformed_bootstrap_t")
"""Issue 35's range-respecting methods (gspo_lab/experiments/endpoint_range.py)."""
ALL_METHODS = METHODS + RANGE_METHODS
"""Every method :func:`intervals` computes and the interval study compares."""


@functools.cache
def _truth(population: str, seed: int) -> float:
    return float(STUDY[population].draw(np.random.default_rng(10_000 + seed), 2_000_000).mean())


def simulate(method: str, population: str, n: int, *, reps: int = 2000, seed: int = 0, chunk: int = 250) -> dict:
    """``reps`` simulated samples of ``n`` seeds from ``population`` (:data:`STUDY`), each with its 95 % interval by
    ``method`` on the population's declared bounds: ``coverage`` (the share holding the population's mean, taken
    from 2,000,000 draws of another generator), ``median_width`` (unclamped), ``leaves`` (the share reaching outside
    the bounds) and ``power`` (the share excluding the null; NaN where the population has none)."""
    if population not in STUDY:
        raise ValueError(f"population must be one of {sorted(STUDY)}, got {population!r}")
    shape, truth = STUDY[population], _truth(population, seed)
    rng, parts = np.random.default_rng(seed), []
    for start in range(0, reps, chunk):
        x = shape.draw(rng, (min(chunk, reps - start), n))
        parts.append(intervals(x, method, bounds=shape.bounds, seed=seed + start))
    ci = np.concatenate(parts)
    excludes = (ci[:, 0] > shape.null) | (ci[:, 1] < shape.null) if shape.null is not None else None
    return {
        "coverage": float(((ci[:, 0] <= truth) & (truth <= ci[:, 1])).mean()),
        "median_width": float(np.median(ci[:, 1] - ci[:, 0])),
        "leaves": float(er.leaves_range(ci, shape.bounds).mean()),
        "power": float(excludes.mean()) if excludes is not None else float("nan"),
    }


def coverage(method: str, population: str, n: int, *, reps: int = 2000, seed: int = 0, chunk: int = 250) -> float:
    """The share of ``reps`` simulated samples of ``n`` seeds from ``population`` whose 95 % interval by ``method``
    holds the population's mean (:func:`simulate`'s ``coverage``)."""
    return simulate(method, population, n, reps=reps, seed=seed, chunk=chunk)["coverage"]
