"""Issue 50, item 3's training arm on the page: f5g_mask_form's stored runs read by its declared rule, the spec's own
re-readings carried into the statement's fragility, its three predictions scored (each can read either way), and the
recipe's sentence guarded by the statements it assumes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

import gspo_record.f5.mask_form as f5g
from gspo_lab.experiments.store import cached
from gspo_lab.paths import repo_root


@pytest.fixture(scope="module")
def section():
    with cached():
        return f5g.section()[0]


def test_every_arm_has_its_five_fresh_seeds_and_both_objectives_a_statement(section):
    with cached():
        t = f5g.runs()
    arms = [f"{o}/{m}" for o in ("grpo", "gspo") for m in ("off", "sequence_geo_mask", "sequence_mask")]
    assert sorted(t.groupby("arm_id").size().items()) == [(a, 5) for a in arms]
    assert sorted(set(t["seed"])) == [160, 161, 162, 163, 164]
    assert [v["verdict"].id for v in section["verdicts"]] == ["f5g.form.grpo", "f5g.form.gspo"]
    assert len(section["against_off"]) == 4 and len(section["rows"]) == 6
    assert (t[t["mask"] == "off"]["masked"] == 0).all() and (t[t["mask"] != "off"]["masked"] > 0).all()


def test_a_declared_re_reading_that_changes_the_verdict_makes_the_statement_fragile(section):
    for v in section["verdicts"]:
        declared = v["declared"] != "robust"
        assert bool(v["verdict"].flips) >= declared, v["objective"]
        if declared:
            assert all(f in v["verdict"].flips for f in v["declared"].removeprefix("fragile: ").split("; "))
    recipe = re.sub(r"\s+", " ", (repo_root() / "docs" / "recipe.md").read_text())
    for v in section["verdicts"]:
        assert f"{v['objective'].upper()} {v['verdict'].number.brief}, *{v['verdict'].label}*" in recipe


def _ctx(masked: dict, outcomes: dict) -> dict:
    number = SimpleNamespace(brief="0.01 [-0.02, 0.04], 3 of 5 seeds > 0")
    verdicts = [{"objective": o, "masked": masked[o], "verdict": SimpleNamespace(id=f"f5g.form.{o}")}
                for o in ("grpo", "gspo")]  # fmt: skip
    book = {f"f5g.form.{o}": SimpleNamespace(rule_outcome=outcomes[o], number=number, label="words") for o in outcomes}
    return {"f5g": {"verdicts": verdicts}, "book": book}


def test_the_predictions_score_either_way():
    drops, grpo, gspo = f5g.PREDICTIONS
    many = {o: {"sequence_mask": 0.02, "sequence_geo_mask": 0.3} for o in ("grpo", "gspo")}
    few = {**many, "gspo": {"sequence_mask": 0.1, "sequence_geo_mask": 0.3}}
    assert drops.score(_ctx(many, {"grpo": "none", "gspo": "none"}))[0] == "borne out"
    assert drops.score(_ctx(few, {"grpo": "none", "gspo": "none"}))[0] != "borne out"
    assert grpo.score(_ctx(many, {"grpo": "none", "gspo": "none"}))[0] == "borne out"
    assert grpo.score(_ctx(many, {"grpo": "lower", "gspo": "none"}))[0] == "not borne out"
    assert gspo.score(_ctx(many, {"grpo": "none", "gspo": "higher"}))[0] == "not borne out"
    with pytest.raises(ValueError, match="no finished grpo pairs"):
        drops.score({"f5g": {"verdicts": []}})


def test_stored_results_that_move_the_product_arm_flip_the_verdict_and_the_recipe_fails(monkeypatch):
    """The data mutant: the same stored table with GRPO's product arm 0.1 higher late reads "higher", and the recipe's
    sentence, which assumes "lower", then stops the build instead of printing words the data contradict."""
    from gspo_record.book import Book
    from gspo_record.statements import StatementError

    with cached():
        stored = f5g.runs()
    moved = stored.assign(late_acc=stored["late_acc"] + 0.1 * (stored["arm_id"] == "grpo/sequence_mask"))
    monkeypatch.setattr(f5g, "runs", lambda: moved)
    with cached():
        ctx = f5g.section()[0]
    grpo = next(v for v in ctx["verdicts"] if v["objective"] == "grpo")["verdict"]
    assert grpo.rule_outcome == "higher"
    with pytest.raises(StatementError, match="prose assumes f5g.form.grpo reads 'lower'"):
        Book.of({"f5g": ctx}).expect("f5g.form.grpo", "lower")
