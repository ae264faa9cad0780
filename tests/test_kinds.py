"""The book's other kinds of number (gspo_record/kinds.py): each reaches every outcome from its number, refuses bad
input naming what is wrong, and the statement lint (book.consistent, written apart from the outcome functions) catches
a mutant outcome function of each."""

from __future__ import annotations

import math

import pytest

import gspo_record.kinds as kinds
from gspo_record.book import Book, consistent
from gspo_record.statements import Statement, StatementError, outcome_of, reach

CASES = {
    "band": [(kinds.Band(0.2, 1 / 3, 3.0), "below"), (kinds.Band(1.2, 1 / 3, 3.0), "inside"),
             (kinds.Band(4.0, 1 / 3, 3.0), "above"), (kinds.Band(math.nan, 10, math.inf), "unmeasured")],
    "rates": [(kinds.Rates(8, 10, 0.49, 0.94, 1, 10, 0.02, 0.40), "above"),
              (kinds.Rates(1, 10, 0.02, 0.40, 8, 10, 0.49, 0.94), "below"),
              (kinds.Rates(4, 10, 0.17, 0.69, 3, 10, 0.11, 0.60), "overlap")],
    "split": [(kinds.Split(5, 5, 3), "all"), (kinds.Split(0, 5, 3), "none"), (kinds.Split(2, 9, 3), "few"),
              (kinds.Split(4, 9, 3), "both")],
    "largest": [(kinds.Largest(4e-5, (1e-5, 4e-5)), "found"), (kinds.Largest(None, (1e-5, 4e-5)), "none")],
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_reaches_every_outcome_and_the_lint_agrees(kind):
    seen = set()
    for number, want in CASES[kind]:
        assert outcome_of(number) == want
        assert [o for o in reach(number) if consistent(number, o)] == [want]
        seen.add(want)
    assert seen == set(reach(CASES[kind][0][0])) | ({"unmeasured"} if kind == "band" else set())


@pytest.mark.parametrize("kind,fn", [("band", "band_outcome"), ("rates", "rates_outcome"),
                                     ("split", "split_outcome"), ("largest", "largest_outcome")])  # fmt: skip
def test_the_lint_catches_a_mutant_outcome_function_of_each_kind(monkeypatch, kind, fn):
    number, want = CASES[kind][0]
    wrong = next(o for o in reach(number) if o != want)
    s = Statement("x", "q?", number, {o: o for o in reach(number)})
    assert Book.of([s]).problems() == []
    monkeypatch.setattr(kinds, fn, lambda x: wrong)  # ignores its number
    assert s.outcome == wrong
    assert Book.of([s]).problems() == [f"x: outcome {wrong!r} cannot be said of {number}"]


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: kinds.Band(1.0, 3.0, 1.0), "low <= high"),
        (lambda: kinds.Band(1.0, -math.inf, math.inf), "one finite side"),
        (lambda: kinds.Rates(11, 10, 0.5, 1.0, 1, 10, 0.0, 0.4), "0 <= k <= n"),
        (lambda: kinds.Rates(8, 10, 0.9, 0.95, 1, 10, 0.0, 0.4), "lo <= k/n <= hi"),
        (lambda: kinds.Split(6, 5, 3), "0 <= k <= n"),
        (lambda: kinds.Largest(3e-5, (1e-5, 4e-5)), "not a rung"),
    ],
)
def test_bad_input_is_an_error_naming_what_is_wrong(make, match):
    with pytest.raises(StatementError, match=match):
        make()


def test_a_comparative_word_on_a_band_needs_an_outcome_outside_it():
    words = {"below": "lower", "inside": "of the same order", "above": "higher"}
    Statement("x", "q?", kinds.Band(1.0, 0.5, 2.0), words)
    with pytest.raises(StatementError, match="does not exclude the null"):
        Statement("x", "q?", kinds.Band(1.0, 0.5, 2.0), words | {"inside": "higher"})


def test_each_kind_prints_its_number():
    assert str(kinds.Band(1.2, 1 / 3, 3.0, "ratio")) == "ratio 1.2 (declared: [0.333, 3])"
    assert str(kinds.Band(12, 10, math.inf, "delay")) == "delay 12 (declared: at least 10)"
    assert str(kinds.Split(4, 9, 3, "collapsed")) == "4/9 collapsed"
    assert str(kinds.Largest(4e-5, (1e-5, 4e-5), "lr")) == "lr 4e-05 of {1e-05, 4e-05}"
    assert "warned: 8/10 [0.49, 0.94]" in str(kinds.Rates(8, 10, 0.49, 0.94, 1, 10, 0.02, 0.40,
                                                              names=("warned", "false")))  # fmt: skip
