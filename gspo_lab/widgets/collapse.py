"""Notebook 04: the live GRPO / GSPO pair (grad-norm clip and Routing Replay toggles, a run button; both runs train
side by side and the plot follows them), and any stored arm's seeds."""

from __future__ import annotations

import math
import time

import ipywidgets as W

from gspo_lab.widgets.panel import Panel, check_fault

__all__ = ["live_view", "LivePanel", "ARM_METRICS", "arm_view", "ArmPanel"]


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


class LivePanel(Panel):
    """Notebook 04's live collapse run: grad-norm clipping and Routing Replay toggles, a button that trains (or
    resumes) GRPO and GSPO from ``cfgs`` with the toggles applied, side by side in two worker processes
    (:func:`gspo_lab.live.live_runs`, whose run folders are read back every ``poll_s`` seconds); ``initial`` (the
    runs ``live_runs`` returned for ``cfgs``) is drawn before any click.

    The plot is redrawn when a run has done ``every`` more RL steps, but only once the time since the last redraw
    is at least ``(1 / draw_share - 1)`` times what that redraw took: a redraw of the 80-rollout plot (six panels,
    rendered to PNG) costs this process ~1 s and more under load, on the cores the two runs train on, so drawing
    gets at most about ``draw_share`` of one core however loaded the machine is."""

    def __init__(
        self,
        cfgs: dict,
        root,
        *,
        every: int = 2,
        poll_s: float = 2.0,
        draw_share: float = 0.1,
        initial: dict | None = None,
    ):
        super().__init__("live")
        self.cfgs, self.root, self.every, self.runs = cfgs, root, every, dict(initial or {})
        self.poll_s, self.draw_share = poll_s, draw_share
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

        check_fault()
        cfgs = self.configs()
        self.runs, drawn, next_draw = {}, {}, [0.0]

        def redraw(name, run):  # each run's newest saved state, every run in turn each time one advanced
            self.runs[name] = run
            steps = {n: len(r.per_rollout) // self.every for n, r in self.runs.items()}
            every_run = name == list(cfgs)[-1] and len(self.runs) == len(cfgs)  # each run's newest state is in
            if every_run and steps != drawn and time.monotonic() >= next_draw[0]:
                drawn.clear()
                drawn.update(steps)
                start = time.monotonic()
                self.show(live_view, dict(self.runs))
                next_draw[0] = time.monotonic() + (time.monotonic() - start) * (1 / self.draw_share - 1)

        self.button.disabled, self.status.value = True, "running…"
        try:
            with self.progress:
                self.progress.clear_output()
                self.runs = live_runs(cfgs, self.root, on_step=redraw, poll_s=self.poll_s)
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


class ArmPanel(Panel):
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
