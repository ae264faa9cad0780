"""Finding 6: gradient variance (beyond the paper) — the probe ``p6_gradient_noise``.

``p6_gradient_noise.toml`` declared before its runs: the token-weight argument predicts noise_ratio = RelVar_GRPO ÷
RelVar_GSPO > 1 at θ_3, growing with L. The rules reading it:

``f6.above_one`` (:func:`above_one_verdict`), per L: the ratio's 95 % interval over seeds lies *above 1*, *below 1*, or
includes 1 (*not distinguishable from 1*).

``f6.grows`` (:func:`grows_verdict`; read on the per-seed slopes since issue 48, :func:`seed_trend`): the least-squares
slope of the ratio against log2 L over every unclipped cell,
with a 95 % bootstrap interval (seeds resampled within each L, ``TREND_RESAMPLES``, seeded): it *grows with L* when the
interval lies above 0, *shrinks* below 0, else *no trend shown*. Set after the results (post hoc), replacing a test
of monotone means whose intervals overlapped.

``f6.relvar_change`` (:func:`relvar_change_verdict`), per objective at the clipped length: the per-seed difference of
its relative variance with the paper's clip ranges minus without (the same rollout batch and updates, so paired);
*rises* / *falls* when its interval excludes 0, else *no change shown*. Set after the results (post hoc), replacing a
fixed clause ("clipping cuts off the stale tokens' weights") that the stored data contradict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gspo_lab.experiments.endpoint_range import UNBOUNDED
from gspo_lab.experiments.stats import BOOTSTRAP_SEED, seed_interval, t_interval
from gspo_lab.experiments.store import finished
from gspo_record.endpoints import RATIO_MINUS_ONE
from gspo_record.fmt import diff_cell, mean_ci, num, signs, summary
from gspo_record.rules import PENDING, Rule, null_words, register
from gspo_record.signed import signed
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

__all__ = [
    "ABOVE_ONE",
    "GROWS",
    "RELVAR_CHANGE",
    "above_one_verdict",
    "grows_verdict",
    "seed_slopes",
    "seed_trend",
    "trend_outcome",
    "slope_cell",
    "declared_reading",
    "trend",
    "relvar_change_verdict",
    "section",
]

TREND_RESAMPLES = 10_000
_SPECS = ("p6_gradient_noise",)
_POST_HOC = "gspo_record/f6/variance.py, after the results (post hoc)"
#: an interval's outcome -> the rules' own: a ratio against 1, a trend's slope, a change against 0
ABOVE_READS = {"above": "above", "below": "below", "none": "inside"}
TREND_READS = {"above": "grows", "below": "shrinks", "none": "none"}
CHANGE_READS = {"above": "rises", "below": "falls", "none": "none"}

ABOVE_ONE = register(
    Rule(
        "f6.above_one",
        "6",
        {"above": "above 1", "below": "below 1", "inside": "not distinguishable from 1"},
        {"LEVEL": 0.95},
        null="inside",
        reads=ABOVE_READS,
        declared="data/specs/p6_gradient_noise.toml, before its runs",
        marker="argument predicts noise_ratio > 1",
        specs=_SPECS,
    )
)
GROWS = register(
    Rule(
        "f6.grows",
        "6",
        {"grows": "grows with L", "shrinks": "shrinks with L", "none": "no trend with L shown"},
        {"LEVEL": 0.95, "TREND_RESAMPLES": TREND_RESAMPLES},
        declared=_POST_HOC,
        null="none",
        null_count="per-seed slopes",
        reads=TREND_READS,
        marker="def trend(table: pd.DataFrame) -> tuple[float, float, float]",
        specs=_SPECS,
        post_hoc=True,
    )
)
RELVAR_CHANGE = register(
    Rule(
        "f6.relvar_change",
        "6",
        {"rises": "rises", "falls": "falls", "none": "shows no change"},
        {"LEVEL": 0.95},
        null="none",
        reads=CHANGE_READS,
        declared=_POST_HOC,
        marker="def relvar_change_verdict(diff: pd.Series) -> Verdict",
        specs=_SPECS,
        post_hoc=True,
    )
)


def above_one_verdict(ratios: pd.Series, rule: Rule = ABOVE_ONE, id: str = ""):
    """``f6.above_one`` (or ``rule``, a rule with its outcomes: f6b.above_one) on one length's per-seed noise ratios:
    statement ``id``, the ratio's interval (the page's, on the ratio's range) against 1."""
    if len(ratios) < 2:
        return rule.verdict(PENDING)
    x = pd.Series(list(ratios), dtype=float)
    lo, hi = seed_interval(list(x - 1), RATIO_MINUS_ONE)
    number = Interval(float(x.mean()), lo + 1, hi + 1, len(x), int((x > 1).sum()), int((x < 1).sum()), null=1.0,
                      bounds=(0.0, float("inf")))  # fmt: skip
    return rule.state(id or rule.name, "does GRPO's gradient noise exceed GSPO's (ratio above 1)?", number,
                      words=null_words(rule, list(x), 1.0))  # fmt: skip


