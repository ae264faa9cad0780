"""Widgets: views only, one module per notebook group. Each panel's callback calls one plain-function *twin*
(analysis + plot, returns a Figure and a text readout) that the notebook also calls directly, so papermill tests
exactly what the slider drives.

    panel.py       the base: Panel (an Output for the figure, an HTML readout, redrawn plot first), the ε slider,
                   fault injection for the browser tests (GSPO_LAB_FAULT=widget-callback)
    trace.py       01, 02: ratio_view, variance_view, grad_view -> TracePanel (RatioPanel)
    clip.py        03: clip_view -> ClipPanel, trust_region_view -> TrustRegionPanel
    collapse.py    04: live_view -> LivePanel (the live pair, trained side by side), arm_view -> ArmPanel
    precision.py   05: precision_view -> PrecisionPanel
    design.py      06: design_view -> DesignPanel (the successors' design space, gspo_lab.design)

The notebooks import every name from ``gspo_lab.widgets``; notebook 05's panel over the stored stale-rollout runs
(finding 12) reads the research record and lives there: ``gspo_record.f12.widget`` (lag_view -> LagPanel).
"""

from __future__ import annotations

from gspo_lab.widgets.clip import EPS_RANGES, ClipPanel, TrustRegionPanel, clip_view, trust_region_view
from gspo_lab.widgets.collapse import ARM_METRICS, ArmPanel, LivePanel, arm_view, live_view
from gspo_lab.widgets.design import DesignPanel, controls_of, design_batch, design_view
from gspo_lab.widgets.precision import PrecisionPanel, precision_view
from gspo_lab.widgets.trace import RatioPanel, TracePanel, grad_view, ratio_view, variance_view

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
    "design_view",
    "design_batch",
    "controls_of",
    "DesignPanel",
]
