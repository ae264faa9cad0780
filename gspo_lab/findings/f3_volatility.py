"""Finding 3: expert volatility (paper §5.3) — the probe ``p3_expert_volatility``.

Rule ``f3.volatility`` (:func:`volatility_verdict`): the paper's figure is ≈ ``PAPER_CHANGE`` of the top-k sets
changed after one update (48 layers). Not yet a rule of the data: the verdict is a fixed string (issue 14).

Rule ``f3.factor`` (:func:`factor_verdict`), per one-factor variant of the ``sweep`` preset: the ratio of seed means
to ``BASE`` at each learning rate; *raises it* if every ratio exceeds ``1 + FACTOR_BAND``, *lowers it* if every ratio
is below ``1 − FACTOR_BAND``, else *has no consistent effect*. The band was set with the results it classifies.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_lab.findings.fmt import mean_ci, num, summary
from gspo_lab.findings.rules import Rule, Verdict, register
from gspo_lab.findings.tables import progress, spec

__all__ = ["VOLATILITY", "FACTOR", "volatility_verdict", "factor_verdict", "section", "PAPER_CHANGE"]

#: the paper's figure (§5.3): ~10 % of activated experts change after one update (48-layer Qwen3-30B-A3B-Base)
PAPER_CHANGE = 0.10
#: finding 3's one-factor variants of the ``sweep`` preset's cold start (gspo_lab/model.py), against BASE
BASE = "sweep-sort"
FACTORS = {
    "sweep-deep-sort": "8 layers",
    "sweep-e32-sort": "32 experts",
    "sweep-k4-sort": "top-4",
    "moe-sort": "hidden 128 and 16 experts (moe-sort)",
}
FACTOR_BAND = 0.1

VOLATILITY = register(
    Rule(
        "f3.volatility",
        "3",
        {"partly": "partly reproduced"},
        {"PAPER_CHANGE": PAPER_CHANGE},
        declared="gspo_lab/nb/findings.py, with its results",
        marker="F3_PAPER_CHANGE = 0.10",
        specs=("p3_expert_volatility",),
        post_hoc=True,
    )
)
FACTOR = register(
    Rule(
        "f3.factor",
        "3",
        {"raises": "raises it", "lowers": "lowers it", "none": "has no consistent effect"},
        {"FACTOR_BAND": FACTOR_BAND},
        declared="gspo_lab/nb/findings.py, with its results",
        marker="ratio.min() > 1.1 or ratio.max() < 0.9",
        specs=("p3_expert_volatility",),
        post_hoc=True,
    )
)


def volatility_verdict(table: pd.DataFrame) -> Verdict:
    return VOLATILITY.verdict("partly")


def factor_verdict(ratio: pd.Series) -> Verdict:
    """``f3.factor`` on one variant's per-lr ratios of seed means to BASE (module docstring)."""
    if ratio.min() > 1 + FACTOR_BAND:
        return FACTOR.verdict("raises")
    if ratio.max() < 1 - FACTOR_BAND:
        return FACTOR.verdict("lowers")
    return FACTOR.verdict("none")


def section() -> tuple[dict, dict]:
    s = spec("p3_expert_volatility")
    table = finished(s, "confirm")
    rows = []
    for (ckpt, lr), group in table.groupby(["checkpoint", "lr"], sort=True):
        k1 = summary(group["change_k1"])
        rows.append(
            [
                ckpt,
                num(lr),
                int(k1["seeds"]),
                mean_ci(k1),
                num(group["change_kK"].mean()),
                f"{num(group['change_k1_first_layer'].mean())} / {num(group['change_k1_last_layer'].mean())}",
            ]
        )
    moe = table[table.checkpoint == "moe-sort"].groupby("lr")["change_k1"].mean()
    reach = [lr for lr, v in moe.items() if v >= PAPER_CHANGE / 2]
    base = table[table.checkpoint == BASE].groupby("lr")["change_k1"].mean()
    factors = []
    for ckpt, what in FACTORS.items():
        ratio = (table[table.checkpoint == ckpt].groupby("lr")["change_k1"].mean() / base).dropna()
        if not ratio.empty:
            factors.append(
                {"what": what, "min": num(ratio.min(), 2), "max": num(ratio.max(), 2), "verdict": factor_verdict(ratio)}
            )
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "verdict": volatility_verdict(table),
        "factors": factors,
        "moe": {
            "min": num(moe.min()),
            "max": num(moe.max()),
            "lr_min": num(moe.index.min()),
            "lr_max": num(moe.index.max()),
            "reach": num(min(reach)) if reach else "— (never)",
        },
    }
    data = table[["checkpoint", "lr", "seed", "change_k1", "change_kK"]]
    return ctx, {"f3_volatility": (data, _plot_volatility)}


def _plot_volatility(data: pd.DataFrame):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for ckpt in [BASE, *FACTORS]:
        group = data[data.checkpoint == ckpt].groupby("lr")["change_k1"]
        if not len(group):
            continue
        mean, lo, hi = group.mean(), group.min(), group.max()
        label = ckpt + (f" ({FACTORS[ckpt]})" if ckpt in FACTORS else " (4 layers, 8 experts, top-2)")
        ax.errorbar(mean.index, mean.values, yerr=[mean - lo, hi - mean], fmt="o-", capsize=3, label=label)
    ax.axhline(PAPER_CHANGE, color="grey", ls=":", label="paper, 48 layers (§5.3)")
    ax.set(xscale="log", yscale="log", xlabel="learning rate")
    ax.set_ylabel("changed top-k sets after 1 update\n(mean, min–max of seeds)")
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig
