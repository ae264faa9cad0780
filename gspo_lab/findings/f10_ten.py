"""Finding 10's norm × direction 2×2 at ten seeds (issue 22): ``f10_direction_norm``'s seeds 30-34 pooled with the
fresh seeds 60-64 of ``data/specs/f10t_two_by_two_ten.toml``.

Rule ``f10t.two_by_two`` per model: ``f10.two_by_two``'s outcomes and logic on the ten seeds, each of the four paired
effects *higher* when its 95 % Student-t interval lies above 0 (:func:`gspo_lab.experiments.stats.t_sign`). Declared
with it: re-read with each seed left out, on training-reward AUC and on the final evaluation alone; a verdict that
changes under any of them is *fragile*. Beside it, the fresh seeds alone under the same rule.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.stats import t_sign
from gspo_lab.findings.f10_why import EFFECTS, SPECS, TWO_BY_TWO, effects, two_by_two_verdict
from gspo_lab.findings.fmt import t_cell
from gspo_lab.findings.rules import PENDING, Rule, register
from gspo_lab.findings.tables import progress, spec

__all__ = ["TEN", "ten_verdict", "robust_ten", "section"]

SEEDS = 10
TEN = register(
    Rule(
        "f10t.two_by_two",
        "10",
        dict(TWO_BY_TWO.outcomes),
        {"LEVEL": 0.95},
        declared="data/specs/f10t_two_by_two_ten.toml, before its runs (Student-t interval, ten seeds)",
        marker="Rule f10t.two_by_two per model, declared here",
        specs=(SPECS["ten"],),
    )
)


def ten_verdict(diffs: dict[str, pd.Series]):
    """Rule ``f10t.two_by_two`` on the four effects' per-seed differences."""
    return two_by_two_verdict(diffs, TEN, t_sign)


def robust_ten(m: pd.DataFrame) -> tuple:
    """(verdict, flips) on one model's pooled 2×2 runs (arm_id A-D, seed, late_acc, reward_auc, eval_final)."""
    verdict = ten_verdict(effects(m))
    if verdict.outcome == PENDING:
        return verdict, []
    flips = []
    for name, column in (("training-reward AUC", "reward_auc"), ("final evaluation", "eval_final")):
        other = ten_verdict(effects(m, column))
        if other.outcome != verdict.outcome:
            flips.append(f"{name}: {other.label.split(':')[0]}")
    for seed in sorted(m["seed"].unique()):
        other = ten_verdict(effects(m[m["seed"] != seed]))
        if other.outcome != verdict.outcome:
            flips.append(f"without seed {seed}: {other.label.split(':')[0]}")
    done = m.groupby("arm_id")["seed"].nunique().min() if len(m) else 0
    if done < SEEDS:
        verdict = TEN.verdict(verdict.outcome, f"{done} of {SEEDS} seeds finished")
    return verdict, flips


def section(table: pd.DataFrame) -> dict:
    """The ten-seed reading from finding 10's runs table (:func:`gspo_lab.findings.f10_runs.runs`)."""
    rows, verdicts = [], []
    pool = table[table["source"].isin([SPECS["two"], SPECS["ten"]]) & table["arm_id"].isin(list("ABCD"))]
    for model, m in pool.groupby("model", sort=False):
        verdict, flips = robust_ten(m)
        fresh = ten_verdict(effects(m[m["source"] == SPECS["ten"]]))
        cells = [t_cell(d) for d in effects(m).values()]
        sure = "fragile: " + "; ".join(flips) if flips else "robust"
        rows.append([model, *cells, str(verdict), fresh.label.split(":")[0], sure])
        verdicts.append({"model": model, "verdict": verdict, "sure": "fragile" if flips else "robust"})
    header = ["model", *EFFECTS, "f10t.two_by_two (seeds 30-34 + 60-64)", "fresh seeds alone", "robustness"]
    return {"progress": progress(spec(SPECS["ten"])), "rows": rows, "verdicts": verdicts, "header": header}
