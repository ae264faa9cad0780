"""Issue 48, item 6: each declared prediction quoted word for word from its spec and scored by a rule over the stored
results; every result reachable, and a rule that ignores its data is caught."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import tomllib

import gspo_record.f2.predictions as F2
import gspo_record.f6.predictions as F6
import gspo_record.f10.predictions as F10
import gspo_record.f11.predictions as F11
import gspo_record.predictions as P
from gspo_lab.paths import data_dir
from gspo_record.statements import Interval, outcome_of


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("p", P.PREDICTIONS, ids=lambda p: f"{p.spec}:{p.quote[:30]}")
def test_every_prediction_is_quoted_word_for_word_from_its_spec(p):
    description = tomllib.loads((data_dir() / "specs" / f"{p.spec}.toml").read_text())["description"]
    assert _words(p.quote) in _words(description)


@pytest.mark.parametrize(("held", "of", "result"), [(3, 3, "borne out"), (1, 3, "partly"), (0, 2, "not borne out")])
def test_every_result_is_reached(held, of, result):
    assert P.result_of(held, of) == result


def test_a_bad_count_is_an_error_naming_it():
    with pytest.raises(ValueError, match="need 0 <= held <= of"):
        P.result_of(3, 2)


def _lags(cispo: int, grpo: int) -> dict:
    return {"f12b": {"largest": [{"key": "cispo/behaviour", "lag": cispo}, {"key": "grpo/behaviour", "lag": grpo}]},
            "f12c": {"largest": []}}  # fmt: skip


def test_cispo_more_lag_than_grpo_is_scored_on_the_largest_tolerated_lags():
    assert P._cispo_more_than_grpo(_lags(2, 32))[0] == "not borne out"
    assert P._cispo_more_than_grpo(_lags(64, 32))[0] == "borne out"
    assert "CISPO 2, GRPO 32" in P._cispo_more_than_grpo(_lags(2, 32))[1]


def test_mutant_a_scoring_rule_that_ignores_its_data_is_caught(monkeypatch):
    monkeypatch.setattr(P, "_lags", lambda ctx: {"cispo/behaviour": 64, "grpo/behaviour": 32})  # reads no context
    assert P._cispo_more_than_grpo(_lags(2, 32))[0] == "borne out"  # the verdict flips: the test above would fail


def test_every_spec_with_predictions_is_scored_or_listed_as_not_yet():
    specs = sorted(p.stem for p in (data_dir() / "specs").glob("*.toml")
                   if "predict" in tomllib.loads(p.read_text()).get("description", "").lower())  # fmt: skip
    assert sorted({p.spec for p in P.PREDICTIONS} | set(P.unscored_specs()) | set(P.NONE_DECLARED)) == specs


# Findings 2, 6, 10 and 11's scoring rules, each on a small synthetic context that reaches both ends.


def _statement(number=None, rule_outcome="", flips=(), label="words"):
    outcome = outcome_of(number) if number is not None else rule_outcome
    return SimpleNamespace(number=number, outcome=outcome, rule_outcome=rule_outcome or outcome, label=label,
                           mark=" (fragile)" * bool(flips), flips=tuple(flips), fragile=bool(flips))  # fmt: skip


def _book(**by_id):
    return SimpleNamespace(summary=lambda id: by_id[id.replace(".", "_")])


def _slope(lo: float, hi: float) -> Interval:
    return Interval((lo + hi) / 2, lo, hi, 5, 4, 1)


def test_the_length_gap_prediction_reads_the_fresh_seeds_slope():
    grows = {"book": _book(f6c_confirm_grows=_statement(_slope(0.01, 0.09)))}
    flat = {"book": _book(f6c_confirm_grows=_statement(_slope(-0.04, 0.08)))}
    assert F6._gap_grows(grows)[0] == "borne out"
    assert F6._gap_grows(flat)[0] == "not borne out"
    assert "-0.04, 0.08" in F6._gap_grows(flat)[1]


def test_gspo_differs_from_luspo_either_way_and_not_when_no_difference_is_shown():
    read = lambda lo, hi: F6._luspo_differs({"book": _book(f6d_luspo=_statement(_slope(lo, hi)))})[0]  # noqa: E731
    assert read(0.5, 2.0) == read(-2.0, -0.5) == "borne out"
    assert read(-0.03, 0.13) == "not borne out"


def _ten(grpo: str, gspo: str) -> dict:
    return {"f2t": {"verdicts": [{"model": m, "fresh": {"grpo": grpo, "gspo": gspo}} for m in ("MoE", "dense")]}}


def test_the_fresh_seeds_headline_is_scored_on_their_own_collapse_counts():
    assert F2._fresh_separates(_ten("4/5", "0/5"))[0] == "borne out"
    assert F2._fresh_separates(_ten("1/5", "3/5"))[0] == "not borne out"
    assert F2._fresh_separates(_ten("5/5", "2/5"))[0] == "partly"  # GRPO collapses, GSPO is not stable
    assert "MoE GRPO 1/5 collapsed" in F2._fresh_separates(_ten("1/5", "3/5"))[1]


def _confirm(cispo: str, sapo: str, grpo: str, gspo: str) -> dict:
    return {"f11": {"confirm": {"rows": [["cispo", "acc", f"{cispo} (collapses)"], ["sapo", "acc", sapo]],
                                "baselines": [["grpo", "acc", grpo], ["gspo", "acc", gspo]]}}}  # fmt: skip


def test_the_production_reading_on_fresh_seeds_is_scored_on_the_collapse_classes():
    assert F11._confirm_counts(_confirm("5/5", "4/5", "1/5", "0/5"))[0] == "borne out"
    assert F11._confirm_counts(_confirm("1/5", "0/5", "4/5", "5/5"))[0] == "not borne out"
    assert "CISPO 1/5 collapsed" in F11._confirm_counts(_confirm("1/5", "0/5", "4/5", "5/5"))[1]


def test_fragile_on_the_moe_reads_the_statements_flips():
    fragile = {"book": _book(f10t_two_by_two_MoE=_statement(rule_outcome="size", flips=["without seed 32: both"]))}
    robust = {"book": _book(f10t_two_by_two_MoE=_statement(rule_outcome="mixed"))}
    assert F10._fragile_on_moe(fragile) == ("borne out", "MoE reads words, fragile: without seed 32: both changes it")
    assert F10._fragile_on_moe(robust)[0] == "not borne out"


def test_mutant_a_collapse_class_that_ignores_the_count_is_caught(monkeypatch):
    monkeypatch.setattr(F11, "_count", lambda text: (5, 5))  # reads no count: every arm "collapsed"
    assert F11._confirm_counts(_confirm("1/5", "0/5", "4/5", "5/5"))[0] == "partly"  # the test above would fail
