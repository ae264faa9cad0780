"""Issue 49, item 2: the clipped share under lag with seed intervals, in tokens and in responses (notebook 05 and the
recipe page draw gspo_record/f12/clip_lag.py's table); stored runs only."""

from __future__ import annotations

import re

import pytest

from gspo_lab.experiments.store import cached
from gspo_lab.paths import repo_root
from gspo_record.f12.clip_lag import SHOWN, UNITS, at, clip_by_lag, section


@pytest.fixture(scope="module")
def table():
    with cached():
        return clip_by_lag()


def test_every_shown_arm_has_both_units_at_every_lag_with_an_interval_inside_its_range(table):
    assert set(table["unit"]) == set(UNITS) and set(table["arm"]) == set(SHOWN)
    for arm in SHOWN:
        assert {0, 2, 4, 8, 16} <= set(table[table["arm"] == arm]["lag"]), arm
    assert set(table[table["lag"] == 32]["arm"]) == {
        "grpo/behaviour",
        "gspo/behaviour",
        "grpo/proximal+token_truncate",
        "gspo/proximal+sequence_mask",
    }
    assert (table["n"] == 10).all()
    assert ((0 <= table["lo"]) & (table["lo"] <= table["mean"]) & (table["mean"] <= table["hi"])
            & (table["hi"] <= 1)).all()  # fmt: skip


def test_the_two_units_coincide_for_gspo_and_not_for_grpo(table):
    """One ratio per response: a clipped GSPO response clips all its tokens, so its shares of tokens and of responses
    agree; GRPO clips single tokens, so far more responses than tokens hold a clipped one."""
    for lag in (0, 16, 32):
        g = {u: at(table, "gspo/behaviour", lag, u)["mean"] for u in UNITS}
        r = {u: at(table, "grpo/behaviour", lag, u)["mean"] for u in UNITS}
        assert abs(g["tokens"] - g["responses"]) < 0.01
        assert r["responses"] > 5 * r["tokens"]


def test_a_missing_lag_gets_a_clear_error(table):
    with pytest.raises(KeyError, match="no clipped share of cispo/behaviour at lag 32 in tokens"):
        at(table, "cispo/behaviour", 32, "tokens")


def test_the_recipe_prints_the_tables_numbers_beside_the_figure():
    with cached():
        ctx, figures = section()
    assert "f12_clip_lag" in figures and (repo_root() / "docs" / "figures" / "f12_clip_lag.png").is_file()
    recipe = re.sub(r"\s+", " ", (repo_root() / "docs" / "recipe.md").read_text())
    assert "figures/f12_clip_lag.png" in recipe
    top = ctx["top"]
    for key in ("gspo.tokens.0", f"gspo.tokens.{top}", "gspo.responses.0", f"grpo.responses.{top}"):
        assert ctx["at"][key]["text"] in recipe, key
    assert f"at lag {top}" in recipe
