"""Notebook 06: GSPO's successors as one design space on one real rollout batch (:mod:`gspo_lab.design`).

:func:`design_view` is the twin of :class:`DesignPanel`: selection sliders for the combination, the bound and the
bound's ε (or τ, cap, shape), a dropdown for the aggregation, a dual-clip toggle and a preset menu that sets them all.
Every control's value is a label of :data:`PARAMS` (or of the axes), so the twin rebuilds the point from what the
controls show. The batch's ratios are computed once (:func:`design_batch`); a move recomputes the objective's token
weights by autograd (milliseconds) and, once per point, the minibatch gradient's relative variance (cached).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ipywidgets as W
import numpy as np
from torch import Tensor

from gspo_lab.design import AGGREGATIONS, BOUNDS, COMBINATIONS, PRESETS, Design, readout, token_weights
from gspo_lab.objectives import CISPO_CAP, DUAL_CLIP_C, SAPO_TAU, VESPO_SHAPE
from gspo_lab.objectives.core import GRPO_BAND
from gspo_lab.widgets.panel import Panel

__all__ = ["PARAMS", "DesignBatch", "design_batch", "design_from", "controls_of", "design_view", "DesignPanel"]


def _eps(low: float, high: float) -> dict:
    return {"eps_low": low, "eps_high": high}


_BAND = [
    ("3e-4/4e-4", _eps(3e-4, 4e-4)),
    ("2e-3/2.5e-3", _eps(2e-3, 2.5e-3)),
    ("0.01/0.0135", _eps(0.01, 0.0135)),
    ("0.05/0.0675", _eps(0.05, 0.0675)),
    ("0.2/0.27", _eps(0.2, 0.27)),
    ("0.5/0.675", _eps(0.5, 0.675)),
]
#: per bound, its parameter's grid: (label the slider shows, Design fields); the presets' values are on it
PARAMS: dict[str, list[tuple[str, dict]]] = {
    "clip": _BAND,
    "clip first": [(f"{x:g}/{x:g}", _eps(x, x)) for x in (0.1, 0.2, 0.4, 0.8)],
    "mask": _BAND,
    "cap": [("[0, 2]", {"cap_low": 0.0, "cap_high": 2.0}), ("[0, 5]", {"cap_low": 0.0, "cap_high": CISPO_CAP.high}),
            ("[0, 10]", {"cap_low": 0.0, "cap_high": 10.0}), ("[0.8, 1.2]", {"cap_low": 0.8, "cap_high": 1.2}),
            ("[0.5, 1.5]", {"cap_low": 0.5, "cap_high": 1.5})],
    "gate": [("τ 0.25", {"tau": (0.25, 0.25)}), ("τ 0.5", {"tau": (0.5, 0.5)}), ("τ 1/1.05", {"tau": SAPO_TAU}),
             ("τ 2", {"tau": (2.0, 2.0)}), ("τ 4", {"tau": (4.0, 4.0)})],
    "gamma": [("k 2/3, λ 3/2", {"shape": VESPO_SHAPE}), ("k 1/1, λ 1/1", {"shape": (1.0, 1.0, 1.0, 1.0)})],
    "none": [("—", {})],
}  # fmt: skip
#: the parameter a bound opens on (the library's default for it)
DEFAULT = {"clip": "0.2/0.27", "clip first": "0.4/0.4", "mask": "0.2/0.27", "cap": "[0, 5]", "gate": "τ 1/1.05",
           "gamma": "k 2/3, λ 3/2", "none": "—"}  # fmt: skip


def design_from(combine: str, bound: str, param: str, aggregation: str, floor: bool) -> Design:
    """The design point the controls show (labels as :data:`PARAMS` writes them); a clear error on a wrong one."""
    if bound not in PARAMS:
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}")
    fields = dict(PARAMS[bound])
    if param not in fields:
        raise ValueError(f"param for bound {bound!r} must be one of {list(fields)}, got {param!r}")
    return Design(combine, bound, **fields[param], aggregation=aggregation,
                  floor_c=DUAL_CLIP_C if floor and bound == "clip" else None)  # fmt: skip


def controls_of(preset: str) -> tuple[str, str, str, str, bool]:
    """(combine, bound, param, aggregation, floor): the control values that draw ``preset`` (a :data:`PRESETS`
    key); each preset's point is on the grid (tests/test_design.py)."""
    d = PRESETS[preset].design
    param = next(label for label, f in PARAMS[d.bound] if design_from(d.combine, d.bound, label, d.aggregation,
                                                                      d.floor_c is not None) == d)  # fmt: skip
    return d.combine, d.bound, param, d.aggregation, d.floor_c is not None


