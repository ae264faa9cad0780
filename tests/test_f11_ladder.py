"""Issue 37, part A: the dose ladder's rules (gspo_record/f11/ladder.py) on synthetic runs — every outcome of
f11e.kl50, f11e.safe and f11e.warmup reached, the logistic crossing checked against a known one, bad input refused,
and mutants of each rule caught."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import gspo_record.f11.ladder as ladder
from gspo_record.rules import PENDING, Verdict


def _runs(arm: str, drift, collapsed, *, warmup: int = 0, lr: float = 4e-5, source: str = ladder.SPEC_E, onset=None,
          frozen=None) -> pd.DataFrame:  # fmt: skip
    n = len(drift)
    return pd.DataFrame({"arm_id": arm, "seed": range(20, 20 + n), "warmup": warmup, "lr": lr, "drift": drift,
                         "collapsed": collapsed, "frozen": frozen if frozen is not None else [False] * n,
                         "collapse_onset": onset if onset is not None else [np.nan] * n, "source": source,
                         "late_acc": 0.5})  # fmt: skip


def test_logistic_finds_a_known_crossing_and_stays_finite_when_the_classes_do_not_overlap():
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 0, 4000)  # log10 drift
    y = (rng.uniform(size=x.size) < 1 / (1 + np.exp(-4 * (x + 1.5)))).astype(float)  # crossing at x = -1.5
    assert ladder.logistic(x, y) == pytest.approx(-1.5, abs=0.05)
    separated = ladder.logistic(np.array([-2.0, -1.9, -1.8, -1.0, -0.9, -0.8]), np.array([0, 0, 0, 1, 1, 1.0]))
    assert -1.8 < separated < -1.0  # between the two groups, finite thanks to the ridge
    assert math.isnan(ladder.logistic(np.array([-2.0, -1.0, 0.0]), np.array([1.0, 0.0, 0.0])))  # falls with x


def test_logistic_refuses_bad_input():
    with pytest.raises(ValueError, match="x and y"):
        ladder.logistic(np.array([1.0, np.nan]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="x and y"):
        ladder.logistic(np.array([1.0]), np.array([0.0]))


def test_kl50_reaches_every_outcome():
    lows, highs = [0.01, 0.012, 0.015, 0.02], [0.2, 0.25, 0.3, 0.35]
    table = pd.concat([
        _runs("cispo", lows + highs, [False] * 4 + [True] * 4),
        _runs("grpo", lows + highs, [False] * 8),
        _runs("sapo", lows + highs, [True] * 8),
        _runs("gspo", lows + highs, [False] * 6 + [True] * 2),
    ], ignore_index=True)  # fmt: skip
    fit = ladder.kl50(table, "cispo")
    assert fit["verdict"].rule_outcome == "crossing" and 0.02 < fit["kl50"] < 0.2
    assert fit["low"] <= fit["kl50"] <= fit["high"] and fit["resamples"] > 1000
    assert {a: ladder.kl50_verdict(table, a).rule_outcome for a in ("grpo", "sapo", "gspo")} == {
        "grpo": "none", "sapo": "all", "gspo": "few"}  # fmt: skip
    assert ladder.kl50_verdict(table, "vespo").rule_outcome == PENDING
    assert "8 of 20 ladder runs finished" in fit["verdict"].provisional
    # a warm-up dose is not a dose: its runs leave the fit alone
    warm = pd.concat([table, _runs("grpo", [0.001] * 5, [True] * 5, warmup=80, lr=1e-4)], ignore_index=True)
    assert ladder.kl50_verdict(warm, "grpo").rule_outcome == "none"


def _dose(arm, lr, collapsed, frozen, outcome, n=5, warmup=0):
    return {"dose": f"lr {lr}", "arm": arm, "lr": lr, "warmup": warmup, "collapsed": collapsed, "frozen": frozen,
            "n": n, "verdict": Verdict("f11e.dose", outcome, outcome)}  # fmt: skip


def test_safe_reads_collapse_freeze_and_position_and_reaches_every_outcome():
    doses = [_dose("cispo", 1e-5, 0, 0, "grpo_like"), _dose("cispo", 2e-5, 1, 0, "between"),
             _dose("cispo", 4e-5, 0, 1, "grpo_like"), _dose("cispo", 7e-5, 5, 5, "below_grpo"),
             _dose("sapo", 2e-5, 0, 0, "below_grpo"), _dose("sapo", 4e-5, 2, 0, "grpo_like")]  # fmt: skip
    v, lr = ladder.safe_verdict(doses, "cispo")
    assert (v.rule_outcome, lr) == ("safe", 2e-5)  # 4e-5 froze once: not safe
    assert ladder.safe_verdict(doses, "sapo")[0].rule_outcome == "none"  # below GRPO, then 2/5 collapsed
    assert ladder.safe_verdict(doses, "vespo")[0].rule_outcome == PENDING
    assert ladder.safe_verdict([_dose("cispo", 1e-5, 0, 0, "grpo_like", n=3)], "cispo")[0].provisional


def test_warmup_reaches_every_outcome():
    anchor = _runs("cispo", [0.3] * 5, [True] * 5, lr=1e-4, source="f11b", onset=[10, 10, 20, 10, 10])
    cases = {
        "saves": _runs("cispo", [0.002] * 5, [False, False, True, False, False], warmup=80, lr=1e-4),
        "delays": _runs("cispo", [0.002] * 5, [True] * 4 + [False], warmup=80, lr=1e-4, onset=[30, 30, 40, 20, None]),
        "no_change": _runs("cispo", [0.002] * 5, [True] * 5, warmup=80, lr=1e-4, onset=[10, 20, 10, 10, 10]),
    }
    for outcome, runs in cases.items():
        assert ladder.warmup_verdict(pd.concat([anchor, runs], ignore_index=True), "cispo", 80).rule_outcome == outcome
    assert ladder.warmup_verdict(anchor, "cispo", 80).rule_outcome == PENDING


def _safe_holds(safe) -> bool:
    """The expectations of the safe test, for any implementation ``safe(doses, arm) -> (verdict, lr)``."""
    doses = [_dose("cispo", 2e-5, 0, 0, "grpo_like"), _dose("cispo", 4e-5, 0, 1, "grpo_like"),
             _dose("sapo", 2e-5, 0, 0, "below_grpo")]  # fmt: skip
    return safe(doses, "cispo")[1] == 2e-5 and safe(doses, "sapo")[0].rule_outcome == "none"


def _warmup_holds(warmup) -> bool:
    anchor = _runs("cispo", [0.3] * 5, [True] * 5, lr=1e-4, source="f11b", onset=[10] * 5)
    runs = _runs("cispo", [0.002] * 5, [True] * 5, warmup=80, lr=1e-4, onset=[12] * 5)
    return warmup(pd.concat([anchor, runs], ignore_index=True), "cispo", 80).rule_outcome == "no_change"


def _kl50_holds(kl50) -> bool:
    table = pd.concat([_runs("grpo", [0.01, 0.02, 0.2, 0.3], [False] * 4),
                       _runs("grpo", [0.001] * 5, [True] * 5, warmup=80, lr=1e-4)], ignore_index=True)  # fmt: skip
    return kl50(table, "grpo").rule_outcome == "none"


def _safe_ignoring_freezes(doses, arm):
    ok = [d["lr"] for d in doses if d["arm"] == arm and d["collapsed"] <= 1 and d["verdict"].outcome != "below_grpo"]
    return (ladder.SAFE.verdict("safe"), max(ok)) if ok else (ladder.SAFE.verdict("none"), None)


def _warmup_counting_out_of_one(table, arm, warmup):
    runs = table[(table["arm_id"] == arm) & (table["warmup"] == warmup)]
    return ladder.WARMUP.verdict(
        "saves" if runs["collapsed"].sum() <= ladder.STABLE_AT_MOST * len(runs) else "no_change"
    )


def _kl50_every_dose(table, arm):
    runs = table[table["arm_id"] == arm]
    k = int(runs["collapsed"].sum())
    return ladder.KL50.verdict("none" if k == 0 else "all" if k == len(runs) else "few")


def test_the_ladder_rules_hold_and_their_mutants_are_caught():
    """Each rule passes its expectations; a mutant of each (freezes ignored; a count read out of 1 instead of 5;
    the warm-up doses fitted with the ladder) fails them."""
    assert _safe_holds(ladder.safe_verdict) and not _safe_holds(_safe_ignoring_freezes)
    assert _warmup_holds(ladder.warmup_verdict) and not _warmup_holds(_warmup_counting_out_of_one)
    assert _kl50_holds(ladder.kl50_verdict) and not _kl50_holds(_kl50_every_dose)


def test_the_batched_fit_is_the_single_fit_bit_for_bit():
    """kl50's bootstrap fits every resample in one Newton loop (logistic_many); each crossing must be logistic's on
    the same resample exactly, so the page's interval does not move (NaN where the slope is not positive)."""
    rng = np.random.default_rng(3)
    for n in (8, 25, 40):
        x = np.log10(rng.uniform(1e-4, 1e-1, n))
        y = (x + rng.normal(0, 0.6, n) > -2.5).astype(float)
        draws = np.array([i for i in (rng.integers(0, n, n) for _ in range(300)) if 0 < y[i].sum() < n])
        single = np.array([ladder.logistic(x[i], y[i]) for i in draws])
        assert np.array_equal(ladder.logistic_many(x[draws], y[draws]), single, equal_nan=True)
    falling = np.array([[-2.0, -1.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    assert math.isnan(ladder.logistic_many(*falling)[0])
