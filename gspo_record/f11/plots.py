"""Finding 11's figures: late held-out accuracy per run and arm (:func:`plot_positions`)."""

from __future__ import annotations

import pandas as pd

__all__ = ["plot_positions"]


def plot_positions(data: pd.DataFrame, arms: tuple[str, ...] = ()):
    """Late held-out accuracy per run (dots) and per arm (bar: mean), one panel per model; ``arms`` in that order
    (those in the data; by default in the order they appear)."""
    from matplotlib.figure import Figure

    from gspo_lab.plots import color, label

    models = list(dict.fromkeys(data["model"]))
    fig = Figure(figsize=(5.2 * max(len(models), 1), 3.4))
    axes = fig.subplots(1, max(len(models), 1), squeeze=False)
    for ax, model in zip(axes[0], models, strict=False):
        m = data[data["model"] == model]
        drawn = [a for a in arms or dict.fromkeys(m["arm_id"]) if a in set(m["arm_id"])]
        for i, arm in enumerate(drawn):
            v = m.loc[m["arm_id"] == arm, "late_acc"]
            ax.bar(i, v.mean(), color=color(arm), alpha=0.35, width=0.7)
            ax.plot([i] * len(v), v, "o", color=color(arm), ms=4)
        ax.set_xticks(range(len(drawn)), [label(a) for a in drawn], rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"{model}: late held-out accuracy (rollouts 40-80)")
        ax.set_ylabel("exact-match accuracy")
    fig.tight_layout()
    return fig