@dataclass
class DesignBatch:
    """One rollout batch scored before (``old_logp``) and after ``k`` off-policy updates (``logp``), and what the
    panel needs from the trace for the gradient variance (None: not measured)."""

    logp: Tensor
    old_logp: Tensor
    adv: Tensor
    mask: Tensor
    k: int
    trace: object = None
    draws: int = 8
    minibatch: int = 32
    seed: int = 0
    cache: dict = field(default_factory=dict)

    def variance(self, design: Design) -> float | None:
        """The minibatch gradient's relative variance at θ_k (notebook 02's measure), once per point."""
        if self.trace is None:
            return None
        if design not in self.cache:
            from gspo_lab.gradients import gradient_variance

            table = gradient_variance(self.trace, (self.k,), {"point": design}, draws=self.draws,
                                      minibatch=self.minibatch, seed=self.seed)  # fmt: skip
            self.cache[design] = float(table["rel_variance"].iloc[0])
        return self.cache[design]

    def presets(self) -> dict[str, dict]:
        """Every preset's :func:`~gspo_lab.design.readout` on this batch (computed once)."""
        if "presets" not in self.cache:
            self.cache["presets"] = {n: readout(p.design, *self._tensors()) for n, p in PRESETS.items()}
        return self.cache["presets"]

    def _tensors(self):
        return self.logp, self.old_logp, self.adv, self.mask


def design_batch(trace, k: int | None = None, *, variance: bool = True, draws: int = 8, minibatch: int = 32,
                 seed: int = 0) -> DesignBatch:  # fmt: skip
    """The training batch of an :class:`~gspo_lab.analysis.OffPolicyTrace` after ``k`` updates (default: all K)."""
    k = trace.K if k is None else k
    if not 0 < k <= trace.K:
        raise ValueError(f"k must be an update of the trace, 1..{trace.K}, got {k!r}")
    p = trace.train
    return DesignBatch(p.logp[k], p.logp[0], p.adv, p.mask, k, trace if variance else None, draws, minibatch, seed)


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def design_view(batch: DesignBatch, combine: str, bound: str, param: str, aggregation: str, floor: bool):
    """(Figure, readout) at the point the controls show: left each token's gradient weight against its log-ratio
    (one dot per token with Â ≠ 0), right every preset's share of out-of-band tokens that keep a gradient and its
    clipped share of tokens, this point on top."""
    from gspo_lab.plots import fig_row

    d = design_from(combine, bound, param, aggregation, floor)
    weights, defined = token_weights(d, *batch._tensors())
    log_w = (batch.logp - batch.old_logp).double()
    r = readout(d, *batch._tensors())
    same = [n for n, p in PRESETS.items() if p.design == d]
    fig, (left, right) = fig_row(2, width=5.0, height=3.6)
    sign = batch.adv.double()[:, None].expand_as(log_w)
    top = 3.0
    for sel, colour, name in ((sign > 0, "#1f77b4", "Â > 0"), (sign < 0, "#d62728", "Â < 0")):
        m = defined & sel
        x, y = log_w[m].numpy(), weights[m].numpy()
        left.scatter(x, np.clip(y, -0.2, top), s=6, alpha=0.45, color=colour, label=name, linewidths=0)
    for edge in (np.log(1 - GRPO_BAND[0]), np.log(1 + GRPO_BAND[1])):
        left.axvline(edge, color="grey", lw=0.8, ls="--")
    left.axhline(1.0, color="grey", lw=0.6, ls=":")
    over = int((defined & (weights > top)).sum())
    left.set(xlabel="log w of the token (dashed: GRPO's band)", ylabel="gradient weight (1 = on-policy)",
             ylim=(-0.25, top + 0.2))  # fmt: skip
    left.set_title(f"{combine} × {bound} {param}" + (f" ({over} tokens above {top:g}, drawn at the top)" * bool(over)),
                   fontsize=9)  # fmt: skip
    left.legend(fontsize=8, loc="upper left")
    rows = {"this point": r, **batch.presets()}
    names = list(rows)[::-1]
    ys = np.arange(len(names))
    kept = [rows[n]["kept"] if rows[n]["kept"] is not None else np.nan for n in names]
    clipped = [rows[n]["clip_token_frac"] for n in names]
    right.scatter(kept, ys, color="#2ca02c", s=30, label="out-of-band tokens that keep a gradient")
    right.scatter(clipped, ys, color="#7f7f7f", marker="x", s=30, label="tokens clipped")
    right.set_yticks(ys, names, fontsize=8)
    right.set(xlim=(-0.05, 1.05), xlabel="share")
    right.axhline(len(names) - 1.5, color="grey", lw=0.6)
    right.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    variance = batch.variance(d)
    kept_text = "no token outside" if r["kept"] is None else f"{r['kept']:.3f} keep a gradient"
    text = (f"{combine} × {bound} ({param}), {aggregation}{', dual-clip c = 3' if d.floor_c else ''}"
            f"{' = ' + ', '.join(same) if same else ''}: of {r['outside']} of {r['tokens']} tokens outside GRPO's "
            f"band, {kept_text}; clipped: {r['clip_token_frac']:.3f} of tokens, {r['clip_seq_frac']:.3f} of "
            f"responses; minibatch gradient relative variance {_fmt(variance)}")  # fmt: skip
    return fig, text


