"""Rules f9.skill, f9v2.skill, f12a.regime, f12a.ladder and f12.ess as statements (issue 48, item 1): each prints the
number its outcome is about beside its words, its rule outcome is read from that number, and the statement lint
(book.consistent, written apart from the outcome functions) catches a mutant of the kind's outcome function."""

from __future__ import annotations

import pandas as pd
import pytest
from test_rules import _ess, _lag_runs, _skill, _skill_v2

import gspo_record.f9.precursors as f9
import gspo_record.f12.ess as f12ess
import gspo_record.f12.lag as f12
import gspo_record.joint as joint
import gspo_record.kinds as kinds
import gspo_record.statements as statements
from gspo_record.book import Book
from gspo_record.rules import Verdict
from gspo_record.statements import Statement


def _caught(monkeypatch, s: Statement, module, fn: str, wrong: str) -> None:
    """The lint passes ``s``, then flags it once ``module.fn`` (an outcome function) answers ``wrong``."""
    assert Book.of([s]).problems() == []
    monkeypatch.setattr(module, fn, lambda x: wrong)
    assert s.outcome == wrong
    assert Book.of([s]).problems() == [f"{s.id}: outcome {wrong!r} cannot be said of {s.number}"]


def _prints_number(s: Statement, sep: str = ", ") -> None:
    assert isinstance(s, Statement)
    assert str(s) == f"{s.label}{sep}{s.number}"
    assert s.short == s.label  # a table whose columns print the number prints the words alone


# --- f9.skill / f9v2.skill: two rates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts,outcome,rule_outcome",
    [((8, 10, 1, 20), "above", "warns"), ((1, 10, 15, 20), "below", "inverse"), ((4, 10, 6, 20), "overlap", "chance")],
)
def test_skill_is_a_statement_about_its_two_rates(counts, outcome, rule_outcome):
    s = f9.skill_verdict(_skill(*counts), f9.SKILL, "f9.skill.held.x")
    _prints_number(s)
    assert (s.id, s.rule, s.outcome, s.rule_outcome) == ("f9.skill.held.x", "f9.skill", outcome, rule_outcome)
    warned, collapsing, false, stable = counts
    assert f"warned ahead: {warned}/{collapsing} [" in str(s) and f"false alarms: {false}/{stable} [" in str(s)
    assert "(Wilson, level 0.95)" in str(s)


def test_skill_v2_prints_its_bonferroni_level_and_reads_at_it():
    s = _skill_v2(6, 10, 1, 20)  # apart at 95 %, not at the Bonferroni level
    assert (s.rule, s.rule_outcome, s.number.level) == ("f9v2.skill", "chance", f9.LEVEL_V2)
    assert f"level {f9.LEVEL_V2:.4g}" in str(s)
    _prints_number(s)


def test_a_null_skill_says_no_comparative_word():
    s = f9.skill_verdict(_skill(4, 10, 6, 20))
    assert s.label == "not distinguished from chance"
    assert not any(f" {w} " in f" {s.label} " for w in statements.COMPARATIVE)


def test_skill_without_collapsing_or_stable_runs_is_pending():
    v = f9.skill_verdict({**_skill(0, 1, 1, 20), "collapsing": 0})
    assert isinstance(v, Verdict) and v.outcome == "pending"


def test_skill_ids_are_unique_per_held_out_set_and_signal():
    rows = [{"signal": sig, "factor": 2.0, "median_lead": 6.0, **_skill(w, 10, 2, 20), "warned": w, "false_alarms": 2}
            for sig, w in (("a", 8), ("b", 3))]  # fmt: skip
    table = pd.DataFrame(rows)
    made = [f9._verdicts(table, f9.SKILL, 0.95, where) for where in ("held", "later", "fresh")]
    made.append(f9._verdicts(table, f9.SKILL_V2, 0.95, "fresh"))
    book = Book.of(made)
    assert {"f9.skill.held.a", "f9.skill.later.b", "f9v2.skill.fresh.a"} <= set(book.statements)
    assert len(book.statements) == 8 and book.problems() == []
    assert f9._rows(table, made[0])[0][-1] == "warns ahead"  # the rates sit in the columns before it


def test_the_lint_catches_a_mutant_rates_outcome(monkeypatch):
    _caught(monkeypatch, f9.skill_verdict(_skill(4, 10, 6, 20)), kinds, "rates_outcome", "above")


# --- f12a.regime: a count ------------------------------------------------------------------------------------------


