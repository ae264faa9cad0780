"""The range every endpoint the page gives an interval for can take, declared once (stats version 4, issue 35).

The page's interval (transformed t, gspo_lab/experiments/endpoint_range.py) works on an endpoint's declared range, so
it never leaves it; :func:`gspo_record.fmt.summary` and :func:`~gspo_record.fmt.diff_cell` look an
endpoint's range up here by its column name (the name of the per-seed Series they are handed; a paired difference
from :func:`gspo_lab.experiments.stats.paired_diff` carries its metric's name). An endpoint not declared here is
refused with a :class:`KeyError` naming it: a new endpoint declares its range before it is printed.

Each range was checked against every stored value the page reads (``check_bounds`` refuses a value outside it).
"""

from __future__ import annotations

import math

from gspo_lab.experiments.endpoint_range import ACCURACY, RATIO, UNBOUNDED

__all__ = ["ENDPOINT_BOUNDS", "bounds_of", "difference_bounds", "RATIO_MINUS_ONE"]

ENDPOINT_BOUNDS: dict[str, tuple[float, float]] = {
    # accuracies and fractions of tokens or responses (rewards are 0/1, so a reward AUC is a fraction too)
    "late_acc": ACCURACY,
    "eval_final": ACCURACY,
    "reward_auc": ACCURACY,
    "pre_acc": ACCURACY,
    "clip_token_frac": ACCURACY,
    "clip_seq_frac": ACCURACY,
    # positive ratios: paired_ratio's per-seed ratio (clipped tokens GSPO ÷ GRPO), finding 6's noise ratio
    "ratio": RATIO,
    "noise_ratio_kK": RATIO,
    # declared unbounded (no range read on them; transformed t is then plain Student-t): a change of KL k1 between
    # two routers (f3), the mean |log-ratio| under bf16 and fp32 (f5's probe)
    "change_k1": UNBOUNDED,
    "bf16_seq_mean": UNBOUNDED,
    "fp32_seq_mean": UNBOUNDED,
    # the ε GSPO's band would need (f5's probe): positive, so its interval is read on the log scale (issue 48: a plain
    # t interval printed 0.019 [-0.00116, 0.0392] for it, below the 0 it cannot reach)
    "bf16_gspo_eps_needed_p99": RATIO,
}
"""Endpoint column -> its declared range (lo, hi), closed; ±inf for an open side."""

RATIO_MINUS_ONE = (-1.0, math.inf)
"""A positive ratio minus 1 (what a sign against 1 reads against 0): its log scale is the ratio's."""


def bounds_of(name) -> tuple[float, float]:
    """The declared range of endpoint ``name`` (:data:`ENDPOINT_BOUNDS`); KeyError naming it if none is declared."""
    if name not in ENDPOINT_BOUNDS:
        raise KeyError(f"endpoint {name!r} has no declared range: add it to gspo_record/endpoints.py's "
                       f"ENDPOINT_BOUNDS, or pass bounds= where it is printed")  # fmt: skip
    return ENDPOINT_BOUNDS[name]


def difference_bounds(bounds) -> tuple[float, float]:
    """The range of a paired difference of two values in ``bounds``: (lo − hi, hi − lo); (−1, 1) for accuracies,
    unbounded for an open side."""
    lo, hi = (float(b) for b in bounds)
    width = hi - lo
    return (-width, width)
