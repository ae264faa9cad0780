"""Notebook 05: the sampler's precision and temperature against the fp32 training forward."""

from __future__ import annotations

import ipywidgets as W

from gspo_lab.objectives import OBJECTIVES
from gspo_lab.widgets.panel import Panel

__all__ = ["precision_view", "PrecisionPanel"]


def precision_view(cfg, precision: str, temperature: float, _cache: dict | None = None):
    """(Figure, readout): the sampler at ``precision`` ("fp32" / "bf16") and ``temperature`` against the fp32 training
    forward on one rollout batch of ``cfg`` — |Δ| per token and per sequence, the clip fractions before any update."""
    from dataclasses import replace

    from gspo_lab.plots import plot_mismatch
    from gspo_lab.precision import first_update_clip, mismatch_samples, mismatch_stats, sampler_mismatch

    key = (precision, round(float(temperature), 6))
    if _cache is None or key not in _cache:
        m = sampler_mismatch(replace(cfg, temperature=float(temperature)), precision)
        value = (mismatch_samples(m), mismatch_stats(m), first_update_clip(m))
        if _cache is not None:
            _cache[key] = value
    samples, stats, clip = _cache[key] if _cache is not None else value
    bands = {"token": OBJECTIVES["grpo"].clip.high, "sequence": OBJECTIVES["gspo"].clip.high}  # edges at log(1 + ε)
    fig = plot_mismatch({f"{precision} sampler, τ = {temperature:g}": samples}, bands, title=cfg.checkpoint)
    text = (
        f"{precision} τ={temperature:g}: |Δ| per token mean {stats['tok_mean']:.2e}, p99 {stats['tok_p99']:.2e}; "
        f"per sequence mean {stats['seq_mean']:.2e}, p99 {stats['seq_p99']:.2e}; outside GSPO's band "
        f"{stats['seq_outside_gspo']:.2f} of responses; clipped before any update: GSPO "
        f"{clip['gspo']['clip/token_frac']:.3f}, GRPO {clip['grpo']['clip/token_frac']:.4f} of tokens"
    )
    return fig, text


class PrecisionPanel(Panel):
    """The sampler's precision (fp32 / bf16) and temperature; each setting scored once, then cached (notebook 05)."""

    def __init__(self, cfg, *, temperatures: tuple[float, float, float] = (0.5, 1.5, 0.1)):
        super().__init__("precision")
        self.cfg, self.cache = cfg, {}
        self.precision = W.ToggleButtons(options=["fp32", "bf16"], value="bf16", description="sampler")
        lo, hi, step = temperatures
        self.temperature = W.FloatSlider(
            value=cfg.temperature,
            min=lo,
            max=hi,
            step=step,
            description="τ",
            readout_format=".1f",
            layout=W.Layout(width="420px"),
        )
        self.precision.add_class("gspo-precision-sampler")
        self.temperature.add_class("gspo-precision-temperature")
        for w in (self.precision, self.temperature):
            w.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.widget = W.VBox([W.HBox([self.precision, self.temperature]), self.out, self.readout])
        self.redraw()

    def redraw(self) -> str:
        return self.show(precision_view, self.cfg, self.precision.value, self.temperature.value, self.cache)
