"""Every verdict rule of the findings page, driven through each of its outcomes on small synthetic tables.

:data:`CASES` holds, per rule, (what is checked, a zero-argument computation returning a Verdict, the expected
outcome). One test runs every case; another asserts that the cases of each registered rule reach all its outcomes, so
a new rule or outcome without a case fails here. ``tests/test_mutants.py`` reuses these cases as its rules' checks.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import gspo_record.f1.clipping as f1
import gspo_record.f2.candidate as f2c
import gspo_record.f2.collapse as f2
import gspo_record.f2.late as f2late
import gspo_record.f2.mechanism as f2e
import gspo_record.f2.remeasure as f2f
import gspo_record.f2.search as f2s
import gspo_record.f2.ten as f2t
import gspo_record.f3.volatility as f3
import gspo_record.f4.replay as f4
import gspo_record.f5.confirm as f5c
import gspo_record.f5.mask_form as f5g
import gspo_record.f5.precision as f5
import gspo_record.f5.r3 as f5r
import gspo_record.f5.topk as f5t
import gspo_record.f6.drift as f6d
import gspo_record.f6.length as f6b
import gspo_record.f6.stability as f6c
import gspo_record.f6.variance as f6
import gspo_record.f7.token_adv as f7
import gspo_record.f8.dense as f8
import gspo_record.f9.precursors as f9
import gspo_record.f10.adam as f10w
import gspo_record.f10.branch as f10z
import gspo_record.f10.dual as f10v
import gspo_record.f10.revert as f10r
import gspo_record.f10.sgd as f10y
import gspo_record.f10.ten as f10t
import gspo_record.f10.why as f10
import gspo_record.f11.arms as f11arms
import gspo_record.f11.corrections as f11c
import gspo_record.f11.ladder as f11e
import gspo_record.f11.successors as f11
import gspo_record.f12.ess as f12ess
import gspo_record.f12.isolate as f12c
import gspo_record.f12.lag as f12
import gspo_record.page  # noqa: F401  (imports every finding, so RULES is complete)
import gspo_record.rules as rules

S = pd.Series
UP = S([0.05, 0.04, 0.06, 0.03, 0.05])  # a paired difference whose interval lies above 0
DOWN = -UP
MIXED = S([0.04, -0.05, 0.03, -0.04, 0.01])  # mean -0.002, interval across 0
MIXED_POS = S([0.06, -0.05, 0.03, -0.04, 0.02])  # mean +0.004, interval across 0
# the page's bootstrap-t interval and the percentile bootstrap's lie above 0, the Student-t interval crosses 0
EDGE = S([0.10, 0.02, 0.03, 0.01, 0.02])


def _volatility(changes: dict[float, float]) -> pd.DataFrame:
    """moe-sort's change after one update per lr (5 seeds around each value)."""
    rows = [
        {"checkpoint": "moe-sort", "lr": lr, "seed": s, "change_k1": v * (1 + 0.02 * (s - 2))}
        for lr, v in changes.items()
        for s in range(5)
    ]
    return pd.DataFrame(rows)


def _factor(base: dict[float, list], variant: dict[float, list]) -> pd.DataFrame:
    rows = [
        {"checkpoint": ck, "lr": lr, "seed": s, "change_k1": v}
        for ck, d in (("sweep-sort", base), ("sweep-deep-sort", variant))
        for lr, vs in d.items()
        for s, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


SEP_BASE = {1e-4: [0.030, 0.031, 0.032, 0.033, 0.034], 3e-4: [0.10, 0.101, 0.102, 0.103, 0.104]}
ABOVE = [0.05, 0.051, 0.052, 0.053, 0.054]
OVERLAP = [0.025, 0.045, 0.030, 0.040, 0.035]  # mean 0.035 > the base's 0.032, intervals overlap
BELOW = [0.080, 0.081, 0.082, 0.083, 0.084]


def _premise(bf16: list[float], fp32: list[float]) -> pd.DataFrame:
    rows = [
        {"checkpoint": f"ck{i}", "seed": s, "bf16_seq_mean": b * (1 + 0.01 * s), "fp32_seq_mean": f * (1 + 0.01 * s)}
        for i, (b, f) in enumerate(zip(bf16, fp32, strict=True))
        for s in range(5)
    ]
    return pd.DataFrame(rows)


def _noise(ratio_by_len: dict[int, list[float]]) -> pd.DataFrame:
    """Per-seed noise ratios by length, the i-th value of each length from seed i."""
    return pd.DataFrame([{"length": L, "noise_ratio_kK": r, "seed": i} for L, rs in ratio_by_len.items()
                         for i, r in enumerate(rs)])  # fmt: skip


def _search(collapsed: dict[tuple[float, int, str], int] | None = None, lrs=(1e-4, 3e-5)) -> pd.DataFrame:
    """f6c's search table: every arm x length x lr on 2 seeds; ``collapsed`` maps (lr, L, arm) to how many seeds
    collapsed there."""
    collapsed = collapsed or {}
    rows = [{"lr": lr, "length": L, "objective": arm, "seed": seed, "late_acc": 0.4,
             "collapsed": seed < collapsed.get((lr, L, arm), 0), "frozen": False}
            for lr in lrs for L in (2, 4, 7) for arm in f6c.ARMS for seed in (0, 1)]  # fmt: skip
    return pd.DataFrame(rows)


def _gaps(gap_by_len: dict[int, list[float]]) -> pd.DataFrame:
    """f6c's per-seed GSPO − GRPO gaps per length (seed i is the i-th value of each list)."""
    return pd.DataFrame([{"seed": i, "length": L, "tokens": f6b.tokens(L), "gap": g}
                         for L, gs in gap_by_len.items() for i, g in enumerate(gs)])  # fmt: skip


def _noise_b(ratio_by_len: dict[int, list[float]]) -> pd.DataFrame:
    """f6b's table: add_format's digits L, their response tokens and the per-seed ratios."""
    table = _noise(ratio_by_len)
    return table.assign(tokens=[f6b.tokens(L) for L in table["length"]])


def _two(norm_grpo_dir, norm_gspo_dir, dir_gspo_norm, dir_grpo_norm):
    """f10.two_by_two on the four effects' per-seed differences, in the order of f10_why.EFFECTS."""
    return f10.two_by_two_verdict(_effects(norm_grpo_dir, norm_gspo_dir, dir_gspo_norm, dir_grpo_norm))


def _effects(*diffs):
    """The four effects' per-seed differences keyed as f10_why.EFFECTS, in its order."""
    return dict(zip(f10.EFFECTS, diffs, strict=True))


#: synthetic effects per 2×2 outcome (order of f10_why.EFFECTS) and per-seed differences per interval reading, for
#: the accounts' cases: each is a statement of its rule made from numbers that give that outcome
_TWO = {"size": (UP, UP, MIXED, MIXED), "content": (MIXED, MIXED, UP, UP), "both": (UP, UP, UP, UP),
        "neither": (MIXED, DOWN, MIXED, MIXED), "mixed": (UP, MIXED, MIXED, MIXED)}  # fmt: skip
_SIDE = {"higher": UP, "lower": DOWN, "none": MIXED, "pending": S([0.1])}  # one seed: pending


def _account(two: str, skip: str, relative: str):
    """f10.account on statements of f10.two_by_two, f10.skip_shrink and f10.relative with the given outcomes."""
    parts = (f10.two_by_two_verdict(_effects(*_TWO[two])), f10.skip_shrink_verdict(_SIDE[skip]),
             f10.relative_verdict(_SIDE[relative]))  # fmt: skip
    assert [p.outcome if p.outcome == rules.PENDING else p.rule_outcome for p in parts] == [two, skip, relative]
    return f10.account_verdict(*parts)


def _account_ten(two: str, skip: str, relative: str):
    """f10t.account on statements of f10t.two_by_two, f10u.skip_shrink and f10.relative with the given outcomes."""
    parts = (f10t.ten_verdict(_effects(*_TWO[two])), f10t.skip_ten_verdict(_SIDE[skip]),
             f10.relative_verdict(_SIDE[relative]))  # fmt: skip
    assert [p.outcome if p.outcome == rules.PENDING else p.rule_outcome for p in parts] == [two, skip, relative]
    return f10t.ten_account_verdict(*parts)


def _points(rows: list[tuple]) -> pd.DataFrame:
    """Map points as f2_search builds them: index (lr, M), columns (k|n, grpo|gspo)."""
    idx = pd.MultiIndex.from_tuples([(r[0], r[1]) for r in rows], names=["lr", "minibatches"])
    cols = pd.MultiIndex.from_product([["k", "n"], ["grpo", "gspo"]])
    return pd.DataFrame([[r[2], r[3], r[4], r[5]] for r in rows], index=idx, columns=cols)


def _dose(means: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"clip": c, "seed": s, "late_acc": v + 0.01 * s} for c, v in means.items() for s in range(5)])


def _ten_seed_cases(arm: str, verdict) -> list[tuple]:
    """A ten-seed Student-t rule's cases on per-seed differences: above 0, below, across, and the edge case where the
    page's bootstrap-t would read "higher" but the declared Student-t does not."""
    return [
        (f"{arm} higher", lambda: verdict(UP), "higher"),
        (f"{arm} lower", lambda: verdict(DOWN), "lower"),
        ("across 0", lambda: verdict(MIXED), "none"),
        ("t interval across 0 where the bootstrap's is above", lambda: verdict(EDGE), "none"),
    ]


