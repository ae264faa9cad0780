"""Finding 12: stale rollouts (issue 38). How far can each objective lag before it breaks, and do the corrections
move that boundary? Rules declared in ``data/specs/f12a_lag_search.toml`` before its runs.

The lag is ``rollout_lag`` = D rollout batches (gspo_lab/staleness.py). An *arm* is an objective with its π_old choice:
the behaviour policy's log-probs (``old_logp = sampler``), or a proximal π_old recomputed at the current weights
(``old_logp = recompute``), optionally weighted to the behaviour policy (``sampler_correction``).

- :func:`lag_table`: a spec's finished runs with ``arm`` (:func:`arm_of`), ``lag`` and the late per-update means each
  verdict prints beside it (clip fraction, the update's KL k3, the staleness KL k3) and the run's early ESS minimum.
- :func:`regime_verdict` (``f12a.regime``) and :func:`ladder_verdict` (``f12a.ladder``): the search's two rules.
- :func:`tolerates_verdict` (``f12.tolerates``) per arm and lag, :func:`largest_tolerated`; :func:`boundary_verdict`
  for ``f12.corrections`` and ``f12.gspo_vs_grpo``; the rule ``f12.ess``, read by :mod:`.ess`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gspo_lab.experiments.reading import remember
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.joint import Joint, combination
from gspo_record.kinds import Band
from gspo_record.rules import PENDING, Rule, register
from gspo_record.statements import Boundaries, Count, Interval

__all__ = ["SPEC_SEARCH", "SPEC_CONFIRM", "ARMS", "EXTRA_ARMS", "LADDER", "LADDER_UP", "MARGIN", "arm_of", "lag_table",
           "regime_verdict", "ladder_verdict", "drops", "tolerates_verdict", "largest_tolerated", "boundary_verdict",
           "boundary_words", "learning_verdict", "REGIME", "LADDER_RULE", "TOLERATES", "LEARNING", "CORRECTIONS",
           "GSPO_VS_GRPO", "ESS"]  # fmt: skip

SPEC_SEARCH, SPEC_CONFIRM = "f12a_lag_search", "f12b_lag_confirm"
#: the arms in the page's order: (objective, old_logp, sampler_correction) -> arm name
ARMS = {
    ("grpo", "sampler", None): "grpo/behaviour",
    ("gspo", "sampler", None): "gspo/behaviour",
    ("cispo", "sampler", None): "cispo/behaviour",
    ("grpo", "recompute", None): "grpo/proximal",
    ("grpo", "recompute", "token_truncate"): "grpo/proximal+token_truncate",
    ("gspo", "recompute", "sequence_mask"): "gspo/proximal+sequence_mask",
}
#: f12c's isolating arm (data/specs/f12c_lag_isolate.toml): not one of the search's arms, which f12a's rules read
EXTRA_ARMS = {("gspo", "recompute", None): "gspo/proximal"}
_ALL_ARMS = {**ARMS, **EXTRA_ARMS}
#: the search's ladder and the one f12a.ladder moves the confirmation to when no arm breaks by the top of it
LADDER, LADDER_UP = (0, 2, 4, 8, 16), (0, 4, 16, 32, 64)
#: the equivalence margin on late held-out accuracy, declared with the confirmation's 10 seeds
MARGIN = 0.1
#: f12a.ladder: no arm "visibly breaks" while its mean late accuracy at the ladder's top is within this of lag 0's
BREAKS_BY = 0.1
#: what a "tolerates" adds when its interval also lies below (above) 0: equivalent within the margin, not the same
DROP_SHOWN, GAIN_SHOWN = "(a drop inside the margin shown)", "(a gain inside the margin shown)"
#: f12.ess: scored only with at least this many failed and this many surviving D > 0 runs
ESS_MIN_EACH = 5
#: f12.ess: the warning is the minimum stale/ess_frac over rollouts [1, ESS_UNTIL] before any failure onset
ESS_UNTIL = 20
ESS_RESAMPLES, ESS_SEED = 10_000, 12
_DECLARED = "data/specs/f12a_lag_search.toml, before its runs"
_RANGE = (-1.0, 1.0)

REGIME = register(Rule(
    "f12a.regime", "12", {"qualifies": "qualifies: no arm collapses or freezes at lag 0", "fails": "fails"},
    {}, declared=_DECLARED, marker="- f12a.regime: \"qualifies\"", specs=(SPEC_SEARCH,),
))  # fmt: skip
LADDER_RULE = register(Rule(
    "f12a.ladder", "12",
    {"up": "no arm breaks by lag 16: the ladder moves up to {0, 4, 16, 32, 64}",
     "kept": "an arm breaks by lag 16: the ladder stays {0, 2, 4, 8, 16}"},
    {"BREAKS_BY": BREAKS_BY}, declared=_DECLARED, marker="- f12a.ladder: the confirmation's lags", specs=(SPEC_SEARCH,),
))  # fmt: skip
#: f12.tolerates' reading of a drop's statement (an equivalence reading on the margin): inside the margin tolerates,
#: below 0 and past it degrades, anything else (a gain past the margin too) inconclusive
TOLERATES_READS = {"within": "tolerates", "within_below": "tolerates", "within_above": "tolerates",
                   "below": "degrades", "above": "inconclusive", "inconclusive": "inconclusive"}  # fmt: skip
#: its words per statement outcome: a "tolerates" whose interval also lies below (above) 0 says so — equivalent
#: within the margin, not the same
TOLERATES_WORDS = {"within": "tolerates", "within_below": f"tolerates {DROP_SHOWN}",
                   "within_above": f"tolerates {GAIN_SHOWN}", "below": "degrades",
                   "above": "inconclusive (a gain past the margin)", "inconclusive": "inconclusive"}  # fmt: skip
TOLERATES = register(Rule(
    "f12.tolerates", "12",
    {"tolerates": "tolerates", "degrades": "degrades", "inconclusive": "inconclusive"},
    {"MARGIN": MARGIN, "LEVEL": 0.95}, declared=_DECLARED, null="inconclusive",
    marker="- f12.tolerates, per arm and lag D > 0", specs=(SPEC_CONFIRM,), reads=TOLERATES_READS,
))  # fmt: skip

LEARNING = register(Rule(
    "f12.learning", "12", {"shown": "learning shown", "none": "learning nothing shown"}, {"LEVEL": 0.95},
    declared=_DECLARED, null="none", marker="- Learning, not only tolerating", specs=(SPEC_CONFIRM,),
    reads={"above": "shown", "none": "none", "below": "none"},
))  # fmt: skip
#: f12.learning's words per statement outcome (below the cold start is "none" to the rule, and says where)
LEARNING_WORDS = {"above": "learning shown", "none": "learning nothing shown", "below": "below the cold start"}
#: a boundary statement's reading by the two rules below: equal boundaries move nothing, at the top or not
BOUNDARY_READS = {"higher": "up", "lower": "down", "same": "none", "both_top": "none"}


def _boundary_rule(name: str, outcomes: dict[str, str], marker: str) -> Rule:
    """A rule comparing two arms' largest tolerated lags (:func:`boundary_verdict`): up / down / none."""
    return register(Rule(name, "12", outcomes, {"MARGIN": MARGIN}, declared=_DECLARED, null="none", marker=marker,
                         specs=(SPEC_CONFIRM,), reads=BOUNDARY_READS))  # fmt: skip


