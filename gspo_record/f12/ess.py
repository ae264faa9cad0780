"""Finding 12's rule ``f12.ess`` (declared with the search's rules in ``data/specs/f12a_lag_search.toml``): does a
lagged run's early effective sample size warn of its failure? The rule and its constants: :mod:`.lag`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import gspo_record.f12.lag as lag

__all__ = ["ess_auroc", "ess_verdict"]


def ess_auroc(warning, failed) -> float:
    """AUROC of a *low* ``warning`` (the early ESS minimum) for ``failed`` runs: the probability that a failed run's
    warning is lower than a surviving one's, ties counting one half; NaN without both kinds of run."""
    warning, failed = np.asarray(warning, dtype=float), np.asarray(failed, dtype=bool)
    bad, good = warning[failed], warning[~failed]
    if not len(bad) or not len(good):
        return math.nan
    return float((bad[:, None] < good[None, :]).mean() + 0.5 * (bad[:, None] == good[None, :]).mean())


def ess_verdict(stale: pd.DataFrame):
    """Rule ``f12.ess`` on the D > 0 runs (columns ess_min, failed): "not_scored" with fewer than
    :data:`~.lag.ESS_MIN_EACH` failed or surviving runs; else "warns" when the percentile bootstrap 95 % interval of
    :func:`ess_auroc` (runs resampled, seeded) lies above 0.5, "none" otherwise."""
    runs = stale.dropna(subset=["ess_min"])
    w, f = runs["ess_min"].to_numpy(float), runs["failed"].to_numpy(bool)
    if f.sum() < lag.ESS_MIN_EACH or (~f).sum() < lag.ESS_MIN_EACH:
        return lag.ESS.verdict("not_scored")
    rng = np.random.default_rng(lag.ESS_SEED)
    idx = rng.integers(0, len(w), (lag.ESS_RESAMPLES, len(w)))
    stats = [ess_auroc(w[i], f[i]) for i in idx]
    lo = float(np.nanpercentile(stats, 2.5))
    return lag.ESS.verdict("warns" if lo > 0.5 else "none")