#: synthetic (arm − A, arm − SKIP) per f10w.arm outcome
_ARM = {"protects": (UP, MIXED), "harms": (MIXED, DOWN), "between": (MIXED, MIXED), "pending": (UP[:1], MIXED[:1])}


def _adam(state: str, step: str, reset: str, random: str):
    """``f10w.account`` on four arm statements with these outcomes (STATE, STEP, RESET, RANDOM)."""
    outcomes = dict(zip(f10w.ARMS.values(), (state, step, reset, random), strict=True))
    arms = {arm: f10w.arm_verdict(*_ARM[o]) for arm, o in outcomes.items()}
    assert {a: v.outcome for a, v in arms.items()} == outcomes
    return f10w.account_verdict(arms)


def _revert(branch_after, arm: str = "CAP10") -> pd.DataFrame:
    """Five collapsed trunks (0.5 before, ~0.05 after) and one arm's branches at ``branch_after`` per seed."""
    trunk_after = [0.05, 0.02, 0.08, 0.04, 0.06]
    rows = [{"seed": s, "arm_id": "TRUNK", "late_acc": a} for s, a in enumerate(trunk_after)]
    rows += [{"seed": s, "arm_id": arm, "late_acc": a} for s, a in enumerate(branch_after)]
    return pd.DataFrame(rows).assign(pre_acc=0.5)


def _two_by_two_cases(verdict) -> list[tuple]:
    """A ten-seed 2×2 rule's cases (Student-t on each of the four effects): every outcome, and the edge case where
    the page's bootstrap-t would read the second norm effect as up but the declared Student-t does not."""
    return [
        ("norm effects up, direction across 0", lambda: verdict(_effects(UP, UP, MIXED, MIXED)), "size"),
        ("direction effects up, norm across 0", lambda: verdict(_effects(MIXED, MIXED, UP, UP)), "content"),
        ("all four up", lambda: verdict(_effects(UP, UP, UP, UP)), "both"),
        ("none up", lambda: verdict(_effects(MIXED, DOWN, MIXED, MIXED)), "neither"),
        ("one norm effect up only", lambda: verdict(_effects(UP, MIXED, MIXED, MIXED)), "mixed"),
        (
            "t interval across 0 where the bootstrap's is above",
            lambda: verdict(_effects(UP, EDGE, MIXED, MIXED)),
            "mixed",
        ),
    ]


def _branch_runs() -> pd.DataFrame:
    """Five trunks whose late accuracy spreads widely and branches that sit 0.1 above each own trunk, give or take."""
    trunk = [0.05, 0.30, 0.10, 0.45, 0.20]
    lift = [0.10, 0.11, 0.09, 0.10, 0.12]
    rows = [{"seed": s, "arm_id": "TRUNK", "late_acc": t} for s, t in enumerate(trunk)]
    pairs = enumerate(zip(trunk, lift, strict=True))
    rows += [{"seed": s, "arm_id": "CAP10@10", "late_acc": t + d} for s, (t, d) in pairs]
    return pd.DataFrame(rows)


def _skill_v2(warned: int, collapsing: int, false: int, stable: int):
    """``f9v2.skill`` on counts scored as version 2 scores them: Wilson intervals at f9's LEVEL_V2."""
    from gspo_lab.precursors import _wilson

    (wl, wh), (fl, fh) = (_wilson(k, n, f9.LEVEL_V2) for k, n in ((warned, collapsing), (false, stable)))
    row = {"collapsing": collapsing, "stable": stable, "warned_lo": wl, "warned_hi": wh, "false_lo": fl, "false_hi": fh,
           "warned": warned, "false_alarms": false}  # fmt: skip
    return f9.skill_verdict(row, f9.SKILL_V2, level=f9.LEVEL_V2)


def _skill(warned: int, collapsing: int, false: int, stable: int) -> dict:
    """A score row of gspo_lab.precursors.score for one rule."""
    from gspo_lab.experiments.stats import wilson

    (wl, wh), (fl, fh) = wilson(warned, collapsing), wilson(false, stable)
    return {
        "collapsing": collapsing,
        "stable": stable,
        "warned": warned,
        "false_alarms": false,
        "warned_lo": wl,
        "warned_hi": wh,
        "false_lo": fl,
        "false_hi": fh,
    }


def _v(outcome: str) -> rules.Verdict:
    return rules.Verdict("x", outcome, outcome)


DUAL, CLIP10, CLIP30 = (f2e.INTERVENTIONS[k] for k in [("grpo_dual_clip", "off"), ("grpo", "10"), ("grpo", "30")])

#: rule name -> [(what, computation, expected outcome)]


def _position_cases(rule):
    """The cases of a rule that reads finding 11's position (``f11b.position``, ``f11e.dose``, ``f11f.arm``): every
    outcome of ``f11.position``'s table, judged under ``rule()`` (a thunk: the rule modules import late)."""
    pairs = [
        ("above GRPO and above GSPO", UP, UP, "above_gspo"),
        ("above GRPO, across 0 against GSPO", UP, MIXED, "gspo_like"),
        ("above GRPO, below GSPO", UP, DOWN, "between"),
        ("across 0 against GRPO, below GSPO", MIXED, DOWN, "grpo_like"),
        ("below GRPO, across 0 against GSPO", DOWN, MIXED, "below_grpo"),
        ("below GRPO and below GSPO", DOWN, DOWN, "below_grpo"),
        ("both across 0", MIXED_POS, MIXED, "unresolved"),
    ]
    return [(name, lambda g=g, s=s: f11.position_verdict(g, s, rule()), out) for name, g, s, out in pairs]


def _lag_runs(late: dict | None = None, failed: tuple = (), seeds=(0, 1)) -> pd.DataFrame:
    """f12's runs: every arm at lags 0 and 16 on ``seeds``, late accuracy 0.7 unless ``late[(arm, lag)]`` says
    otherwise; ``failed``: the (arm, lag) cells whose runs collapsed."""
    late = late or {}
    rows = [{"arm": a, "lag": lag, "seed": s, "late_acc": late.get((a, lag), 0.7) + 0.01 * s,
             "failed": (a, lag) in failed} for a in f12.ARMS.values() for lag in (0, 16) for s in seeds]  # fmt: skip
    return pd.DataFrame(rows)


def _tol(lag_outcomes: dict):
    """A lag -> verdict map for ``largest_tolerated`` (outcome keys of f12.tolerates)."""
    return {lag: f12.TOLERATES.verdict(o) for lag, o in lag_outcomes.items()}


def _ess(bad_low: bool, n_bad: int = 6, n_good: int = 6) -> pd.DataFrame:
    """Stale runs whose early ESS minimum is low for the failed ones (``bad_low``) or unrelated to failure."""
    rng = np.random.default_rng(3)
    bad = rng.uniform(0.05, 0.2, n_bad) if bad_low else rng.uniform(0.3, 0.9, n_bad)
    good = rng.uniform(0.3, 0.9, n_good)
    return pd.DataFrame({"ess_min": np.r_[bad, good], "failed": [True] * n_bad + [False] * n_good})


