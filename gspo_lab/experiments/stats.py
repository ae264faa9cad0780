"""Statistics over seeds: per-arm numbers with their spread, rates with intervals, paired per-seed comparisons.

Conventions (declared here once):
    * an *arm* is a grid point without its seed; every number about an arm is over its seeds;
    * a mean comes with the sample std and a 95 % interval (:func:`seed_interval`): from stats version 4 transformed
      t (Student-t for the mean on the endpoint's logit / log scale, gspo_lab/experiments/endpoint_range.py), chosen
      on coverage, range and power by gspo_record/intervals/interval_study.py; version 3 the bootstrap-t over seeds
      (10,000 seeded resamples); until version 2 the percentile bootstrap, which covers ~84 % at 5 seeds;
    * a caller declares the range an endpoint takes (``bounds=(lo, hi)``, gspo_lab/experiments/endpoint_range.py):
      values outside it are refused, and the range-respecting intervals (issue 35) work on its scale;
    * readings whose specs declared Student-t (:func:`declared_t_interval`) kept it through version 3; from version
      4 they take the page's one interval;
    * a rate (collapse) comes with a 95 % Wilson score interval;
    * a ratio of fractions (GSPO / GRPO clipped tokens) is taken per seed — both arms share the seed's prompt stream
      and sampler — then summarised like any number; so is a difference (:func:`paired_diff`).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pandas as pd

import gspo_lab.experiments.endpoint_range as endpoint_range
from gspo_lab.experiments.quantiles import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, T_975

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "bootstrap_ci",
    "arm_row",
    "wilson",
    "arm_table",
    "rate_table",
    "paired_ratio",
    "paired_diff",
    "interval_sign",
    "T_975",
    "t_interval",
    "bootstrap_t_ci",
    "interval_method",
    "INTERVAL_METHODS",
    "STATS_VERSION",
    "PAGE_INTERVAL",
    "DECLARED_T",
    "seed_interval",
    "declared_t_interval",
    "declared_t_sign",
]


INTERVAL_METHODS = ("percentile", "t", "bootstrap_t", "transformed_t", "transformed_bootstrap_t")
"""The last two (issue 35) respect an endpoint's declared range (gspo_lab/experiments/endpoint_range.py): Student-t
and the bootstrap-t on the range's transformed scale; without ``bounds`` they are plain t and plain bootstrap-t."""
STATS_VERSION = 4
PAGE_INTERVAL = "transformed_t"
"""The page's interval of a mean over seeds from stats version 4 on (issue 35): transformed t on the endpoint's
declared range, the pick of gspo_record/intervals/interval_study.py's declared rule (coverage >= 0.93 on the steady,
skewed and half-bimodal shapes at 5 and 10 seeds, never leaves the range, then power). Version 3 (issue 22): the
bootstrap-t, whose coverage gspo_record/intervals/coverage.py finds >= 93 % but which leaves [0, 1] and has less power
against the stored 5/5 effects; version 2, findings 1-10 until then: the percentile bootstrap, ~84 % at 5 seeds."""
DECLARED_T = {"percentile": "t", "t": "t", "bootstrap_t": "t", "transformed_t": "transformed_t",
              "transformed_bootstrap_t": "transformed_bootstrap_t"}  # fmt: skip
"""Page interval -> the interval of a reading whose spec declared Student-t (f2_ten, f10t, f11, …): Student-t as
declared while the page used another (versions 2 and 3), the page's own once it respects the endpoint's range
(version 4: one method, so one arm has one spread everywhere)."""
_INTERVAL = [PAGE_INTERVAL]  # what seed_interval gives; interval_method switches it


@contextlib.contextmanager
def interval_method(method: str):
    """Within the block, :func:`seed_interval` (and so :func:`interval_sign`, :func:`arm_table` and every page number
    that uses them) gives the ``method`` interval: ``"percentile"`` (:func:`bootstrap_ci`), ``"t"``
    (:func:`t_interval`), ``"bootstrap_t"`` (:func:`bootstrap_t_ci`), ``"transformed_t"`` or
    ``"transformed_bootstrap_t"`` (gspo_lab/experiments/endpoint_range.py, on the caller's ``bounds``) — how the
    page's verdicts are re-read under another interval (gspo_record/reread.py)."""
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {INTERVAL_METHODS}, got {method!r}")
    before = _INTERVAL[0]
    _INTERVAL[0] = method
    try:
        yield
    finally:
        _INTERVAL[0] = before


