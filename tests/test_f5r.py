"""Issue 51, item 1's training arm on the page: f5r_routing_replay's stored runs read by its declared rule, the spec's
own re-readings carried into the statement's fragility, and its three predictions scored (each can read either way)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

import gspo_record.f5.r3 as f5r
from gspo_lab.experiments.store import cached
from gspo_lab.paths import repo_root


@pytest.fixture(scope="module")
def section():
    with cached():
        return f5r.section()[0]


def test_every_arm_has_its_five_fresh_seeds_and_both_objectives_a_statement(section):
    with cached():
        t = f5r.runs()
    assert sorted(t.groupby("arm_id").size().items()) == [("grpo", 5), ("grpo+r3", 5), ("gspo", 5), ("gspo+r3", 5)]
    assert sorted(set(t["seed"])) == [170, 171, 172, 173, 174]
    assert [v["verdict"].id for v in section["verdicts"]] == ["f5r.r3.grpo", "f5r.r3.gspo"]


def test_a_declared_re_reading_that_changes_the_verdict_makes_the_statement_fragile(section):
    for v in section["verdicts"]:
        declared = v["declared"] != "robust"
        assert bool(v["verdict"].flips) >= declared, v["objective"]
        if declared:
            assert all(f in v["verdict"].flips for f in v["declared"].removeprefix("fragile: ").split("; "))
    recipe = re.sub(r"\s+", " ", (repo_root() / "docs" / "recipe.md").read_text())
    for v in section["verdicts"]:
        assert f"{v['objective'].upper()} {v['verdict'].number.brief}, *{v['verdict'].label}*" in recipe


def _ctx(clip_off: float, clip_on: float, outcomes: dict) -> dict:
    number = SimpleNamespace(brief="0.01 [-0.02, 0.04], 3 of 5 seeds > 0")
    verdicts = [{"objective": o, "clip_off": clip_off, "clip_on": clip_on, "verdict": SimpleNamespace(id=f"f5r.r3.{o}")}
                for o in ("grpo", "gspo")]  # fmt: skip
    book = {f"f5r.r3.{o}": SimpleNamespace(rule_outcome=outcomes[o], number=number, label="words") for o in outcomes}
    return {"f5r": {"verdicts": verdicts}, "book": book}


def test_the_predictions_score_either_way():
    grpo, gspo, clips = f5r.PREDICTIONS
    none = {"grpo": "none", "gspo": "none"}
    assert grpo.score(_ctx(0.2, 0.2, none))[0] == "borne out"
    assert grpo.score(_ctx(0.2, 0.2, {**none, "grpo": "higher"}))[0] == "not borne out"
    assert gspo.score(_ctx(0.2, 0.2, {**none, "gspo": "lower"}))[0] == "not borne out"
    assert clips.score(_ctx(0.2, 0.17, none))[0] == "borne out"
    assert clips.score(_ctx(0.2, 0.1, none))[0] == "not borne out"
    with pytest.raises(ValueError, match="no finished grpo pairs"):
        grpo.score({"f5r": {"verdicts": []}})


def test_stored_results_that_move_the_r3_arm_flip_the_verdict(monkeypatch):
    """The data mutant: the same stored table with GSPO's R3 arm 0.2 higher at the end reads "higher"."""
    with cached():
        stored = f5r.runs()
    moved = stored.assign(eval_final=stored["eval_final"] + 0.2 * (stored["arm_id"] == "gspo+r3"))
    monkeypatch.setattr(f5r, "runs", lambda: moved)
    with cached():
        ctx = f5r.section()[0]
    assert next(v for v in ctx["verdicts"] if v["objective"] == "gspo")["verdict"].rule_outcome == "higher"