CASES: dict[str, list[tuple[str, object, str]]] = {
    "f1.clip_ratio": [
        ("ratios ~105", lambda: f1.clip_ratio_verdict(S([100.0, 110, 95, 105, 120]), 5), "reproduced"),
        ("ratios ~10", lambda: f1.clip_ratio_verdict(S([10.0, 12, 9, 11, 10]), 5), "partly"),
        ("ratios ~1", lambda: f1.clip_ratio_verdict(S([1.0, 1.2, 0.9, 1.1, 1.0]), 5), "not"),
    ],
    "f1.accuracy": [
        ("GSPO lower", lambda: f1.accuracy_verdict(DOWN), "lower"),
        ("GSPO higher", lambda: f1.accuracy_verdict(UP), "higher"),
        ("interval across 0", lambda: f1.accuracy_verdict(MIXED), "none"),
    ],
    "collapse.class": [
        ("5/5", lambda: rules.class_verdict(5, 5), "collapses"),
        ("1/5", lambda: rules.class_verdict(1, 5), "stable"),
        ("3/5", lambda: rules.class_verdict(3, 5), "between"),
        (
            "8/10 and 2/10",
            lambda: rules.class_verdict(8, 10) if rules.class_verdict(2, 10).outcome == "stable" else _v("wrong"),
            "collapses",
        ),
    ],
    "f2.collapse": [
        ("GRPO 5/5, GSPO 0/5", lambda: f2.collapse_verdict(5, 5, 0, 5, 5), "separates"),
        ("GRPO 5/5, GSPO 1/5 (the target needs 0)", lambda: f2.collapse_verdict(5, 5, 1, 5, 5), "mixed"),
        ("both 5/5", lambda: f2.collapse_verdict(5, 5, 4, 5, 5), "both"),
        ("both <= 1/5", lambda: f2.collapse_verdict(1, 5, 0, 5, 5), "neither"),
    ],
    "f2.dense": [
        ("4/5", lambda: f2.dense_verdict(4, 5, 5), "not_specific"),
        ("1/5", lambda: f2.dense_verdict(1, 5, 5), "specific"),
        ("2/5", lambda: f2.dense_verdict(2, 5, 5), "mixed"),
    ],
    "f2.search": [
        ("clip 1, M 8", lambda: f2s.search_hit(S([True, True]), S([False, False]), 2, "1", 8), "target"),
        ("clip 1, M 16", lambda: f2s.search_hit(S([True, True]), S([False, False]), 2, "1", 16), "outside"),
        ("GSPO collapsed once", lambda: f2s.search_hit(S([True, True]), S([True, False]), 2, "1", 8), "none"),
    ],
    "f2.map": [
        (
            "GSPO collapses, never more often (rates, not counts)",
            lambda: f2s.map_verdict(_points([(1e-4, 8, 1, 2, 2, 10), (5e-5, 16, 5, 0, 5, 5)])),
            "boundary",
        ),
        ("GSPO never", lambda: f2s.map_verdict(_points([(1e-4, 8, 2, 0, 2, 2)])), "immune"),
        ("GSPO more often somewhere", lambda: f2s.map_verdict(_points([(1e-4, 8, 0, 1, 2, 2)])), "mixed"),
    ],
    "f2.target": [
        ("GRPO 4/5, GSPO 0/5", lambda: f2c.target_verdict(4, 5, 0, 5, 5), "met"),
        ("GRPO 4/5, GSPO 1/5", lambda: f2c.target_verdict(4, 5, 1, 5, 5), "not"),
    ],
    "f2e.dual_clip": [
        ("1/5, peak 50", lambda: f2e.intervention_verdict(DUAL, 1, 5, 50.0, 5), "low"),
        ("0/5 but peak 150", lambda: f2e.intervention_verdict(DUAL, 0, 5, 150.0, 5), "inconclusive"),
        ("4/5", lambda: f2e.intervention_verdict(DUAL, 4, 5, 50.0, 5), "high"),
    ],
    "f2e.clip10": [
        ("0/5", lambda: f2e.intervention_verdict(CLIP10, 0, 5, 300.0, 5), "low"),
        ("4/5", lambda: f2e.intervention_verdict(CLIP10, 4, 5, 300.0, 5), "high"),
        ("2/5", lambda: f2e.intervention_verdict(CLIP10, 2, 5, 300.0, 5), "inconclusive"),
    ],
    "f2e.clip30": [
        ("1/5", lambda: f2e.intervention_verdict(CLIP30, 1, 5, 300.0, 5), "low"),
        ("5/5", lambda: f2e.intervention_verdict(CLIP30, 5, 5, 300.0, 5), "high"),
        ("3/5", lambda: f2e.intervention_verdict(CLIP30, 3, 5, 300.0, 5), "inconclusive"),
    ],
    "f2e.dose_confirm": [
        ("MoE 4/5, dense 1/5", lambda: f2e.dose_confirm_verdict(4, 5, 1, 5, 10), "confirmed"),
        ("MoE 2/5, dense 4/5", lambda: f2e.dose_confirm_verdict(2, 5, 4, 5, 10), "not"),
    ],
    "f2e.dose_trend": [
        (
            "rising at every cap",
            lambda: f2e.dose_trend_verdict(_dose({"off": 0.1, "30": 0.2, "10": 0.3, "1": 0.5})),
            "rises",
        ),
        (
            "rising overall only",
            lambda: f2e.dose_trend_verdict(_dose({"off": 0.1, "30": 0.3, "10": 0.2, "1": 0.5})),
            "overall",
        ),
        ("flat", lambda: f2e.dose_trend_verdict(_dose({"off": 0.3, "30": 0.3, "10": 0.3, "1": 0.3})), "none"),
    ],
    "f2e.reward_auc": [
        ("GSPO higher", lambda: f2c.reward_auc_verdict(UP), "higher"),
        ("GSPO lower", lambda: f2c.reward_auc_verdict(DOWN), "lower"),
        ("across 0", lambda: f2c.reward_auc_verdict(MIXED), "none"),
    ],
    "f2s.robust": [
        ("same outcome", lambda: f2f.robust_verdict(_v("high"), _v("high")), "same"),
        ("outcome changes", lambda: f2f.robust_verdict(_v("high"), _v("low")), "flips"),
    ],
    "f2f.last": [
        ("last evaluation gives the first outcome back", lambda: f2f.last_verdict(_v("high"), _v("high")), "last"),
        ("still changed with the last evaluation alone", lambda: f2f.last_verdict(_v("high"), _v("low")), "holds"),
    ],
    "f5t.replay": [
        ("higher", lambda: f5t.replay_verdict(UP), "higher"),
        ("lower", lambda: f5t.replay_verdict(DOWN), "lower"),
        ("across 0", lambda: f5t.replay_verdict(MIXED), "none"),
    ],
    "f5r.r3": [
        ("higher", lambda: f5r.r3_verdict(UP), "higher"),
        ("lower", lambda: f5r.r3_verdict(DOWN), "lower"),
        ("across 0", lambda: f5r.r3_verdict(MIXED), "none"),
    ],
    "f5g.form": [
        ("higher", lambda: f5g.form_verdict(UP), "higher"),
        ("lower", lambda: f5g.form_verdict(DOWN), "lower"),
        ("across 0", lambda: f5g.form_verdict(MIXED), "none"),
    ],
    "f2r.late": [
        ("higher", lambda: f2late.late_verdict(UP), "higher"),
        ("lower", lambda: f2late.late_verdict(DOWN), "lower"),
        ("across 0", lambda: f2late.late_verdict(MIXED), "none"),
    ],
    "f2e.reward_confirm": [
        ("interval above 0", lambda: f2c.reward_confirm_verdict(UP), "confirmed"),
        ("across 0, mean above 0", lambda: f2c.reward_confirm_verdict(MIXED_POS), "not"),
        ("below 0", lambda: f2c.reward_confirm_verdict(DOWN), "not"),
    ],
    "f7.confirm": [
        ("interval above 0", lambda: f7.confirm_verdict(UP), "confirmed"),
        ("across 0, mean above 0", lambda: f7.confirm_verdict(MIXED_POS), "not"),
    ],
    "f3.volatility": [
        (
            "within 2x at 3e-5 and 1e-4",
            lambda: f3.volatility_verdict(_volatility({3e-5: 0.06, 1e-4: 0.12, 3e-4: 0.4})),
            "reproduced",
        ),
        (
            "within 2x at 1e-4 only",
            lambda: f3.volatility_verdict(_volatility({3e-5: 0.03, 1e-4: 0.09, 3e-4: 0.23})),
            "partly",
        ),
        ("never within 2x", lambda: f3.volatility_verdict(_volatility({3e-5: 0.01, 1e-4: 0.03, 3e-4: 0.04})), "not"),
    ],
    "f3.factor": [
        (
            "above at one lr",
            lambda: f3.factor_verdict(_factor(SEP_BASE, {1e-4: ABOVE, 3e-4: SEP_BASE[3e-4]}), "sweep-deep-sort")[0],
            "raises",
        ),
        (
            "below at one lr",
            lambda: f3.factor_verdict(
                _factor(SEP_BASE, {1e-4: [0.01] * 4 + [0.011], 3e-4: SEP_BASE[3e-4]}), "sweep-deep-sort"
            )[0],
            "lowers",
        ),
        (
            "above and below",
            lambda: f3.factor_verdict(_factor(SEP_BASE, {1e-4: ABOVE, 3e-4: [0.05] * 4 + [0.051]}), "sweep-deep-sort")[
                0
            ],
            "mixed",
        ),
        (
            "overlapping intervals, higher mean",
            lambda: f3.factor_verdict(_factor(SEP_BASE, {1e-4: OVERLAP, 3e-4: SEP_BASE[3e-4]}), "sweep-deep-sort")[0],
            "none",
        ),
    ],
    "f4.replay": [
        ("plain 5/5, R2 0/5", lambda: f4.replay_verdict(5, 5, 0, 5), "prevented"),
        ("plain 5/5, R2 5/5", lambda: f4.replay_verdict(5, 5, 5, 5), "not"),
        ("plain 0/5", lambda: f4.replay_verdict(0, 5, 0, 5), "none"),
    ],
    "f5.premise": [
        ("bf16 above ε, floor below", lambda: f5.premise_verdict(_premise([2e-3, 1e-3], [1e-7, 1e-7])), "holds"),
        ("bf16 below ε", lambda: f5.premise_verdict(_premise([1e-4, 5e-5], [1e-7, 1e-7])), "not"),
        ("the floor above ε too", lambda: f5.premise_verdict(_premise([2e-3, 1e-3], [1e-3, 1e-3])), "mixed"),
    ],
    "f5.claim": [
        ("GSPO close, GRPO not", lambda: f5.claim_verdict(S([0.1] * 5), S([0.01] * 5), 5), "reproduced"),
        ("both close", lambda: f5.claim_verdict(S([0.01] * 5), S([0.02] * 5), 5), "indistinct"),
        ("GSPO far", lambda: f5.claim_verdict(S([0.01] * 5), S([0.1] * 5), 5), "not"),
    ],
    "f5.nonzero": [
        ("higher", lambda: f5.nonzero_verdict(UP), "higher"),
        ("lower", lambda: f5.nonzero_verdict(DOWN), "lower"),
        ("across 0", lambda: f5.nonzero_verdict(MIXED), "none"),
    ],
    "f5.confirm": [
        ("same sign again", lambda: f5c.confirm_verdict(UP, UP), "confirmed"),
        ("opposite sign on fresh seeds", lambda: f5c.confirm_verdict(UP, DOWN), "not"),
        ("first interval across 0", lambda: f5c.confirm_verdict(MIXED, UP), "nothing"),
    ],
    "f6.above_one": [
        ("above", lambda: f6.above_one_verdict(1 + UP * 10), "above"),
        ("below", lambda: f6.above_one_verdict(1 + DOWN * 10), "below"),
        ("across 1", lambda: f6.above_one_verdict(1 + MIXED * 10), "inside"),
    ],
    "f6.grows": [
        (
            "rising",
            lambda: f6.grows_verdict(_noise({4: [1.0, 1.1, 0.9], 8: [1.5, 1.6, 1.4], 16: [2.0, 2.1, 1.9]})),
            "grows",
        ),
        (
            "falling",
            lambda: f6.grows_verdict(_noise({4: [2.0, 2.1, 1.9], 8: [1.5, 1.6, 1.4], 16: [1.0, 1.1, 0.9]})),
            "shrinks",
        ),
        (
            "noisy, slightly rising mean",
            lambda: f6.grows_verdict(
                _noise({4: [0.6, 1.9, 1.2, 0.8, 1.5], 8: [2.2, 0.7, 1.1, 1.6, 0.9], 16: [1.0, 2.3, 0.8, 1.7, 1.2]})
            ),
            "none",
        ),
    ],
    "f6b.above_one": [
        ("above", lambda: f6.above_one_verdict(1 + UP * 10, f6b.ABOVE_ONE_B), "above"),
        ("below", lambda: f6.above_one_verdict(1 + DOWN * 10, f6b.ABOVE_ONE_B), "below"),
        ("across 1", lambda: f6.above_one_verdict(1 + MIXED * 10, f6b.ABOVE_ONE_B), "inside"),
    ],
    "f6b.grows": [
        (
            "rising",
            lambda: f6.grows_verdict(
                _noise_b({2: [1.0, 1.1, 0.9], 4: [1.5, 1.6, 1.4], 7: [2.0, 2.1, 1.9]}), f6b.GROWS_B, "tokens"
            ),
            "grows",
        ),
        (
            "falling",
            lambda: f6.grows_verdict(
                _noise_b({2: [2.0, 2.1, 1.9], 4: [1.5, 1.6, 1.4], 7: [1.0, 1.1, 0.9]}), f6b.GROWS_B, "tokens"
            ),
            "shrinks",
        ),
        (
            "noisy, slightly rising mean",
            lambda: f6.grows_verdict(
                _noise_b({2: [0.6, 1.9, 1.2, 0.8, 1.5], 4: [2.2, 0.7, 1.1, 1.6, 0.9], 7: [1.0, 2.3, 0.8, 1.7, 1.2]}),
                f6b.GROWS_B,
                "tokens",
            ),
            "none",
        ),
    ],
    "f6c.regime": [
        (
            "GRPO collapses at L = 7 only, both lrs",
            lambda: f6c.regime_verdict(_search({(1e-4, 7, "grpo"): 2, (3e-5, 7, "grpo"): 1})),
            "high",
        ),
        ("GSPO collapses at L = 7 at 1e-4", lambda: f6c.regime_verdict(_search({(1e-4, 7, "gspo"): 1})), "low"),
        (
            "an arm collapses at L = 2 at both lrs",
            lambda: f6c.regime_verdict(_search({(1e-4, 2, "grpo_token_mean"): 1, (3e-5, 2, "grpo"): 2})),
            "none",
        ),
    ],
    "f6c.gap_grows": [
        (
            "rising",
            lambda: f6c.gap_grows_verdict(_gaps({2: [0.0, 0.02, -0.01], 4: [0.05, 0.07, 0.04], 7: [0.1, 0.12, 0.09]})),
            "grows",
        ),
        (
            "falling",
            lambda: f6c.gap_grows_verdict(_gaps({2: [0.1, 0.12, 0.09], 4: [0.05, 0.07, 0.04], 7: [0.0, 0.02, -0.01]})),
            "shrinks",
        ),
        (
            "noisy, slightly rising mean",
            lambda: f6c.gap_grows_verdict(
                _gaps(
                    {
                        2: [-0.1, 0.1, 0.0, -0.05, 0.05],
                        4: [0.12, -0.1, 0.0, 0.06, -0.04],
                        7: [-0.06, 0.15, -0.08, 0.07, 0.0],
                    }
                )
            ),
            "none",
        ),
    ],
    "f6c.gap": [
        ("above", lambda: f6c.gap_verdict(UP), "above"),
        ("below", lambda: f6c.gap_verdict(DOWN), "below"),
        ("across 0", lambda: f6c.gap_verdict(MIXED), "none"),
    ],
    "f12a.regime": [
        ("no lag-0 failure", lambda: f12.regime_verdict(_lag_runs()), "qualifies"),
        ("a lag-0 collapse", lambda: f12.regime_verdict(_lag_runs(failed=(("cispo/behaviour", 0),))), "fails"),
        (
            "an arm without a lag-0 run",
            lambda: f12.regime_verdict(_lag_runs().query("not (arm == 'gspo/behaviour' and lag == 0)")),
            rules.PENDING,
        ),
    ],
    "f12a.ladder": [
        ("every arm within 0.1 at 16", lambda: f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.62})), "up"),
        ("one arm 0.2 lower at 16", lambda: f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.5})), "kept"),
    ],
    "f12.tolerates": [
        ("drops inside the margin", lambda: f12.tolerates_verdict(UP - 0.04), "tolerates"),
        ("drops below 0", lambda: f12.tolerates_verdict(DOWN * 4), "degrades"),
        ("across the margin", lambda: f12.tolerates_verdict(S([0.05, -0.2, 0.1, -0.15, 0.0])), "inconclusive"),
    ],
    "f12.learning": [
        ("well above the cold start", lambda: f12.learning_verdict([0.70, 0.72, 0.71, 0.69, 0.73], 0.33), "shown"),
        ("one seed at the cold start", lambda: f12.learning_verdict([0.34, 0.36, 0.80, 0.33, 0.35], 0.33), "none"),
        ("one seed", lambda: f12.learning_verdict([0.7], 0.33), rules.PENDING),
    ],
    "f12.corrections": [
        (
            "larger",
            lambda: f12.boundary_verdict(
                f12.CORRECTIONS, f12.largest_tolerated(_tol({2: "tolerates", 4: "tolerates", 8: "degrades"})), 2
            ),
            "up",
        ),
        (
            "smaller",
            lambda: f12.boundary_verdict(
                f12.CORRECTIONS, f12.largest_tolerated(_tol({2: "inconclusive", 4: "tolerates"})), 2
            ),
            "down",
        ),
        ("equal", lambda: f12.boundary_verdict(f12.CORRECTIONS, 4, 4), "none"),
        (
            "one pending",
            lambda: f12.boundary_verdict(
                f12.CORRECTIONS, f12.largest_tolerated(_tol({2: "tolerates", 4: rules.PENDING})), 2
            ),
            rules.PENDING,
        ),
    ],
    "f12.gspo_vs_grpo": [
        ("GSPO larger", lambda: f12.boundary_verdict(f12.GSPO_VS_GRPO, 16, 4), "up"),
        ("GSPO smaller", lambda: f12.boundary_verdict(f12.GSPO_VS_GRPO, 0, 4), "down"),
        ("equal", lambda: f12.boundary_verdict(f12.GSPO_VS_GRPO, 8, 8), "none"),
    ],
    "f12c.isolate": [
        ("larger", lambda: f12.boundary_verdict(f12c.ISOLATE, 16, 2), "up"),
        ("smaller", lambda: f12.boundary_verdict(f12c.ISOLATE, 2, 16), "down"),
        ("equal", lambda: f12.boundary_verdict(f12c.ISOLATE, 16, 16, 16), "none"),
        ("one pending", lambda: f12.boundary_verdict(f12c.ISOLATE, None, 16), rules.PENDING),
    ],
    "f12c.lag32": [
        ("drops inside the margin", lambda: f12.tolerates_verdict(UP - 0.04, f12c.LAG32), "tolerates"),
        ("drops below 0", lambda: f12.tolerates_verdict(DOWN * 4, f12c.LAG32), "degrades"),
        (
            "across the margin",
            lambda: f12.tolerates_verdict(S([0.05, -0.2, 0.1, -0.15, 0.0]), f12c.LAG32),
            "inconclusive",
        ),
    ],
    "f12.ess": [
        ("failed runs had low ESS", lambda: f12ess.ess_verdict(_ess(True)), "warns"),
        ("ESS unrelated", lambda: f12ess.ess_verdict(_ess(False)), "none"),
        ("4 failures", lambda: f12ess.ess_verdict(_ess(True, n_bad=4)), "not_scored"),
    ],
    "f6d.drift": [
        ("longer", lambda: f6d.drift_verdict(UP * 100), "longer"),
        ("shorter", lambda: f6d.drift_verdict(DOWN * 100), "shorter"),
        ("across 0", lambda: f6d.drift_verdict(MIXED * 100), "none"),
    ],
    "f6d.luspo": [
        ("GSPO longer", lambda: f6d.luspo_verdict(UP * 100), "longer"),
        ("GSPO shorter", lambda: f6d.luspo_verdict(DOWN * 100), "shorter"),
        ("across 0", lambda: f6d.luspo_verdict(MIXED * 100), "none"),
    ],
    "f6.relvar_change": [
        ("rises", lambda: f6.relvar_change_verdict(UP), "rises"),
        ("falls", lambda: f6.relvar_change_verdict(DOWN), "falls"),
        ("across 0", lambda: f6.relvar_change_verdict(MIXED), "none"),
    ],
    "f7.token_credit": [
        ("interval above 0", lambda: f7.credit_verdict(UP), "helps"),
        ("across 0, mean above 0", lambda: f7.credit_verdict(MIXED_POS), "none"),
    ],
    "f9.skill": [
        ("warned interval above the false-alarm one", lambda: f9.skill_verdict(_skill(8, 10, 1, 20)), "warns"),
        ("false alarms above warnings", lambda: f9.skill_verdict(_skill(1, 10, 15, 20)), "inverse"),
        ("overlapping", lambda: f9.skill_verdict(_skill(4, 10, 6, 20)), "chance"),
    ],
    "f9v2.skill": [
        ("warned interval above the false-alarm one", lambda: _skill_v2(8, 10, 1, 20), "warns"),
        ("false alarms above warnings", lambda: _skill_v2(0, 10, 18, 20), "inverse"),
        ("warns at 95 % but not at the Bonferroni level", lambda: _skill_v2(6, 10, 1, 20), "chance"),
    ],
    "f10.late": [
        ("higher", lambda: f10.late_verdict(UP), "higher"),
        ("lower", lambda: f10.late_verdict(DOWN), "lower"),
        ("across 0, mean above 0", lambda: f10.late_verdict(MIXED_POS), "none"),
    ],
    "f10.two_by_two": [
        ("norm effects only (directions across 0, means above)", lambda: _two(UP, UP, MIXED_POS, MIXED_POS), "size"),
        ("direction effects only", lambda: _two(MIXED, MIXED, UP, UP), "content"),
        ("all four", lambda: _two(UP, UP, UP, UP), "both"),
        ("none", lambda: _two(MIXED, MIXED_POS, MIXED, DOWN), "neither"),
        ("one norm effect only", lambda: _two(UP, MIXED, MIXED, MIXED), "mixed"),
        ("both norm effects and one direction effect", lambda: _two(UP, UP, UP, MIXED), "mixed"),
    ],
    "f10.skip_shrink": [
        ("skip higher", lambda: f10.skip_shrink_verdict(UP), "higher"),
        ("skip lower", lambda: f10.skip_shrink_verdict(DOWN), "lower"),
        ("across 0", lambda: f10.skip_shrink_verdict(MIXED), "none"),
    ],
    "f10.relative": [
        ("GSPO higher", lambda: f10.relative_verdict(UP), "higher"),
        ("GSPO lower", lambda: f10.relative_verdict(DOWN), "lower"),
        ("across 0, mean above 0", lambda: f10.relative_verdict(MIXED_POS), "none"),
    ],
    "f10.dual_cap": [
        ("dual-clip higher", lambda: f10.dual_cap_verdict(UP), "higher"),
        ("dual-clip lower", lambda: f10.dual_cap_verdict(DOWN), "lower"),
        ("across 0", lambda: f10.dual_cap_verdict(MIXED), "none"),
    ],
    "f10c.rel_gspo": [
        ("interval above 0", lambda: f10.rel_gspo_verdict(UP), "confirmed"),
        ("across 0, mean above 0", lambda: f10.rel_gspo_verdict(MIXED_POS), "not"),
        ("below 0", lambda: f10.rel_gspo_verdict(DOWN), "not"),
    ],
    "f10.account": [
        ("size in the 2×2, skip and relative higher", lambda: _account("size", "higher", "higher"), "both"),
        ("size in the 2×2 only", lambda: _account("size", "none", "none"), "size"),
        ("size in the 2×2, shrink beats skip", lambda: _account("size", "lower", "none"), "size"),
        ("content in the 2×2", lambda: _account("content", "none", "none"), "content"),
        ("neither, GSPO keeps its lead", lambda: _account("neither", "none", "higher"), "content"),
        ("both in the 2×2", lambda: _account("both", "none", "none"), "both"),
        ("mixed, nothing else", lambda: _account("mixed", "lower", "lower"), "neither"),
    ],
    "f10t.account": [
        ("size at ten seeds, skip higher", lambda: _account_ten("size", "higher", "none"), "both"),
        ("size at ten seeds only", lambda: _account_ten("size", "none", "none"), "size"),
        ("content at ten seeds", lambda: _account_ten("content", "none", "none"), "content"),
        ("mixed, GSPO keeps its lead", lambda: _account_ten("mixed", "none", "higher"), "content"),
        ("mixed, nothing else", lambda: _account_ten("mixed", "lower", "none"), "neither"),
    ],
    "f11.position": [
        ("above GRPO and above GSPO", lambda: f11.position_verdict(UP, UP), "above_gspo"),
        ("above GRPO, across 0 against GSPO", lambda: f11.position_verdict(UP, MIXED), "gspo_like"),
        ("above GRPO, below GSPO", lambda: f11.position_verdict(UP, DOWN), "between"),
        ("across 0 against GRPO, below GSPO", lambda: f11.position_verdict(MIXED, DOWN), "grpo_like"),
        ("below GRPO, across 0 against GSPO", lambda: f11.position_verdict(DOWN, MIXED), "below_grpo"),
        # issue 35: below both read "like GRPO (below GSPO, not shown above GRPO)" beside an interval below GRPO
        ("below GRPO and below GSPO", lambda: f11.position_verdict(DOWN, DOWN), "below_grpo"),
        ("both across 0", lambda: f11.position_verdict(MIXED_POS, MIXED), "unresolved"),
        ("t interval across 0 where the bootstrap's is above", lambda: f11.position_verdict(EDGE, DOWN), "grpo_like"),
    ],
    "f11b.position": _position_cases(lambda: f11.POSITION_B),
    "f11e.dose": _position_cases(lambda: f11e.DOSE),
    "f11f.arm": _position_cases(lambda: f11arms.ARM),
    "f11e.kl50": [
        ("4 of 8 collapsed, the classes apart", lambda: f11e.kl50_verdict(_ladder_table(), "cispo"), "crossing"),
        ("every run collapsed", lambda: f11e.kl50_verdict(_ladder_table(), "sapo"), "all"),
        ("no run collapsed", lambda: f11e.kl50_verdict(_ladder_table(), "grpo"), "none"),
        ("2 of 8 collapsed", lambda: f11e.kl50_verdict(_ladder_table(), "gspo"), "few"),
    ],
    "f11e.safe": [
        ("0/5 at 2e-5, a freeze at 4e-5", lambda: f11e.safe_verdict(_safe_doses(), "cispo")[0], "safe"),
        ("2/5 collapsed at every dose", lambda: f11e.safe_verdict(_safe_doses(), "sapo")[0], "none"),
    ],
    "f11e.warmup": [
        (
            "1/5 collapsed",
            lambda: f11e.warmup_verdict(_warmup_table([False, False, True, False, False]), "cispo", 80),
            "saves",
        ),
        (
            "4/5 collapsed, 20 rollouts later",
            lambda: f11e.warmup_verdict(_warmup_table([True] * 4 + [False], [30, 30, 40, 30, None]), "cispo", 80),
            "delays",
        ),
        (
            "5/5 collapsed, as early",
            lambda: f11e.warmup_verdict(_warmup_table([True] * 5, [10] * 5), "cispo", 80),
            "no_change",
        ),
    ],
    "f11f.mask": [
        ("mask 0/5, like GRPO; CISPO 5/5", lambda: f11arms.mask_verdict(_f11f_table([False] * 5)), "supported"),
        ("mask 4/5", lambda: f11arms.mask_verdict(_f11f_table([True] * 4 + [False])), "refuted"),
        ("mask 2/5", lambda: f11arms.mask_verdict(_f11f_table([True] * 2 + [False] * 3)), "unresolved"),
    ],
    "f11g.one_update": [
        ("CISPO 4/5 at M = 1", lambda: f11arms.one_update_verdict(_m1_table([True] * 4 + [False])), "artefact"),
        ("nothing collapses at M = 1", lambda: f11arms.one_update_verdict(_m1_table([False] * 5)), "kept"),
        ("CISPO 2/5 at M = 1", lambda: f11arms.one_update_verdict(_m1_table([True] * 2 + [False] * 3)), "unresolved"),
    ],
    "f10t.two_by_two": _two_by_two_cases(f10t.ten_verdict),
    "f10y.two_by_two": _two_by_two_cases(f10y.sgd_verdict),
    "f10u.skip_shrink": _ten_seed_cases("skip", f10t.skip_ten_verdict),
    "f10v.dual_cap": _ten_seed_cases("dual-clip", f10v.dual_ten_verdict),
    "f10w.arm": [
        ("above A, like SKIP", lambda: f10w.arm_verdict(UP, MIXED), "protects"),
        ("above A and above SKIP", lambda: f10w.arm_verdict(UP, UP), "protects"),
        ("like A, below SKIP", lambda: f10w.arm_verdict(MIXED, DOWN), "harms"),
        ("below A and below SKIP", lambda: f10w.arm_verdict(DOWN, DOWN), "harms"),
        ("like both", lambda: f10w.arm_verdict(MIXED, MIXED), "between"),
        ("above A yet below SKIP", lambda: f10w.arm_verdict(UP, DOWN), "between"),
        ("t interval across 0 where the bootstrap's is above", lambda: f10w.arm_verdict(EDGE, MIXED), "between"),
        ("one seed", lambda: f10w.arm_verdict(UP[:1], MIXED[:1]), "pending"),
    ],
    "f10w.account": [
        ("STATE harms, STEP and RESET protect", lambda: _adam("harms", "protects", "protects", "harms"), "moment"),
        ("the same, RANDOM protects too", lambda: _adam("harms", "protects", "protects", "protects"), "moment"),
        ("STEP and RESET harm, RANDOM protects", lambda: _adam("between", "harms", "harms", "protects"), "content"),
        ("STATE between, STEP and RESET protect", lambda: _adam("between", "protects", "protects", "harms"), "neither"),
        ("STEP harms, RESET protects", lambda: _adam("harms", "harms", "protects", "protects"), "neither"),
        ("RANDOM still pending", lambda: _adam("harms", "protects", "protects", "pending"), "pending"),
    ],
    "f10z.branch": _ten_seed_cases("the branch", f10z.branch_verdict)
    + [("one seed", lambda: f10z.branch_verdict(UP[:1]), "pending")],
    "f10z.paired": [
        ("paired spread a third of unpaired", lambda: f10z.paired_verdict(0.01, 0.03), "tighter"),
        ("paired spread exactly half", lambda: f10z.paired_verdict(0.015, 0.03), "not"),
        ("paired as wide as unpaired", lambda: f10z.paired_verdict(0.03, 0.03), "not"),
        ("spreads from the runs", lambda: f10z.paired_verdict(*f10z.spreads(_branch_runs(), "CAP10@10")), "tighter"),
        (
            "one seed",
            lambda: f10z.paired_verdict(*f10z.spreads(_branch_runs().query("seed == 0"), "CAP10@10")),
            "pending",
        ),
    ],
    "f10z.reversible": [
        ("back to the level before", lambda: f10r.read(_revert([0.52, 0.45, 0.55, 0.48, 0.5]), "CAP10")[2], "reversed"),
        ("halfway back", lambda: f10r.read(_revert([0.25, 0.22, 0.28, 0.2, 0.26]), "CAP10")[2], "partly"),
        ("stays collapsed", lambda: f10r.read(_revert([0.09, 0.0, 0.1, 0.01, 0.07]), "CAP10")[2], "none"),
        ("lower than the trunk", lambda: f10r.read(_revert([0.0, 0.0, 0.01, 0.0, 0.0]), "CAP10")[2], "none"),
        ("t interval across 0 where the bootstrap's is above", lambda: f10r.reversible_verdict(EDGE, UP), "none"),
        ("one seed", lambda: f10r.read(_revert([0.5]), "CAP10")[2], "pending"),
    ],
    "f2t.ten": [
        ("GRPO 8/10, GSPO 1/10", lambda: f2t.ten_verdict(8, 10, 1, 10), "separates"),
        ("GRPO 2/10, GSPO 0/10", lambda: f2t.ten_verdict(2, 10, 0, 10), "neither"),
        ("GRPO 9/10, GSPO 8/10", lambda: f2t.ten_verdict(9, 10, 8, 10), "both"),
        ("GRPO 7/10, GSPO 0/10", lambda: f2t.ten_verdict(7, 10, 0, 10), "unclear"),
    ],
    "f11d.confirm": [
        (
            "like GRPO on fresh seeds",
            lambda: f11.confirm_verdict(f11.position_verdict(MIXED, DOWN, f11.POSITION_B)),
            "confirmed",
        ),
        (
            "below GRPO on fresh seeds",
            lambda: f11.confirm_verdict(f11.position_verdict(DOWN, MIXED, f11.POSITION_B)),
            "confirmed",
        ),
        (
            "below GRPO and GSPO on fresh seeds",
            lambda: f11.confirm_verdict(f11.position_verdict(DOWN, DOWN, f11.POSITION_B)),
            "confirmed",
        ),
        (
            "like GSPO on fresh seeds",
            lambda: f11.confirm_verdict(f11.position_verdict(UP, MIXED, f11.POSITION_B)),
            "refuted",
        ),
        (
            "between on fresh seeds",
            lambda: f11.confirm_verdict(f11.position_verdict(UP, DOWN, f11.POSITION_B)),
            "refuted",
        ),
        (
            "neither difference shown",
            lambda: f11.confirm_verdict(f11.position_verdict(MIXED_POS, MIXED, f11.POSITION_B)),
            "unresolved",
        ),
    ],
    "f11c.correction": [
        ("higher", lambda: f11c.correction_verdict(UP), "helps"),
        ("lower", lambda: f11c.correction_verdict(DOWN), "hurts"),
        ("across 0", lambda: f11c.correction_verdict(MIXED_POS), "none"),
        ("t interval across 0 where the bootstrap's is above", lambda: f11c.correction_verdict(EDGE), "none"),
    ],
    "f8.spikes": [
        ("medians 180 and 245", lambda: f8.spikes_verdict(S([180.0, 150, 200]), S([245.0, 230, 260])), "same"),
        ("medians 30 and 300", lambda: f8.spikes_verdict(S([30.0, 28, 33]), S([300.0, 310, 290])), "different"),
    ],
}


