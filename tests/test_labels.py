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
    story, recipe = (" ".join(_page(p).split()) for p in ("story.md", "recipe.md"))
    assert stability_map, "the map has no clip levels"
    for x in stability_map:
        assert f"{x['gspo']} runs of GSPO and {x['grpo']} of GRPO collapsed with grad clip {x['clip']}" in story
    cap1 = next(x for x in stability_map if x["clip"] == "1")
    assert f"GRPO collapsed at a cap of 1 in {cap1['grpo']} runs and GSPO in {cap1['gspo']}" in recipe
    assert all(x["verdict"].outcome == "boundary" for x in stability_map)  # what the written words assume
    assert "GSPO moves the regime's boundary; it does not remove it" in story
    assert "neither algorithm collapsed here" not in recipe and "did not collapse at toy scale" not in recipe


def test_the_dose_readings_name_their_caps():
    """f2e.dose_trend read on 2e's caps and on finding 10's (caps 20 and 15 added later) printed different words for
    the MoE; each reading names its caps on its page, and the story, a summary, renders only the newer reading
    (issue 48, item 2: no summary keeps the older reading)."""
    story, findings = _page("story.md"), _page("f2_collapse.md")
    assert "first caps" not in story and "from no cap to a cap of 1, GRPO's late" in story
    assert "Late accuracy over finding 2's caps none → 30 → 10 → 1, by rule `f2e.dose_trend`" in findings
    assert "over the caps none → 30 → 20 → 15 → 10 → 1 of finding 10" in findings


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
    assert f"Over every MoE run at a cap of 1 on the map: GRPO {cap1['grpo']}, GSPO {cap1['gspo']}" in row
    assert cap1["verdict"].outcome == "boundary" and "moves the boundary of the collapsing regime" in row
    assert "the map: post hoc" in row


def test_the_story_leads_each_question_with_its_answer_and_names_the_regime():
    """Issue 36 item 5: each question opens with its answer; question 4's 'GSPO ended lower' names its own setting,
    not question 1's (where GSPO ended higher)."""
    story = " ".join(_page("story.md").split())
    questions = re.findall(r"\*\*([^*]+\?)\*\* (.{0,200})", story)
    lead = dict(questions)
    assert len(lead) == 5, list(lead)
    assert lead["Does GRPO collapse where GSPO does not?"].startswith("Yes.")
    assert lead["How much does a grad-norm cap help GRPO?"].startswith("A lot, in this regime")
    assert lead["How much more does GSPO clip, and does it still learn?"].startswith(
        "Measured on a smaller MoE with a cap of 1, not the regime above"
    )  # its own setting, not question 1's
    assert lead["Does GRPO's trouble grow with response length?"].startswith("No growth was shown here")
    assert lead["Is it the size of GRPO's updates or their direction?"].startswith("On the dense model the size")


def test_the_map_counts_every_grpo_and_gspo_run_of_finding_2():
    """The story's "over all of finding 2's MoE runs" (issue 48, second audit): the map reads every finding-2 spec that
    stores GRPO and GSPO runs on the MoE at L = 12 — the ten-seed extension (seeds 50-54) and the candidate's reward
    confirmation (seeds 20-24) were left out before — except the first measurements the re-measured specs replace."""
    from gspo_lab.experiments.store import cached, finished
    from gspo_record.f2.search import MAP_SPECS, SEARCH_REGIME
    from gspo_record.tables import FIRST, spec, with_base

    names = sorted(p.stem for p in (repo_root() / "data" / "specs").glob("f2*.toml"))
    held = []
    with cached():
        for name in set(names) - set(FIRST.values()):
            s = spec(name)
            t = finished(s)
            if t.empty:
                continue
            t = with_base(s, t, (*SEARCH_REGIME, "objective"))
            t = t[(t.checkpoint == "moe-sort") & (t.length == 12)]
            if {"grpo", "gspo"} <= set(t["objective"]):
                held.append(name)
    assert "f2t_collapse_ten" in held and "f2c_reward_confirm" in held  # the two the audit found missing
    assert set(held) <= set(MAP_SPECS), set(held) - set(MAP_SPECS)