def trend(table: pd.DataFrame, x: str = "length", y: str = "noise_ratio_kK") -> tuple[float, float, float]:
    """Slope of ``y`` against log2(``x``) over the rows of ``table``, and its 95 % bootstrap interval (rows resampled
    within each length). ``x``: the column measuring length (f6b: response tokens); ``y``: f6c reads a paired
    accuracy difference."""
    x, y = np.log2(table[x].to_numpy(float)), table[y].to_numpy(float)
    groups = [np.flatnonzero(table["length"].to_numpy() == L) for L in sorted(set(table["length"]))]
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = np.concatenate([g[rng.integers(0, len(g), (TREND_RESAMPLES, len(g)))] for g in groups], axis=1)
    xs, ys = x[picks], y[picks]
    xc = xs - xs.mean(1, keepdims=True)
    slopes = (xc * (ys - ys.mean(1, keepdims=True))).sum(1) / (xc**2).sum(1)
    slope = float(np.polyfit(x, y, 1)[0])
    return slope, float(np.percentile(slopes, 2.5)), float(np.percentile(slopes, 97.5))


def seed_slopes(table: pd.DataFrame, x: str = "length", y: str = "noise_ratio_kK") -> pd.Series:
    """Each seed's least-squares slope of ``y`` against log2(``x``) (seeds with every length), by seed: the per-seed
    values whose sign count the trend's label carries."""
    wide = table.pivot_table(index="seed", columns=x, values=y, aggfunc="first").dropna()
    x = np.log2(wide.columns.to_numpy(float))
    xc = x - x.mean()
    return pd.Series((wide.to_numpy(float) - wide.to_numpy(float).mean(1, keepdims=True)) @ xc / (xc**2).sum(),
                     index=wide.index, name="slope")  # fmt: skip


def seed_trend(table: pd.DataFrame, x: str = "length", y: str = "noise_ratio_kK") -> tuple[float, float, float]:
    """The page's reading of a trend (issue 48, item 5): the mean of the per-seed slopes (:func:`seed_slopes`) and
    its Student-t 95 % interval over seeds. The specs declared :func:`trend`'s percentile bootstrap within lengths,
    which covered only 0.79-0.87 on these data (the issue's audit); the methods page lists the departure with the
    declared reading beside it."""
    slopes = seed_slopes(table, x, y)
    lo, hi = t_interval(list(slopes))
    return float(slopes.mean()), lo, hi


def trend_outcome(lo: float, hi: float) -> str:
    """ "grows" / "shrinks" when a slope's interval lies above / below 0, else "none"."""
    return "grows" if lo > 0 else ("shrinks" if hi < 0 else "none")


def slope_cell(table: pd.DataFrame, x: str = "length", y: str = "noise_ratio_kK") -> str:
    """The page's slope: ``mean [lo, hi] (n = k; signs)`` of the per-seed slopes (:func:`seed_trend`)."""
    slope, lo, hi = seed_trend(table, x, y)
    values = seed_slopes(table, x, y)
    return f"{num(slope)} [{num(lo)}, {num(hi)}] (n = {len(values)}; {signs(values)})"


def declared_reading(table: pd.DataFrame, rule: Rule, x: str = "length", y: str = "noise_ratio_kK") -> str:
    """``rule``'s outcome key under the declared percentile bootstrap within lengths (:func:`trend`)."""
    return trend_outcome(*trend(table, x, y)[1:])


def trend_statement(table: pd.DataFrame, rule: Rule, x: str, y: str, id: str, question: str):
    """``rule`` (outcomes grows / shrinks / none) on ``y``'s trend against log2(``x``): the per-seed slopes' mean and
    t interval (:func:`seed_trend`) as statement ``id``."""
    slope, lo, hi = seed_trend(table, x, y)
    values = seed_slopes(table, x, y)
    number = Interval(slope, lo, hi, len(values), int((values > 0).sum()), int((values < 0).sum()))
    return rule.state(id or rule.name, question, number, words=null_words(rule, values))