CORRECTIONS = _boundary_rule(
    "f12.corrections",
    {"up": "moves the boundary up", "down": "moves the boundary down", "none": "no move shown"},
    "- f12.corrections (do the corrections move the boundary?)",
)
#: the labels name the boundary, which is what the rule compares: two margin readings, not a difference between the
#: arms (issue 48: "GRPO tolerates more lag" stood beside a difference of drops whose interval held 0)
GSPO_VS_GRPO = _boundary_rule(
    "f12.gspo_vs_grpo",
    {"up": "GSPO's boundary at a larger lag", "down": "GRPO's boundary at a larger lag", "none": "the same boundary"},
    "- f12.gspo_vs_grpo (does GSPO tolerate more lag than GRPO?)",
)  # fmt: skip
ESS = register(Rule(
    "f12.ess", "12",
    {"warns": "ESS warns of failure", "none": "no warning shown", "not_scored": "not scored: too few failures"},
    {"ESS_MIN_EACH": ESS_MIN_EACH, "ESS_UNTIL": ESS_UNTIL, "LEVEL": 0.95}, declared=_DECLARED,
    marker="- f12.ess (ESS as an early warning)", specs=(SPEC_CONFIRM,),
))  # fmt: skip


def arm_of(objective: str, old_logp: str, correction) -> str:
    """The arm name of a run (:data:`ARMS`); a correction read back from a table as NaN or "off" is none."""
    if correction is None or (isinstance(correction, float) and math.isnan(correction)) or correction == "off":
        correction = None
    key = (objective, old_logp, correction)
    if key not in _ALL_ARMS:
        raise ValueError(f"no f12 arm is (objective, old_logp, sampler_correction) = {key}; arms: {list(_ALL_ARMS)}")
    return _ALL_ARMS[key]


