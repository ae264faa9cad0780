"""Finding 7: GSPO-token with per-token advantages (beyond the paper) — ``f7_token_advantages``.

Rule ``f7.token_credit`` (:func:`credit_verdict`), declared in ``f7_token_advantages.toml`` before its runs: per-token
credit *helps* if GSPO-token's held-out accuracy exceeds GSPO's, paired per seed, with the mean difference's 95 %
bootstrap interval above 0; else *no gain shown*.
"""

from __future__ import annotations

import pandas as pd

import gspo_record.figures as figures
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import paired_diff, seed_interval
from gspo_lab.experiments.store import finished
from gspo_record.fmt import diff_cell, mean_ci, num, summary
from gspo_record.rules import Rule, register
from gspo_record.signed import signed
from gspo_record.tables import progress, spec

__all__ = ["CREDIT", "CONFIRM", "credit_verdict", "confirm_verdict", "section"]

BASE = "gspo λ=0"
CREDIT = register(
    Rule(
        "f7.token_credit",
        "7",
        {"helps": "helps", "none": "no gain shown"},
        {},
        reads={"above": "helps", "below": "none", "none": "none"},
        declared="data/specs/f7_token_advantages.toml, before its runs",
        marker="per-token credit helps if GSPO-token",
        specs=("f7_token_advantages",),
    )
)


CONFIRM = register(
    Rule(
        "f7.confirm",
        "7",
        {"confirmed": "confirmed", "not": "not confirmed"},
        {"LEVEL": 0.95},
        declared="data/specs/f7c_token_confirm.toml, before its runs",
        marker="Declared: the gain at lambda = 1 is confirmed if",
        specs=("f7c_token_confirm",),
        reads={"above": "confirmed", "below": "not", "none": "not"},
    )
)
CONFIRM_SPEC = "f7c_token_confirm"


def confirm_verdict(diff: pd.Series, id: str = "f7.confirm"):
    """``f7.confirm``: GSPO-token (λ) − GSPO final held-out accuracy on the fresh seeds, interval above 0: statement
    ``id``, the difference with the page's interval on its range; pending without two seeds."""
    return signed(CONFIRM, diff, lambda x: seed_interval(x, DIFFERENCE),
                  "does per-token credit's gain over GSPO hold on fresh seeds?", id, DIFFERENCE)  # fmt: skip


def _arms(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(arm_id=table["objective"] + " λ=" + table["token_advantage"].map(lambda v: f"{float(v):g}"))


def credit_verdict(diff: pd.Series, id: str = "f7.token_credit"):
    """``f7.token_credit`` on the per-seed differences GSPO-token (λ) − GSPO (module docstring): statement ``id``."""
    return signed(CREDIT, diff, lambda x: seed_interval(x, DIFFERENCE),
                  "does per-token credit help GSPO's final accuracy?", id, DIFFERENCE)  # fmt: skip


def section() -> tuple[dict, dict]:
    s = spec("f7_token_advantages")
    table = finished(s, "confirm")
    table = _arms(table)
    rows, diffs = [], {}
    for arm_id, group in table.groupby("arm_id", sort=True):
        diff = paired_diff(table, arm_id, BASE, "eval_final") if arm_id != BASE else None
        diffs[arm_id] = diff
        objective, lam = arm_id.split(" λ=")
        rows.append(
            [
                objective.upper().replace("_TOKEN", "-token"),
                lam,
                len(group),
                num(group["clip_token_frac"].mean()),
                mean_ci(summary(group["eval_final"])),
                diff_cell(diff) if diff is not None else "(reference)",
            ]
        )
    verdicts = []
    for arm_id in ("gspo_token λ=0.5", "gspo_token λ=1"):
        d = diffs[arm_id]
        verdicts.append(
            {
                "lam": arm_id.split("=")[1],
                "verdict": credit_verdict(d, f"f7.token_credit.{arm_id.split('=')[1]}"),
                "mean": num(d.mean()),
                "low": num(seed_interval(list(d), DIFFERENCE)[0]),
            }
        )
    c = spec(CONFIRM_SPEC)
    fresh = _arms(finished(c, "confirm"))
    confirm, items = [], []
    for arm_id in ("gspo_token λ=0.5", "gspo_token λ=1"):
        d = paired_diff(fresh, arm_id, BASE, "eval_final")
        confirm.append(
            {
                "lam": arm_id.split("=")[1],
                "verdict": confirm_verdict(d, f"f7.confirm.{arm_id.split('=')[1]}"),
                "diff": diff_cell(d),
            }
        )
        items.append((f"λ = {arm_id.split('=')[1]}, fresh seeds", d, DIFFERENCE))
    return {
        "progress": progress(s),
        "rows": rows,
        "verdicts": verdicts,
        "confirm": confirm,
        "confirm_progress": progress(c),
    }, {"f7_token_adv": figures.per_seed(items, "final held-out accuracy, GSPO-token − GSPO (paired by seed)")}
