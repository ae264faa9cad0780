"""Issue 48's statements (gspo_record/statements.py): an outcome is computed from the number it is about, so it cannot
contradict it; a summary cannot render a superseded statement; prose that assumes an outcome fails when the data give
another. Each check with a mutant of the code that breaks it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gspo_record.book as B
import gspo_record.statements as S
from gspo_lab.experiments.stats import t_interval
from gspo_record.book import Book
from gspo_record.statements import Boundaries, Count, Interval, Statement, StatementError

DIFF = {"above": "higher", "below": "lower", "none": "no difference shown"}
BOUND = {"higher": "the larger boundary", "lower": "the smaller boundary", "same": "the same boundary",
         "both_top": "both reach the ladder's top"}  # fmt: skip
COUNT = {"at_least": "collapses", "at_most": "does not collapse", "between": "between the thresholds"}


def _diff(lo, hi, est=None, n=10):
    est = (lo + hi) / 2 if est is None else est
    return Statement("x.diff", "is A above B?", Interval(est, lo, hi, n, 7, 3), DIFF)


@pytest.mark.parametrize(("lo", "hi", "outcome"), [(0.01, 0.2, "above"), (-0.2, -0.01, "below"), (-0.1, 0.1, "none")])
def test_every_interval_outcome_is_reached(lo, hi, outcome):
    assert _diff(lo, hi).outcome == outcome


MARGIN = [(-0.05, 0.01, "within"), (-0.06, -0.01, "within_below"), (0.01, 0.06, "within_above"),
          (-0.3, -0.12, "below"), (0.05, 0.2, "above"), (-0.15, 0.05, "inconclusive")]  # fmt: skip


@pytest.mark.parametrize(("lo", "hi", "outcome"), MARGIN)
def test_every_margin_outcome_is_reached(lo, hi, outcome):
    x = Interval((lo + hi) / 2, lo, hi, 10, 2, 8, margin=0.1)
    assert S.interval_outcome(x) == outcome
    assert B.consistent(x, outcome)
    assert not any(B.consistent(x, other) for other in S.reach(x) if other != outcome)


COUNTS = [(4, 5, "at_least"), (1, 5, "at_most"), (2, 5, "between"), (16, 20, "at_least"), (3, 20, "at_most"),
          (9, 22, "between")]  # fmt: skip


@pytest.mark.parametrize(("k", "n", "outcome"), COUNTS)
def test_every_count_outcome_is_reached(k, n, outcome):
    assert Statement("x.c", "does it collapse?", Count(k, n, 4, 1), COUNT).outcome == outcome


LADDERS = [(32, 16, "higher"), (2, 16, "lower"), (8, 8, "same"), (16, 16, "both_top"), (None, 2, "lower"),
           (None, None, "same")]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "outcome"), LADDERS)
def test_every_boundary_outcome_is_reached_and_prints_both_boundaries(a, b, outcome):
    s = Statement("x.b", "which tolerates more lag?", Boundaries(a, b, top=16), BOUND)
    assert s.outcome == outcome
    assert f"{'none' if a is None else a} against {'none' if b is None else b}" in str(s)


@given(st.floats(-1, 1), st.floats(0.001, 0.5), st.floats(0, 1))
def test_an_interval_that_excludes_zero_never_reads_no_difference(centre, half, where):
    lo, hi = centre - half, centre + half
    s = _diff(lo, hi, est=lo + where * (hi - lo))
    assert (s.outcome == "none") == (lo <= 0 <= hi)


def test_mutant_a_label_function_that_ignores_its_interval_flips_a_case(monkeypatch):
    """The audit's class: "no difference shown" beside −0.0155 [−0.03, −9.18e-04] (7/10 < 0)."""
    s = _diff(-0.03, -9.18e-04, est=-0.0155)
    assert s.outcome == "below"
    monkeypatch.setattr(
        S, "interval_outcome", lambda x: "above" if x.estimate > 0.05 else "below" if x.estimate < -0.05 else "none"
    )
    assert s.outcome == "none"  # the mutant reads the estimate against a threshold and prints "no difference"


def test_a_comparative_word_on_an_outcome_that_does_not_exclude_the_null_is_refused():
    with pytest.raises(StatementError, match="does not exclude the null"):
        Statement("x.b", "q", Boundaries(16, 16, 16), {**BOUND, "both_top": "GRPO tolerates more lag"})
    with pytest.raises(StatementError, match="does not exclude the null"):  # two margin readings, not a difference
        Statement("x.b", "q", Boundaries(32, 16, 32), {**BOUND, "higher": "GRPO tolerates more lag"})
    with pytest.raises(StatementError, match="must name each outcome"):
        Statement("x.b", "q", Boundaries(16, 16, 16), {"higher": "more"})


@pytest.mark.parametrize(
    ("args", "match"),
    [((0.5, 0.1, 0.2, 10, 5, 5), "lo <= estimate <= hi"), ((0.1, 0.0, 0.2, 10, 8, 5), "sign counts"),
     ((math.nan, 0.0, 0.2, 10, 5, 5), "must be numbers")],
)  # fmt: skip
def test_a_bad_number_is_an_error_naming_what_is_wrong(args, match):
    with pytest.raises(StatementError, match=match):
        Interval(*args)


