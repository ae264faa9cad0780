"""Issue 48, item 1: f11e.kl50, f11e.safe, f11e.warmup and f6c.regime are statements — each prints the number its
outcome is computed from beside its words, reads as its rule's outcome as the bare verdict did, and the statement lint
(Book.problems, written apart from the outcome functions) catches a mutant of its kind's outcome function or of its
combination."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest
from test_f11_ladder import _dose, _runs
from test_rules import _search

import gspo_record.f6.stability as f6c
import gspo_record.f11.ladder as ladder
import gspo_record.joint as joint
import gspo_record.kinds as kinds
import gspo_record.statements as statements
from gspo_record.book import Book
from gspo_record.rules import PENDING
from gspo_record.statements import Statement

LOWS, HIGHS = [0.01, 0.012, 0.015, 0.02], [0.2, 0.25, 0.3, 0.35]


def _ladder() -> pd.DataFrame:
    return pd.concat([_runs("cispo", LOWS + HIGHS, [False] * 4 + [True] * 4, frozen=[False] * 7 + [True]),
                      _runs("grpo", LOWS + HIGHS, [False] * 8)], ignore_index=True)  # fmt: skip


def _warmup(collapsed, onset=None) -> pd.DataFrame:
    anchor = _runs("cispo", [0.3] * 5, [True] * 5, lr=1e-4, source="f11b", onset=[10] * 5)
    runs = _runs("cispo", [0.002] * 5, collapsed, warmup=80, lr=1e-4, onset=onset)
    return pd.concat([anchor, runs], ignore_index=True)


def _lint_catches(monkeypatch, s: Statement, module, name: str) -> None:
    """``s`` passes the lint; with ``module.name`` replaced by a function that ignores its number and gives another
    outcome, the lint names ``s``."""
    assert Book.of([s]).problems() == []
    wrong = next(o for o in statements.reach(s.number) if o != s.outcome)
    monkeypatch.setattr(module, name, lambda x: wrong)
    assert s.outcome == wrong
    assert Book.of([s]).problems() == [f"{s.id}: outcome {wrong!r} cannot be said of {s.number}"]


# --- f11e.kl50 ------------------------------------------------------------------------------------------------------


def test_kl50_prints_its_count_beside_its_words_and_reads_crossing_on_both_classes():
    s = ladder.kl50_verdict(_ladder(), "cispo")
    assert isinstance(s, Statement) and s.id == "f11e.kl50.cispo.collapsed"
    assert (s.outcome, s.rule_outcome) == ("both", "crossing")
    assert str(s) == f"{ladder.KL50.outcomes['crossing']}, 4/8 collapsed (provisional: 8 of 20 ladder runs finished)"
    assert s.short == f"{ladder.KL50.outcomes['crossing']} (provisional: 8 of 20 ladder runs finished)"
    none = ladder.kl50_verdict(_ladder(), "grpo")
    assert (none.outcome, none.rule_outcome, none.label) == ("none", "none", ladder.KL50.outcomes["none"])


def test_kl50_on_the_frozen_flag_has_its_own_id_and_says_frozen():
    s = ladder.kl50_verdict(_ladder(), "cispo", "frozen")
    assert s.id == "f11e.kl50.cispo.frozen" and s.rule_outcome == "few"
    assert str(s).startswith("no threshold in range: too few runs of a class, 1/8 frozen")
    assert ladder.kl50_verdict(_ladder(), "grpo", "frozen").label == "no threshold in range: no run frozen"
    both = [ladder.kl50_verdict(_ladder(), a, f) for a in ("cispo", "grpo") for f in ("collapsed", "frozen")]
    assert len(Book.of(both).statements) == 4 and Book.of(both).problems() == []  # one id per arm and flag


def test_kl50_pending_without_runs_is_a_bare_verdict():
    assert ladder.kl50_verdict(_ladder(), "sapo").rule_outcome == PENDING


def test_the_lint_catches_a_mutant_split_outcome(monkeypatch):
    _lint_catches(monkeypatch, ladder.kl50_verdict(_ladder(), "cispo"), kinds, "split_outcome")


# --- f11e.safe ------------------------------------------------------------------------------------------------------


def _doses():
    return [_dose("cispo", 1e-5, 0, 0, "grpo_like"), _dose("cispo", 2e-5, 1, 0, "between"),
            _dose("cispo", 4e-5, 0, 1, "grpo_like"), _dose("sapo", 2e-5, 2, 0, "grpo_like"),
            _dose("sapo", 4e-5, 0, 0, "below_grpo")]  # fmt: skip


def test_safe_prints_the_largest_safe_rung_of_the_arms_ladder():
    s, lr = ladder.safe_verdict(_doses(), "cispo")
    assert lr == 2e-5 and s.id == "f11e.safe.cispo" and (s.outcome, s.rule_outcome) == ("found", "safe")
    assert str(s) == "safe up to this lr, lr 2e-05 of {1e-05, 2e-05, 4e-05}"
    none, lr = ladder.safe_verdict(_doses(), "sapo")
    assert lr is None and (none.outcome, none.rule_outcome) == ("none", "none")
    assert str(none) == "none in the ladder, lr none of {2e-05, 4e-05}"


def test_the_lint_catches_a_mutant_largest_outcome(monkeypatch):
    _lint_catches(monkeypatch, ladder.safe_verdict(_doses(), "cispo")[0], kinds, "largest_outcome")


# --- f11e.warmup ----------------------------------------------------------------------------------------------------


def test_warmup_prints_its_count_and_its_delay_beside_its_words():
    s = ladder.warmup_verdict(_warmup([True] * 4 + [False], [30, 30, 40, 30, None]), "cispo", 80)
    assert s.id == "f11e.warmup.cispo.80" and s.outcome == s.rule_outcome == "delays"
    assert str(s) == ("warm-up delays it — collapsed: 4/5 [0.38, 0.96]; median onset, rollouts later: 20 "
                      "(declared: at least 10)")  # fmt: skip
    saved = ladder.warmup_verdict(_warmup([False] * 5), "cispo", 80)  # no onset: the delay is not measured
    assert saved.rule_outcome == "saves" and saved.label == "stable with warm-up (at most 1 in 5 collapsed)"
    assert "median onset, rollouts later: not measured" in str(saved)


def _warmup_before(k: int, n: int, later: float) -> str:
    """f11e.warmup as the bare verdict read it (before it became a statement)."""
    if k <= ladder.STABLE_AT_MOST * n / 5:
        return "saves"
    return "delays" if k >= 3 / 5 * n and later >= ladder.DELAY_ROLLOUTS else "no_change"


@pytest.mark.parametrize("n", range(1, 11))
def test_warmups_count_and_band_read_the_rule_exactly(n):
    for k, later in itertools.product(range(n + 1), (math.nan, -5.0, 9.0, 10.0, 10.5, 40.0)):
        onset = [10.0 + later] * n if later == later else None
        s = ladder.warmup_verdict(
            pd.concat([_runs("cispo", [0.3] * 5, [True] * 5, lr=1e-4, source="f11b", onset=[10] * 5),
                       _runs("cispo", [0.002] * n, [i < k for i in range(n)], warmup=80, lr=1e-4, onset=onset)],
                      ignore_index=True), "cispo", 80)  # fmt: skip
        assert s.rule_outcome == _warmup_before(k, n, later), (k, n, later)
        assert Book.of([s]).problems() == []


def test_the_lint_catches_a_mutant_warmup_combination_or_band_outcome(monkeypatch):
    s = ladder.warmup_verdict(_warmup([True] * 4 + [False], [30, 30, 40, 30, None]), "cispo", 80)
    _lint_catches(monkeypatch, s, joint, "joint_outcome")
    monkeypatch.undo()
    monkeypatch.setattr(kinds, "band_outcome", lambda x: "below")  # the delay read as too short
    assert s.rule_outcome == "no_change"
    assert Book.of([s]).problems() == [f"{s.id}: outcome 'no_change' cannot be said of {s.number}"]


# --- f6c.regime -----------------------------------------------------------------------------------------------------


def test_regime_prints_both_lrs_counts_beside_its_words():
    s = f6c.regime_verdict(_search({(1e-4, 7, "gspo"): 1, (3e-5, 7, "grpo"): 2}))
    assert s.id == "f6c.regime" and s.outcome == s.rule_outcome == "low"
    assert str(s) == (
        "lr 3e-5 qualifies (1e-4 does not) — "
        "lr 1e-4: (every arm at the shortest length: 0/6 [0.00, 0.39]; GSPO at every length: 1/6 [0.03, 0.56]); "
        "lr 3e-5: (every arm at the shortest length: 0/6 [0.00, 0.39]; GSPO at every length: 0/6 [0.00, 0.39])"
    )
    assert f6c.qualifies(_search({(1e-4, 7, "gspo"): 1}), 1e-4) is False
    assert f6c.qualifies(_search(), 3e-5) is True
    assert f6c.regime_verdict(_search().query("not (lr == 3e-5 and seed == 1)")).rule_outcome == PENDING


def _qualifies_before(table: pd.DataFrame, lr: float) -> bool:
    at = table[table["lr"] == lr]
    shortest = at[at["length"] == at["length"].min()]
    return not shortest["collapsed"].any() and not at[at["objective"] == "gspo"]["collapsed"].any()


def test_regime_reads_the_rule_exactly_on_every_placement_of_collapses():
    cells = [(lr, L, arm) for lr in (1e-4, 3e-5) for L in (2, 7) for arm in ("grpo", "gspo")]
    for picked in itertools.product((0, 1), repeat=len(cells)):
        table = _search({c: k for c, k in zip(cells, picked, strict=True) if k})
        before = next((out for lr, out in ((1e-4, "high"), (3e-5, "low")) if _qualifies_before(table, lr)), "none")
        s = f6c.regime_verdict(table)
        assert s.rule_outcome == before, picked
        assert Book.of([s]).problems() == []


def test_the_lint_catches_a_mutant_regime_combination_or_count_outcome(monkeypatch):
    s = f6c.regime_verdict(_search({(1e-4, 7, "gspo"): 1}))
    _lint_catches(monkeypatch, s, joint, "joint_outcome")
    monkeypatch.undo()
    monkeypatch.setattr(statements, "count_outcome", lambda x: "at_most")  # every count read as "none collapsed"
    assert s.rule_outcome == "high"
    assert Book.of([s]).problems() == [f"f6c.regime: outcome 'high' cannot be said of {s.number}"]
