"""A rule read on one paired per-seed difference, as a statement (issue 48): its interval's side of 0 read through
the rule's ``reads`` (an interval's "above" / "below" / "none" -> the rule's own outcome keys), its null words with
the seeds' sign count as :meth:`~gspo_record.rules.Rule.verdict` gave them (:func:`~gspo_record.rules.null_words`).
The caller passes the interval function from its own module, so a mutant of that module's interval is what is read."""

from __future__ import annotations

import math

from gspo_record.rules import PENDING, Rule, null_words
from gspo_record.statements import Interval

#: frames of this module make statements; where a verdict was read is the caller (gspo_record/reread.py)
MAKES_STATEMENTS = True
__all__ = ["signed", "SIGNED"]

#: an interval's outcome -> the usual signed rules' keys
SIGNED = {"above": "higher", "below": "lower", "none": "none"}


def signed(rule: Rule, diff, interval, question: str, id: str = "", bounds=(-math.inf, math.inf)):
    """``rule`` on per-seed ``diff`` with ``interval`` (values -> (lo, hi)) on ``bounds``: statement ``id`` (the
    rule's name by default); pending below two finished seeds."""
    if sum(v == v for v in diff) < 2:
        return rule.verdict(PENDING)
    return rule.state(id or rule.name, question, Interval.of(diff, interval, bounds=bounds),
                      words=null_words(rule, diff))  # fmt: skip