def test_an_interval_outside_its_endpoint_range_is_refused():
    with pytest.raises(StatementError, match="leaves the endpoint's range"):
        Interval(0.05, -0.02, 1.1, 5, 4, 1, bounds=(-1.0, 1.0))
    assert Interval.of([0.1, 0.2, 0.3, 0.2, 0.1], t_interval, bounds=(-1, 1)).above == 5


def test_a_summary_cannot_render_a_superseded_statement_and_a_page_marks_it():
    book = Book()
    old = book.add(Statement("f12b.cmp", "q", Boundaries(16, 16, 16), BOUND))
    new = book.add(Statement("f12c.cmp", "q", Boundaries(32, 16, 32), BOUND, supersedes=("f12b.cmp",)))
    assert book.summary("f12c.cmp") is new
    with pytest.raises(StatementError, match="f12c.cmp supersedes"):
        book.summary(old.id)
    assert book.page(old.id).endswith("(superseded by f12c.cmp)")
    with pytest.raises(StatementError, match="made twice"):
        book.add(old)


def test_mutant_a_book_that_forgets_supersession_lets_the_old_reading_through(monkeypatch):
    book = Book()
    book.add(Statement("a.five", "q", Count(3, 5, 4, 1), COUNT))
    book.add(Statement("a.ten", "q", Count(9, 10, 4, 1), COUNT, supersedes=("a.five",)))
    monkeypatch.setattr(Book, "superseded_by", lambda self, id: None)
    assert book.summary("a.five").outcome == "between"  # the stale reading a summary would print


def test_prose_that_assumes_another_outcome_fails_the_build():
    book = Book()
    book.add(Statement("f12c.gspo_vs_grpo", "q", Boundaries(16, 32, 32), BOUND))
    assert book.expect("f12c.gspo_vs_grpo", "lower") == ""
    with pytest.raises(StatementError, match="rewrite the sentence"):
        book.expect("f12c.gspo_vs_grpo", "both_top")


def test_sure_says_what_flips_a_fragile_statement():
    s = Statement("x", "q", Count(4, 5, 4, 1), COUNT, declared=False, flips=("leaving out seed 132",))
    assert s.sure == "post hoc; fragile: leaving out seed 132 changes it"


@given(st.floats(-1, 1), st.floats(0.001, 0.5), st.floats(0, 1), st.sampled_from([0.0, 0.1]))
def test_the_lints_own_check_agrees_with_every_outcome_function(centre, half, where, margin):
    lo, hi = centre - half, centre + half
    x = Interval(lo + where * (hi - lo), lo, hi, 10, 5, 5, margin=margin)
    assert [o for o in S.reach(x) if B.consistent(x, o)] == [S.interval_outcome(x)]


@pytest.mark.parametrize(("k", "n", "outcome"), COUNTS)
def test_the_lints_own_check_agrees_on_counts(k, n, outcome):
    assert [o for o in S.reach(Count(k, n, 4, 1)) if B.consistent(Count(k, n, 4, 1), o)] == [outcome]


@pytest.mark.parametrize(("a", "b", "outcome"), LADDERS)
def test_the_lints_own_check_agrees_on_boundaries(a, b, outcome):
    assert [o for o in S.reach(Boundaries(a, b, 16)) if B.consistent(Boundaries(a, b, 16), o)] == [outcome]


def test_mutant_an_outcome_function_that_ignores_its_interval_is_caught_by_the_book_lint(monkeypatch):
    book = Book.of({"rows": [_diff(-0.03, -9.18e-04, est=-0.0155)]})
    assert book.problems() == []
    monkeypatch.setattr(S, "interval_outcome", lambda x: "none")
    (problem,) = book.problems()
    assert problem.startswith("x.diff: outcome 'none' cannot be said of -0.0155 [-0.03, -9.18e-04]")


def test_a_book_collects_every_statement_once_and_refuses_two_with_one_id():
    s = _diff(0.01, 0.2)
    cmp = Statement("x.b", "q", Boundaries(16, 16, 16), BOUND, secondary=s)
    book = Book.of({"a": [cmp, {"again": cmp}], "b": (s,)})
    assert list(book.statements) == ["x.b", "x.diff"]
    with pytest.raises(StatementError, match="made twice"):
        Book.of([s, _diff(-0.2, -0.1)])
    assert Book.of([Statement("n", "q", Count(1, 5, 4, 1), COUNT, supersedes=("gone",))]).problems() == [
        "n: supersedes 'gone', which this build does not make"
    ]


def test_a_rules_reading_maps_each_outcome_and_must_name_them_all():
    words = {o: "tolerates" if o.startswith("within") else o for o in S.reach(Interval(0, -1, 1, 5, 2, 2, margin=0.1))}
    reads = {
        o: "tolerates" if o.startswith("within") else "degrades" if o == "below" else "inconclusive" for o in words
    }
    s = Statement("t", "q", Interval(-0.03, -0.05, -0.01, 10, 0, 10, margin=0.1), words, reads=reads)
    assert (s.outcome, s.rule_outcome) == ("within_below", "tolerates")
    with pytest.raises(StatementError, match="reads must map each outcome"):
        Statement("t", "q", Interval(-0.03, -0.05, -0.01, 10, 0, 10, margin=0.1), words, reads={"within": "x"})
