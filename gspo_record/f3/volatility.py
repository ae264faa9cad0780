"""Finding 3: expert volatility (paper §5.3) — the probe ``p3_expert_volatility``.

Rule ``f3.volatility`` (:func:`volatility_verdict`) on ``moe-sort``'s change after one update (seed mean per learning
rate): *reproduced* if it lies within a factor ``WITHIN_FACTOR`` of the paper's ≈ ``PAPER_CHANGE`` at every grid
learning rate from ``TRAINED_LRS[0]`` to ``TRAINED_LRS[1]`` (the range the kit's training specs use), *partly
reproduced* if it does at some grid learning rate, else *not reproduced*. Set after the results (post hoc), replacing a
verdict string that did not read the data.

Rule ``f3.factor`` (:func:`factor_verdict`), per one-factor variant of the ``sweep`` preset against ``BASE``: at each
learning rate, the variant's 95 % bootstrap interval over seeds lies above the base's (*higher*), below it (*lower*),
or the two overlap; the variant *raises* it ("higher where separated, lower nowhere") when it is higher at ≥ 1
learning rate and lower at none, *lowers* it in the mirror case, is *mixed* when both occur, and *no separated
effect* when neither does. Set after the results (post hoc), replacing a ±10 % band on ratios of means that called a
factor separated at two learning rates "no consistent effect".
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_record.fmt import mean_ci, num, summary
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, register
from gspo_record.statements import Count
from gspo_record.tables import progress, spec

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
#: the paper's ≈ 10 % counts as reproduced within this factor either way
WITHIN_FACTOR = 2.0
#: the learning rates the kit's training specs use on the MoE cold starts (f1: 3e-5, f2: 5e-5, f2_confirm_clip: 1e-4)
TRAINED_LRS = (3e-5, 1e-4)

VOLATILITY = register(
    Rule(
        "f3.volatility",
        "3",
        {"reproduced": "reproduced", "partly": "partly reproduced", "not": "not reproduced"},
        {
            "PAPER_CHANGE": PAPER_CHANGE,
            "WITHIN_FACTOR": WITHIN_FACTOR,
            "TRAINED_LR_MIN": TRAINED_LRS[0],
            "TRAINED_LR_MAX": TRAINED_LRS[1],
        },
        declared="gspo_record/f3/volatility.py, after the results (post hoc)",
        marker="WITHIN_FACTOR = 2.0",
        specs=("p3_expert_volatility",),
        post_hoc=True,
    )
)
FACTOR = register(
    Rule(
        "f3.factor",
        "3",
        {
            "raises": "higher where separated, lower nowhere",
            "lowers": "lower where separated, higher nowhere",
            "mixed": "mixed",
            "none": "no separated effect",
        },
        {"LEVEL": 0.95},
        declared="gspo_record/f3/volatility.py, after the results (post hoc)",
        marker="def separation(variant: pd.Series, base: pd.Series)",
        specs=("p3_expert_volatility",),
        post_hoc=True,
    )
)


_TRAINED, _GRID = "trained learning rates within the factor", "grid learning rates within the factor"


@combination("f3.volatility", tuple(VOLATILITY.outcomes), (_TRAINED, _GRID))
def _volatility(o: dict) -> str:
    """Within the factor at every trained learning rate: reproduced; at some grid learning rate: partly; else not."""
    if o[_TRAINED] == "at_least":
        return "reproduced"
    return "partly" if o[_GRID] == "at_least" else "not"


def _every(k: int, n: int) -> Count:
    """k of n (learning rates) read as "at_least" when all n are, "at_most" when none is."""
    return Count(k, n, 1, 0, per=1, wilson_shown=False)


def _some(k: int, n: int) -> Count:
    """k of n (learning rates) read as "at_least" when one or more is, "at_most" when none is (1 of n, per n)."""
    return Count(k, n, 1, 0, per=n, wilson_shown=False)


def volatility_verdict(table: pd.DataFrame, checkpoint: str = "moe-sort", id: str = "f3.volatility"):
    """``f3.volatility`` on the probe's table (columns checkpoint, lr, change_k1; module docstring): statement ``id``,
    whose number counts the learning rates (trained, and the whole grid) whose seed mean lies within the factor;
    pending until a trained learning rate is measured."""
    means = table[table.checkpoint == checkpoint].groupby("lr")["change_k1"].mean()
    within = (means >= PAPER_CHANGE / WITHIN_FACTOR) & (means <= PAPER_CHANGE * WITHIN_FACTOR)
    trained = within[(within.index >= TRAINED_LRS[0]) & (within.index <= TRAINED_LRS[1])]
    if trained.empty:
        return VOLATILITY.verdict(PENDING)
    number = Joint("f3.volatility", ((_TRAINED, _every(int(trained.sum()), len(trained))),
                                     (_GRID, _some(int(within.sum()), len(within)))))  # fmt: skip
    return VOLATILITY.state(id, "does one update change about the paper's tenth of the MoE's expert sets?", number)


def separation(variant: pd.Series, base: pd.Series) -> int:
    """+1 / −1 when the 95 % bootstrap interval over seeds of ``variant`` lies above / below ``base``'s, else 0."""
    v, b = summary(variant), summary(base)
    return 1 if v["ci_low"] > b["ci_high"] else (-1 if v["ci_high"] < b["ci_low"] else 0)


