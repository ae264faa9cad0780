"""Issue 37, part A: the rules of f11f (what in CISPO kills it) and f11g (M = 1) on synthetic runs — every outcome
of f11f.mask and f11g.one_update reached, and a mutant of each caught."""

from __future__ import annotations

import pandas as pd

import gspo_record.f11.arms as arms
from gspo_record.rules import PENDING


def _arm(arm: str, collapsed: list[bool], late: list[float], source: str = arms.SPEC_F) -> pd.DataFrame:
    n = len(collapsed)
    return pd.DataFrame(
        {
            "arm_id": arm,
            "seed": range(25, 25 + n),
            "collapsed": collapsed,
            "frozen": collapsed,
            "late_acc": late,
            "reward_auc": late,
            "eval_final": late,
            "kept": 0.5,
            "source": source,
        }
    )


def _f11f(mask_collapsed: list[bool], mask_late: list[float], cispo_collapsed=(True,) * 5) -> pd.DataFrame:
    return pd.concat(
        [
            _arm("grpo", [False] * 5, [0.30, 0.32, 0.35, 0.31, 0.33]),
            _arm("gspo", [False] * 5, [0.50, 0.48, 0.52, 0.49, 0.51]),
            _arm("cispo", list(cispo_collapsed), [0.0] * 5),
            _arm("cispo_mask", mask_collapsed, mask_late),
        ],
        ignore_index=True,
    )


def test_the_mask_rule_reaches_every_outcome():
    like_grpo = [0.31, 0.30, 0.36, 0.30, 0.34]
    assert arms.mask_outcome(_f11f([False] * 5, like_grpo)) == "supported"
    assert arms.mask_outcome(_f11f([True] * 4 + [False], [0.0] * 4 + [0.3])) == "refuted"
    assert arms.mask_outcome(_f11f([False] * 5, [0.1, 0.12, 0.11, 0.09, 0.1])) == "unresolved"  # below GRPO
    assert arms.mask_outcome(_f11f([False] * 5, like_grpo, cispo_collapsed=[False] * 5)) == "unresolved"  # CISPO lives
    assert arms.mask_outcome(_f11f([True, True, False, False, False], like_grpo)) == "unresolved"  # between
    assert arms.mask_verdict(_f11f([False] * 5, like_grpo).query("arm_id != 'cispo_mask'")).outcome == PENDING
    assert arms.mask_verdict(_f11f([False] * 3, like_grpo[:3])).provisional == "3 of 5 seeds finished"


def test_the_one_update_rule_reaches_every_outcome():
    def m1(cispo, sapo, grpo=(False,) * 5):
        return pd.concat(
            [
                _arm(f"{a}@M1", list(c), [0.5] * len(c), arms.SPEC_G)
                for a, c in (("grpo", grpo), ("cispo", cispo), ("sapo", sapo))
            ],
            ignore_index=True,
        )

    assert arms.one_update_verdict(m1([False] * 5, [False] * 5)).outcome == "kept"
    assert arms.one_update_verdict(m1([True] * 4 + [False], [False] * 5)).outcome == "artefact"
    assert arms.one_update_verdict(m1([False] * 5, [False] * 5, grpo=[True] * 5)).outcome == "unresolved"
    assert arms.one_update_verdict(m1([True, True, False, False, False], [False] * 5)).outcome == "unresolved"
    assert arms.one_update_verdict(m1([False] * 5, [False] * 5).query("arm_id != 'sapo@M1'")).outcome == PENDING


def _mask_ignoring_cispo(table, metric="late_acc"):
    k, n = int(table[table["arm_id"] == "cispo_mask"]["collapsed"].sum()), int((table["arm_id"] == "cispo_mask").sum())
    return "refuted" if k >= 4 * n / 5 else "supported" if k <= n / 5 else "unresolved"


def _one_update_counting_grpo(table):
    counts = [int(table[table["arm_id"] == f"{a}@M1"]["collapsed"].sum()) for a in ("grpo", "cispo", "sapo")]
    return arms.ONE_UPDATE.verdict("artefact" if max(counts) >= 4 else "kept")


def test_mutants_of_the_f11f_and_f11g_rules_are_caught():
    """A mask rule that forgets to ask whether plain CISPO collapsed, and a one-update rule that reads GRPO's collapse
    as a successor's, each give another outcome on a table the real rules read correctly."""
    cispo_lives = _f11f([False] * 5, [0.31, 0.30, 0.36, 0.30, 0.34], cispo_collapsed=[False] * 5)
    assert arms.mask_outcome(cispo_lives) == "unresolved" != _mask_ignoring_cispo(cispo_lives)
    grpo_dies = pd.concat(
        [
            _arm(f"{a}@M1", c, [0.5] * 5, arms.SPEC_G)
            for a, c in (("grpo", [True] * 5), ("cispo", [False] * 5), ("sapo", [False] * 5))
        ],
        ignore_index=True,
    )
    assert arms.one_update_verdict(grpo_dies).outcome == "unresolved" != _one_update_counting_grpo(grpo_dies).outcome
