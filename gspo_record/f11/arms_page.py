"""Finding 11's sections 11f and 11g: the CISPO arms (verl's weight clip, MiniMax-M1's token mask, a tight cap) and
M = 1 at M = 8's optimizer steps — their table and verdicts (rules: :mod:`.arms`)."""

from __future__ import annotations

import gspo_record.f11.arms as arms
from gspo_lab.experiments.stats import paired_diff
from gspo_record.fmt import arm_cell, diff_cell, num
from gspo_record.tables import progress, spec

__all__ = ["section", "LABELS"]

#: how the page names each arm
LABELS = {"grpo": "GRPO", "gspo": "GSPO", "cispo": "CISPO (cap 5, TRL)", f"cispo@{arms.TIGHT:g}": "CISPO, cap 1.28",
          "cispo_clip": "CISPO, verl's clip [0.8, 1.2]", "cispo_mask": "CISPO + MiniMax-M1's token mask",
          "sapo": "SAPO", "grpo@M1": "GRPO, M = 1", "gspo@M1": "GSPO, M = 1", "cispo@M1": "CISPO, M = 1",
          "sapo@M1": "SAPO, M = 1"}  # fmt: skip


def section() -> tuple[dict, dict]:
    table = arms.arm_table()
    # read before the loop below: the robustness pass names where a verdict was read by its caller's local `arm`
    mask, one_update = arms.mask_verdict(table), arms.one_update_verdict(table)
    verdicts = {v["arm"]: v for v in arms.arm_verdicts(table)}
    rows = []
    for arm in [a for a in LABELS if (table["arm_id"] == a).any()]:
        runs = table[table["arm_id"] == arm]
        v = verdicts.get(arm)
        counts = [f"{int(runs[c].sum())}/{len(runs)}" for c in ("collapsed", "frozen")]
        rows.append([LABELS[arm], *counts, num(float(runs["kept"].median())), arm_cell(runs["late_acc"].dropna()),
                     f"{v['verdict']}{v['verdict'].when}" if v else "—"])  # fmt: skip
    counts = {arm: f"{int(runs['collapsed'].sum())}/{len(runs)}" for arm, runs in table.groupby("arm_id")}
    late = {arm: num(float(runs["late_acc"].mean())) for arm, runs in table.groupby("arm_id")}
    ctx = {"progress": [progress(spec(arms.SPEC_F)), progress(spec(arms.SPEC_G))], "rows": rows, "early": arms.EARLY,
           "counts": counts, "late": late,
           "mask": mask, "one_update": one_update,
           "m1_minus_m8": [{"arm": LABELS[a], "diff": diff_cell(paired_diff(table, f"{a}@M1", a, "late_acc"))}
                           for a in ("grpo", "gspo", "cispo", "sapo")]}  # fmt: skip
    return ctx, {}
