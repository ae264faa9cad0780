"""Finding 10's arms as the page names them, the relative cap on fresh seeds (``f10c_relative_confirm``, 10b) and
the provisional mark of a verdict whose arms are not all finished (split from :mod:`gspo_record.f10.runs`)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

import gspo_record.f10.ten as f10_ten
from gspo_lab.experiments.stats import paired_diff
from gspo_record.f10.why import SPECS, rel_gspo_verdict, relative_verdict
from gspo_record.fmt import diff_cell, num, robustness

__all__ = ["ARMS", "provisional", "fresh", "fresh_cost"]

#: the arms of the 2×2 and of shrink / skip, as the page names them
ARMS = {
    "A": "GRPO",
    "B": "GSPO",
    "C": "GRPO's direction at GSPO's norm",
    "D": "GSPO's direction at GRPO's norm",
    "SHRINK": "GRPO, cap 10",
    "SKIP": "GRPO, skip above 10",
    "REL-GRPO": "GRPO, cap 3× the recent median",
    "REL-GSPO": "GSPO, cap 3× the recent median",
}


def provisional(verdict, runs: pd.DataFrame, arms, seeds: int = 5):
    """``verdict`` marked provisional while one of ``arms`` holds fewer than ``seeds`` finished runs."""
    done = [int((runs["arm_id"] == a).sum()) for a in arms]
    if min(done) >= seeds or verdict.outcome == "pending":
        return verdict
    return replace(verdict, provisional=f"{sum(done)} of {seeds * len(done)} runs finished")


def fresh(table: pd.DataFrame) -> list[list]:
    """The relative cap on fresh seeds (f10c_relative_confirm) beside seeds 30-34: per model and comparison, the paired
    difference on each seed set and the rule's reading on the fresh one."""
    rows = []
    old = table[table["source"].isin([SPECS["two"], SPECS["shrink"]])]
    new = table[table["source"] == SPECS["confirm"]]
    for model in old["model"].unique():
        o, n = old[old["model"] == model], new[new["model"] == model]
        for arm, base, rule, seen in (
            ("REL-GSPO", "B", rel_gspo_verdict, "post hoc"),
            ("REL-GSPO", "REL-GRPO", relative_verdict, "declared"),
        ):
            before, fresh = paired_diff(o, arm, base, "late_acc"), paired_diff(n, arm, base, "late_acc")
            verdict = provisional(rule(fresh), n, (arm, base))
            pair = f"{ARMS[arm]} − {ARMS[base]}"
            measure = lambda runs, column, arm=arm, base=base: paired_diff(runs, arm, base, column)  # noqa: E731
            flips = f10_ten.paired_flips(measure, rule, n, verdict.outcome)
            sure = robustness(flips)
            rows.append([model, pair, f"{diff_cell(before)} ({seen})", diff_cell(fresh), verdict.short, sure])
    return rows


def fresh_cost(table: pd.DataFrame) -> list[dict]:
    """Per model, on the fresh seeds: GSPO's late accuracy without and with the relative cap, the paired lift and its
    verdict (``f10c.rel_gspo``), and the cap's cost — the share of updates it rescales and the wall time per cell."""
    out = []
    new = table[table["source"] == SPECS["confirm"]]
    for model, n in new.groupby("model", sort=False):
        plain, rel = n[n["arm_id"] == "B"], n[n["arm_id"] == "REL-GSPO"]
        diff = paired_diff(n, "REL-GSPO", "B", "late_acc")
        if not (len(plain) and len(rel) and len(diff)):
            continue
        out.append({
            "model": model,
            "plain": num(plain["late_acc"].mean()),
            "capped": num(rel["late_acc"].mean()),
            "lift": diff_cell(diff),
            "verdict": provisional(rel_gspo_verdict(diff, f"f10c.rel_gspo.{model}"), n, ("REL-GSPO", "B")),
            "share": f"{rel['capped'].mean():.0%}",
            "wall": f"{rel['wall_s'].median() / plain['wall_s'].median():.2f}",
        })  # fmt: skip
    return out