def test_regime_is_a_statement_about_the_lag0_failures():
    s = f12.regime_verdict(_lag_runs())
    _prints_number(s)
    assert (s.outcome, s.rule_outcome, s.number.k, s.number.n) == ("at_most", "qualifies", 0, 12)
    failed = f12.regime_verdict(_lag_runs(failed=(("cispo/behaviour", 0),)))
    assert (failed.outcome, failed.rule_outcome, str(failed)) == ("between", "fails", "fails, 2/12 [0.05, 0.45]")


def test_regime_with_an_arm_missing_and_no_failure_is_pending():
    v = f12.regime_verdict(_lag_runs().query("not (arm == 'gspo/behaviour' and lag == 0)"))
    assert isinstance(v, Verdict) and v.outcome == "pending"


def test_the_lint_catches_a_mutant_count_outcome(monkeypatch):
    _caught(monkeypatch, f12.regime_verdict(_lag_runs()), statements, "count_outcome", "between")


# --- f12a.ladder: a joint of bands, one per arm ---------------------------------------------------------------------


def test_ladder_prints_every_arms_change_beside_its_words():
    s = f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.5}))
    _prints_number(s, " — ")
    assert (s.outcome, s.rule_outcome) == ("kept", "kept")
    assert [name for name, _ in s.number.parts] == list(f12.ARMS.values())
    assert "gspo/behaviour: acc. at 16 − at 0 -0.2 (declared: [-0.1, 0.1])" in str(s)
    assert f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.62})).outcome == "up"


def test_the_lint_catches_a_mutant_band_outcome_and_joint_outcome(monkeypatch):
    s = f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.62}))
    _caught(monkeypatch, s, joint, "joint_outcome", "kept")
    monkeypatch.undo()
    monkeypatch.setattr(kinds, "band_outcome", lambda x: "inside")  # a drop of 0.2 read as inside the band
    kept = f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.5}))
    assert kept.outcome == "up"
    assert Book.of([kept]).problems() == [f"f12a.ladder: outcome 'up' cannot be said of {kept.number}"]


def test_a_mutant_ladder_combination_is_caught_by_the_rule_case(monkeypatch):
    monkeypatch.setattr(f12, "ladder_outcome", lambda parts: "up")  # every arm read as within
    assert f12.ladder_verdict(_lag_runs({("gspo/behaviour", 16): 0.5})).rule_outcome == "up"  # test_rules expects kept


# --- f12.ess: the split, and the AUROC's interval once both classes are large enough -------------------------------


@pytest.mark.parametrize("bad_low,outcome", [(True, "warns"), (False, "none")])
def test_ess_prints_the_split_and_the_auroc_interval(bad_low, outcome):
    s = f12ess.ess_verdict(_ess(bad_low))
    _prints_number(s, " — ")
    assert (s.outcome, s.rule_outcome) == (outcome, outcome)
    auroc = s.number.part("AUROC")
    assert (auroc.null, auroc.bounds) == (0.5, (0.0, 1.0)) and auroc.lo <= auroc.estimate <= auroc.hi
    assert str(s).startswith(f"{s.label} — runs: 6/12 failed; AUROC: ")


@pytest.mark.parametrize(
    "n_bad,split,label",
    [(4, "few", "not scored: too few failed or surviving runs"), (0, "none", "not scored: too few failures"),
     (12, "all", "not scored: too few surviving runs")],
)  # fmt: skip
def test_too_few_of_a_class_is_a_statement_about_the_split_alone(n_bad, split, label):
    s = f12ess.ess_verdict(_ess(True, n_bad=n_bad, n_good=12 - n_bad if n_bad == 12 else 6))
    _prints_number(s)
    assert isinstance(s.number, kinds.Split)
    assert (s.outcome, s.rule_outcome, s.label) == (split, "not_scored", label)


def test_the_lint_catches_a_mutant_split_or_interval_outcome(monkeypatch):
    _caught(monkeypatch, f12ess.ess_verdict(_ess(True, n_bad=0)), kinds, "split_outcome", "few")
    monkeypatch.undo()
    s = f12ess.ess_verdict(_ess(False))
    monkeypatch.setattr(statements, "interval_outcome", lambda x: "above")  # an interval across 0.5 read as above it
    assert s.rule_outcome == "warns"
    assert Book.of([s]).problems() == [f"f12.ess: outcome 'warns' cannot be said of {s.number}"]