def seed_interval(values, bounds=None) -> tuple[float, float]:
    """The page's 95 % interval of the mean of per-seed ``values`` (:data:`PAGE_INTERVAL`, or the one
    :func:`interval_method` names); NaN for fewer than 2 values.

    ``bounds=(lo, hi)`` declares the range the endpoint takes (endpoint_range.ACCURACY, DIFFERENCE, RATIO): a value
    outside it raises ValueError naming ``values``, and the range-respecting methods work on its scale. The default,
    None, is today's call exactly (no check; the transformed methods then reduce to plain t and bootstrap-t)."""
    method = _INTERVAL[0]
    if bounds is not None:
        values = list(values)
        endpoint_range.check_bounds(values, bounds, "values")
    if method == "transformed_t":
        return endpoint_range.transformed_t_ci(values, endpoint_range.UNBOUNDED if bounds is None else bounds)
    if method == "transformed_bootstrap_t":
        return endpoint_range.transformed_bootstrap_t_ci(values, endpoint_range.UNBOUNDED if bounds is None else bounds)
    if method == "t":
        return t_interval(values)
    if method == "bootstrap_t":
        return bootstrap_t_ci(values)
    return bootstrap_ci(values)


def declared_t_interval(values, bounds=None) -> tuple[float, float]:
    """The 95 % interval of a reading whose spec declared Student-t: :data:`DECLARED_T` of the page's interval
    (Student-t through stats version 3, :func:`seed_interval` on ``bounds`` from version 4)."""
    method = DECLARED_T[_INTERVAL[0]]
    if method == "t":
        return t_interval(values)
    with interval_method(method):
        return seed_interval(values, bounds)


def declared_t_sign(values, bounds=None) -> int:
    """+1 / −1 when :func:`declared_t_interval` of the mean of ``values`` lies above / below 0, else 0."""
    values = list(values)
    if len(values) < 2:
        return 0
    lo, hi = declared_t_interval(values, bounds)
    return _side(lo, hi) if math.isfinite(lo) and math.isfinite(hi) else 0


def bootstrap_ci(values, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaN for fewer than 2 values)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = x[rng.integers(0, len(x), (BOOTSTRAP_RESAMPLES, len(x)))].mean(1)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a rate k / n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _arms(table: pd.DataFrame, by: list[str]):
    return table.groupby(by, sort=False, dropna=False)


def arm_table(table: pd.DataFrame, by: list[str], metric: str, bounds=None) -> pd.DataFrame:
    """Per arm: seeds, mean, std, the page's 95 % interval (:func:`seed_interval`, on ``metric``'s declared
    ``bounds`` if given), min and max of ``metric``."""
    rows = []
    for arm, group in _arms(table, by):
        arm = arm if isinstance(arm, tuple) else (arm,)
        rows.append({**dict(zip(by, arm, strict=True)), **arm_row(group[metric].astype(float).tolist(), bounds)})
    return pd.DataFrame(rows)


def arm_row(values: list[float], bounds=None) -> dict:
    """One arm's row of :func:`arm_table` from its per-seed ``values`` (at least one)."""
    lo, hi = seed_interval(values, bounds)
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    return {"seeds": len(values), "mean": float(np.mean(values)), "std": std, "ci_low": lo, "ci_high": hi,
            "min": min(values), "max": max(values)}  # fmt: skip


