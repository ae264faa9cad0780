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
from gspo_record.joint import Joint, combination
from gspo_record.rules import (
    COLLAPSES_AT_LEAST,
    PENDING,
    STABLE_AT_MOST,
    TARGET_GSPO_AT_MOST,
    Rule,
    register,
)
from gspo_record.statements import Count
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
        reads={"at_least": "not_specific", "at_most": "specific", "between": "mixed"},
    )
)


@combination("f2.collapse", tuple(COLLAPSE.outcomes), ("GRPO", "GSPO", "_GSPO against none"), shown=("separates",))
def _collapse(o: dict) -> str:
    """GRPO collapses (>= 4/5) and GSPO in none: separates; both collapse; both stable (<= 1/5): neither; else mixed."""
    if o["GRPO"] == "at_least" and o["_GSPO against none"] == "at_most":
        return "separates"
    if o["GRPO"] == o["GSPO"] == "at_least":
        return "both"
    return "neither" if o["GRPO"] == o["GSPO"] == "at_most" else "mixed"


def collapsed(k: int, n: int) -> Count:
    """k collapsed runs of n against the shared thresholds (>= 4 of 5 collapses, <= 1 of 5 stable, scaled to n)."""
    return Count(k, n, COLLAPSES_AT_LEAST, STABLE_AT_MOST)


def collapse_verdict(k_grpo: int, n_grpo: int, k_gspo: int, n_gspo: int, seeds_declared: int, id: str = "f2.collapse"):
    """``f2.collapse`` on one clip level's collapsed counts (module docstring): statement ``id`` (a pending verdict
    without runs)."""
    if not n_grpo or not n_gspo:
        return COLLAPSE.verdict(PENDING)
    none = Count(k_gspo, n_gspo, TARGET_GSPO_AT_MOST + 1, TARGET_GSPO_AT_MOST)  # GSPO in none of its runs
    number = Joint("f2.collapse", (("GRPO", collapsed(k_grpo, n_grpo)), ("GSPO", collapsed(k_gspo, n_gspo)),
                                   ("_GSPO against none", none)))  # fmt: skip
    provisional = "" if min(n_grpo, n_gspo) >= seeds_declared else "not all seeds finished"
    return COLLAPSE.state(id, "does GRPO collapse where GSPO does not?", number, provisional=provisional)


def dense_verdict(k: int, n: int, seeds_declared: int, id: str = "f2.dense"):
    """``f2.dense`` on dense GRPO's collapsed count without grad clip (module docstring): statement ``id``."""
    if not n:
        return DENSE.verdict(PENDING)
    provisional = "" if n >= seeds_declared else f"{n} of {seeds_declared} seeds"
    return DENSE.state(id, "does the dense twin's GRPO collapse without a grad-norm cap?", collapsed(k, n),
                       provisional=provisional)  # fmt: skip


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
        v = collapse_verdict(int(g["k"]), int(g["n"]), int(k["k"]), int(k["n"]), len(s.confirm_seeds),
                             f"f2.collapse.{clip}")  # fmt: skip
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
        "verdict": dense_verdict(k, n, len(s.confirm_seeds), "f2b.dense"),
    }
    return ctx, {}
