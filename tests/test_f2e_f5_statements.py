"""Finding 2e's interventions, 5's premise and confirmation, 8's spikes, 10z's pairing and the pooled collapse class
as statements (issue 48): each prints the number its outcome is about beside its words, and the lint (book.consistent)
rejects an outcome its number does not give."""

from __future__ import annotations

import pandas as pd
import pytest

import gspo_record.f2.interventions as f2e
import gspo_record.f5.confirm as f5c
import gspo_record.f5.precision as f5
import gspo_record.f8.dense as f8
import gspo_record.f10.branch as f10z
import gspo_record.kinds as kinds
import gspo_record.statements as statements
from gspo_record.book import Book
from gspo_record.rules import PENDING, class_verdict

UP = pd.Series([0.05, 0.04, 0.06, 0.03, 0.05])
DOWN = -UP
S = pd.Series


def _premise(bf16, fp32):
    return pd.DataFrame([{"checkpoint": f"ck{i}", "seed": s, "bf16_seq_mean": b * (1 + 0.01 * s),
                          "fp32_seq_mean": f * (1 + 0.01 * s)}
                         for i, (b, f) in enumerate(zip(bf16, fp32, strict=True)) for s in range(5)])  # fmt: skip


CASES = [
    (lambda: f2e.intervention_verdict(f2e.INTERVENTIONS[("grpo_dual_clip", "off")], 0, 5, 150.0, 5), "inconclusive",
     ["collapsed: 0/5 [0.00, 0.43]", "largest update's norm, median: 150 against 100"]),
    (lambda: f2e.intervention_verdict(f2e.INTERVENTIONS[("grpo", "10")], 4, 5, 300.0, 5), "high", ["4/5 [0.38, 0.96]"]),
    (lambda: f2e.dose_confirm_verdict(4, 5, 1, 5, 10), "confirmed", ["MoE: 4/5", "dense: 1/5"]),
    (lambda: class_verdict(7, 10, "x"), "between", ["7/10 ["]),
    (lambda: f5.premise_verdict(_premise([2e-3, 1e-3], [1e-7, 1e-7])), "holds", ["ck0: (bf16: 0.00204", "fp32 floor"]),
    (lambda: f5c.confirm_verdict(UP, DOWN), "not", ["first seeds: 0.046", "fresh seeds: -0.046"]),
    (lambda: f8.spikes_verdict(S([30.0, 28, 33]), S([300.0, 310, 290])), "different", ["median peak norm 0.1"]),
    (lambda: f10z.paired_verdict(0.01, 0.03), "tighter", ["sd paired 0.01 against 0.015"]),
]  # fmt: skip


@pytest.mark.parametrize("make,rule_outcome,printed", CASES)
def test_each_statement_prints_its_number_beside_its_words(make, rule_outcome, printed):
    s = make()
    assert s.rule_outcome == rule_outcome
    assert str(s).startswith(s.label)
    for text in printed:
        assert text in str(s)
    assert Book.of([s]).problems() == []


@pytest.mark.parametrize("make,rule_outcome,printed", CASES)
def test_the_lint_rejects_an_outcome_the_number_does_not_give(monkeypatch, make, rule_outcome, printed):
    s = make()
    wrong = next(o for o in statements.reach(s.number) if o != s.outcome)
    kind = type(s.number)
    monkeypatch.setitem(statements.OUTCOMES, kind, "wrong")
    monkeypatch.setattr(statements, "wrong", lambda x: wrong, raising=False)
    assert s.outcome == wrong
    assert Book.of([s]).problems() == [f"{s.id}: outcome {wrong!r} cannot be said of {s.number}"]


def test_pending_without_runs_and_a_bare_count_label_without_an_id():
    assert f2e.dose_confirm_verdict(0, 0, 1, 5, 10).outcome == PENDING
    assert f5c.confirm_verdict(UP[:1], UP).outcome == PENDING
    assert f10z.paired_verdict(float("nan"), 0.03).outcome == PENDING
    assert class_verdict(1, 5).outcome == "stable"  # a table cell's label beside its count: the rule's verdict
    assert isinstance(f8.spikes_verdict(S([1.0]), S([1.0])).number, kinds.Band)


def test_the_build_lists_every_bare_verdict_a_page_would_print():
    from gspo_record.book import bare_verdicts
    from gspo_record.rules import COLLAPSE_CLASS

    context = {"f2e": {"pooled": [{"verdict": class_verdict(7, 10)}, {"verdict": class_verdict(7, 10, "x")}],
                       "later": COLLAPSE_CLASS.verdict(PENDING)}}  # fmt: skip
    assert bare_verdicts(context) == ["f2e/pooled/0/verdict: collapse.class between"]