def rate_table(table: pd.DataFrame, by: list[str], flag: str = "collapsed") -> pd.DataFrame:
    """Per arm: how many seeds have ``flag`` true, of how many, with the 95 % Wilson interval."""
    rows = []
    for arm, group in _arms(table, by):
        k, n = int(group[flag].astype(bool).sum()), len(group)
        lo, hi = wilson(k, n)
        arm = arm if isinstance(arm, tuple) else (arm,)
        rows.append({**dict(zip(by, arm, strict=True)), "k": k, "n": n, "rate": k / n, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def paired_ratio(table: pd.DataFrame, by: list[str], metric: str, num: str = "gspo", den: str = "grpo") -> pd.DataFrame:
    """Per arm (``by`` without the objective) and seed: ``metric`` of objective ``num`` / that of ``den``."""
    keys = [*by, "seed"]
    wide = table.pivot_table(index=keys, columns="objective", values=metric, aggfunc="first").reset_index()
    if num not in wide or den not in wide:
        return wide.iloc[0:0].assign(ratio=[])
    wide = wide.dropna(subset=[num, den]).reset_index(drop=True)  # only seeds where both arms finished
    wide["ratio"] = wide[num] / wide[den].where(wide[den] > 0)
    return wide


def paired_diff(table: pd.DataFrame, arm: str, base: str, metric: str, column: str = "arm_id") -> pd.Series:
    """Per seed: ``metric`` of arm ``arm`` minus that of arm ``base`` (arms named in ``column``), over the seeds
    where both finished; indexed by seed, named ``metric`` (whose declared range the page's formatters look up)."""
    if table.empty:
        return pd.Series(dtype=float, name=metric)
    # each seed's first non-missing value per arm (a pivot table's "first"), on the three columns' arrays: the page
    # calls this ~30,000 times, and a pivot (or a boolean row filter) of the whole table each time took minutes
    names, seeds = table[column].to_numpy(), table["seed"].to_numpy()
    values = pd.to_numeric(table[metric], errors="coerce").to_numpy(dtype=float)

    def per_seed(name) -> tuple[np.ndarray, np.ndarray]:
        rows = np.flatnonzero((names == name) & ~np.isnan(values))
        uniq, first = np.unique(seeds[rows], return_index=True)
        return uniq, values[rows[first]]

    (sa, va), (sb, vb) = per_seed(arm), per_seed(base)
    common, ia, ib = np.intersect1d(sa, sb, return_indices=True)
    diff = va[ia] - vb[ib]
    keep = ~np.isnan(diff)  # e.g. inf - inf
    return pd.Series(diff[keep], index=pd.Index(common[keep], name="seed"), dtype=float, name=metric)


def interval_sign(values, bounds=None) -> int:
    """+1 / −1 when the page's 95 % interval (:func:`seed_interval`, on the declared ``bounds`` if given) of the mean
    of ``values`` lies above / below 0, else 0 (also for fewer than 2 values)."""
    values = list(values)
    return _side(*seed_interval(values, bounds)) if len(values) >= 2 else 0


def _side(lo: float, hi: float) -> int:
    """+1 / −1 when the interval [lo, hi] lies above / below 0, else 0 (also for a NaN end)."""
    return 1 if lo > 0 else (-1 if hi < 0 else 0)


def per_seed_ratio(curves: pd.DataFrame, num: str = "gspo", den: str = "grpo") -> pd.Series:
    """Per seed, the mean over rollouts of objective ``num``'s curve divided by ``den``'s (a long table of
    :func:`gspo_lab.experiments.read.curves`: columns objective, seed, rollout, value); indexed by seed."""
    per_seed = curves.groupby(["objective", "seed"])["value"].mean().unstack("objective")
    return (per_seed[num] / per_seed[den].where(per_seed[den] > 0)).dropna()


def t_interval(values) -> tuple[float, float]:
    """95 % Student-t interval of the mean of ``values``: mean ± t_{0.975, n−1} · s / √n (NaN for fewer than 2).

    Declared by the specs written from issue 24 on (f11_*): at 5 seeds the percentile bootstrap's interval is too
    narrow (it ignores the n − 1 and the t tail; ~84 % coverage in simulation, issue 22), the t interval is exact for
    normal per-seed values."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    df = len(x) - 1
    half = (T_975[df - 1] if df <= len(T_975) else 1.959964) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean() - half), float(x.mean() + half)


def bootstrap_t_ci(values) -> tuple[float, float]:
    """95 % bootstrap-t (studentized bootstrap) interval of the mean of ``values``: mean − q*_{0.975} · se, mean −
    q*_{0.025} · se, with q* the quantiles of the resampled (mean* − mean) / se* (10,000 seeded resamples; a resample
    of one repeated value counts t* = 0). Efron & Tibshirani 1993, §12.5; its coverage at 5 and 10 seeds is checked
    in gspo_record/intervals/coverage.py. NaN for fewer than 2 values; the mean itself when all values are equal."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) < 2:
        return (math.nan, math.nan)
    n, mean = len(x), float(x.mean())
    se = float(x.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        return (mean, mean)
    boot = x[np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, (BOOTSTRAP_RESAMPLES, n))]
    boot_se = boot.std(1, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = (boot.mean(1) - mean) / boot_se
    q_hi, q_lo = np.quantile(np.where(np.isfinite(t_star), t_star, 0.0), [0.975, 0.025])
    return (mean - float(q_hi) * se, mean - float(q_lo) * se)
