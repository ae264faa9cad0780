"""Widgets: views only. Each panel's callback calls one plain-function *twin* (analysis + plot, returns a Figure and
a text readout) that the notebook also calls directly, so papermill tests exactly what the slider drives.

Redraw order: the plot first, the text readout last — "the readout changed" implies "the plot changed" (a browser
test waits on the text). Every widget gets a stable CSS class (``gspo-…``) for those tests.
Fault injection for the browser tests: ``GSPO_LAB_FAULT=widget-callback`` makes every callback raise.
"""

from __future__ import annotations

import math
import os

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import display

from gspo_lab.analysis import OffPolicyTrace, prefix_ratio_variance, ratio_samples
from gspo_lab.clipping import ClipRun, clip_curve, clip_runs, clip_whatif
from gspo_lab.gradients import token_grad_weights, weight_profile
from gspo_lab.objectives import OBJECTIVES
from gspo_lab.plots import plot_clip_whatif, plot_grad_weights, plot_ratio_distributions, plot_variance_vs_length

__all__ = [
    "ratio_view",
    "variance_view",
    "grad_view",
    "clip_view",
    "TracePanel",
    "RatioPanel",
    "ClipPanel",
    "precision_view",
    "PrecisionPanel",
    "live_view",
    "LivePanel",
    "arm_view",
    "ArmPanel",
    "ARM_METRICS",
    "EPS_RANGES",
    "trust_region_view",
    "TrustRegionPanel",
]

#: log10 slider ranges of ε per objective: each objective's own scale, its paper default inside
EPS_RANGES = {"grpo": (-3.0, -0.3), "gspo": (-5.0, -2.0), "gspo_token": (-5.0, -2.0)}


def _check_fault() -> None:
    if os.environ.get("GSPO_LAB_FAULT") == "widget-callback":
        raise RuntimeError("fault injected by GSPO_LAB_FAULT=widget-callback")


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


def _eps_slider(default: float, exponent_range: tuple[float, float], description: str, step: float = 0.05):
    """A log slider whose grid passes through ``default`` exactly: the slider snaps to its grid when it renders,
    and a grid from ``min`` alone would move the paper's 3e-4 to 10^-3.5 = 3.16e-4."""
    lo, hi = exponent_range
    centre = math.log10(default)
    below, above = math.floor((centre - lo) / step + 1e-9), math.floor((hi - centre) / step + 1e-9)
    return W.FloatLogSlider(
        value=default,
        base=10,
        min=centre - below * step,
        max=centre + above * step,
        step=step,
        description=description,
        readout_format=".3g",
        layout=W.Layout(width="460px"),
    )


class _Panel:
    """An Output for the figure and an HTML readout, redrawn by :meth:`show`."""

    def __init__(self, name: str):
        self.out = W.Output()
        self.out.add_class(f"gspo-{name}-plot")
        self.readout = W.HTML()
        self.readout.add_class(f"gspo-{name}-readout")

    @staticmethod
    def moved(change) -> bool:
        """Whether a slider change is a move: the browser echoes a float back at render with a last-digit
        rounding difference (Math.pow vs Python's 10**x), which must not redraw the panel."""
        old, new = change.get("old"), change.get("new")
        if isinstance(old, float) and isinstance(new, float):
            return not math.isclose(old, new, rel_tol=1e-9, abs_tol=0.0)
        return old != new

    def show(self, view, *args) -> str:
        _check_fault()
        fig, text = view(*args)
        with self.out:
            self.out.clear_output(wait=True)
            display(fig)
        plt.close(fig)
        self.readout.value = text  # last: the text changing implies the plot changed
        return text


class TracePanel(_Panel):
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


class ClipPanel(_Panel):
    """Per objective, an (ε_low, ε_high) log-slider pair on its own scale; a button for a short live run."""

    def __init__(self, runs: dict[str, ClipRun], objective: str, *, live_kw: dict | None = None):
        super().__init__(f"clip-{objective}")
        self.runs, self.objective, self.live_kw = runs, objective, live_kw or {}
        clip = OBJECTIVES[objective].clip
        self.eps_low = _eps_slider(clip.low, EPS_RANGES.get(objective, (-5.0, -0.3)), "ε_low")
        self.eps_high = _eps_slider(clip.high, EPS_RANGES.get(objective, (-5.0, -0.3)), "ε_high")
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
        _check_fault()
        cfg = self.runs[self.objective].cfg
        from dataclasses import replace

        cfg = replace(cfg, eps_low=self.eps_low.value, eps_high=self.eps_high.value, **self.live_kw)
        with self.progress:
            self.progress.clear_output()
            self.runs[self.objective] = clip_runs(cfg, (self.objective,), progress=True)[self.objective]
        self.redraw()


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


class PrecisionPanel(_Panel):
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


class TrustRegionPanel(_Panel):
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


