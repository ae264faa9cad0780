"""Finding 11's words against its numbers (issue 35, item 3): each sentence the issue found wrong, with a check that
would catch it coming back.

- a successor below both GRPO and GSPO read "like GRPO" (the rule's order of checks): the label follows the interval;
- a difference all five seeds place on one side read "not shown" without saying so;
- "collapses" said without GRPO's count beside it ("where neither GRPO nor GSPO collapses" beside GRPO 1/5);
- regime (b) called "production-like" with no declared drift range: regimes are named by their knobs, with each
  objective's measured rollout-0 KL k3 beside them;
- "the successors whose weights never zero a token's gradient collapse where hard clips do not", a mechanism stated
  as a finding: it is a labelled reading with its confound (drift) named.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

import gspo_record.f11.regimes as regimes
import gspo_record.f11.successors as f11
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval

S = pd.Series
UP = S([0.05, 0.04, 0.06, 0.03, 0.05])
DOWN = -UP
MIXED = S([0.04, -0.05, 0.03, -0.04, 0.01])
# every seed below 0, the interval across 0 (one seed carries the mean)
ONE_SIDED = S([-0.01, -0.02, -0.4, -0.01, -0.02])


def test_below_both_reads_below_grpo_not_like_grpo():
    for rule in (f11.POSITION, f11.POSITION_B):
        v = f11.position_verdict(DOWN, DOWN, rule)
        assert v.outcome == "below_grpo" and v.label == "below GRPO"
    assert "like GRPO" not in f11.position_verdict(DOWN * 10, DOWN, f11.POSITION).label


def test_a_label_never_says_like_grpo_beside_an_interval_below_grpo():
    """Every pair of synthetic differences: "like GRPO" only where − GRPO's interval spans 0, "like GSPO" only where
    − GSPO's does."""
    cases = (UP, DOWN, MIXED, ONE_SIDED)
    for d_grpo in cases:
        for d_gspo in cases:
            label = f11.position_verdict(d_grpo, d_gspo).label
            lo, hi = declared_t_interval(list(d_grpo), DIFFERENCE)
            if label.startswith("like GRPO"):
                assert lo <= 0 <= hi, (list(d_grpo), label)
            lo, hi = declared_t_interval(list(d_gspo), DIFFERENCE)
            if label.startswith("like GSPO"):
                assert lo <= 0 <= hi, (list(d_gspo), label)


def test_a_not_shown_difference_with_every_seed_on_one_side_says_so():
    """Since issue 48 the position is a statement whose number prints both intervals, each with its sign count: the
    words say "not shown" and the count beside them says every seed sits on one side."""
    lo, hi = declared_t_interval(list(ONE_SIDED), DIFFERENCE)
    assert lo < 0 < hi  # the case is what it claims: the interval spans 0
    v = f11.position_verdict(UP, ONE_SIDED)
    assert v.outcome == "gspo_like" and "not shown above or below GSPO" in v.label
    assert re.search(r"− GSPO: -0\.092 \[\S+, \S+\] \(n = 5; 5/5 < 0\)", str(v)), str(v)
    v = f11.position_verdict(ONE_SIDED, DOWN)
    assert v.outcome == "grpo_like" and re.search(r"− GRPO: \S+ \[\S+, \S+\] \(n = 5; 5/5 < 0\)", str(v))
    v = f11.position_verdict(MIXED, ONE_SIDED)
    assert v.outcome == "unresolved" and "(n = 5; 3/5 > 0); − GSPO:" in str(v) and "5/5 < 0" in str(v)


