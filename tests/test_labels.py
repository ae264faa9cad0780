"""Labels that describe the data (issue 35, item 3), on the committed pages (``--check`` in tests/test_findings.py
keeps them equal to a regeneration): each sentence the issue found wrong is computed from its section's numbers, and
a test here catches it coming back."""

from __future__ import annotations

import re

import pytest

import gspo_record.page  # noqa: F401  (imports every finding, so RULES is complete)
from gspo_lab.paths import repo_root
from gspo_record.lint import NULL_PHRASES
from gspo_record.rules import RULES


def _page(name: str) -> str:
    return re.sub(r"\s+", " ", (repo_root() / "docs" / name).read_text())


@pytest.fixture(scope="module")
def stability_map():
    from gspo_lab.experiments.store import cached
    from gspo_record.f2.search import map_section

    with cached():
        return map_section()[0]["summary"]


def test_the_story_and_the_recipe_carry_the_map_boundary_not_immunity(stability_map):
    """'A boundary moved, not immunity' reaches the story and the recipe with the map's counts per cap; the recipe's
    'with the default cap, neither algorithm collapsed here' (wrong: GSPO 7/22 at cap 1 on the map) is gone."""
    story, recipe = _page("story.md"), _page("recipe.md")
    assert stability_map, "the map has no clip levels"
    for x in stability_map:
        assert f"with grad clip {x['clip']} GSPO collapsed in {x['gspo']} runs and GRPO in {x['grpo']} — " \
               f"*{x['verdict'].label}*" in story  # fmt: skip
        assert f"with grad clip {x['clip']} GRPO collapsed in {x['grpo']} runs and GSPO in {x['gspo']} — " \
               f"*{x['verdict'].label}*" in recipe  # fmt: skip
    assert any(x["verdict"].outcome == "boundary" for x in stability_map)
    assert "boundary moved, not immunity" in story and "boundary moved, not immunity" in recipe
    assert "neither algorithm collapsed" not in recipe


def test_the_dose_readings_name_their_caps():
    """f2e.dose_trend read on 2e's caps and on finding 10's (caps 20 and 15 added later) printed different words for
    the MoE; each reading now names its caps, and the story prints both."""
    story, findings = _page("story.md"), _page("f2_collapse.md")
    assert "over the caps none → 30 → 20 → 15 → 10 → 1:" in story
    assert "on its first caps, none → 30 → 10 → 1, before finding 10 added the others" in story
    assert "Late accuracy over the caps none → 30 → 10 → 1, by rule `f2e.dose_trend`" in findings


def test_only_a_rules_null_outcome_says_not_shown():
    """A null phrase ('no difference', 'not distinguishable', ...) is the words of a rule's declared null outcome,
    which a consistent sign count then overrules; composite rules name each part's own count (their tests)."""
    composite = {"f10.two_by_two", "f10t.two_by_two", "f10y.two_by_two", "f10.account", "f10w.arm"}
    offenders = {
        (name, key): words
        for name, rule in RULES.items()
        if name not in composite
        for key, words in rule.outcomes.items()
        if key != rule.null and any(p in words.lower() for p in NULL_PHRASES)
    }
    assert offenders == {}
    assert "not distinguishable" not in RULES["f5.claim"].outcomes["indistinct"]


def test_at_a_glance_row_2_sets_the_map_beside_its_cap_1_counts(stability_map):
    """Row 2's 'neither collapses with one' is this regime's 0/5; the map's cap-1 counts and its reading sit beside
    it, so the row cannot read as immunity."""
    row = next(line for line in _page("findings.md").split("| [**2. Collapse**](f2_collapse.md) |")[1:2])
    cap1 = next(x for x in stability_map if x["clip"] == "1")
    assert f"on the map at cap 1: GRPO {cap1['grpo']}, GSPO {cap1['gspo']}" in row
    assert f"on the map: {cap1['verdict'].label}" in row and "the map: post hoc" in row


def test_the_story_leads_each_question_with_its_answer_and_names_the_regime():
    """Issue 36 item 5: each question opens with its answer; question 4's 'GSPO ended lower' names its own setting,
    not question 1's (where GSPO ended higher)."""
    story = _page("story.md")
    questions = re.findall(r"\*\*(\d)\. [^*]+\?\*\* (.{0,200})", story)
    assert [n for n, _ in questions] == ["1", "2", "3", "4", "5"]
    lead = dict(questions)
    assert lead["1"].startswith("*GRPO collapses") or lead["1"].startswith("*")  # the verdict, in italics
    assert "→" in lead["2"].split("In detail")[0]  # the numbers, no cap → cap 1
    assert lead["3"].startswith("At ten seeds: MoE *")
    assert re.match(r"\d+× more tokens, and here \*GSPO ended", lead["4"])
    assert lead["5"].startswith("*The gradient-noise ratio ")  # issue 37 part B: the rule's label first
    assert "not question 1's regime" in story and "8-expert `sweep` MoE" in story
    assert "toy MoE (`moe-sort`: 4 layers, 16 experts, top-2)" in story