def _ladder_table() -> pd.DataFrame:
    """Synthetic ladder runs (tests/test_f11_ladder.py's builder): CISPO's classes apart at KL k3 0.02 / 0.2."""
    from test_f11_ladder import _runs

    lows, highs = [0.01, 0.012, 0.015, 0.02], [0.2, 0.25, 0.3, 0.35]
    return pd.concat([_runs("cispo", lows + highs, [False] * 4 + [True] * 4), _runs("grpo", lows + highs, [False] * 8),
                      _runs("sapo", lows + highs, [True] * 8), _runs("gspo", lows + highs, [False] * 6 + [True] * 2)],
                     ignore_index=True)  # fmt: skip


def _safe_doses() -> list[dict]:
    from test_f11_ladder import _dose

    return [_dose("cispo", 2e-5, 0, 0, "grpo_like"), _dose("cispo", 4e-5, 0, 1, "grpo_like"),
            _dose("sapo", 2e-5, 2, 0, "grpo_like"), _dose("sapo", 4e-5, 2, 0, "grpo_like")]  # fmt: skip


def _warmup_table(collapsed, onset=None) -> pd.DataFrame:
    from test_f11_ladder import _runs

    anchor = _runs("cispo", [0.3] * 5, [True] * 5, lr=1e-4, source="f11b", onset=[10] * 5)
    return pd.concat([anchor, _runs("cispo", [0.002] * 5, collapsed, warmup=80, lr=1e-4, onset=onset)],
                     ignore_index=True)  # fmt: skip


