"""Notebook 03: what-if clip fractions per objective on its own ε scale (with a live run button), and the trust
regions of GRPO's successors as weight profiles."""

from __future__ import annotations

import ipywidgets as W

from gspo_lab.clipping import ClipRun, clip_curve, clip_runs, clip_whatif
from gspo_lab.objectives import OBJECTIVES
from gspo_lab.plots import plot_clip_whatif
from gspo_lab.widgets.panel import Panel, check_fault, eps_slider

__all__ = ["EPS_RANGES", "clip_view", "ClipPanel", "trust_region_view", "TrustRegionPanel"]

#: log10 slider ranges of ε per objective: each objective's own scale, its paper default inside
EPS_RANGES = {"grpo": (-3.0, -0.3), "gspo": (-5.0, -2.0), "gspo_token": (-5.0, -2.0)}


def clip_view(run: ClipRun, objective: str, eps_low: float, eps_high: float):
    """(Figure, readout): what-if clip fractions of ``objective`` at (ε_low, ε_high) on the run's stored ratios."""
    table = clip_whatif(run, objective, eps_low, eps_high)
    fig = plot_clip_whatif(table, objective, eps_low, eps_high, clip_curve(run, objective, eps_low, eps_high))
    off = table[table["update_in_rollout"] > 0]
    text = (
        f"{objective} ε=({eps_low:.3g}, {eps_high:.3g}): clipped tokens {off['clip/token_frac'].mean():.4f}, "
        f"sequences {off['clip/seq_frac'].mean():.4f} (updates k ≥ 1, what-if on stored ratios)"
    )
    return fig, text


class ClipPanel(Panel):
    """Per objective, an (ε_low, ε_high) log-slider pair on its own scale; a button for a short live run."""

    def __init__(self, runs: dict[str, ClipRun], objective: str, *, live_kw: dict | None = None):
        super().__init__(f"clip-{objective}")
        self.runs, self.objective, self.live_kw = runs, objective, live_kw or {}
        clip = OBJECTIVES[objective].clip
        self.eps_low = eps_slider(clip.low, EPS_RANGES.get(objective, (-5.0, -0.3)), "ε_low")
        self.eps_high = eps_slider(clip.high, EPS_RANGES.get(objective, (-5.0, -0.3)), "ε_high")
        self.eps_low.add_class(f"gspo-clip-{objective}-eps-low")
        self.eps_high.add_class(f"gspo-clip-{objective}-eps-high")
        for w in (self.eps_low, self.eps_high):
            w.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.button = W.Button(description=f"live run at these ε ({objective})", layout=W.Layout(width="280px"))
        self.button.add_class(f"gspo-clip-{objective}-run")
        self.button.on_click(lambda _b: self.live_run())
        self.progress = W.Output()
        title = W.HTML(
            f"<b>{objective}</b> — paper default ε = ({clip.low:g}, {clip.high:g}); what-if on stored ratios"
        )
        self.widget = W.VBox(
            [title, W.HBox([self.eps_low, self.eps_high]), self.out, self.readout, self.button, self.progress]
        )
        self.redraw()

    def redraw(self) -> str:
        return self.show(clip_view, self.runs[self.objective], self.objective, self.eps_low.value, self.eps_high.value)

    def live_run(self) -> None:
        """Re-train this objective at the chosen ε (a real run, with a progress bar) and show its stored ratios."""
        check_fault()
        cfg = self.runs[self.objective].cfg
        from dataclasses import replace

        cfg = replace(cfg, eps_low=self.eps_low.value, eps_high=self.eps_high.value, **self.live_kw)
        with self.progress:
            self.progress.clear_output()
            self.runs[self.objective] = clip_runs(cfg, (self.objective,), progress=True)[self.objective]
        self.redraw()


def trust_region_view(eps: float, eps_max: float, tau: float):
    """(Figure, readout): the weight profiles of notebook 03 at GRPO's band ε (both sides; dual-clip c = 3), CISPO's
    cap ε_max and SAPO's temperature τ (both signs); VESPO and GMPO at their defaults."""
    import numpy as np

    from gspo_lab.gradients import TRUST_REGIONS, trust_region_weights
    from gspo_lab.plots import plot_trust_regions

    overrides = {"grpo": dict(eps_low=eps, eps_high=eps), "grpo_dual_clip": dict(eps_low=eps, eps_high=eps),
                 "cispo": dict(eps_high=eps_max), "sapo": dict(tau_pos=tau, tau_neg=tau)}  # fmt: skip
    table = trust_region_weights(np.linspace(-2.5, 2.5, 201), TRUST_REGIONS, overrides)
    fig = plot_trust_regions(table, title=f"GRPO ε = {eps:.3g}, CISPO ε_max = {eps_max:.3g}, SAPO τ = {tau:.3g}")
    at = table[np.isclose(table["log_ratio"], 1.0)].set_index(["advantage", "objective"])["weight"]
    parts = [f"{n} {at[('Â < 0', n)]:.2f}" for n in TRUST_REGIONS]
    zeroed = table[(table["weight"] == 0) & (table["advantage"] == "Â > 0")]["objective"].unique()
    text = (f"weight of a token at w = e ≈ 2.72 with Â < 0: {', '.join(parts)}; zero for some w with Â > 0 "
            f"(a hard clip): {', '.join(zeroed) or 'none'}")  # fmt: skip
    return fig, text


class TrustRegionPanel(Panel):
    """GRPO's ε, CISPO's ε_max and SAPO's τ as sliders over the weight profiles (notebook 03, section 5)."""

    def __init__(self, eps: float = 0.2, eps_max: float = 5.0, tau: float = 1.0):
        super().__init__("trust")
        self.eps = W.FloatSlider(value=eps, min=0.05, max=0.8, step=0.05, description="GRPO ε")
        self.eps_max = W.FloatSlider(value=eps_max, min=1.5, max=10.0, step=0.5, description="CISPO ε_max")
        self.tau = W.FloatLogSlider(value=tau, base=10, min=-0.6, max=0.6, step=0.05, description="SAPO τ")
        for w, name in ((self.eps, "eps"), (self.eps_max, "eps-max"), (self.tau, "tau")):
            w.add_class(f"gspo-trust-{name}")
            w.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.widget = W.VBox([W.HBox([self.eps, self.eps_max, self.tau]), self.out, self.readout])
        self.redraw()

    def redraw(self) -> str:
        return self.show(trust_region_view, self.eps.value, self.eps_max.value, self.tau.value)
