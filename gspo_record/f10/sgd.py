"""Finding 10's 2×2 under plain SGD (issue 22, item 4a), stage 1: the learning-rate search of
``data/specs/f10x_sgd_lr_search.toml`` (GRPO and GSPO under SGD at lr 0.001-0.008, search seeds 80-81).

The lr rule (declared in the spec, before its runs): per model and objective, the lr of the grid with the highest
mean late held-out accuracy over the search seeds; ties go to the smaller lr. It picks stage 2's learning rates; it
is a choice, not a verdict. Beside it, each lr's late accuracy per seed and collapse count (description).

Stage 2, ``data/specs/f10y_sgd_two_by_two.toml``: the 2×2 under SGD at those rates on fresh seeds 85-89, each arm at
the rate of the objective whose norm it carries. Rule ``f10y.two_by_two`` per model (declared in the stage-1 spec,
before either stage ran): ``f10.two_by_two``'s outcomes and logic, each effect judged by its 95 % Student-t interval
over the five seeds.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from gspo_record.f10.ten import robust_ten
from gspo_record.f10.two_by_two import declared_interval
from gspo_record.f10.why import EFFECTS, SPECS, TWO_BY_TWO, effects, two_by_two_verdict
from gspo_record.fmt import diff_cell, num, robustness
from gspo_record.rules import Rule, register
from gspo_record.tables import declared, progress, spec

__all__ = ["SPEC", "SGD_TWO", "pick_lr", "section", "sgd_verdict", "two_by_two_section"]

SPEC = "f10x_sgd_lr_search"
SGD_TWO = register(
    Rule(
        "f10y.two_by_two",
        "10",
        dict(TWO_BY_TWO.outcomes),
        {"LEVEL": 0.95},
        "data/specs/f10x_sgd_lr_search.toml, before either stage ran (Student-t interval, five seeds)",
        "f10y.two_by_two per model: f10.two_by_two's outcomes and logic",
        specs=(SPECS["sgd_two"],),
    )
)
MODELS = {"moe-sort": "MoE", "dense-sort": "dense"}


def pick_lr(runs: pd.DataFrame) -> float:
    """The declared lr rule on one model's and objective's runs (``lr``, ``late_acc``): the lr with the highest mean
    late held-out accuracy, the smaller on a tie. ValueError on no runs."""
    if runs.empty:
        raise ValueError("runs: the lr rule needs at least one finished run")
    means = runs.groupby("lr")["late_acc"].mean().sort_index()
    return float(means[means == means.max()].index[0])


def section() -> dict:
    """Per model, objective and lr: late accuracy per search seed, its mean and the collapse count; the lr the rule
    picks per model and objective (while every cell of the grid point is finished)."""
    s = spec(SPEC)
    t = declared(s, "search")
    rows, picks = [], []
    if not t.empty:
        t = t.assign(model=t["checkpoint"].map(MODELS))
        for (model, objective), g in t.groupby(["model", "objective"], sort=False):
            for lr, h in g.groupby("lr"):
                per_seed = ", ".join(num(v) for v in h.sort_values("seed")["late_acc"])
                rows.append([model, objective, f"{lr:g}", per_seed, num(h["late_acc"].mean()),
                             f"{int(h['collapsed'].sum())}/{len(h)}"])  # fmt: skip
            complete = len(g) == len(s.grid["lr"]) * len(s.search_seeds)
            picks.append({"model": model, "objective": objective, "lr": f"{pick_lr(g):g}" if complete else "pending"})
    header = ["model", "objective", "lr", "late held-out acc. per search seed", "mean", "collapsed"]
    return {"progress": progress(s, "search"), "rows": rows, "picks": picks, "header": header}


def sgd_verdict(diffs: dict[str, pd.Series], id: str = "f10y.two_by_two"):
    """``f10y.two_by_two`` on the four effects' per-seed differences: statement ``id``."""
    return two_by_two_verdict(diffs, SGD_TWO, declared_interval, id)


def two_by_two_section(table: pd.DataFrame) -> dict:
    """The 2×2 under SGD from finding 10's runs table: per model the four effects, ``f10y.two_by_two`` with its
    re-readings (each seed left out, training-reward AUC, the final evaluation alone) and each arm's collapse count."""
    rows, verdicts = [], []
    pool = table[table["source"] == SPECS["sgd_two"]]
    for model, m in pool.groupby("model", sort=False):
        read = partial(sgd_verdict, id=f"f10y.two_by_two.{model}")
        verdict, flips = robust_ten(m, read, len(spec(SPECS["sgd_two"]).confirm_seeds))
        counts = {a: f"{int(g['collapsed'].sum())}/{len(g)}" for a in "ABCD" for g in [m[m["arm_id"] == a]]}
        sure = robustness(flips)
        rows.append(
            [model, *(diff_cell(d) for d in effects(m).values()), " / ".join(counts.values()), verdict.short, sure]
        )
        verdicts.append({"model": model, "verdict": verdict, "sure": "fragile" if flips else "robust",
                         "grpo_collapsed": counts["A"]})  # fmt: skip
    header = ["model", *EFFECTS, "collapsed A / B / C / D", "f10y.two_by_two (seeds 85-89)", "robustness"]
    adamw = table[(table["source"] == SPECS["two"]) & (table["arm_id"] == "A")].groupby("model", sort=False)
    return {"progress": progress(spec(SPECS["sgd_two"])), "rows": rows, "verdicts": verdicts, "header": header,
            "adamw_collapsed": [(model, f"{int(g['collapsed'].sum())}/{len(g)}") for model, g in adamw]}  # fmt: skip
