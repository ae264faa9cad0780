"""Finding 2 and 2b: collapse in the confirmed regime (M = 16, lr 5e-5) on the MoE and on its dense twin.

Rule ``f2.collapse`` (:func:`collapse_verdict`), per grad-norm clip level, on the 5 confirmation seeds: *GRPO
collapses where GSPO does not* when GRPO collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5 and GSPO in ≤
``TARGET_GSPO_AT_MOST`` (issue 9's target rule, declared before the runs); *both collapse alike* when both reach
``COLLAPSES_AT_LEAST``; *neither collapses* when both stay ≤ ``STABLE_AT_MOST``; else *mixed*.

Rule ``f2.dense`` (:func:`dense_verdict`), declared in ``f2_collapse_dense.toml`` before its runs: if dense GRPO
without grad clip collapses in ≥ ``COLLAPSES_AT_LEAST`` of 5, the collapse is *not MoE-specific at this scale*; at ≤
``STABLE_AT_MOST`` it is *MoE-specific*; in between, *mixed*.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.read import curves
from gspo_lab.experiments.stats import rate_table
from gspo_record.fmt import clip_label
from gspo_record.rules import (
    COLLAPSES_AT_LEAST,
    PENDING,
    STABLE_AT_MOST,
    TARGET_GSPO_AT_MOST,
    Rule,
    Verdict,
    collapse_class,
    register,
)
from gspo_record.tables import F2, FIRST, arm_name, collapse_rows, declared, progress, spec

__all__ = ["COLLAPSE", "DENSE", "collapse_verdict", "dense_verdict", "section", "dense_section"]

COLLAPSE = register(
    Rule(
        "f2.collapse",
        "2",
        {
            "separates": "GRPO collapses where GSPO does not",
            "both": "both collapse alike",
            "neither": "neither collapses",
            "mixed": "mixed",
        },
        {
            "COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST,
            "TARGET_GSPO_AT_MOST": TARGET_GSPO_AT_MOST,
            "STABLE_AT_MOST": STABLE_AT_MOST,
        },
        declared="issue 9's target rule, before the runs",
        marker="GRPO collapses where GSPO does not",
        specs=(FIRST["moe"], F2["moe"]),
    )
)
DENSE = register(
    Rule(
        "f2.dense",
        "2b",
        {"not_specific": "not MoE-specific at this scale", "specific": "MoE-specific at this scale", "mixed": "mixed"},
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST},
        declared="data/specs/f2_collapse_dense.toml, before its runs",
        marker="is not MoE-specific at this scale",
        specs=(FIRST["dense"], F2["dense"]),
    )
)


def collapse_verdict(k_grpo: int, n_grpo: int, k_gspo: int, n_gspo: int, seeds_declared: int) -> Verdict:
    """``f2.collapse`` on one clip level's collapsed counts (module docstring)."""
    if not n_grpo or not n_gspo:
        return COLLAPSE.verdict(PENDING)
    g, s = collapse_class(k_grpo, n_grpo), collapse_class(k_gspo, n_gspo)
    if g == "collapses" and k_gspo <= TARGET_GSPO_AT_MOST * n_gspo / 5:
        outcome = "separates"
    elif g == s == "collapses":
        outcome = "both"
    elif g == s == "stable":
        outcome = "neither"
    else:
        outcome = "mixed"
    return COLLAPSE.verdict(outcome, "" if min(n_grpo, n_gspo) >= seeds_declared else "not all seeds finished")


def dense_verdict(k: int, n: int, seeds_declared: int) -> Verdict:
    """``f2.dense`` on dense GRPO's collapsed count without grad clip (module docstring)."""
    outcome = {"collapses": "not_specific", "stable": "specific", "between": "mixed"}.get(collapse_class(k, n), PENDING)
    return DENSE.verdict(outcome, "" if n >= seeds_declared else f"{n} of {seeds_declared} seeds")


def _with_arms(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(arm=table.apply(arm_name, axis=1), clip=table["grad_clip"].map(clip_label))


def section() -> tuple[dict, dict]:
    s = spec(F2["moe"])
    table = _with_arms(declared(s, "confirm"))
    rates = rate_table(table, ["clip", "arm"]).set_index(["clip", "arm"])
    verdicts = []
    for clip in sorted(set(table["clip"])):
        if (clip, "GRPO") not in rates.index or (clip, "GSPO") not in rates.index:
            continue
        g, k = rates.loc[(clip, "GRPO")], rates.loc[(clip, "GSPO")]
        v = collapse_verdict(int(g["k"]), int(g["n"]), int(k["k"]), int(k["n"]), len(s.confirm_seeds))
        verdicts.append(
            {"clip": clip, "verdict": v, "grpo": f"{int(g['k'])}/{int(g['n'])}", "gspo": f"{int(k['k'])}/{int(k['n'])}"}
        )
    curve = curves(s, "eval/accuracy_sampled", "confirm")
    curve = curve[(curve["grad_clip"].map(clip_label) == "off") & ~curve["routing_replay"].astype(bool)]
    noclip = next((v for v in verdicts if v["clip"] == "off"), {"grpo": "—", "gspo": "—"})
    ctx = {
        "progress": progress(s),
        "rows": collapse_rows(table),
        "verdicts": verdicts,
        "noclip": {"grpo": noclip["grpo"], "gspo": noclip["gspo"]},
    }
    return ctx, {"f2_eval_curves": (curve[["objective", "seed", "rollout", "value"]], _plot_eval)}


def _plot_eval(data: pd.DataFrame):
    from gspo_lab.plots import plot_seed_curves

    return plot_seed_curves(data, ylabel="held-out accuracy (sampled, τ = 1)")


def dense_section() -> tuple[dict, dict]:
    s = spec(F2["dense"])
    table = declared(s, "confirm")
    off = table[(table["grad_clip"].map(clip_label) == "off") & (table.objective == "grpo")]
    k, n = int(off["collapsed"].astype(bool).sum()), len(off)
    ctx = {
        "progress": progress(s),
        "rows": collapse_rows(table, with_expert=False),
        "k": k,
        "n": n,
        "verdict": dense_verdict(k, n, len(s.confirm_seeds)),
    }
    return ctx, {}