def grows_verdict(table: pd.DataFrame, rule: Rule = GROWS, x: str = "length", id: str = ""):
    """``f6.grows`` (or ``rule``: f6b.grows, against ``x``) on the unclipped cells (columns ``x``, noise_ratio_kK;
    module docstring), read on the per-seed slopes (:func:`seed_trend`): statement ``id``."""
    if table[x].nunique() < 2:
        return rule.verdict(PENDING)
    return trend_statement(table, rule, x, "noise_ratio_kK", id, "does the gradient-noise ratio grow with length?")


def relvar_change_verdict(diff: pd.Series, id: str = ""):
    """``f6.relvar_change`` on one objective's per-seed RelVar difference, clipped minus unclipped: statement ``id``."""
    return signed(RELVAR_CHANGE, diff, lambda v: seed_interval(v, UNBOUNDED),
                  "does clipping change the ratio's relative variance?", id)  # fmt: skip


def _rows(table: pd.DataFrame) -> list[list]:
    rows = []
    for (length, clipped), group in table.groupby(["length", "clipped"], sort=True):
        r = summary(group["noise_ratio_kK"], null=1.0)
        relvar = f"{num(group['rel_variance_grpo_kK'].mean())} / {num(group['rel_variance_gspo_kK'].mean())}"
        rows.append(
            [
                length,
                "yes" if clipped else "no",
                int(r["seeds"]),
                num(group["mean_length"].mean()),
                mean_ci(r),
                f"{int((group['noise_ratio_kK'] > 1).sum())}/{len(group)}",
                relvar,
            ]
        )
    return rows


def section() -> tuple[dict, dict]:
    s = spec("p6_gradient_noise")
    table = finished(s, "confirm")
    unclipped, clipped = table[~table["clipped"].astype(bool)], table[table["clipped"].astype(bool)]
    per_length = [
        {
            "L": L,
            "ratio": mean_ci(summary(g["noise_ratio_kK"], null=1.0)),
            "verdict": above_one_verdict(g["noise_ratio_kK"], id=f"f6.above_one.L{L}"),
        }
        for L, g in unclipped.groupby("length")
    ]
    length = int(clipped["length"].max())
    pair = table[table["length"] == length].pivot_table(
        index="seed", columns="clipped", aggfunc="first", values=["rel_variance_grpo_kK", "rel_variance_gspo_kK"]
    )
    change = []
    for objective in ("grpo", "gspo"):
        col = f"rel_variance_{objective}_kK"
        diff = (pair[(col, True)] - pair[(col, False)]).dropna()
        change.append(
            {
                "objective": objective.upper(),
                "unclipped": num(pair[(col, False)].mean()),
                "clipped": num(pair[(col, True)].mean()),
                "diff": diff_cell(diff, UNBOUNDED),
                "verdict": relvar_change_verdict(diff, f"f6.relvar_change.{objective}"),
            }
        )
    ctx = {
        "progress": progress(s),
        "rows": _rows(table),
        "per_length": per_length,
        "grows": grows_verdict(unclipped, id="f6.grows"),
        "grows_declared": declared_reading(unclipped, GROWS),
        "slope": slope_cell(unclipped),
        "clipped_L": length,
        "clipped_ratio": mean_ci(summary(clipped["noise_ratio_kK"], null=1.0)),
        "clipped": above_one_verdict(clipped["noise_ratio_kK"], id="f6.above_one.clipped"),
        "change": change,
    }
    return ctx, {"f6_noise": (table[["length", "clipped", "seed", "noise_ratio_kK"]], _plot_noise)}


def _plot_noise(data: pd.DataFrame, x: str = "length", xlabel: str = "response length L (sort digits)"):
    """Per-seed noise ratios (dots) and their mean per length (line; squares: the clipped cells) against ``x``; a
    log-2 axis ticked at the lengths when ``x`` is not sort's L (f6b's response tokens)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    log = x != "length"
    for clipped, group in data.groupby("clipped"):
        name = "paper clip ranges" if clipped else "unclipped (Eqs. 10-12)"
        scale, shift = (1.04 if clipped and log else 1.0), (0.3 if clipped and not log else 0.0)
        ax.scatter(group[x] * scale + shift, group["noise_ratio_kK"], alpha=0.5, label=f"{name}, seeds")
        mean = group.groupby(x)["noise_ratio_kK"].mean()
        ax.plot(mean.index * scale + shift, mean.values, "o-" if not clipped else "s", lw=2)
    if log:
        ticks = sorted(data[x].unique())
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
    ax.axhline(1, color="grey", ls=":")
    ax.set(xlabel=xlabel, ylabel="RelVar GRPO ÷ RelVar GSPO at θ_3")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