@combination("f3.factor", tuple(FACTOR.outcomes), ("above the base at", "below the base at"),
             shown=("raises", "lowers", "mixed"))  # fmt: skip
def _factor(o: dict) -> str:
    """Above at some learning rate and below at none: raises; the mirror: lowers; both: mixed; neither: none."""
    up, down = o["above the base at"] == "at_least", o["below the base at"] == "at_least"
    return "mixed" if up and down else ("raises" if up else ("lowers" if down else "none"))


def factor_verdict(table: pd.DataFrame, checkpoint: str, base: str = BASE, id: str = ""):
    """``f3.factor`` for one variant on the probe's table (module docstring): statement ``id`` (``f3.factor.`` and
    the variant by default), whose number counts the learning rates where its interval lies above and below the
    base's; with where the two separate, in words (:func:`_where`)."""
    by_lr = []
    for lr, g in table[table.checkpoint == checkpoint].groupby("lr"):
        b = table[(table.checkpoint == base) & (table.lr == lr)]
        if len(b):
            by_lr.append((lr, separation(g["change_k1"], b["change_k1"])))
    signs = [s for _, s in by_lr]
    if not signs:
        return FACTOR.verdict(PENDING), ""
    number = Joint("f3.factor", (("above the base at", _some(signs.count(1), len(signs))),
                                 ("below the base at", _some(signs.count(-1), len(signs)))))  # fmt: skip
    question = "does the variant change the share of expert sets one update changes?"
    return FACTOR.state(id or f"f3.factor.{checkpoint}", question, number), _where(by_lr)


def _where(by_lr: list[tuple[float, int]]) -> str:
    """Where a variant's interval lies above or below the base's (``by_lr``: learning rate, :func:`separation`), in
    words: "above the base at lr 3.00e-04 only; no separated effect at the other 3 of 4 learning rates"."""
    n, parts = len(by_lr), []
    sides = {side: [num(lr) for lr, s in by_lr if s == sign] for sign, side in ((1, "above"), (-1, "below"))}
    for side, lrs in sides.items():
        if len(lrs) == n:
            parts.append(f"{side} the base at all {n} learning rates")
        elif lrs:
            only = "" if all(sides.values()) else " only"
            parts.append(f"{side} the base at lr {', '.join(lrs)}{only}")
    overlap = sum(s == 0 for _, s in by_lr)
    if overlap == n:
        parts.append(f"intervals overlap at all {n} learning rates")
    elif overlap:
        parts.append(f"no separated effect at the other {overlap} of {n} learning rates")
    return "; ".join(parts)


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
    within = [num(lr) for lr, v in moe.items() if PAPER_CHANGE / WITHIN_FACTOR <= v <= PAPER_CHANGE * WITHIN_FACTOR]
    base = table[table.checkpoint == BASE].groupby("lr")["change_k1"].mean()
    factors = []
    for ckpt, what in FACTORS.items():
        ratio = (table[table.checkpoint == ckpt].groupby("lr")["change_k1"].mean() / base).dropna()
        if not ratio.empty:
            verdict, where = factor_verdict(table, ckpt)
            factors.append(
                {
                    "what": what,
                    "min": num(ratio.min(), 2),
                    "max": num(ratio.max(), 2),
                    "verdict": verdict,
                    "where": where,
                }
            )
    means = table.groupby(["checkpoint", "lr"])[["change_k1", "change_k1_first_layer", "change_k1_last_layer"]].mean()
    by_ckpt = means["change_k1"].groupby(level="checkpoint")
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "last_above_first": int((means["change_k1_last_layer"] > means["change_k1_first_layer"]).sum()),
        "points": len(means),
        "rises_with_lr": int(sum(g.is_monotonic_increasing for _, g in by_ckpt)),
        "checkpoints": by_ckpt.ngroups,
        "verdict": volatility_verdict(table),
        "factors": factors,
        "moe": {
            "min": num(moe.min()),
            "max": num(moe.max()),
            "lr_min": num(moe.index.min()),
            "lr_max": num(moe.index.max()),
            "within": ", ".join(within) or "none of the grid's",
            "trained": f"{num(TRAINED_LRS[0])}–{num(TRAINED_LRS[1])}",
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
