"""Finding 10's norm × direction 2×2 as one joint statement (issue 48): the four paired effects, each an interval
with its sign count, read together by the declared combination of ``f10.two_by_two`` (and the rules that reuse it:
``f10t.two_by_two`` on ten seeds, ``f10y.two_by_two`` under SGD).

*size* when both norm effects lie above 0 and neither direction effect does; *content* the other way round; *both*
when all four do; *neither* when none does; else *mixed* (f10_direction_norm.toml, before its runs). The words say
which effects were shown to protect; the four intervals printed beside them say the rest (an effect shown below 0,
or every seed on one side of 0 without an interval that shows it).
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval, seed_interval
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule
from gspo_record.statements import Interval

#: frames of this module make statements; where a verdict was read is the caller (gspo_record/reread.py)
MAKES_STATEMENTS = True
__all__ = ["EFFECTS", "OUTCOMES", "outcome", "page_interval", "declared_interval", "read"]

#: the 2×2's four declared effects: name -> (arm, minus arm); arms "A" GRPO, "B" GSPO, "C" GRPO's direction at GSPO's
#: norm, "D" GSPO's direction at GRPO's norm (f10_direction_norm.toml)
EFFECTS = {
    "norm, GRPO's direction (C − A)": ("C", "A"),
    "norm, GSPO's direction (B − D)": ("B", "D"),
    "direction, at GSPO's norm (B − C)": ("B", "C"),
    "direction, at GRPO's norm (D − A)": ("D", "A"),
}
OUTCOMES = ("size", "content", "both", "neither", "mixed")


def outcome(o: dict) -> str:
    """The 2×2's outcome from its four effects' interval outcomes (keys of :data:`EFFECTS`)."""
    norm = [v == "above" for k, v in o.items() if k.startswith("norm")]
    direction = [v == "above" for k, v in o.items() if k.startswith("direction")]
    if all(norm) and all(direction):
        return "both"
    if all(norm) and not any(direction):
        return "size"
    if all(direction) and not any(norm):
        return "content"
    return "neither" if not any(norm) and not any(direction) else "mixed"


combination("f10.two_by_two", OUTCOMES, tuple(EFFECTS), shown=("size", "content", "both"))(
    lambda o: outcome(o)  # noqa: PLW0108 - looked up when called: a mutant of outcome() is what is read
)


def page_interval(values) -> tuple[float, float]:
    """The page's interval of per-seed differences of accuracies (declared range: DIFFERENCE)."""
    return seed_interval(values, DIFFERENCE)


def declared_interval(values) -> tuple[float, float]:
    """The interval of a reading whose spec declared Student-t (f10t, f10y; the page's range-respecting form from
    stats version 4), on DIFFERENCE."""
    return declared_t_interval(values, DIFFERENCE)


def read(diffs: dict[str, pd.Series], rule: Rule, interval, id: str = ""):
    """``rule`` on the four effects' per-seed differences (keys of :data:`EFFECTS`), each with ``interval``:
    statement ``id`` (the rule's name by default); pending while an effect has fewer than 2 seeds."""
    if set(diffs) != set(EFFECTS):
        raise ValueError(f"diffs must hold the effects {sorted(EFFECTS)}, got {sorted(diffs)}")
    if any(len(d) < 2 for d in diffs.values()):
        return rule.verdict(PENDING)
    parts = tuple((name, Interval.of(diffs[name], interval, bounds=DIFFERENCE)) for name in EFFECTS)
    return rule.state(id or rule.name, "which of GSPO's norm and direction protect GRPO's updates?",
                      Joint("f10.two_by_two", parts))  # fmt: skip
