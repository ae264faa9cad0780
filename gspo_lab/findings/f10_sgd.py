"""Finding 10's 2×2 under plain SGD (issue 22, item 4a), stage 1: the learning-rate search of
``data/specs/f10x_sgd_lr_search.toml`` (GRPO and GSPO under SGD at lr 0.001-0.008, search seeds 80-81).

The lr rule (declared in the spec, before its runs): per model and objective, the lr of the grid with the highest
mean late held-out accuracy over the search seeds; ties go to the smaller lr. It picks stage 2's learning rates; it
is a choice, not a verdict. Beside it, each lr's late accuracy per seed and collapse count (description).
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.findings.fmt import num
from gspo_lab.findings.tables import declared, progress, spec

__all__ = ["SPEC", "pick_lr", "section"]

SPEC = "f10x_sgd_lr_search"
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
