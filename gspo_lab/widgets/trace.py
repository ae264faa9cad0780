"""Notebooks 01 and 02: an off-policy trace seen through its response length L and update index k — the ratio
distributions, the prefix-length variance, the per-token gradient weights."""

from __future__ import annotations

import ipywidgets as W

from gspo_lab.analysis import OffPolicyTrace, prefix_ratio_variance, ratio_samples
from gspo_lab.gradients import token_grad_weights, weight_profile
from gspo_lab.plots import plot_grad_weights, plot_ratio_distributions, plot_variance_vs_length
from gspo_lab.widgets.panel import Panel

__all__ = ["ratio_view", "variance_view", "grad_view", "TracePanel", "RatioPanel"]


def ratio_view(trace: OffPolicyTrace, length: int, k: int):
    """(Figure, readout): ratio distributions of the length-``length`` probe after k updates."""
    probe = trace.probes[length]
    s = ratio_samples(probe, k)
    fig = plot_ratio_distributions(s, title=f"L = {length}, after k = {k} update(s)")
    text = (
        f"L={length} k={k}: std log w = {s['tok_log_ratio'].std().item():.3e}, "
        f"std log s_i = {s['seq_log_ratio'].std().item():.3e}, "
        f"std Σ log w = {s['seq_log_ratio_sum'].std().item():.3e}"
    )
    return fig, text


def variance_view(trace: OffPolicyTrace, length: int, k: int):
    """(Figure, readout): prefix-length variance of the summed and the length-normalised log-ratio."""
    table = prefix_ratio_variance(trace.probes[length], k)
    fig = plot_variance_vs_length(table, title=f"probe L = {length}, k = {k}")
    last, first = table.iloc[-1], table.iloc[min(3, len(table) - 1)]
    text = (
        f"n {int(first.n)}→{int(last.n)}: Var Σ ×{last.var_sum / first.var_sum:.2f}, "
        f"Var mean ×{last.var_mean / first.var_mean:.2f}"
    )
    return fig, text


def grad_view(trace: OffPolicyTrace, length: int, k: int):
    """(Figure, readout): normalised per-token gradient weights of GRPO and GSPO (paper ε), probe L, k updates."""
    probe = trace.probes[length]
    args = (probe.logp[k], probe.logp[0], probe.adv, probe.mask)
    weights = {name: token_grad_weights(name, *args) for name in ("grpo", "gspo")}
    fig = plot_grad_weights(weights, probe.mask, title=f"L = {length}, after k = {k} update(s)", adv=probe.adv)
    spread = {n: weight_profile(w, probe.adv, probe.mask)["within_response_std"].mean() for n, w in weights.items()}
    text = f"L={length} k={k}: within-response std of weights — GRPO {spread['grpo']:.4f}, GSPO {spread['gspo']:.4f}"
    return fig, text


class TracePanel(Panel):
    """Response length and update index k sliders over an off-policy trace; ``view`` draws (notebooks 01, 02)."""

    def __init__(self, trace: OffPolicyTrace, view=ratio_view, name: str = "ratio"):
        super().__init__(name)
        self.trace, self.view = trace, view
        lengths = sorted(trace.probes)
        self.length = W.SelectionSlider(options=lengths, value=lengths[-1], description="length L")
        self.k = W.IntSlider(value=trace.K, min=1, max=trace.K, description="update k")
        self.length.add_class(f"gspo-{name}-length")
        self.k.add_class(f"gspo-{name}-k")
        for w in (self.length, self.k):
            w.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.widget = W.VBox([W.HBox([self.length, self.k]), self.out, self.readout])
        self.redraw()

    def redraw(self) -> str:
        return self.show(self.view, self.trace, self.length.value, self.k.value)


RatioPanel = TracePanel  # notebook 01's name for it