def _f11f_table(mask_collapsed) -> pd.DataFrame:
    from test_f11_arms import _f11f

    return _f11f(mask_collapsed, [0.31, 0.30, 0.36, 0.30, 0.34])


def _m1_table(cispo) -> pd.DataFrame:
    from test_f11_arms import _arm

    return pd.concat([_arm("grpo@M1", [False] * 5, [0.5] * 5, f11arms.SPEC_G),
                      _arm("cispo@M1", cispo, [0.5] * 5, f11arms.SPEC_G),
                      _arm("sapo@M1", [False] * 5, [0.5] * 5, f11arms.SPEC_G)], ignore_index=True)  # fmt: skip


def outcome_of(rule: str, what: str) -> str:
    """The outcome the case ``what`` of ``rule`` gets from the code as it is (patched or not)."""
    fn = next(c for w, c, _ in CASES[rule] if w == what)
    return fn().rule_outcome


def expected(rule: str, what: str) -> str:
    return next(e for w, _, e in CASES[rule] if w == what)


@pytest.mark.parametrize("rule,what", [(r, w) for r, cases in CASES.items() for w, _, _ in cases])
def test_rule_case(rule, what):
    assert outcome_of(rule, what) == expected(rule, what)


def test_every_rule_reaches_every_outcome():
    assert set(CASES) == set(rules.RULES), "a rule without cases, or cases for a rule that is gone"
    for name, rule in rules.RULES.items():
        reached = {e for _, _, e in CASES[name]} - {rules.PENDING}  # a case may also show where a rule waits
        assert reached == set(rule.outcomes), f"{name}: no case reaches {set(rule.outcomes) - reached}"