def _late_mean(series: dict, key: str, late_from: int) -> float:
    rollouts, values = series.get("rollout", []), series.get(key, [])
    late = [v for r, v in zip(rollouts, values, strict=False) if r >= late_from and v is not None and v == v]
    return float(np.mean(late)) if late else math.nan


def early_ess_min(series: dict, onset: float | None) -> float:
    """The minimum stale/ess_frac over rollouts [1, :data:`ESS_UNTIL`] before ``onset`` (the failure's first
    rollout; None for a run that did not fail); NaN when none is stored."""
    until = ESS_UNTIL if onset is None or onset != onset else min(ESS_UNTIL, int(onset) - 1)
    values = [v for r, v in zip(series.get("rollout", []), series.get("stale/ess_frac:mean", []), strict=False)
              if 1 <= r <= until and v is not None and v == v]  # fmt: skip
    return float(min(values)) if values else math.nan


def _check_lag(series: dict, late_from: int, key: str, lag: int) -> None:
    """A stale run's logged lag (``stale/lag``) over its late rollouts must be its config's ``rollout_lag`` = ``lag``:
    the queue ran D batches ahead once D batches had run. ValueError naming the cell otherwise (lag 0 logs none)."""
    lags = {v for r, v in zip(series.get("rollout", []), series.get("stale/lag:mean", []), strict=False)
            if r >= late_from and v is not None}  # fmt: skip
    if lags != ({float(lag)} if lag else set()):
        raise ValueError(f"cell {key}: its logged stale/lag over its late rollouts is {sorted(lags)}, not {lag}")


@remember()
def lag_table(name: str, seeds: str) -> pd.DataFrame:
    """Spec ``name``'s finished runs of seed set ``seeds``: arm, lag, seed, late_acc, collapsed, frozen, failed
    (either), clip, kl (the update's kl/k3), stale_kl (stale/kl_k3), over late rollouts, and ess_min
    (:func:`early_ess_min`)."""
    from gspo_record.f11.regimes import per_rollout
    from gspo_record.tables import declared, spec, with_base

    s = spec(name)
    t = declared(s, seeds)
    if t.empty:
        return pd.DataFrame(columns=["arm", "lag", "seed", "late_acc", "collapsed", "frozen", "failed", "key"])
    t = with_base(s, t, ("objective", "old_logp", "sampler_correction", "rollout_lag", "rollouts"))
    t = t.assign(arm=[arm_of(*r) for r in zip(t["objective"], t["old_logp"], t["sampler_correction"], strict=True)],
                 lag=t["rollout_lag"].astype(int))  # fmt: skip
    for column in ("collapsed", "frozen"):
        t[column] = t[column].fillna(False).astype(bool) if column in t else False
    t["failed"] = t["collapsed"] | t["frozen"]
    clip, kl, stale_kl, ess = [], [], [], []
    for key, rollouts, collapse_at, d in zip(t["key"], t["rollouts"], t.get("collapse_rollout", [None] * len(t)),
                                             t["lag"], strict=True):  # fmt: skip
        series = per_rollout(name, key)
        late_from = int(rollouts) // 2
        _check_lag(series, late_from, key, int(d))
        clip.append(_late_mean(series, "clip/token_frac:mean", late_from))
        kl.append(_late_mean(series, "kl/k3:mean", late_from))
        stale_kl.append(_late_mean(series, "stale/kl_k3:mean", late_from))
        ess.append(early_ess_min(series, collapse_at))
    return t.assign(clip=clip, kl=kl, stale_kl=stale_kl, ess_min=ess)