@pytest.mark.parametrize(
    "counts,cell",
    [
        ((5, 5, 0, 5), "5/5 (collapses where GRPO is stable; GRPO 0/5)"),
        ((5, 5, 1, 5), "5/5 (collapses where GRPO is stable; GRPO 1/5)"),
        ((0, 5, 4, 5), "0/5 (stable where GRPO collapses; GRPO 4/5)"),
        ((4, 5, 5, 5), "4/5 (collapses, as GRPO: 5/5)"),
        ((0, 5, 1, 5), "0/5 (stable, as GRPO: 1/5)"),
        ((5, 5, 2, 5), "5/5 (collapses; GRPO 2/5: between the thresholds)"),
        ((3, 5, None, None), "3/5 (between the thresholds)"),
    ],
)
def test_collapse_cells_say_grpos_count(counts, cell):
    assert regimes.collapse_cell(*counts) == cell


def _table(grpo: int, gspo: int, cispo: int, sapo: int) -> pd.DataFrame:
    rows = []
    for arm, k in (("grpo", grpo), ("gspo", gspo), ("cispo", cispo), ("sapo", sapo)):
        rows += [{"model": "MoE", "arm_id": arm, "seed": s, "collapsed": s < k} for s in range(5)]
    return pd.DataFrame(rows)


def test_contrasts_come_from_the_counts():
    found = regimes.contrasts(_table(1, 1, 5, 4), ("cispo", "sapo"))
    assert found == [{"model": "MoE", "objectives": [["CISPO", "5/5"], ["SAPO", "4/5"]],
                      "pairs": [("MoE", "cispo"), ("MoE", "sapo")], "grpo": "1/5", "gspo": "1/5"}]  # fmt: skip
    assert regimes.contrasts(_table(2, 0, 5, 5), ("cispo", "sapo")) == []  # GRPO between the thresholds
    assert regimes.contrasts(_table(0, 0, 3, 1), ("cispo", "sapo")) == []  # neither successor collapses
    assert regimes.baseline_counts(_table(1, 0, 5, 5)) == [{"model": "MoE", "grpo": "1/5", "gspo": "0/5"}]


def test_regimes_are_named_by_their_knobs():
    assert regimes.knobs(f11.SPEC) == "no grad-norm clip, M = 16, lr 5e-5, no warm-up"
    for name in (f11.SPEC_B, f11.SPEC_B_DENSE, f11.SPEC_D):
        assert regimes.knobs(name) == "grad-norm clip 1, M = 8, lr 1e-4, no warm-up"


@pytest.fixture(scope="module")
def section():
    ctx, _ = f11.section()
    return ctx


@pytest.fixture(scope="module")
def page(section):
    from gspo_record import brief, page
    from gspo_record.f11.corrections import section as corrections

    # the page's opening reads its At a glance row (brief.py); a neutral row keeps this test on the sections' words
    row = {"n": "11", "title": "t", "claim": "—", "number": "n", "verdict": "v", "sure": "declared", "rules": "`r.x`"}
    briefs = brief.briefs([row], {("11",): "f11_successors.md"})
    from gspo_record.f11 import arms_page, ladder_page

    context = {"f11": section, "f11c": corrections()[0], "f11e": ladder_page.section()[0],
               "f11f": arms_page.section()[0], "brief": briefs,
               "predictions": {"by_finding": {"11": [], "11a": [], "11b": [], "11c": [], "11f": []}}}  # fmt: skip
    return page.render(context, page.PAGES["f11_successors.md"])


def test_every_stored_run_has_its_rollout0_drift(section):
    for name in (f11.SPEC, f11.SPEC_B, f11.SPEC_B_DENSE, f11.SPEC_D):
        drift = regimes.first_drift(f11.runs(name))
        assert len(drift) and drift.notna().all() and (drift >= 0).all(), name
    groups = section["production"]["drift"]
    assert [g["model"] for g in groups] == ["MoE", "dense"]
    assert {a[0] for a in groups[0]["arms"]} == {"GRPO", "GSPO", "CISPO", "SAPO", "LUSPO", "VESPO", "GMPO"}


def _paragraphs(text: str, start: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.startswith(start)]