def test_every_rule_is_declared_and_names_its_specs():
    from gspo_lab.paths import data_dir

    specs = {p.stem for p in (data_dir() / "specs").glob("*.toml")}
    for name, rule in rules.RULES.items():
        assert rule.marker and rule.declared and rule.specs, name
        assert set(rule.specs) <= specs, f"{name} reads specs that do not exist: {set(rule.specs) - specs}"


def test_pending_and_provisional():
    assert f1.clip_ratio_verdict(S([], dtype=float), 5).outcome == rules.PENDING
    v = f1.clip_ratio_verdict(S([100.0, 110, 95]), 5)
    assert v.outcome == "reproduced" and v.label == "reproduced" and v.note == " (provisional: 3 of 5 seeds finished)"
    assert str(v.number).startswith("GSPO ÷ GRPO") and str(v.number) in str(v) and str(v).endswith(v.note)
    with pytest.raises(ValueError, match="outcome must be one of"):
        f1.CLIP_RATIO.verdict("maybe")
    with pytest.raises(ValueError, match="declared twice"):
        rules.register(rules.Rule("f1.clip_ratio", "1", {"x": "y"}))
    assert math.isclose(f6.trend(_noise({4: [1.0, 1.0], 8: [2.0, 2.0]}))[0], 1.0)
    assert np.isfinite(f6.trend(_noise({4: [1.0, 1.2], 8: [2.0, 1.8]}))[1])


