"""Finding 6: gradient variance (beyond the paper) — the probe ``p6_gradient_noise``.

``p6_gradient_noise.toml`` declared before its runs: the token-weight argument predicts noise_ratio = RelVar_GRPO ÷
RelVar_GSPO > 1 at θ_3, growing with L.

Rule ``f6.above_one``: per L (unclipped), the ratio's 95 % interval over seeds lies above 1.
Rule ``f6.grows`` (:func:`grows_verdict`): not yet a rule with intervals (means monotone in L; issue 14).
Rule ``f6.clipped``: with the paper's clip ranges, whether the interval includes 1.
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.store import finished
from gspo_lab.findings.fmt import mean_ci, num, summary
from gspo_lab.findings.rules import Rule, Verdict, register
from gspo_lab.findings.tables import progress, spec

__all__ = ["GROWS", "CLIPPED", "grows_verdict", "clipped_verdict", "section"]

GROWS = register(
    Rule(
        "f6.grows",
        "6",
        {"grows": "grows", "not": "does not grow monotonically"},
        {},
        declared="data/specs/p6_gradient_noise.toml, before its runs",
        marker="argument predicts noise_ratio > 1",
        specs=("p6_gradient_noise",),
    )
)
CLIPPED = register(
    Rule(
        "f6.clipped",
        "6",
        {"inside": ", not distinguishable from 1: clipping cuts off the stale tokens' weights", "outside": ""},
        {},
        declared="gspo_lab/nb/findings.py, after the runs",
        marker="clipping cuts off the stale tokens' weights",
        specs=("p6_gradient_noise",),
        post_hoc=True,
    )
)


def grows_verdict(by_len: pd.Series) -> Verdict:
    return GROWS.verdict("grows" if len(by_len) > 1 and by_len.is_monotonic_increasing else "not")


def clipped_verdict(row: dict) -> Verdict:
    return CLIPPED.verdict("inside" if row["ci_low"] <= 1 <= row["ci_high"] else "outside")


def section() -> tuple[dict, dict]:
    s = spec("p6_gradient_noise")
    table = finished(s, "confirm")
    rows = []
    for (length, clipped), group in table.groupby(["length", "clipped"], sort=True):
        r = summary(group["noise_ratio_kK"])
        rows.append(
            [
                length,
                "yes" if clipped else "no",
                int(r["seeds"]),
                num(group["mean_length"].mean()),
                mean_ci(r),
                f"{int((group['noise_ratio_kK'] > 1).sum())}/{len(group)}",
                f"{num(group['rel_variance_grpo_kK'].mean())} / {num(group['rel_variance_gspo_kK'].mean())}",
            ]
        )
    unclipped = table[~table["clipped"].astype(bool)]
    by_len = unclipped.groupby("length")["noise_ratio_kK"].mean()
    above = [L for L, g in unclipped.groupby("length") if summary(g["noise_ratio_kK"])["ci_low"] > 1]
    clipped = table[table["clipped"].astype(bool)]
    r = summary(clipped["noise_ratio_kK"])
    ctx = {
        "progress": progress(s),
        "rows": rows,
        "above": ", ".join(str(L) for L in above) or "none",
        "by_len": [{"L": L, "ratio": num(v)} for L, v in by_len.items()],
        "grows": grows_verdict(by_len),
        "clipped_L": int(clipped["length"].max()),
        "clipped_ratio": mean_ci(r),
        "clipped": clipped_verdict(r),
    }
    return ctx, {"f6_noise": (table[["length", "clipped", "seed", "noise_ratio_kK"]], _plot_noise)}


def _plot_noise(data: pd.DataFrame):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for clipped, group in data.groupby("clipped"):
        name = "paper clip ranges" if clipped else "unclipped (Eqs. 10-12)"
        shift = 0.3 if clipped else 0
        ax.scatter(group["length"] + shift, group["noise_ratio_kK"], alpha=0.5, label=f"{name}, seeds")
        mean = group.groupby("length")["noise_ratio_kK"].mean()
        ax.plot(mean.index + shift, mean.values, "o-" if not clipped else "s", lw=2)
    ax.axhline(1, color="grey", ls=":")
    ax.set(xlabel="response length L (sort digits)", ylabel="RelVar GRPO ÷ RelVar GSPO at θ_3")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
