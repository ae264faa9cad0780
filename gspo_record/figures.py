"""One figure kind for the findings whose result is a few paired comparisons (issue 36: every finding page shows a
figure): each comparison's per-seed values as dots, its mean and the page's 95 % interval as a bar, the null as a
dotted line — the same numbers the page's tables print, drawn.

:func:`per_seed` builds the figure's data (the findings page stores a figure as (data, plot function), hashes the
data into docs/findings.lock.json and draws it once per build); :func:`plot_per_seed` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from gspo_lab.experiments.stats import seed_interval

__all__ = ["per_seed", "plot_per_seed", "rates", "plot_rates", "DPI", "BOOK_PX", "MIN_PT", "screen_pt", "legible"]

#: the resolution the book's figures are saved at (gspo_record/page.py), the width of the book's article at a 1300 px
#: window (gspo_lab/nb/book.py's CSS; measured in Chromium), and the smallest text size a reader gets there (issue 48,
#: item 7: legends and tick labels at least 9 pt at the book's width)
DPI, BOOK_PX, MIN_PT = 110, 1040, 9.0


def screen_pt(fig, size_pt: float) -> float:
    """The size in screen points (1/72 in at 96 px per inch) of ``size_pt`` text in ``fig`` shown in the book: saved
    at :data:`DPI`, scaled down to :data:`BOOK_PX` when wider."""
    width_px = fig.get_figwidth() * DPI
    return size_pt / 72 * DPI * min(1.0, BOOK_PX / width_px) * 72 / 96


def legible(fig):
    """``fig`` with every text (titles, labels, tick labels, legends) raised to at least :data:`MIN_PT` on screen
    (:func:`screen_pt`); the build applies it to every figure before saving."""
    from matplotlib.text import Text

    need = MIN_PT / screen_pt(fig, 1.0)
    fig.canvas.draw()  # tick labels exist only once drawn
    for ax in fig.axes:
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            if any(t.get_fontsize() < need for t in axis.get_ticklabels(which="both")):
                ax.tick_params(axis=name, which="both", labelsize=need)
    for text in fig.findobj(Text):
        if text.get_fontsize() < need:
            text.set_fontsize(need)
    return fig


def per_seed(items: Sequence[tuple[str, Sequence[float], tuple[float, float]]], xlabel: str, null: float = 0.0):
    """(data, :func:`plot_per_seed`) for ``items``: (label, per-seed values, the endpoint's declared range), one
    row of dots per item, top to bottom; the interval is the page's (:func:`seed_interval` on that range, NaN for
    fewer than 2 seeds). Raises ValueError naming the item when it has no value."""
    rows = []
    for label, values, bounds in items:
        values = [float(v) for v in values]
        if not values:
            raise ValueError(f"per_seed: item {label!r} has no per-seed value")
        lo, hi = seed_interval(values, bounds)
        rows += [{"row": label, "value": v, "low": lo, "high": hi, "null": null, "xlabel": xlabel} for v in values]
    return pd.DataFrame(rows), plot_per_seed


def plot_per_seed(data: pd.DataFrame):
    """Dots per seed, a bar for the interval, a diamond at the mean, per row of ``data`` (:func:`per_seed`)."""
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(data["row"]))
    fig, ax = plt.subplots(figsize=(6.0, 0.9 + 0.45 * len(labels)))
    for i, label in enumerate(labels):
        group, y = data[data["row"] == label], len(labels) - 1 - i
        offsets = [(j - (len(group) - 1) / 2) * 0.05 for j in range(len(group))]
        ax.scatter(group["value"], [y + o for o in offsets], s=14, color="0.45", zorder=2, label="seeds" * (i == 0))
        ax.plot([group["low"].iloc[0], group["high"].iloc[0]], [y, y], color="tab:blue", lw=3, alpha=0.6, zorder=1,
                label="95 % interval" * (i == 0))  # fmt: skip
        ax.scatter([group["value"].mean()], [y], marker="D", color="tab:blue", zorder=3, label="mean" * (i == 0))
    ax.axvline(data["null"].iloc[0], color="grey", ls=":")
    ax.set_yticks(range(len(labels)), labels[::-1], fontsize=8)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_xlabel(data["xlabel"].iloc[0])
    ax.legend(frameon=False, fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def rates(items: Sequence[tuple[str, int, int, int, int]], labels: tuple[str, str], xlabel: str,
          colors: tuple[str, str] = ("tab:red", "0.5")):  # fmt: skip
    """(data, :func:`plot_rates`) for ``items``: (label, k, n, j, m) — two counts per row (k of n, j of m), each drawn
    as a share with its Wilson 95 % interval; ``labels`` name the two counts in the legend, ``colors`` colour them."""
    from gspo_lab.experiments.stats import wilson

    rows = []
    for label, *counts in items:
        for which, color, (k, n) in zip(labels, colors, (counts[:2], counts[2:]), strict=True):
            lo, hi = wilson(k, n) if n else (float("nan"), float("nan"))
            rows.append({"row": label, "which": which, "share": k / n if n else float("nan"), "low": lo, "high": hi,
                         "color": color, "xlabel": xlabel})  # fmt: skip
    return pd.DataFrame(rows), plot_rates


def plot_rates(data: pd.DataFrame):
    """Per row of ``data`` (:func:`rates`): its two shares with their intervals, side by side."""
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(data["row"]))
    fig, ax = plt.subplots(figsize=(6.0, 0.9 + 0.4 * len(labels)))
    for shift, (which, group) in zip((0.12, -0.12), data.groupby("which", sort=False), strict=False):
        y = [len(labels) - 1 - labels.index(r) + shift for r in group["row"]]
        ax.errorbar(group["share"], y, xerr=[group["share"] - group["low"], group["high"] - group["share"]], fmt="o",
                    color=group["color"].iloc[0], ms=4, capsize=2, label=which)  # fmt: skip
    ax.set_yticks(range(len(labels)), labels[::-1], fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(data["xlabel"].iloc[0])
    ax.legend(frameon=False, fontsize=7, loc="best")
    fig.tight_layout()
    return fig