def test_account_is_pending_while_a_part_is():
    assert _account("size", "pending", "higher").outcome == rules.PENDING


def test_f11_robustness_lists_every_rereading_that_changes_the_verdict():
    """f11.position re-read without each seed, on reward AUC and the final evaluation: a verdict that one seed
    carries is fragile; one that every re-reading keeps is robust."""
    rows = []
    for seed in range(5):
        for arm, acc in (("grpo", 0.1), ("gspo", 0.6), ("sapo", 0.6)):
            lift = 0.3 if (arm == "sapo" and seed == 0) else 0.0
            jitter = 0.01 * seed
            rows.append({"seed": seed, "arm_id": arm, "late_acc": acc + lift + jitter, "reward_auc": acc + jitter,
                         "eval_final": acc + jitter})  # fmt: skip
    table = pd.DataFrame(rows)
    verdict, flips = f11.robust_position(table, "sapo")
    assert verdict.outcome == "gspo_like" and flips == []  # +0.06 mean lead over GSPO, t interval across 0
    steady = table.assign(late_acc=table["late_acc"] - table["arm_id"].eq("sapo") * table["seed"].eq(0) * 0.3)
    steady.loc[steady["arm_id"].eq("sapo"), "late_acc"] += 0.05  # above GSPO on every seed, by 0.05
    verdict, flips = f11.robust_position(steady, "sapo")
    assert verdict.outcome == "above_gspo" and any(f.startswith("training-reward AUC") for f in flips)


def test_f10v_pools_the_cap_alone_arms_each_seed_set_declares():
    """Seeds 10-14: finding 2's stored cap-alone arm; 60-64: f10v's cap-30 arm, and at cap 10 f10u's SHRINK arm."""
    from gspo_record.f10.why import SPECS

    rows = []
    for seed, source in [(10, SPECS["onset"]), (60, f10v.SPEC)]:
        rows.append(
            {"model": "MoE", "source": source, "arm_id": "grpo_dual_clip clip 10", "seed": seed, "late_acc": 0.5}
        )
        rows.append(
            {"model": "MoE", "source": source, "arm_id": "grpo_dual_clip clip 30", "seed": seed, "late_acc": 0.4}
        )
    rows += [
        {"model": "MoE", "source": "f2", "arm_id": "grpo clip 10", "seed": 10, "late_acc": 0.3},
        {"model": "MoE", "source": "f2", "arm_id": "grpo clip 30", "seed": 10, "late_acc": 0.2},
        {"model": "MoE", "source": f10v.SPEC, "arm_id": "grpo clip 30", "seed": 60, "late_acc": 0.1},
        {"model": "MoE", "source": SPECS["shrink_ten"], "arm_id": "SHRINK", "seed": 60, "late_acc": 0.0},
        {"model": "MoE", "source": SPECS["shrink_ten"], "arm_id": "SKIP", "seed": 60, "late_acc": 0.9},
    ]
    table = pd.DataFrame(rows)
    ten = f10v.pool(table, "MoE", "10")
    assert sorted(zip(ten["arm_id"], ten["seed"], ten["late_acc"], strict=True)) == [
        ("CAP", 10, 0.3),
        ("CAP", 60, 0.0),
        ("DUAL", 10, 0.5),
        ("DUAL", 60, 0.5),
    ]
    thirty = f10v.pool(table, "MoE", "30")
    assert sorted(zip(thirty["arm_id"], thirty["seed"], thirty["fresh"], strict=True)) == [
        ("CAP", 10, False),
        ("CAP", 60, True),
        ("DUAL", 10, False),
        ("DUAL", 60, True),
    ]


def test_the_sgd_lr_rule_picks_the_best_mean_and_the_smaller_lr_on_a_tie():
    """f10x_sgd_lr_search's declared lr rule (a choice for stage 2, not a verdict)."""
    from gspo_record.f10.sgd import pick_lr

    runs = pd.DataFrame({"lr": [0.001, 0.001, 0.004, 0.004, 0.008], "late_acc": [0.2, 0.4, 0.5, 0.3, 0.1]})
    assert pick_lr(runs) == 0.004  # 0.4 beats 0.3 and 0.1
    assert pick_lr(runs.assign(late_acc=[0.3, 0.5, 0.5, 0.3, 0.1])) == 0.001  # 0.4 each: the smaller
    with pytest.raises(ValueError, match="runs"):
        pick_lr(runs.iloc[:0])


# a null outcome beside a consistent sign (issue 35, item 3) ---------------------------------------------------------


def test_a_null_outcome_says_direction_consistent_when_every_seed_shares_a_sign():
    from gspo_record.rules import MIN_SEEDS_FOR_SIGN, Rule, consistent

    rule = Rule("t.null", "0", {"higher": "higher", "none": "no difference shown"}, null="none")
    five = [0.01, 0.2, 0.05, 0.3, 0.02]
    assert rule.verdict("none", values=five).label == "direction consistent (5/5 > 0), size unresolved"
    assert rule.verdict("none", values=[-v for v in five]).label == "direction consistent (5/5 < 0), size unresolved"
    assert rule.verdict("none", values=[v + 1 for v in five], null=1.0).label.endswith("(5/5 > 1), size unresolved")
    assert rule.verdict("none", values=five[:4]).label == "no difference shown"  # 4/4: too few seeds
    assert MIN_SEEDS_FOR_SIGN == 5 and consistent(five[:4]) == ""
    assert rule.verdict("none", values=[*five[:4], -0.1]).label == "no difference shown"  # 4/5
    assert rule.verdict("higher", values=five).label == "higher"  # only the null outcome is qualified
    assert rule.verdict("none").label == "no difference shown"  # no values given
    assert rule.verdict("none", values=five).outcome == "none"  # the outcome (and robustness) is unchanged
    counted = Rule("t.count", "0", {"yes": "recovers", "none": "no recovery shown"}, null="none", null_count="lift")
    assert counted.verdict("none", values=[0.1, -0.2, 0.3, -0.1, 0.2]).label == "no recovery shown (lift 3/5 > 0)"
    with pytest.raises(ValueError, match="null must be one of"):
        Rule("t.bad", "0", {"higher": "higher"}, null="none")


def test_every_paired_rule_with_a_null_outcome_declares_it():
    """Each registered rule whose outcomes include a "not shown" one the lint reads as null names it in ``null`` (so
    its verdict functions can qualify it); composite rules (f10.two_by_two, f10.account, ...) say why not."""
    from gspo_record.lint import NULL_PHRASES
    from gspo_record.rules import RULES

    composite = {"f10.two_by_two", "f10t.two_by_two", "f10y.two_by_two", "f10.account", "f10w.arm"}
    missing = [
        name
        for name, rule in RULES.items()
        for key, words in rule.outcomes.items()
        if any(p in words.lower() for p in NULL_PHRASES) and rule.null != key and name not in composite
    ]
    assert missing == []


def _lint_row(label: str, *diffs) -> list:
    """The referee lint's null-with-consistent-sign problems on one table row: each of ``diffs`` as the page prints
    it (fmt.diff_cell), then ``label``."""
    from gspo_lab.experiments.endpoint_range import DIFFERENCE
    from gspo_record.fmt import diff_cell
    from gspo_record.lint import lint

    page = "# F\n\n| model | " + " | ".join(f"effect {i}" for i in range(len(diffs))) + " | verdict |\n"
    page += (
        "|"
        + " --- |" * (len(diffs) + 2)
        + "\n| X | "
        + " | ".join(diff_cell(d, DIFFERENCE) for d in diffs)
        + f" | {label} |\n"
    )
    return [p for p in lint({"findings.md": page}) if p.rule == "null-with-consistent-sign"]


def test_two_by_two_null_part_carries_its_own_sign_counts():
    """Issue 35: "size …; no direction effect shown" sat beside a norm effect 10/10 > 0 and read as if about it.
    Since issue 48 the 2×2 is one statement: its words say which effects were shown to protect, and the number
    printed beside them is each effect's own interval with its sign count, named."""
    size = f10t.ten_verdict(_effects(UP, UP, MIXED, MIXED_POS))
    assert size.outcome == "size"
    assert size.label == "size: GSPO's norms protect whichever direction they carry; its direction not shown to"
    for name, values in zip(f10.EFFECTS, (UP, UP, MIXED, MIXED_POS), strict=True):
        assert f"{name}: {size.number.part(name)}" in str(size) and size.number.part(name).n == len(values)
    assert "(n = 5; 3/5 > 0)" in str(size.number.part("direction, at GSPO's norm (B − C)"))
    assert _lint_row(size.label, UP, UP, MIXED, MIXED_POS) == []
    edge = f10t.ten_verdict(_effects(UP, UP, EDGE, MIXED))  # one direction effect 5/5 > 0, its t interval across 0
    assert edge.outcome == "size" and "(n = 5; 5/5 > 0)" in str(edge.number.part("direction, at GSPO's norm (B − C)"))
    assert _lint_row(edge.label, UP, UP, EDGE, MIXED) == []


