"""What the page build records of what it printed: the referee lint's structured input beside the page text
(:mod:`gspo_lab.findings.lint`). The build does not collect these yet (issue 35); a lint rule that reads only facts
finds nothing without them.

Bounds are the declared ranges of :mod:`gspo_lab.experiments.endpoint_range` (``ACCURACY``, ``DIFFERENCE``,
``RATIO``); ``where`` is the build's own label for a place on the page ("2f table, MoE GRPO off, late accuracy").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["PrintedInterval", "PrintedCount", "SummaryReads", "Facts"]


@dataclass(frozen=True)
class PrintedInterval:
    """An interval the build printed: its mean and bracket, its endpoint's declared range, the per-seed values it
    summarises, the null value its sign is read against (1 for a ratio), and the verdict words printed beside it."""

    page: str
    where: str
    value: float
    lo: float
    hi: float
    bounds: tuple[float, float] = (-math.inf, math.inf)
    per_seed: tuple[float, ...] = ()
    null: float = 0.0
    label: str = ""


@dataclass(frozen=True)
class PrintedCount:
    """A collapse count the build printed: k of n, the endpoint that produced it ("v1", "v2"), and whether its printed
    text names that endpoint (a labelled side-by-side is no problem)."""

    page: str
    where: str
    k: int
    n: int
    endpoint: str
    labelled: bool = False


@dataclass(frozen=True)
class SummaryReads:
    """A summary (At a glance row, Together, story, recipe, a notebook's takeaway) and the rules whose verdicts it
    reads, directly or through a rule that combines them (f10.account reads f10.two_by_two)."""

    page: str
    where: str
    rules: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    """What the page build records of what it printed; the lint's structured input beside the text."""

    intervals: tuple[PrintedInterval, ...] = ()
    counts: tuple[PrintedCount, ...] = ()
    summaries: tuple[SummaryReads, ...] = ()
    rules_read: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # page -> every rule read on it
    endpoint: str = "v2"  # the collapse endpoint the pages declare
