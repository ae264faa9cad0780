"""Finding 12's rule ``f12.ess`` (declared with the search's rules in ``data/specs/f12a_lag_search.toml``): does a
lagged run's early effective sample size warn of its failure? The rule and its constants: :mod:`.lag`.

Its statement is about the split of the lagged runs into failed and surviving ones
(:class:`~gspo_record.kinds.Split`) and, once each class holds :data:`~.lag.ESS_MIN_EACH` runs, the AUROC with its
percentile bootstrap interval (an :class:`~gspo_record.statements.Interval` about 0.5, its sign count the resamples'):
a :class:`~gspo_record.joint.Joint` read by the combination ``f12.ess``. With too few of a class there is no AUROC
to print: the statement is about the split alone, every outcome of which reads "not_scored"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import gspo_record.f12.lag as lag
from gspo_record.joint import Joint, combination
from gspo_record.kinds import Split
from gspo_record.statements import Interval, outcome_of

__all__ = ["ess_auroc", "ess_outcome", "ess_verdict"]

QUESTION = "does a lagged run's lowest early ESS share warn of its collapse or freeze?"
#: the split alone (no AUROC): its words per outcome, each "not scored"
SPLIT_WORDS = {"none": "not scored: too few failures", "few": "not scored: too few failed or surviving runs",
               "all": "not scored: too few surviving runs", "both": "not scored: no AUROC"}  # fmt: skip
_PARTS = ("runs", "AUROC")


def ess_outcome(parts) -> str:
    """``f12.ess``'s combination: "not_scored" unless both classes have enough runs, else "warns" when the AUROC's
    interval lies above 0.5, "none" otherwise."""
    if parts["runs"] != "both":
        return "not_scored"
    return "warns" if parts["AUROC"] == "above" else "none"


combination("f12.ess", ("warns", "none", "not_scored"), _PARTS, shown=("warns",))(lambda o: ess_outcome(o))


def ess_auroc(warning, failed) -> float:
    """AUROC of a *low* ``warning`` (the early ESS minimum) for ``failed`` runs: the probability that a failed run's
    warning is lower than a surviving one's, ties counting one half; NaN without both kinds of run."""
    warning, failed = np.asarray(warning, dtype=float), np.asarray(failed, dtype=bool)
    bad, good = warning[failed], warning[~failed]
    if not len(bad) or not len(good):
        return math.nan
    return float((bad[:, None] < good[None, :]).mean() + 0.5 * (bad[:, None] == good[None, :]).mean())


def ess_verdict(stale: pd.DataFrame, id: str = "f12.ess"):
    """Rule ``f12.ess`` on the D > 0 runs (columns ess_min, failed), as statement ``id``: "not_scored" with fewer
    than :data:`~.lag.ESS_MIN_EACH` failed or surviving runs; else "warns" when the percentile bootstrap 95 %
    interval of :func:`ess_auroc` (runs resampled, seeded) lies above 0.5, "none" otherwise."""
    runs = stale.dropna(subset=["ess_min"])
    w, f = runs["ess_min"].to_numpy(float), runs["failed"].to_numpy(bool)
    if not len(runs):
        return lag.ESS.verdict(lag.PENDING)
    split = Split(int(f.sum()), len(f), lag.ESS_MIN_EACH, "failed")
    if outcome_of(split) != "both":
        return lag.ESS.state(id, QUESTION, split, words=SPLIT_WORDS, reads=dict.fromkeys(SPLIT_WORDS, "not_scored"))
    rng = np.random.default_rng(lag.ESS_SEED)
    idx = rng.integers(0, len(w), (lag.ESS_RESAMPLES, len(w)))
    stats = np.array([ess_auroc(w[i], f[i]) for i in idx])
    stats = stats[~np.isnan(stats)]  # a resample with one class only has no AUROC
    lo, hi = (float(np.percentile(stats, q)) for q in (2.5, 97.5))
    auroc = Interval(ess_auroc(w, f), lo, hi, len(stats), int((stats > 0.5).sum()), int((stats < 0.5).sum()), 0.5,
                     (0.0, 1.0))  # fmt: skip
    return lag.ESS.state(id, QUESTION, Joint("f12.ess", (("runs", split), ("AUROC", auroc))))