def _lag0(table: pd.DataFrame) -> pd.DataFrame:
    """The lag-0 runs, the reference every lag is read against."""
    return table[table["lag"] == 0]


def regime_verdict(table: pd.DataFrame, seeds: int = 1):
    """Rule ``f12a.regime`` on the lag-0 runs that collapsed or froze (k of n): "fails" when one did, "qualifies" once
    every arm has ``seeds`` lag-0 runs and none did; PENDING (a verdict) before (the page marks it provisional)."""
    zero = _lag0(table)
    k, counts = int(zero["failed"].sum()), zero.groupby("arm").size()
    if not k and any(counts.get(arm, 0) < seeds for arm in ARMS.values()):
        return REGIME.verdict(PENDING)
    number = Count(k, len(zero), at_least=5, at_most=0)
    return REGIME.state("f12a.regime", "does every arm run at lag 0 without a collapse or freeze?", number,
                        reads={"at_most": "qualifies", "between": "fails", "at_least": "fails"})  # fmt: skip


def ladder_outcome(parts) -> str:
    """``f12a.ladder``'s combination: "up" when every arm's change lies inside the band, else "kept"."""
    return "up" if all(o == "inside" for o in parts.values()) else "kept"


combination("f12a.ladder", ("up", "kept"), tuple(ARMS.values()), shown=("kept",))(lambda o: ladder_outcome(o))


def ladder_verdict(table: pd.DataFrame, top: int = LADDER[-1]):
    """Rule ``f12a.ladder`` about each arm's mean late accuracy at lag ``top`` minus lag 0's, in ±:data:`BREAKS_BY`:
    "up" when every one is, "kept" when one is not; PENDING (a verdict) until every arm has runs at both lags."""
    means = table[table["lag"].isin((0, top))].groupby(["arm", "lag"])["late_acc"].mean()
    if any((arm, lag) not in means.index for arm in ARMS.values() for lag in (0, top)):
        return LADDER_RULE.verdict(PENDING)
    gap = means.xs(top, level="lag") - means.xs(0, level="lag")
    parts = tuple((a, Band(float(gap[a]), -BREAKS_BY, BREAKS_BY, f"acc. at {top} − at 0")) for a in ARMS.values())
    return LADDER_RULE.state("f12a.ladder", "does every arm keep its lag-0 accuracy?", Joint("f12a.ladder", parts))


def drops(table: pd.DataFrame, arm: str, lag: int, metric: str = "late_acc") -> pd.Series:
    """Per seed: ``metric`` at ``lag`` minus at lag 0, for ``arm`` (paired by seed; named ``metric``)."""
    runs = table[table["arm"] == arm]
    return paired_diff(runs.assign(lag_id=runs["lag"]), lag, 0, metric, column="lag_id")