def test_the_page_calls_no_regime_production_like_and_each_regime_carries_its_drift(page):
    assert "production-like" not in page.lower()
    regimes_ = _paragraphs(page, "**Regime (")
    named = [p for p in regimes_ if p.startswith(("**Regime (a)", "**Regime (b)"))]
    assert len(named) == 3  # (a), (b), (b) on fresh seeds
    for p in named:
        assert "Rollout-0 drift (KL(π_old ‖ π_θ), k3 estimate" in p, p[:80]
        assert re.search(r"GRPO \d\.\d+ \(\d", p) and re.search(r"GSPO \d\.\d+ \(\d", p), p[:80]
        assert re.search(r"(no grad-norm clip|grad-norm clip \d), M = \d+, lr \S+, no warm-up", p), p[:80]


def test_the_page_says_no_collapse_without_the_counts(page):
    assert "neither GRPO nor GSPO collapses" not in page
    for p in _paragraphs(page, "**Regime (")[:2]:  # (a) and (b): the baselines' counts, per model
        assert re.search(r"GRPO collapsed in \d+/\d+", p) and re.search(r"GSPO in \d+/\d+", p), p[:80]
    for row in (r for r in page.splitlines() if r.startswith("| ")):
        assert "where GRPO is stable;" not in row or re.search(r"where GRPO is stable; GRPO \d+/\d+", row)


def _rows(page: str) -> list[list[str]]:
    return [[c.strip() for c in r.strip("|").split("|")] for r in page.splitlines() if r.startswith("| ")]


def test_no_row_prints_like_grpo_beside_an_interval_below_grpo(page):
    """The issue's case: CISPO −0.062 [−0.123, −0.001] printed "like GRPO"."""
    checked = 0
    for cells in _rows(page):
        diffs = [c for c in cells if re.match(r"-?[\d.e+-]+ \[-?[\d.e+-]+, -?[\d.e+-]+\] \(n = \d+; ", c)]
        labels = [c for c in cells if c.startswith(("like GRPO", "below GRPO", "like GSPO"))]
        if len(diffs) < 2 or not labels:
            continue
        lo, hi = (float(x) for x in re.search(r"\[(\S+), (\S+)\]", diffs[0]).groups())
        if hi < 0:
            assert labels[0].startswith("below GRPO"), cells
            checked += 1
    assert checked >= 4  # MoE CISPO and SAPO in (a); CISPO and SAPO in (b); …


def test_the_mechanism_is_a_labelled_reading_with_its_confound(page, section):
    never = [p for p in page.split("\n\n") if "never zero" in p]
    assert never and all(p.startswith("*A reading, not shown.*") for p in never)
    assert all("drift" in p and "confounded" in p for p in never)
    reading = section["reading"]
    assert reading["objectives"] == ["CISPO", "SAPO"]
    assert float(reading["x_lo"]) > 1 and float(reading["lo"]) > float(reading["base_hi"]) * 0.9
    for word in ("confirmed", "refuted"):
        assert not re.search(rf"\b{word}\b", " ".join(v["verdict"].label for v in section["confirm"]["verdicts"]))


def test_the_committed_story_and_glance_carry_the_same_words():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    story = (docs / "story.md").read_text()
    after = story[story.index("**After GSPO.**") :].split("\n\n")[0]
    assert "production-like" not in story.lower()
    after = " ".join(after.split())
    # the mechanism is a reading with its confound named, not a finding (issue 48 wrote the story as prose)
    assert after.index("never zero") < after.index("this design does not separate the two")
    assert "collapsed where GRPO did not:" in after and "against GRPO's 0/5" in after
    glance = next(r for r in (docs / "findings.md").read_text().splitlines() if r.startswith("| [**11."))
    assert "like GRPO: CISPO, SAPO" not in glance and "collapsed where GRPO did not" in glance
    assert "not shown apart from GSPO" in glance and "like GSPO" not in glance
    assert not math.isnan(float(re.search(r"(\d\.\d)–\d\.\d× as far as GRPO", after).group(1)))
