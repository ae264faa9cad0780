"""Finding 12's follow-up section (gspo_record/f12/isolate.py) on a synthetic table: rule f12c.isolate compares
boundaries on the lags both arms ran (≤ 16), rule f12c.lag32 reads lag 32, 12b's comparisons are re-read on the
extended ladder, and a pair with an arm not run at 32 gets no secondary there."""

from __future__ import annotations

import pandas as pd

import gspo_record.f12.isolate as iso
import gspo_record.f12.lag as lag
from gspo_record.f12.lag_page import NAMES

SEEDS = (130, 131, 132, 133, 134)
#: per arm: the drop from lag 0 at each lag (an arm missing a lag was not run there)
DROPS = {
    "gspo/proximal+sequence_mask": {0: 0, 2: 0, 4: 0, 8: 0, 16: 0, 32: 0},
    "gspo/proximal": {0: 0, 2: 0.01, 4: 0.2, 8: 0.3, 16: 0.4},
    "gspo/behaviour": {0: 0, 2: 0.03, 4: 0.03, 8: 0.03, 16: 0.03, 32: 0.25},
    "grpo/behaviour": {0: 0, 2: 0, 4: 0, 8: 0, 16: 0, 32: 0.01},
    "grpo/proximal+token_truncate": {0: 0, 2: 0, 4: 0, 8: 0, 16: 0, 32: 0},
    "grpo/proximal": {0: 0, 2: 0, 4: 0.3, 8: 0.3, 16: 0.3},
}


def _table() -> pd.DataFrame:
    rows = [{"arm": arm, "lag": d, "seed": s, "late_acc": 0.7 - drop + 0.004 * i, "clip": 0.01, "stale_kl": 0.01,
             "collapsed": False, "frozen": False, "failed": False}
            for arm, by_lag in DROPS.items() for d, drop in by_lag.items() for i, s in enumerate(SEEDS)]  # fmt: skip
    return pd.DataFrame(rows)


def test_isolate_compares_boundaries_on_the_lags_both_arms_ran():
    ctx = iso.context(_table(), cold=0.33)
    verdicts = {(c["arm"], c["against"]): c["verdict"] for c in ctx["isolate"]}
    mask, alone, behaviour = (NAMES[a] for a in ("gspo/proximal+sequence_mask", "gspo/proximal", "gspo/behaviour"))
    assert verdicts[(mask, alone)].rule_outcome == "up" and verdicts[(mask, alone)].rule == "f12c.isolate"
    assert verdicts[(alone, behaviour)].rule_outcome == "down"
    # the masked arm tolerates 32 too, but the isolating arm never ran there: the comparison stops at 16
    assert {g["lag"] for c in ctx["isolate"] for g in c["gaps"]} == {2, 4, 8, 16}
    assert all(c["top"] == 16 for c in ctx["isolate"])


def test_lag_32_is_read_with_its_own_rule_and_extends_the_largest_tolerated_lag():
    readings = iso._readings(_table(), 0.33, "")
    assert readings["gspo/behaviour"]["tolerates"][32].rule == "f12c.lag32"
    assert readings["gspo/behaviour"]["tolerates"][16].rule == "f12.tolerates"
    assert readings["gspo/behaviour"]["largest"] == 16 and readings["gspo/proximal+sequence_mask"]["largest"] == 32
    ctx = iso.context(_table(), cold=0.33)
    largest = {a["arm"]: a["largest"] for a in ctx["largest"]}
    assert largest[NAMES["gspo/proximal+sequence_mask"]] == "D = 32"
    assert largest[NAMES["gspo/behaviour"]].startswith("D = 16")
    assert largest[NAMES["gspo/proximal"]].startswith("D = 2")


def test_the_reread_covers_the_extended_ladder_and_skips_pairs_not_run_at_32():
    ctx = iso.context(_table(), cold=0.33)
    gspo_grpo = ctx["gspo_vs_grpo"][0]["verdict"]
    assert gspo_grpo.rule_outcome == "down"  # GSPO (behaviour) 16 against GRPO (behaviour) 32
    both = ctx["corrections"][0]["verdict"]  # TIS and GRPO (behaviour) both tolerate 32
    assert both.outcome == "both_top" and str(both.number) == "32 against 32" and "(32 against 32)" in \
        ctx["corrections"][0]["text"]  # fmt: skip
    assert len(ctx["top_rows"]) == 3 and {r[1] for r in ctx["top_rows"]} == {32}
    assert not any(NAMES["grpo/proximal"] in r[0] for r in ctx["top_rows"])  # never run at 32
    # its secondary is printed at the largest lag both arms ran
    never = next(c for c in ctx["corrections"] if c["against"] == NAMES["grpo/proximal"])
    assert never["top"] == 16 and never["top_gap"].startswith("0.3 [")
    shown = {(r[0], r[1]) for r in ctx["rows"]}
    assert {d for a, d in shown if a == NAMES["gspo/proximal"]} == {0, 2, 4, 8, 16}
    assert {a for a, d in shown if d == 32} == {NAMES[a] for a in iso.TOP_ARMS}


def test_the_isolating_arm_is_an_arm_of_its_own_and_not_one_the_search_rules_read():
    assert lag.arm_of("gspo", "recompute", "off") == iso.ISOLATED
    assert iso.ISOLATED not in lag.ARMS.values()


def test_the_section_reads_the_stored_runs():
    ctx, figures = iso.section()
    assert ctx["progress"]["total"] == 90 and "f12c_lags" in figures
    assert ctx["seeds"] == 0 or ctx["rows"]