class DesignPanel(Panel):
    """Selection sliders over the design space (combination, bound, its parameter), the aggregation, dual-clip's
    floor and a preset menu, over one batch (:func:`design_batch`)."""

    def __init__(self, batch: DesignBatch, preset: str = "GSPO"):
        super().__init__("design")
        self.batch, self._hold = batch, False
        combine, bound, param, aggregation, floor = controls_of(preset)
        self.preset = W.Dropdown(options=list(PRESETS), value=preset, description="preset")
        self.combine = W.SelectionSlider(options=COMBINATIONS, value=combine, description="combine")
        self.bound = W.SelectionSlider(options=BOUNDS, value=bound, description="bound")
        self.param = W.SelectionSlider(options=[p for p, _ in PARAMS[bound]], value=param, description="ε / τ / cap")
        self.aggregation = W.Dropdown(options=list(AGGREGATIONS), value=aggregation, description="aggregate")
        self.floor = W.Checkbox(value=floor, description="dual-clip floor c = 3 (clip only)")
        for w, name in ((self.preset, "preset"), (self.combine, "combine"), (self.bound, "bound"),
                        (self.param, "param"), (self.aggregation, "aggregation"), (self.floor, "floor")):  # fmt: skip
            w.add_class(f"gspo-design-{name}")
        for w in (self.combine, self.bound, self.param):
            w.layout = W.Layout(width="420px")
        self.preset.observe(self._on_preset, names="value")
        self.bound.observe(self._on_bound, names="value")
        for w in (self.combine, self.param, self.aggregation, self.floor):
            w.observe(lambda change: self._hold or (self.moved(change) and self.redraw()), names="value")
        self.widget = W.VBox([W.HBox([self.preset, self.aggregation, self.floor]),
                              W.HBox([self.combine, self.bound]), self.param, self.out, self.readout])  # fmt: skip
        self.redraw()

    def values(self) -> tuple[str, str, str, str, bool]:
        return self.combine.value, self.bound.value, self.param.value, self.aggregation.value, self.floor.value

    def _set(self, combine, bound, param, aggregation, floor) -> None:
        self._hold = True
        try:
            self.combine.value, self.bound.value = combine, bound
            self.param.options = [p for p, _ in PARAMS[bound]]
            self.param.value, self.aggregation.value, self.floor.value = param, aggregation, floor
        finally:
            self._hold = False

    def _on_preset(self, change) -> None:
        if not self._hold and self.moved(change):
            self._set(*controls_of(change["new"]))
            self.redraw()

    def _on_bound(self, change) -> None:
        if not self._hold and self.moved(change):
            c, _, _, a, f = self.values()
            self._set(c, change["new"], DEFAULT[change["new"]], a, f)
            self.redraw()

    def redraw(self) -> str:
        return self.show(design_view, self.batch, *self.values())
