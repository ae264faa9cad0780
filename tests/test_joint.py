"""Joint statements (issue 48, item 1): a rule that reads several numbers prints them all beside its words, its
outcome is its combination of the parts' outcomes, and the lint checks each part against its own number."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import gspo_record.f2.collapse as f2
import gspo_record.f2.ten as f2t
import gspo_record.f11.successors as f11
import gspo_record.joint as joint
from gspo_record.book import Book, consistent
from gspo_record.statements import Count, Interval, StatementError

UP = pd.Series([0.05, 0.04, 0.06, 0.03, 0.05])
MIXED = pd.Series([0.04, -0.05, 0.03, -0.04, 0.01])


def test_a_joint_prints_every_shown_part_beside_its_words():
    s = f2.collapse_verdict(5, 5, 0, 5, 5, "x")
    assert s.outcome == "separates"
    assert str(s) == "GRPO collapses where GSPO does not — GRPO: 5/5 [0.57, 1.00]; GSPO: 0/5 [0.00, 0.43]"
    assert "against none" not in str(s)  # a part read on a second threshold is not printed twice


@pytest.mark.parametrize(
    "parts,match",
    [
        ((("GRPO", Count(1, 5, 4, 1)),), "parts must be"),
        (
            (("GRPO", Count(1, 5, 4, 1)), ("GSPO", 0.5), ("_GSPO against none", Count(0, 5, 1, 0))),
            "must be an Interval",
        ),
    ],
)
def test_a_joint_with_the_wrong_parts_is_an_error_naming_them(parts, match):
    with pytest.raises(StatementError, match=match):
        joint.Joint("f2.collapse", parts)


def test_an_unknown_combination_is_an_error():
    with pytest.raises(StatementError, match="combine must be one of"):
        joint.Joint("no.such", ())


def test_the_lint_checks_a_joint_by_its_parts_and_catches_a_mutant_combination(monkeypatch):
    s = f11.position_verdict(UP, MIXED)
    assert s.outcome == "gspo_like" and consistent(s.number, "gspo_like")
    assert not consistent(s.number, "between") and not consistent(s.number, "above_gspo")
    c = joint.COMBINES["f11.position"]
    monkeypatch.setattr(joint, "joint_outcome", lambda x: "between")  # ignores its parts
    assert s.outcome == "between"
    assert Book.of([s]).problems() == [f"{s.id}: outcome 'between' cannot be said of {s.number}"]
    assert joint.COMBINES["f11.position"] is c


def test_a_comparative_word_on_a_joint_outcome_not_declared_shown_is_refused():
    number = f11.position_verdict(MIXED, MIXED).number
    words = {o: o for o in number.reach} | {"unresolved": "GSPO better"}
    with pytest.raises(StatementError, match="does not exclude the null"):
        f11.POSITION.state("x", "?", number, words=words)


def test_a_shown_outcome_needs_a_part_that_excludes_its_null(monkeypatch):
    """The lint's own check: an outcome that rests on a shown difference, with no part shown, is refused."""
    number = f11.position_verdict(MIXED, MIXED).number
    mutant = dataclasses.replace(joint.COMBINES["f11.position"], fn=lambda o: "between")
    monkeypatch.setitem(joint.COMBINES, "f11.position", mutant)
    assert not consistent(number, "between")


def test_ten_seeds_supersede_the_five_seed_count_in_a_summary():
    five = f2.collapse_verdict(4, 5, 0, 5, 5, "f2.collapse.off")
    ten = f2t.ten_verdict(8, 10, 0, 10, id="f2t.ten.MoE")
    book = Book.of([five, ten])
    assert book.superseded_by("f2.collapse.off") == "f2t.ten.MoE"
    with pytest.raises(StatementError, match="f2t.ten.MoE supersedes"):
        book.summary("f2.collapse.off")
    assert "superseded by f2t.ten.MoE" in book.page("f2.collapse.off")


def test_a_count_part_reads_the_declared_thresholds_scaled_to_n():
    assert f2t.ten_verdict(8, 10, 2, 10).outcome == "separates"
    assert f2t.ten_verdict(7, 10, 0, 10).outcome == "unclear"
    s = f2.dense_verdict(4, 5, 5)
    assert (s.outcome, s.rule_outcome) == ("at_least", "not_specific")
    assert str(s) == "not MoE-specific at this scale, 4/5 [0.38, 0.96]"


def test_the_interval_parts_are_the_declared_ones_on_the_difference_range():
    s = f11.position_verdict(UP, MIXED)
    part = s.number.part("− GRPO")
    assert isinstance(part, Interval) and part.bounds == (-1.0, 1.0) and part.n == 5 and part.above == 5


def test_a_summary_renders_statements_only_and_a_bare_verdict_fails():
    """Issue 48, item 1: a sentence that assumes a rule's bare Verdict (words with no number) fails the build; the same
    rule read as a statement passes and names its own outcome or its rule's reading of it."""
    verdict = f2.COLLAPSE.verdict("separates")
    book = Book.of([f2.dense_verdict(4, 5, 5)])
    with pytest.raises(StatementError, match="renders statements only"):
        book.expect(verdict, "separates")
    assert book.expect("f2.dense", "not_specific") == "" and book.expect("f2.dense", "at_least") == ""
    with pytest.raises(StatementError, match="the data give 'at_least'"):
        book.expect("f2.dense", "specific")


def test_only_the_pages_interval_must_stay_in_range_a_re_reading_under_the_old_one_may_leave_it():
    """The build re-reads every section under stats version 3's bootstrap-t (reread.PREVIOUS) to list the verdicts
    that moved; that interval ignores the endpoint's range and is never printed, so only the page's is held to it."""
    from gspo_lab.experiments.stats import interval_method

    args = (0.5, -1.5, 0.9, 5, 4, 1)
    with pytest.raises(StatementError, match="leaves the endpoint's range"):
        Interval(*args, bounds=(-1.0, 1.0))
    with interval_method("bootstrap_t"):
        assert Interval(*args, bounds=(-1.0, 1.0)).lo == -1.5
