"""Finding 2's figures that notebook 04 also shows: the stability map's heat maps and the grad-norm cap's dose
curves (data in, a Figure out; the colours and names of :mod:`gspo_lab.plots`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gspo_lab.plots import color, fig_row, label

__all__ = ["plot_stability", "plot_dose"]


def plot_stability(table: pd.DataFrame) -> Figure:
    """Heat maps over (lr, M): one column per objective, and per grad-clip level two rows — the collapsed fraction and
    the late held-out accuracy. ``table``: one row per (clip, lr, minibatches, objective) with n, k, late_acc,
    search_only (:func:`gspo_record.f2.search.stability_table`); a cell reads "k/n" (an "s" marks search seeds
    only) and its accuracy. Two columns, so the cells' text stays readable at a book page's width."""
    clips = sorted(set(table["clip"]), key=lambda c: c != "off")
    objectives = sorted(set(table["objective"]))
    lrs, ms = sorted(set(table["lr"])), sorted(set(table["minibatches"]))
    panels = [(clip, value) for clip in clips for value in ("rate", "late_acc")]
    fig = Figure(figsize=(4.6 * len(objectives), 2.5 * len(panels)))
    axes = fig.subplots(len(panels), len(objectives), squeeze=False)
    for j, objective in enumerate(objectives):
        for i, (clip, value) in enumerate(panels):
            part = table[(table["clip"] == clip) & (table["objective"] == objective)]
            cmap, vmax = ("Reds", 1.0) if value == "rate" else ("Blues", 0.7)
            grid = np.full((len(ms), len(lrs)), np.nan)
            ax = axes[i][j]
            for row in part.itertuples():
                y, x = ms.index(row.minibatches), lrs.index(row.lr)
                grid[y, x] = row.k / row.n if value == "rate" else row.late_acc
                text = f"{row.k}/{row.n}{' s' if row.search_only else ''}" if value == "rate" else f"{row.late_acc:.2f}"
                dark = grid[y, x] > 0.6 * vmax
                ax.text(x, y, text, ha="center", va="center", fontsize=10, color="white" if dark else "black")
            ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=vmax, origin="lower", aspect="auto")
            ax.set_xticks(range(len(lrs)), [f"{lr:.2g}" for lr in lrs], fontsize=9)
            ax.set_yticks(range(len(ms)), [str(m) for m in ms], fontsize=9)
            what = "collapsed runs" if value == "rate" else "late held-out accuracy"
            ax.set_title(f"{label(objective)}, grad clip {clip}: {what}", fontsize=10)
            ax.set_ylabel("minibatches M", fontsize=9)
        axes[-1][j].set_xlabel("learning rate")
    fig.tight_layout()
    return fig


def plot_dose(table: pd.DataFrame) -> Figure:
    """Late held-out accuracy against the grad-norm cap (none, 30, 10, 1), one panel per model, one line per
    objective, 95 % intervals as bars (``table``: :func:`gspo_record.tables.dose_table`)."""
    caps = ["off", "30", "10", "1"]
    models = list(dict.fromkeys(table["model"]))
    fig, axes = fig_row(ncols=len(models), width=4.4)
    for ax, model in zip(axes, models, strict=True):
        for objective, g in table[table["model"] == model].groupby("objective"):
            g = g.assign(x=g["clip"].map(caps.index)).sort_values("x")
            err = [g["late_acc"] - g["lo"], g["hi"] - g["late_acc"]]
            ax.errorbar(
                g["x"], g["late_acc"], yerr=err, fmt="o-", capsize=3, color=color(objective), label=label(objective)
            )
        ax.set_xticks(range(len(caps)), ["no cap", "30", "10", "1"])
        ax.set(title=model, xlabel="grad-norm cap", ylabel="late held-out accuracy", ylim=(0, None))
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