def tolerates_verdict(drop: pd.Series, rule: Rule = TOLERATES, id: str = "f12.tolerates", provisional: str = ""):
    """Rule ``f12.tolerates`` (or ``rule``, declared with its outcomes: ``f12c.lag32``) on one arm's per-seed drops at
    one lag (:func:`drops`), as statement ``id``: the declared 95 % interval (Student-t on [-1, 1]) inside [-MARGIN,
    MARGIN] → "tolerates"; its upper end below 0 → "degrades"; else "inconclusive" (:data:`TOLERATES_READS`).
    PENDING (a verdict) below 2 seeds. A "tolerates" whose interval also lies below (above) 0 says so
    (:data:`TOLERATES_WORDS`)."""
    values = [float(v) for v in drop if v == v]
    if len(values) < 2:
        return rule.verdict(PENDING)
    lo, hi = declared_t_interval(values, _RANGE)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return rule.verdict(PENDING)
    number = Interval.of(values, lambda _: (lo, hi), bounds=_RANGE, margin=MARGIN)
    return rule.state(id, "does the arm keep within the margin of its lag-0 accuracy at this lag?", number,
                      words=TOLERATES_WORDS, provisional=provisional)  # fmt: skip


def learning_verdict(late, cold: float, id: str = "f12.learning", provisional: str = ""):
    """Rule ``f12.learning`` on one arm's late held-out accuracies at one lag (per seed) against the cold start's
    accuracy ``cold``, as statement ``id`` about late − cold: "shown" when the declared 95 % interval of late − cold
    (Student-t on [0, 1], shifted) lies above 0, "none" otherwise; PENDING below 2 seeds. A "tolerates" beside "none"
    prints "tolerates, learning nothing shown" (declared with the search's rules)."""
    late = [float(x) for x in late if x == x]
    if len(late) < 2:
        return LEARNING.verdict(PENDING)
    lo, hi = declared_t_interval(late, (0.0, 1.0))
    if not math.isfinite(lo):
        return LEARNING.verdict(PENDING)
    number = Interval.of([x - cold for x in late], lambda _: (lo - cold, hi - cold), bounds=(-cold, 1.0 - cold))
    return LEARNING.state(id, "does the arm still learn over the cold start at this lag?", number,
                          words=LEARNING_WORDS, provisional=provisional)  # fmt: skip


def largest_tolerated(verdicts: dict[int, object]) -> int | None:
    """The largest lag D such that every lag > 0 up to D reads "tolerates" (0 when the smallest does not); None while
    one of them is PENDING. ``verdicts``: lag → :func:`tolerates_verdict`."""
    largest = 0
    for lag in sorted(v for v in verdicts if v > 0):
        outcome = verdicts[lag].rule_outcome
        if outcome == PENDING:
            return None
        if outcome != "tolerates":
            break
        largest = int(lag)
    return largest


def boundary_words(rule: Rule) -> dict[str, str]:
    """A boundary statement's words per outcome (:data:`BOUNDARY_READS`), from ``rule``'s labels; equal boundaries
    at the ladder's top say the ladder cannot separate them."""
    return {o: rule.outcomes[r] for o, r in BOUNDARY_READS.items()} | {
        "both_top": f"{rule.outcomes['none']}: both tolerate every lag tried"
    }


def boundary_verdict(rule: Rule, arm: int | None, against: int | None, top: int | None = None, *, id: str = "",
                     provisional: str = "", supersedes: tuple[str, ...] = (), secondary=None):  # fmt: skip
    """``f12.corrections`` / ``f12.gspo_vs_grpo`` / ``f12c.isolate`` as statement ``id`` (default: the rule's name)
    about the two largest tolerated lags (:class:`~gspo_record.statements.Boundaries`, "16 against 2"): "up" when
    ``arm``'s exceeds ``against``'s, "down" when it is smaller, "none" when equal — at ``top``, the largest lag
    tried, the words say the ladder cannot separate them. PENDING (a verdict) when either is unknown.
    ``secondary``: the paired difference of the drops printed beside it, a statement of its own."""
    if arm is None or against is None:
        return rule.verdict(PENDING)
    number = Boundaries(int(arm), int(against), int(top if top is not None else max(arm, against) + 1))
    return rule.state(id or rule.name, "which arm keeps within the margin to the larger lag?", number,
                      words=boundary_words(rule), provisional=provisional, supersedes=supersedes,
                      secondary=secondary)  # fmt: skip
