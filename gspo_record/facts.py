"""What the page build records of what it printed: the referee lint's structured input beside the page text
(:mod:`gspo_record.lint`). A section records what it prints with :func:`record` while the page's own pass runs
(:func:`collecting`, opened by :func:`gspo_record.page.compute`); a record made under a robustness reading (a
seed left out, another endpoint) or outside a collection is dropped. A lint rule that reads only facts finds nothing
without them.

Bounds are the declared ranges of :mod:`gspo_lab.experiments.endpoint_range` (``ACCURACY``, ``DIFFERENCE``,
``RATIO``); ``where`` is the build's own label for a place on the page ("2f table, MoE GRPO off, late accuracy").
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["PrintedInterval", "PrintedCount", "SummaryReads", "Facts", "record", "collecting"]


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


_SINK: list[list] = []  # the open collections, innermost last


def record(item: PrintedInterval | PrintedCount | SummaryReads) -> None:
    """Record ``item`` in the open collection, if any, unless a robustness reading is on (its numbers are not the
    page's). A later record at the same (page, where) replaces an earlier one (a section run twice prints once)."""
    import gspo_lab.experiments.reading as reading

    if _SINK and not reading.in_inner() and reading.left_out() is None and reading.endpoint() == "late":
        _SINK[-1].append(item)


@contextmanager
def collecting(endpoint: str = "v2") -> Iterator[list[Facts]]:
    """Collect what the sections :func:`record` inside the block; the yielded list holds the :class:`Facts` on exit
    (``endpoint``: the collapse endpoint the pages declare)."""
    items: list = []
    out: list[Facts] = []
    _SINK.append(items)
    try:
        yield out
    finally:
        _SINK.remove(items)
        last = {(type(x).__name__, x.page, x.where): x for x in items}
        kept = list(last.values())
        out.append(
            Facts(
                intervals=tuple(x for x in kept if isinstance(x, PrintedInterval)),
                counts=tuple(x for x in kept if isinstance(x, PrintedCount)),
                summaries=tuple(x for x in kept if isinstance(x, SummaryReads)),
                endpoint=endpoint,
            )
        )
