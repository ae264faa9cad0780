"""Finding 12's fresh-seed section (gspo_record/f12/confirm.py) on small synthetic tables: the words a tolerated
lag prints when the arm learns nothing, the largest tolerated lag, the paired difference of two arms' drops, and the
section read from the stored runs."""

from __future__ import annotations

import pandas as pd
import pytest

import gspo_record.f12.confirm as confirm
import gspo_record.f12.lag as lag

SEEDS = (130, 131, 132, 133, 134)


def _runs(late) -> pd.DataFrame:
    """One arm ("grpo/behaviour") at lags 0, 2, 4 on five seeds; ``late(lag, i)``: the i-th seed's late accuracy."""
    rows = [{"arm": "grpo/behaviour", "lag": d, "seed": s, "late_acc": late(d, i), "clip": 0.01 * d, "failed": False}
            for d in (0, 2, 4) for i, s in enumerate(SEEDS)]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_tolerated_lag_on_an_arm_that_learns_nothing_says_so():
    flat = _runs(lambda d, i: 0.33 + 0.004 * i)  # at the cold start at every lag: every lag "tolerated"
    r = confirm.arm_readings(flat, "grpo/behaviour", cold=0.34)
    assert {v.rule_outcome for v in r["tolerates"].values()} == {"tolerates"}
    assert r["words"][2] == "tolerates, learning nothing shown"
    assert r["largest"] == 4
    learned = _runs(lambda d, i: 0.70 + 0.004 * i)
    r = confirm.arm_readings(learned, "grpo/behaviour", cold=0.34)
    assert r["words"][2] == "tolerates" and r["learning"][4].rule_outcome == "shown"


def test_the_largest_tolerated_lag_stops_at_the_first_lag_not_tolerated():
    table = _runs(lambda d, i: 0.72 - {0: 0.0, 2: 0.01, 4: 0.3}[d] + 0.004 * i)
    r = confirm.arm_readings(table, "grpo/behaviour", cold=0.34)
    assert r["tolerates"][2].rule_outcome == "tolerates" and r["tolerates"][4].rule_outcome == "degrades"
    assert r["largest"] == 2
    assert confirm.arm_readings(table[table["seed"] == 130], "grpo/behaviour", cold=0.34)["largest"] is None


def test_the_difference_of_drops_is_paired_by_seed_over_the_seeds_both_arms_have():
    a = _runs(lambda d, i: 0.7 - 0.1 * (d == 4) + 0.01 * i)
    b = _runs(lambda d, i: 0.7 - 0.02 * i * (d == 4)).assign(arm="grpo/proximal")
    table = pd.concat([a, b[b["seed"] != 134]])
    gap = confirm.drop_gap(table, "grpo/behaviour", "grpo/proximal", 4)
    assert list(gap.index) == [130, 131, 132, 133]
    assert gap.to_list() == pytest.approx([-0.1 + 0.02 * i for i in range(4)])


def test_a_declared_cell_shifts_every_number_and_counts_signs_of_the_shifted_values():
    text = confirm.declared_cell([0.7, 0.72, 0.74], (0.0, 1.0), shift=0.33)
    assert text.startswith("0.39 [") and text.endswith("(n = 3; 3/3 > 0)")
    lo, hi = lag.declared_t_interval([0.7, 0.72, 0.74], (0.0, 1.0))
    assert f"[{lo - 0.33:.3g}, {hi - 0.33:.3g}]" in text
    assert confirm.declared_cell([], (0.0, 1.0)) == "—"


def test_the_section_reads_the_stored_fresh_seeds():
    ctx, _ = confirm.section()
    assert 0.0 < float(ctx["cold"]) < 1.0
    assert len(ctx["largest"]) == len(lag.ARMS) and ctx["rows"]
    assert len(ctx["corrections"]) == 3 and len(ctx["gspo_vs_grpo"]) == 1
    lags = {row[1] for row in ctx["rows"]}
    assert lags == set(lag.LADDER)
    assert [e["lag"] for e in ctx["ess_by_lag"]] == [d for d in lag.LADDER if d > 0]
    assert all(0.0 < float(e["median"]) <= 1.0 for e in ctx["ess_by_lag"])


def test_boundaries_read_from_a_table_compare_as_plain_integers():
    """The lags a table holds are numpy integers; the boundary rule compares them as Python ones."""
    import numpy as np

    tolerated = {np.int64(2): lag.TOLERATES.verdict("tolerates"), np.int64(4): lag.TOLERATES.verdict("degrades")}
    largest = lag.largest_tolerated(tolerated)
    assert type(largest) is int and largest == 2
    assert lag.boundary_verdict(lag.CORRECTIONS, np.int64(4), largest).rule_outcome == "up"


def test_the_largest_lag_in_words_says_when_none_was_shown_and_when_nothing_was_learned():
    flat = _runs(lambda d, i: 0.33 + 0.004 * i)
    r = confirm.arm_readings(flat, "grpo/behaviour", cold=0.34)
    assert confirm._words(r) == "D = 4 (learning nothing shown)"
    assert confirm._lag_text(8, drop_from=4) == "D = 8 (a drop inside the margin shown from D = 4)"
    assert confirm._lag_text(0) == "D = 0 (no lag shown tolerated)"
    assert confirm._lag_text(None) == "pending"


def test_a_tolerated_drop_that_is_shown_says_so_and_a_tie_at_the_ladders_top_says_the_ladder_cannot_separate():
    shown = lag.tolerates_verdict(pd.Series([-0.03, -0.04, -0.05, -0.035, -0.045]))
    assert shown.rule_outcome == "tolerates" and shown.label == "tolerates (a drop inside the margin shown)"
    assert lag.tolerates_verdict(pd.Series([0.01, -0.01, 0.0, 0.005, -0.004])).label == "tolerates"
    tie = lag.boundary_verdict(lag.CORRECTIONS, 16, 16, top=16)
    assert tie.rule_outcome == "none" and tie.label == "no move shown: both tolerate every lag tried"
    assert str(tie.number) == "16 against 16"
    assert lag.boundary_verdict(lag.CORRECTIONS, 8, 8, top=16).label == "no move shown"
