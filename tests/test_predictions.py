"""Issue 48, item 6: each declared prediction quoted word for word from its spec and scored by a rule over the stored
results; every result reachable, and a rule that ignores its data is caught."""

from __future__ import annotations

import re

import pytest
import tomllib

import gspo_record.predictions as P
from gspo_lab.paths import data_dir


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
    assert sorted({p.spec for p in P.PREDICTIONS} | set(P.unscored_specs())) == specs