def test_two_by_two_neither_says_which_effects_share_a_sign():
    """Issue 35: the dense 5-seed f10y row read "neither: no norm or direction effect shown" beside norm effects
    0.264 (5/5 > 0) and 0.301 (5/5 > 0): the words now say what was not shown (to protect) and the four intervals
    with their sign counts stand beside them; the lint that caught the old label passes the new one."""
    both_edge = f10y.sgd_verdict(_effects(EDGE, EDGE, MIXED, MIXED))
    assert both_edge.outcome == "neither"
    assert both_edge.label == "neither: neither GSPO's norm nor its direction shown to protect"
    assert str(both_edge).count("(n = 5; 5/5 > 0)") == 2
    assert _lint_row(both_edge.label, EDGE, EDGE, MIXED, MIXED) == []
    old = "neither: no norm or direction effect shown"  # the label the lint caught
    assert len(_lint_row(old, EDGE, EDGE, MIXED, MIXED)) == 1
    lower = f10y.sgd_verdict(_effects(MIXED, MIXED_POS, MIXED, DOWN))  # not "higher", yet shown below 0: printed
    assert lower.outcome == "neither" and lower.number.outcomes["direction, at GRPO's norm (D − A)"] == "below"
    assert "(n = 5; 5/5 < 0)" in str(lower) and "no direction effect" not in str(lower)


def test_dual_clip_null_reads_no_effect_shown_with_its_count():
    """Issue 35: "dual-clip adds nothing beyond the cap" claimed an absence; the null outcome says what was shown."""
    none = f10v.dual_ten_verdict(MIXED)
    assert none.label == "dual-clip under the cap: no difference in late held-out accuracy shown (seeds 3/5 > 0)"
    assert "adds nothing" not in " ".join(f10.DUAL_CAP.outcomes.values())
    assert f10v.dual_ten_verdict(EDGE).label == "direction consistent (5/5 > 0), size unresolved"


def test_adam_arm_labels_say_what_each_comparison_showed():
    """Issue 35: "protects like skipping" hid RANDOM's lead over SKIP (dense +0.130, 5/5 > 0); "harms like no
    protection" claimed a harm where the arm sat at plain GRPO's level. Since issue 48 an arm is one statement: the
    rule's words beside both comparisons, each printed with its interval and sign count."""
    above_both = f10w.arm_verdict(UP, UP)
    assert above_both.outcome == "protects" and above_both.label == "protects: above plain GRPO, not below SKIP"
    assert str(above_both).count("(n = 5; 5/5 > 0)") == 2 and "− SKIP: " in str(above_both)
    consistent_skip = f10w.arm_verdict(UP, EDGE)
    assert consistent_skip.number.outcomes["− SKIP"] == "none" and "− SKIP: " in str(consistent_skip)
    assert str(consistent_skip.number.part("− SKIP")).endswith("(n = 5; 5/5 > 0)")
    state = f10w.arm_verdict(MIXED, DOWN)
    assert state.outcome == "harms" and state.label == "no protection shown: below SKIP, not above plain GRPO"
    assert "(n = 5; 3/5 > 0)" in str(state) and "(n = 5; 5/5 < 0)" in str(state)
    assert not any("like skipping" in w or "harms" in w for w in f10w.ARM.outcomes.values())


def test_adam_account_labels_name_a_pattern_not_a_mechanism():
    """Issue 35: "MOMENT: the harm enters through Adam's moments" claimed a mechanism STATE vs STEP cannot isolate
    (STATE still delivers β1 = 90 % of a spike's displacement through m); the label names the predicted pattern and
    the page gives the mechanism as a separate reading."""
    moment = _adam("harms", "protects", "protects", "harms")
    assert moment.label == "MOMENT's pattern: STATE shows no protection, STEP and RESET protect"
    assert not any("enters through" in w or "harms wherever" in w for w in f10w.ACCOUNT.outcomes.values())
    assert f10w.displacement_share() == pytest.approx(0.9)


def test_adam_step_sizes_are_computed_from_the_runs():
    """RANDOM's step-size confound is printed from the runs: SKIP ÷ RANDOM of the mean KL k3 per seed."""
    rows = [{"seed": s, "arm_id": arm, "late_acc": acc + 0.01 * s, "kl": kl * (1 + 0.1 * s), "peak": 10.0}
            for s in range(5) for arm, acc, kl in (("SKIP", 0.4, 0.03), ("RANDOM", 0.5, 0.01))]  # fmt: skip
    out = f10w.step_sizes(pd.DataFrame(rows))
    assert out["kl_ratio"] == "3× [3, 3] (n = 5)" and out["peak_ratio"] == "1× [1, 1] (n = 5)"
    assert out["random_skip"].startswith("0.1 [") and out["random_skip"].endswith("(n = 5; 5/5 > 0)")


def test_ten_seed_readings_supersede_their_five_seed_rules():
    """Issue 35: the ten-seed readings declare what they replace, and f10t.account (on them) replaces f10.account."""
    from gspo_record.rules import RULES

    assert RULES["f10t.two_by_two"].supersedes == ("f10.two_by_two",)
    assert RULES["f10u.skip_shrink"].supersedes == ("f10.skip_shrink",)
    assert RULES["f10v.dual_cap"].supersedes == ("f10.dual_cap",)
    assert RULES["f10t.account"].supersedes == ("f10.account",) and RULES["f10t.account"].post_hoc


def test_ten_seed_account_says_what_each_part_showed():
    """f10t.account's words: the 2×2's own reading and which test showed content (issue 35: "content: no norm effect
    shown" stood beside a MoE 2×2 whose two norm effects were both above 0, read *mixed*)."""
    moe = _account_ten("mixed", "none", "higher")
    assert moe.outcome == "content" and "no norm effect" not in moe.label
    assert (
        moe.label
        == "content, with the ten-seed 2×2 reading mixed: content shown by GSPO's lead under equal relative caps"
    )
    dense = _account_ten("size", "none", "none")
    assert dense.label.startswith("size, with the ten-seed 2×2 reading size: content shown by none of")
    assert dense.label.split(":")[0] == "size, with the ten-seed 2×2 reading size"  # At a glance's short form


def test_a_summary_naming_a_superseded_f10_rule_fails_the_lint():
    """The registry's supersedes: a "Together" paragraph or At a glance row reading f10.account (or the 5-seed 2×2)
    on a page that reads f10t.account (f10t.two_by_two) fails the referee lint; the ten-seed names pass."""
    from gspo_record.lint import lint

    glance = "## At a glance\n\nRules behind each row (see the table): 10 `{}`, `f10w.account`.\n\n"
    together = "## 10. Why\n\nRead: `f10t.account`, `f10t.two_by_two`.\n\n**Together** (rule `{}`): MoE: content.\n"
    for old, new in (("f10.account", "f10t.account"), ("f10.two_by_two", "f10t.two_by_two")):
        bad = {"findings.md": "# F\n\n" + glance.format(old) + together.format(old)}
        found = [p for p in lint(bad) if p.rule == "superseded"]
        assert [p.where.split(" (")[0] for p in found] == ["At a glance row 10", "Together"][: len(found)]
        assert found and all(f"`{new}`" in p.why or "supersedes" in p.why for p in found)
        good = {"findings.md": "# F\n\n" + glance.format(new) + together.format(new)}
        assert [p for p in lint(good) if p.rule == "superseded"] == []


def test_10f_counts_read_endpoint_v2_and_are_recorded(monkeypatch):
    """Issue 35: 10f's trunks read the v1 flag ("5/5 collapsed at rollout 120"); endpoint v2, which the page
    declares, gives 4/5 (seed 64's last evaluations 0.227, 0.000). Each printed count is recorded for the lint, and
    a v1 count recorded unlabelled fails its endpoint rule."""
    from gspo_record.facts import Facts, PrintedCount, collecting
    from gspo_record.lint import lint

    m = f10r.runs()
    trunk = m[m["arm_id"] == "TRUNK"]
    v2, v1 = int(trunk["collapsed"].sum()), int(trunk["collapsed_v1"].sum())
    assert (v2, v1, len(trunk)) == (4, 5, 5)
    monkeypatch.setattr(f10r, "reproduced", lambda: "—")  # the section's git-free part
    with collecting() as out:
        section = f10r.section()
    assert section["trunk_collapsed"] == f"{v2}/{len(trunk)}"
    counts = {c.where: c for c in out[0].counts}
    printed = counts["10f text, trunks collapsed at rollout 120"]
    assert (printed.k, printed.n, printed.endpoint) == (v2, len(trunk), "v2")
    assert len(counts) == 1 + len(f10r.ARMS)
    assert [p for p in lint({}, out[0]) if p.rule == "endpoint"] == []
    stale = Facts(counts=(PrintedCount("findings.md", "10f text", v1, len(trunk), endpoint="v1"),))
    assert [p.rule for p in lint({}, stale)] == ["endpoint"]
    labelled = Facts(counts=(PrintedCount("findings.md", "10f text", v1, 5, endpoint="v1", labelled=True),))
    assert lint({}, labelled) == []
