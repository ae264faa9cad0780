"""Finding 10's figures: GRPO's late held-out accuracy against its grad-norm cap (the dose), and the norm × direction
2×2 (:mod:`gspo_record.f10.runs` computes their data)."""

from __future__ import annotations

import pandas as pd

__all__ = ["ONSET_CAPS", "plot_dose", "plot_two_by_two"]

#: GRPO's grad-norm caps from none to the tightest (f10_onset_dual.toml's caps between finding 2's stored ones)
ONSET_CAPS = ("off", "30", "20", "15", "10", "1")


def plot_dose(data: pd.DataFrame):
    """GRPO's late held-out accuracy against its grad-norm cap, from none to 1 (:data:`ONSET_CAPS`), one line per
    model: the mean over seeds, each seed a dot (filled: the run collapsed)."""
    from gspo_lab.plots import fig_row

    fig, (ax,) = fig_row(width=5.6, height=3.4)
    x = {c: i for i, c in enumerate(ONSET_CAPS)}
    for (model, g), colour in zip(data.groupby("model", sort=False), ("#6a3d9a", "#ff7f00"), strict=False):
        g = g.assign(x=g["clip"].map(x) + (0.08 if model == "dense" else -0.08))
        means = g.groupby("x")["late_acc"].mean()
        ax.plot(means.index, means.values, "o-", color=colour, label=f"{model} GRPO (mean of seeds)")
        for collapsed, marker in ((True, colour), (False, "none")):
            d = g[g["collapsed"].astype(bool) == collapsed]
            ax.scatter(d["x"], d["late_acc"], s=14, facecolors=marker, edgecolors=colour, alpha=0.7)
    ax.set_xticks(range(len(ONSET_CAPS)), ["no cap" if c == "off" else c for c in ONSET_CAPS])
    ax.set(xlabel="grad-norm cap (max_grad_norm), loosest to tightest", ylabel="late held-out accuracy",
           ylim=(0, None))  # fmt: skip
    ax.legend(frameon=False, fontsize=8, title="filled dot: the run collapsed", title_fontsize=8)
    fig.tight_layout()
    return fig


def plot_two_by_two(data: pd.DataFrame):
    """Late held-out accuracy at GRPO's and at GSPO's norm, one line per direction, a panel per model; seeds as dots,
    the mean as a line (``data``: model, arm_id in A-D, seed, late_acc)."""
    from gspo_lab.plots import color, fig_row

    where = {"A": ("grpo", 0), "C": ("grpo", 1), "D": ("gspo", 0), "B": ("gspo", 1)}
    models = list(dict.fromkeys(data["model"])) or ["MoE"]
    fig, axes = fig_row(ncols=len(models), width=4.4)
    for ax, model in zip(axes, models, strict=True):
        m = data[data["model"] == model]
        for direction in ("grpo", "gspo"):
            arms = [a for a, (d, _) in where.items() if d == direction]
            xs, means = [], []
            for arm in sorted(arms, key=lambda a: where[a][1]):
                g = m[m["arm_id"] == arm]
                x = where[arm][1] + (0.04 if direction == "gspo" else -0.04)
                ax.scatter([x] * len(g), g["late_acc"], s=12, alpha=0.5, color=color(direction))
                xs.append(x)
                means.append(g["late_acc"].mean())
            ax.plot(xs, means, "o-", color=color(direction), label=f"{direction.upper()}'s direction")
        ax.set_xticks([0, 1], ["GRPO's norm", "GSPO's norm"])
        ax.set(title=model, ylabel="late held-out accuracy", ylim=(0, None), xlim=(-0.4, 1.4))
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig
