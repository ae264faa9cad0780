"""What comes before a collapse? Alarm rules on per-rollout training signals, scored by how far ahead of a collapse
they fire — and how often they fire in runs that never collapse.

Definitions (declared here, before the rules are scored on held-out runs):
    * a run's *onset* is the first rollout t ≥ ``BASELINE`` from which its training reward (``reward/mean:mean``)
      stays below ``ONSET_FRACTION`` × the mean of its first ``BASELINE`` rollouts to the end of the run, for at
      least ``MIN_TAIL`` rollouts; a run without one is *stable*. (Held-out evaluations come every 10 rollouts only,
      so the onset is read on the per-rollout training reward.)
    * an :class:`AlarmRule` watches one per-rollout signal: its baseline is the median of the first ``BASELINE``
      rollouts; with ``factor > 1`` it fires at the first t ≥ ``BASELINE`` where the signal exceeds factor ×
      baseline, with ``factor < 1`` where it falls below it;
    * *lead time* = onset − alarm; a collapsing run is *warned* when the alarm fires ≥ ``LEAD`` rollouts before its
      onset; a stable run *false-alarms* when the alarm fires at all.
    * :func:`score` gives per rule the warned share of collapsing runs and the false-alarm share of stable runs, each
      with a 95 % Wilson interval, and the median lead; :func:`choose` picks, per signal, the factor of
      ``FACTORS`` with the largest warned − false-alarm share on a set of runs (an exploratory choice: freeze it,
      then score it on runs it was not chosen on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "BASELINE",
    "ONSET_FRACTION",
    "MIN_TAIL",
    "LEAD",
    "FACTORS",
    "SIGNALS",
    "SIGNALS_V2",
    "LEVEL_V2",
    "with_derived",
    "AlarmRule",
    "onset",
    "alarm",
    "score",
    "choose",
]

BASELINE = 5
ONSET_FRACTION = 0.5
MIN_TAIL = 5
LEAD = 5
#: the factors :func:`choose` tries (below 1: the signal falls; above 1: it rises)
FACTORS = (0.25, 0.5, 0.67, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)
#: the candidate signals: per-rollout keys of a stored result
SIGNALS = (
    "grad/norm:max",
    "ratio/tok_log_absmax:max",
    "clip/token_frac:mean",
    "moe/expert_change:mean",
    "policy/entropy:mean",
    "response/truncated_frac:mean",
    "adv/zero_std_frac:mean",
)
#: version 2's signals (issue 22, item 7), none scored before: the token weights' effective sample size (derived,
#: :func:`with_derived`), the k3 KL estimate, the largest clipped-token share of any update in the rollout (a burst
#: of clipping) and the mean response length
SIGNALS_V2 = ("ratio/tok_ess:mean", "kl/k3:mean", "clip/token_frac:max", "response/length:mean")
#: version 2's multiplicity: a Bonferroni family of its 4 signals, each interval at 1 - 0.05 / 4
LEVEL_V2 = 1 - 0.05 / len(SIGNALS_V2)


@dataclass(frozen=True)
class AlarmRule:
    """Fire when ``signal`` crosses ``factor`` × its baseline (above for factor > 1, below for factor < 1)."""

    signal: str
    factor: float

    def __post_init__(self):
        if not (math.isfinite(self.factor) and self.factor > 0 and self.factor != 1):
            raise ValueError(f"factor must be a finite number > 0 and != 1, got {self.factor!r}")


def _clean(values: Sequence) -> np.ndarray:
    return np.array(list(values), dtype=float)  # None -> NaN


def onset(reward: Sequence) -> int | None:
    """The collapse onset of a training-reward curve (module docstring), or None for a stable run."""
    r = _clean(reward)
    if len(r) < BASELINE + MIN_TAIL:
        return None
    start = np.nanmean(r[:BASELINE])
    below = r < ONSET_FRACTION * start
    for t in range(BASELINE, len(r) - MIN_TAIL + 1):
        if below[t:].all():
            return t
    return None


def alarm(series: Sequence, rule: AlarmRule) -> int | None:
    """The first rollout t ≥ BASELINE at which ``rule`` fires on ``series``, or None."""
    s = _clean(series)
    head = sorted(v for v in s[:BASELINE].tolist() if v == v) if len(s) >= BASELINE else []  # nanmedian, ~50x faster
    n = len(head)
    base = (head[n // 2] if n % 2 else (head[n // 2 - 1] + head[n // 2]) / 2) if n else math.nan
    if not math.isfinite(base) or base == 0:
        return None
    hit = s[BASELINE:] > rule.factor * base if rule.factor > 1 else s[BASELINE:] < rule.factor * base
    idx = np.flatnonzero(hit)
    return int(idx[0]) + BASELINE if len(idx) else None


def with_derived(run: dict) -> dict:
    """``run`` (a stored ``per_rollout``) with the derived signal ``ratio/tok_ess:mean`` = exp(−σ²), σ the
    per-rollout mean of ``ratio/tok_log_std``: Kish's effective-sample-size fraction (Σw)² / (n Σw²) of the token
    weights w = exp(log-ratio) were the log-ratios normal with that spread (1: every token weighs alike; → 0: a few
    tokens carry the update). Absent when the run lacks the log-ratio spread."""
    sd = run.get("ratio/tok_log_std:mean")
    if sd is None:
        return run
    return {**run, "ratio/tok_ess:mean": [None if s is None else math.exp(-(float(s) ** 2)) for s in sd]}


def _wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from statistics import NormalDist

    from gspo_lab.experiments.stats import wilson

    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if level == 0.95:
        return wilson(k, n)  # version 1's intervals, as stored
    lo, hi = wilson(k, n, NormalDist().inv_cdf(0.5 + level / 2))
    return (0.0 if lo < 1e-12 else lo), hi  # no float residue above 0 for k = 0


def score(runs: list[dict], rules: Sequence[AlarmRule], level: float = 0.95) -> pd.DataFrame:
    """Per rule: collapsing runs, how many warned ≥ LEAD rollouts ahead (rate, Wilson interval at ``level``), stable
    runs, how many false-alarmed (rate, Wilson interval), the median lead over warned runs. ``runs``: per-rollout
    dicts (stored ``per_rollout``); a run lacking the rule's signal is left out of that rule's counts."""
    onsets = [onset(r.get("reward/mean:mean", [])) for r in runs]
    rows = []
    for rule in rules:
        warned, n_collapse, false, n_stable, leads = 0, 0, 0, 0, []
        for run, t in zip(runs, onsets, strict=True):
            if rule.signal not in run:
                continue
            a = alarm(run[rule.signal], rule)
            if t is None:
                n_stable += 1
                false += a is not None
            else:
                n_collapse += 1
                if a is not None and t - a >= LEAD:
                    warned += 1
                    leads.append(t - a)
        (wl, wh), (fl, fh) = _wilson(warned, n_collapse, level), _wilson(false, n_stable, level)
        rows.append(
            {
                "signal": rule.signal,
                "factor": rule.factor,
                "collapsing": n_collapse,
                "warned": warned,
                "warned_rate": warned / n_collapse if n_collapse else math.nan,
                "warned_lo": wl,
                "warned_hi": wh,
                "stable": n_stable,
                "false_alarms": false,
                "false_rate": false / n_stable if n_stable else math.nan,
                "false_lo": fl,
                "false_hi": fh,
                "median_lead": float(np.median(leads)) if leads else math.nan,
            }
        )
    return pd.DataFrame(rows)


def choose(runs: list[dict], signals: Sequence[str] = SIGNALS, factors: Sequence[float] = FACTORS) -> list[AlarmRule]:
    """Per signal present in the runs, the factor with the largest warned − false-alarm rate (ties: the smaller
    |log factor|, the gentler rule) — an exploratory choice on ``runs``."""
    chosen = []
    for signal in signals:
        if not any(signal in r for r in runs):
            continue
        table = score(runs, [AlarmRule(signal, f) for f in factors])
        gain = (table["warned_rate"].fillna(0) - table["false_rate"].fillna(0)).to_numpy()
        order = sorted(range(len(factors)), key=lambda i: (-gain[i], abs(math.log(factors[i]))))
        chosen.append(AlarmRule(signal, float(factors[order[0]])))
    return chosen


def load_frozen(path=None) -> tuple[dict, list[AlarmRule]]:
    """The frozen rules file (default ``data/precursors/rules_v1.toml``): its header and its rules."""
    import tomllib

    from gspo_lab.paths import data_dir

    path = path or data_dir() / "precursors" / "rules_v1.toml"  # version 2: rules_v2.toml
    raw = tomllib.loads(open(path, encoding="utf-8").read())
    rules = [AlarmRule(r["signal"], float(r["factor"])) for r in raw.pop("rule", [])]
    if not rules:
        raise ValueError(f"{path}: no [[rule]] tables")
    return raw, rules
