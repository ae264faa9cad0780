"""Finding 11 settled (issue 37, part A): the dose ladder ``f11e_dose_ladder`` — at what first-batch drift CISPO and
SAPO die, beside GRPO and GSPO, and whether a warm-up saves them. Rules declared in the spec before its runs.

- :func:`runs`: the ladder's runs (lr 1e-5 … 7e-5 without warm-up, lr 1e-4 with warm-up 80 or 320 steps; seeds
  20-24) and the anchor's (lr 1e-4, no warm-up: f11b's MoE runs, seeds 10-14 with finding 2's stored GRPO / GSPO, and
  f11d's, seeds 15-19), each with its rollout-0 KL k3 (``drift``), its largest per-rollout KL k3 (``peak``) and
  endpoint v2's collapse and freeze flags and onsets.
- :func:`kl50` fits P(collapse) against log10(drift) (logistic, no-warm-up doses only) and reads the drift where it
  crosses 0.5, with a percentile bootstrap interval over runs: rule ``f11e.kl50``, a statement on the count of runs
  in the class (:class:`~gspo_record.kinds.Split`: a crossing is read only with :data:`MIN_EACH` of each). The fit
  (:mod:`gspo_record.f11.logistic`) maximises the likelihood with a small L2 penalty (:data:`RIDGE`, on the slope of
  the standardised log drift), chosen when this code was written, after the first seed's cells had run: without it a
  sample whose classes do not overlap has no finite maximum, and the crossing then sits between the two groups.
- :func:`dose_verdicts`: rule ``f11e.dose``, finding 11's position (objective − GRPO, objective − GSPO, late
  held-out accuracy, paired by seed) at each dose, beside its collapse and freeze counts.
- :func:`safe_verdict`: rule ``f11e.safe``, the largest no-warm-up lr at which a successor collapses ≤ 1/5, freezes
  in none and does not sit below GRPO (a :class:`~gspo_record.kinds.Largest` rung of the arm's ladder);
  :func:`warmup_verdict`: rule ``f11e.warmup``, a joint of the warm-up dose's collapse count and its median onset's
  delay against the anchor (a :class:`~gspo_record.kinds.Band`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from gspo_lab.experiments.reading import remember
from gspo_record.f11.logistic import RIDGE, logistic, logistic_many
from gspo_record.f11.regimes import DRIFT, SPEC_B, SPEC_D, per_rollout
from gspo_record.f11.regimes import runs as regime_runs
from gspo_record.f11.successors import POSITION, position
from gspo_record.joint import Joint, combination
from gspo_record.kinds import Band, Largest, Split
from gspo_record.rules import PENDING, STABLE_AT_MOST, Rule, register
from gspo_record.statements import Count, outcome_of
from gspo_record.tables import declared, spec

__all__ = ["SPEC_E", "ARMS", "SUCCESSORS", "RIDGE", "runs", "logistic", "logistic_many", "kl50", "kl50_verdict",
           "dose_verdicts", "safe_verdict", "warmup_outcome", "warmup_verdict",
           "KL50", "DOSE", "SAFE", "WARMUP"]  # fmt: skip

SPEC_E = "f11e_dose_ladder"
ARMS = ("grpo", "gspo", "cispo", "sapo")
SUCCESSORS = ("cispo", "sapo")
#: the anchor dose: lr 1e-4 without warm-up, the regime of f11b (MoE) and f11d
ANCHOR = (1e-4, 0)
BOOTSTRAP, BOOTSTRAP_SEED = 2000, 0
#: seeds per ladder dose (20-24); a reading on fewer is provisional
SEEDS = 5
#: the ladder's no-warm-up doses (lr 1e-5, 2e-5, 4e-5, 7e-5), which f11e.kl50 reads beside the anchor
LADDER_DOSES = 4
#: f11e.kl50 reads a crossing only with at least this many runs in each class (spec)
MIN_EACH = 3
#: f11e.warmup: "delays it" when the median collapse onset is at least this many rollouts later than the anchor's
DELAY_ROLLOUTS = 10
_SPEC_LINE = "data/specs/f11e_dose_ladder.toml, before its runs"

KL50 = register(
    Rule(
        "f11e.kl50",
        "11",
        {"crossing": "a logistic fit puts half the runs collapsed at this drift (a fit over the ladder, not a "
                     "threshold)", "all": "no threshold in range: every run collapsed",
         "none": "no threshold in range: no run collapsed", "few": "no threshold in range: too few runs of a class"},
        {"MIN_EACH": MIN_EACH, "LEVEL": 0.95, "RIDGE": RIDGE},
        declared=_SPEC_LINE,
        marker="- f11e.kl50 per arm: logistic fit of collapsed (v2)",
        specs=(SPEC_E,),
        reads={"all": "all", "none": "none", "few": "few", "both": "crossing"},
    )
)  # fmt: skip
DOSE = register(
    Rule(
        "f11e.dose",
        "11",
        dict(POSITION.outcomes),
        {"LEVEL": 0.95},
        declared=_SPEC_LINE,
        marker="- f11e.dose per successor (cispo, sapo) and dose",
        specs=(SPEC_E,),
    )
)  # fmt: skip
SAFE = register(
    Rule(
        "f11e.safe",
        "11",
        {"safe": "safe up to this lr", "none": "none in the ladder"},
        {"STABLE_AT_MOST": STABLE_AT_MOST},
        declared=_SPEC_LINE,
        marker="- f11e.safe per successor: the largest no-warm-up lr",
        specs=(SPEC_E,),
        reads={"found": "safe", "none": "none"},
    )
)
WARMUP = register(
    Rule(
        "f11e.warmup",
        "11",
        {
            "saves": "stable with warm-up (at most 1 in 5 collapsed)",
            "delays": "warm-up delays it",
            "no_change": "no change shown",
        },
        {"STABLE_AT_MOST": STABLE_AT_MOST, "DELAYED_AT_LEAST": 3, "DELAY_ROLLOUTS": DELAY_ROLLOUTS},
        declared=_SPEC_LINE,
        marker="- f11e.warmup per successor and warm-up dose",
        specs=(SPEC_E,),
    )
)


@functools.cache
def _series(source: str, key: str) -> tuple[float, float]:
    """(rollout-0 KL k3, largest per-rollout KL k3) of one stored run; NaN where not stored."""
    kl = per_rollout(source, key).get(DRIFT) or [math.nan]
    finite = [float(v) for v in kl if v is not None and math.isfinite(float(v))]
    return float(kl[0]), max(finite) if finite else math.nan


@remember()
def runs() -> pd.DataFrame:
    """The ladder's and the anchor's MoE runs of :data:`ARMS`: arm_id, seed, lr, warmup, dose ("lr 4e-5", "lr 1e-4,
    warm-up 80"), late_acc, collapsed, frozen, collapse_onset, frozen_onset, drift, peak, source, key."""
    parts = []
    t = declared(spec(SPEC_E))
    if not t.empty:
        parts.append(t.assign(source=SPEC_E, arm_id=t["objective"]))
    for name in (SPEC_B, SPEC_D):
        a = regime_runs(name)
        a = a[(a["model"] == "MoE") & a["arm_id"].isin(ARMS)]
        parts.append(a.assign(lr=ANCHOR[0], warmup_steps=ANCHOR[1]))
    table = pd.concat(parts, ignore_index=True)
    table = table[table["arm_id"].isin(ARMS)].reset_index(drop=True)
    drift = [_series(s, k) for s, k in zip(table["source"], table["key"], strict=True)]
    table = table.assign(drift=[d[0] for d in drift], peak=[d[1] for d in drift],
                         warmup=table["warmup_steps"].astype(int), lr=table["lr"].astype(float))  # fmt: skip
    table["dose"] = [f"lr {lr:.0e}".replace("e-0", "e-") + (f", warm-up {w}" if w else "")
                     for lr, w in zip(table["lr"], table["warmup"], strict=True)]  # fmt: skip
    for column in ("frozen", "collapsed"):
        table[column] = table[column].fillna(False).astype(bool)
    return table


def kl50(table: pd.DataFrame, arm: str, flag: str = "collapsed") -> dict:
    """Rule ``f11e.kl50`` for ``arm`` on the no-warm-up runs (``flag``: collapsed, or frozen): statement
    ``f11e.kl50.<arm>.<flag>`` on the count of runs in the class (a crossing is read only with :data:`MIN_EACH` of
    each), and the crossing in KL k3 with its bootstrap interval where it is read; with the drift's range."""
    runs_ = table[(table["arm_id"] == arm) & (table["warmup"] == 0)].dropna(subset=["drift"])
    y, x = runs_[flag].to_numpy(dtype=float), np.log10(runs_["drift"].to_numpy(dtype=float))
    k, n = int(y.sum()), len(y)
    out = {"arm": arm, "k": k, "n": n, "lo_x": float(10 ** x.min()) if n else math.nan,
           "hi_x": float(10 ** x.max()) if n else math.nan}  # fmt: skip
    if n == 0:
        return {**out, "verdict": KL50.verdict(PENDING)}
    done, total = int((runs_["source"] == SPEC_E).sum()), LADDER_DOSES * SEEDS
    note = f"{done} of {total} ladder runs finished" if done < total else ""
    number = Split(k, n, MIN_EACH, flag)
    words = {o: KL50.outcomes[r].replace(" collapsed", f" {flag}") for o, r in KL50.reads.items()}
    verdict = KL50.state(f"{KL50.name}.{arm}.{flag}", f"at what rollout-0 KL k3 are half of {arm}'s runs {flag}?",
                         number, provisional=note, words=words)  # fmt: skip
    if outcome_of(number) != "both":
        return {**out, "verdict": verdict}
    point = logistic(x, y)  # first: it refuses a non-finite drift
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = np.array([i for i in (rng.integers(0, n, n) for _ in range(BOOTSTRAP)) if 0 < y[i].sum() < n])
    crossings = logistic_many(x[draws], y[draws]) if len(draws) else np.array([])
    crossings = crossings[np.isfinite(crossings)]
    lo, hi = np.percentile(crossings, [2.5, 97.5]) if len(crossings) else (math.nan, math.nan)
    return {**out, "verdict": verdict, "kl50": 10**point, "low": 10**lo, "high": 10**hi,
            "resamples": len(crossings)}  # fmt: skip


def kl50_verdict(table: pd.DataFrame, arm: str, flag: str = "collapsed"):
    """The statement of :func:`kl50` (a pending verdict without runs)."""
    return kl50(table, arm, flag)["verdict"]


def dose_verdicts(table: pd.DataFrame) -> list[dict]:
    """Rule ``f11e.dose`` per successor and ladder dose (seeds 20-24), with the dose's collapse and freeze counts."""

    out = []
    ladder = table[table["source"] == SPEC_E]
    for dose, d in ladder.groupby("dose", sort=False):
        for arm in SUCCESSORS:
            own = d[d["arm_id"] == arm]
            if own.empty:
                continue
            verdict = position(d, arm, rule=DOSE)
            if len(own) < SEEDS and verdict.outcome != PENDING:
                verdict = replace(verdict, provisional=f"{len(own)} of {SEEDS} seeds finished")
            out.append({"dose": dose, "arm": arm, "lr": float(own["lr"].iloc[0]), "warmup": int(own["warmup"].iloc[0]),
                        "collapsed": int(own["collapsed"].sum()), "frozen": int(own["frozen"].sum()), "n": len(own),
                        "verdict": verdict})  # fmt: skip
    return out


def safe_verdict(doses: list[dict], arm: str):
    """Rule ``f11e.safe``: (statement ``f11e.safe.<arm>``, lr) — the largest no-warm-up lr at which ``arm`` collapses
    ≤ 1/5, freezes in none and is not below GRPO, among the arm's no-warm-up doses; PENDING without one."""
    mine = [d for d in doses if d["arm"] == arm and d["warmup"] == 0]
    if not mine:
        return SAFE.verdict(PENDING), None
    ok = [d["lr"] for d in mine if d["collapsed"] <= STABLE_AT_MOST * d["n"] / 5 and d["frozen"] == 0
          and d["verdict"].rule_outcome != "below_grpo"]  # fmt: skip
    short = [d for d in mine if d["n"] < SEEDS]
    note = f"{min(d['n'] for d in short)} of {SEEDS} seeds finished at some dose" if short else ""
    number = Largest(max(ok) if ok else None, tuple(sorted({d["lr"] for d in mine})), "lr")
    statement = SAFE.state(f"{SAFE.name}.{arm}", f"up to what lr without warm-up does {arm} train safely?", number,
                           provisional=note)  # fmt: skip
    return statement, number.value


def warmup_outcome(collapsed: str, delay: str) -> str:
    """``f11e.warmup`` from its parts' outcomes: *saves* when the warm-up dose collapses in at most 1 of 5; *delays*
    when it collapses in at least 3 of 5 and its median onset is at least :data:`DELAY_ROLLOUTS` later; else
    *no_change*."""
    if collapsed == "at_most":
        return "saves"
    return "delays" if collapsed == "at_least" and delay == "inside" else "no_change"


_WARMUP_PARTS = ("collapsed", "median onset, rollouts later")
combination("f11e.warmup", tuple(WARMUP.outcomes), _WARMUP_PARTS)(
    lambda o: warmup_outcome(*(o[k] for k in _WARMUP_PARTS))  # looked up when called: a mutant of it is read
)


def warmup_verdict(table: pd.DataFrame, arm: str, warmup: int):
    """Rule ``f11e.warmup`` for ``arm`` at warm-up ``warmup`` (lr 1e-4) against the anchor (no warm-up): statement
    ``f11e.warmup.<arm>.<warmup>`` on the warm-up dose's collapse count and its median onset's delay."""
    runs_ = table[(table["arm_id"] == arm) & (table["warmup"] == warmup) & (table["lr"] == ANCHOR[0])]
    anchor = table[(table["arm_id"] == arm) & (table["warmup"] == 0) & (table["lr"] == ANCHOR[0])]
    if runs_.empty or anchor.empty:
        return WARMUP.verdict(PENDING)
    k, n = int(runs_["collapsed"].sum()), len(runs_)
    note = f"{n} of {SEEDS} seeds finished" if n < SEEDS else ""
    later = float(runs_["collapse_onset"].dropna().median() - anchor["collapse_onset"].dropna().median())
    number = Joint(
        "f11e.warmup",
        (
            ("collapsed", Count(k, n, 3, STABLE_AT_MOST)),
            ("median onset, rollouts later", Band(later, DELAY_ROLLOUTS, math.inf, "")),
        ),
    )
    return WARMUP.state(f"{WARMUP.name}.{arm}.{warmup}", f"what does a warm-up of {warmup} steps do to {arm}?", number,
                        provisional=note)  # fmt: skip
