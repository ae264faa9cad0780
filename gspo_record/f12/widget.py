"""Notebook 05's lag section: stored stale-rollout runs (finding 12) at a chosen lag beside lag 0, for GRPO and GSPO
with the behaviour policy's log-probs as π_old. Reads stored results only: a move redraws in a second."""

from __future__ import annotations

import ipywidgets as W
import pandas as pd
from matplotlib.figure import Figure

from gspo_lab.plots import fig_row
from gspo_lab.widgets.panel import Panel

__all__ = ["lag_view", "LagPanel", "plot_lag"]

_NAMES = {"grpo/behaviour": "GRPO", "gspo/behaviour": "GSPO"}


def lag_view(table, lag: int, minibatches: int = 8):
    """(Figure, readout): the stored curves of :func:`gspo_record.f12.curves.lag_curves` at ``lag`` (solid)
    and lag 0 (dotted), and per arm its late held-out accuracy, clipped tokens and log-ratio spread at both."""
    from gspo_record.f12.curves import CURVE_METRICS, lag_readout

    numbers = lag_readout(table, lag)
    fig = plot_lag(table, lag, names=_NAMES, metrics=CURVE_METRICS)
    parts = []
    for arm, name in _NAMES.items():
        at, zero = numbers["lag"].get(arm), numbers["zero"].get(arm)
        if at is None or zero is None:
            continue
        acc = "eval/accuracy_sampled"
        parts.append(
            f"{name}: late held-out acc. {at[acc]:.3f} (lag 0: {zero[acc]:.3f}), "
            f"clipped tokens {at['clip/token_frac:mean']:.3f} ({zero['clip/token_frac:mean']:.3f}), "
            f"log-ratio spread {at['ratio/tok_log_std:mean']:.3g} ({zero['ratio/tok_log_std:mean']:.3g})"
        )
    behind = f"{lag * minibatches}-{lag * minibatches + minibatches - 1} optimizer steps"
    return fig, f"lag {lag} rollout batches ({behind} behind the sampler): " + "; ".join(parts)


class LagPanel(Panel):
    """A slider over the stored lags (rollout batches); the twin is :func:`lag_view`."""

    def __init__(self, table, *, minibatches: int = 8, lag: int | None = None):
        from gspo_record.f12.curves import stored_lags

        super().__init__("lag")
        self.table, self.minibatches = table, minibatches
        lags = stored_lags(table)
        self.lag = W.SelectionSlider(options=lags, value=lag if lag is not None else lags[-1], description="lag",
                                     layout=W.Layout(width="420px"))  # fmt: skip
        self.lag.add_class("gspo-lag-lag")
        self.lag.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.widget = W.VBox([self.lag, self.out, self.readout])
        self.redraw()

    def redraw(self) -> str:
        return self.show(lag_view, self.table, self.lag.value, self.minibatches)


def plot_lag(table: pd.DataFrame, lag: int, names: dict[str, str], metrics: dict[str, str]) -> Figure:
    """Notebook 05's lag panels: per metric in ``metrics`` (key -> axis label;
    :data:`gspo_record.f12.curves.CURVE_METRICS`), the mean over seeds per rollout of each arm in ``names``
    (arm -> label) at ``lag`` (solid) and at lag 0 (dotted).

    ``table``: :func:`gspo_record.f12.curves.lag_curves`'s long table.
    """
    fig, axes = fig_row(ncols=len(metrics), width=3.6)
    for ax, (metric, what) in zip(axes, metrics.items(), strict=True):
        rows = table[table["metric"] == metric]
        for i, (arm, name) in enumerate(names.items()):
            for at, style in ((lag, "-"), (0, ":")):
                run = rows[(rows["arm"] == arm) & (rows["lag"] == at)]
                if run.empty:
                    continue
                mean = run.groupby("rollout")["value"].mean()
                ax.plot(mean.index, mean.values, ls=style, color=f"C{i}", label=f"{name}, lag {at}")
        ax.set(xlabel="rollout batch", ylabel=what)
        ax.legend(frameon=False, fontsize=7)
    fig.suptitle(f"behaviour policy as π_old: lag {lag} (solid) against lag 0 (dotted), mean of seeds")
    return fig
