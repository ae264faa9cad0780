"""A declared prediction and its result (issue 48, item 6): the pieces every finding's scored predictions share.

:class:`Prediction` names its spec, quotes the prediction word for word and scores it on the build's context;
:func:`result_of` turns how many of its parts held into one of :data:`RESULTS`. The entries themselves live with
their findings (``gspo_record/fN/predictions.py``) and :mod:`gspo_record.predictions` assembles them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RESULTS", "Prediction", "result_of", "parts", "cell", "brief"]

RESULTS = ("borne out", "partly", "not borne out")


def result_of(held: int, of: int) -> str:
    """The result of a prediction with ``of`` parts of which ``held`` came true: all, some, none."""
    if of < 1 or not 0 <= held <= of:
        raise ValueError(f"need 0 <= held <= of and of >= 1, got {held} of {of}")
    return RESULTS[0] if held == of else RESULTS[2] if held == 0 else RESULTS[1]


def parts(checks: list[tuple[bool, str]]) -> tuple[str, str]:
    """A prediction scored part by part: ``checks`` holds each part's (held, what the data show); the result counts
    the parts that held and the evidence joins their words."""
    return result_of(sum(held for held, _ in checks), len(checks)), "; ".join(words for _, words in checks)


def cell(text: str) -> tuple[float, float, float]:
    """(mean, lo, hi) of a table's printed difference, ``mean [lo, hi] (n = k; ...)``
    (:func:`gspo_record.fmt.diff_cell`)."""
    found = re.match(r"\s*(\S+) \[(\S+), (\S+)\]", text)
    if not found:
        raise ValueError(f"not a printed interval: {text!r}")
    return float(found[1]), float(found[2]), float(found[3])


def brief(text: str) -> str:
    """A table's printed difference in the evidence's form, the statements' ``brief`` one: ``mean [lo, hi], k of n
    seeds > 0`` (its sign count, where it prints one)."""
    found = re.match(r"\s*(\S+ \[\S+, \S+\])(?: \(n = \d+; (\d+)/(\d+) ([<>]) (\S+)\))?", text)
    if not found:
        raise ValueError(f"not a printed interval: {text!r}")
    head, k, n, side, null = found.groups()
    return head + (f", {k} of {n} seeds {side} {null}" if k else "")


@dataclass(frozen=True)
class Prediction:
    spec: str  # data/specs/<spec>.toml
    finding: str  # the finding page it is printed on ("12", "11"), the key of ``by_finding``
    quote: str  # the prediction, word for word from the spec's description
    score: Callable[[dict], tuple[str, str]]  # build context -> (a RESULTS entry, the evidence in words)