def live_view(runs: dict):
    """(Figure, readout): notebook 04's live runs (``{name: LiveRun}``) drawn, and per run its progress."""
    from gspo_lab.plots import plot_live

    fig = plot_live(runs)
    parts = []
    for name, run in runs.items():
        acc = run.evals["eval/accuracy_sampled"] if len(run.evals) else []
        norm = run.per_rollout["grad/norm:max"].max() if "grad/norm:max" in run.per_rollout else math.nan
        parts.append(
            f"{name}: {len(run.per_rollout)} rollouts, held-out acc. "
            + (f"{acc.iloc[0]:.2f} → {acc.iloc[-1]:.2f} (lowest {acc.min():.2f})" if len(acc) else "—")
            + f", largest grad norm {norm:.3g}"
        )
    return fig, "; ".join(parts)


class LivePanel(_Panel):
    """Notebook 04's live collapse run: grad-norm clipping and Routing Replay toggles, a button that trains (or
    resumes) GRPO and GSPO from ``cfgs`` with the toggles applied, the plot redrawn after every few RL steps;
    ``initial`` (the runs :func:`gspo_lab.live.live_runs` returned for ``cfgs``) is drawn before any click."""

    def __init__(self, cfgs: dict, root, *, every: int = 2, initial: dict | None = None):
        super().__init__("live")
        self.cfgs, self.root, self.every, self.runs = cfgs, root, every, dict(initial or {})
        self.clip = W.Checkbox(value=False, description="grad-norm clip 1.0")
        self.replay = W.Checkbox(value=False, description="Routing Replay (GRPO)")
        self.button = W.Button(description="run / resume", layout=W.Layout(width="200px"))
        for w, name in ((self.clip, "clip"), (self.replay, "replay"), (self.button, "run")):
            w.add_class(f"gspo-live-{name}")
        self.button.on_click(lambda _b: self.run())
        self.finished = 0  # completed button runs; the status line says so, a test waits on it
        self.status = W.HTML("")
        self.status.add_class("gspo-live-status")
        self.progress = W.Output()
        self.widget = W.VBox(
            [W.HBox([self.clip, self.replay, self.button, self.status]), self.progress, self.out, self.readout]
        )
        if self.runs:
            self.show(live_view, self.runs)

    def configs(self) -> dict:
        from dataclasses import replace

        out = {}
        for name, cfg in self.cfgs.items():
            replay = self.replay.value and cfg.objective.startswith("grpo") and cfg.checkpoint != "dense-sort"
            out[name + (" + R2" if replay else "")] = replace(
                cfg, grad_clip=1.0 if self.clip.value else None, routing_replay=replay
            )
        return out

    def run(self) -> dict:
        from gspo_lab.live import live_runs

        _check_fault()
        self.runs = {}

        def redraw(name, run):
            self.runs[name] = run
            if len(run.per_rollout) % self.every == 0:
                self.show(live_view, dict(self.runs))

        self.button.disabled, self.status.value = True, "running…"
        try:
            with self.progress:
                self.progress.clear_output()
                self.runs = live_runs(self.configs(), self.root, on_step=redraw)
            self.show(live_view, self.runs)
        finally:
            self.finished += 1
            self.button.disabled = False
            self.status.value = f"finished run {self.finished}"  # after the readout: "finished" implies it is final
        return self.runs


#: the stored per-rollout metrics the arm selector offers (eval/…: the held-out evaluations)
ARM_METRICS = (
    "eval/accuracy_sampled",
    "reward/mean:mean",
    "clip/token_frac:mean",
    "grad/norm:max",
    "response/truncated_frac:mean",
    "adv/zero_std_frac:mean",
    "moe/expert_change:mean",
)


def arm_view(arm: dict, metric: str):
    """(Figure, readout): every stored seed of one arm (:func:`gspo_lab.experiments.read.stored_arms`) for one
    metric, a thin line per seed and the mean bold."""
    from gspo_lab.experiments.read import stored_curves
    from gspo_lab.experiments.spec import spec_named
    from gspo_lab.plots import plot_seed_curves

    data = stored_curves(arm["spec"], metric, **arm["where"])
    if "objective" not in data:
        data = data.assign(objective=spec_named(arm["spec"]).base["objective"])
    fig = plot_seed_curves(data, ylabel=metric, title=arm["label"], log=metric in ("grad/norm:max",))
    last = data[data["rollout"] == data["rollout"].max()]["value"]
    text = (
        f"{arm['label']} — {metric}: last value over seeds {last.min():.3g}–{last.max():.3g} (mean {last.mean():.3g})"
    )
    return fig, text


class ArmPanel(_Panel):
    """Notebook 04's selector: any stored arm and metric, all its seeds (the twin is :func:`arm_view`)."""

    def __init__(self, arms: list[dict], metric: str = "eval/accuracy_sampled"):
        super().__init__("arm")
        self.arms = {a["label"]: a for a in arms}
        self.arm = W.Dropdown(options=list(self.arms), description="arm", layout=W.Layout(width="900px"))
        self.metric = W.Dropdown(options=list(ARM_METRICS), value=metric, description="metric")
        self.arm.add_class("gspo-arm-arm")
        self.metric.add_class("gspo-arm-metric")
        for w in (self.arm, self.metric):
            w.observe(lambda change: self.moved(change) and self.redraw(), names="value")
        self.widget = W.VBox([self.arm, self.metric, self.out, self.readout])
        self.redraw()

    def redraw(self) -> str:
        return self.show(arm_view, self.arms[self.arm.value], self.metric.value)
