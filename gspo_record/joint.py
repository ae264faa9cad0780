"""Joint statements: several numbers read together by one declared combination of their outcomes (issue 48, item 1).

Most of the book's rules read more than one number: ``f2.collapse`` reads GRPO's collapse count and GSPO's,
``f11.position`` a successor's paired difference against GRPO and against GSPO. A :class:`Joint` holds those numbers
(each an :class:`~gspo_record.statements.Interval`, :class:`~gspo_record.statements.Count`,
:class:`~gspo_record.statements.Boundaries` or a joint itself, whose outcome its own kind's function computes) and
the name of the rule's :class:`Combination`, a function of the *parts' outcomes* only. So a joint outcome cannot
contradict its numbers more than its parts can, the lint checks each part against its own number
(:func:`gspo_record.book.consistent`), and a comparative word may only name an outcome the combination declares as
resting on a part that excludes its null (``shown``).

A part whose name starts with ``_`` is read but not printed: the same count read on a second threshold (GSPO's
collapsed runs against "none", beside the same count against "stable").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import gspo_record.statements as statements
from gspo_record.statements import Boundaries, Count, Interval, StatementError

#: frames of this module make statements; where a verdict was read is the caller (gspo_record/reread.py)
MAKES_STATEMENTS = True
__all__ = ["ANY", "Combination", "COMBINES", "combination", "Joint", "joint_outcome"]


@dataclass(frozen=True)
class Combination:
    """A rule's reading of several numbers: ``fn`` (part name -> outcome) -> the rule's outcome key, one of
    ``outcomes``; ``shown``: the outcomes that rest on a part excluding its null (comparative words allowed)."""

    name: str
    fn: Callable[[Mapping[str, str]], str]
    outcomes: tuple[str, ...]
    parts: tuple[str, ...]
    shown: tuple[str, ...] = ()


#: a combination's parts when it reads one part per item of a set the data name (each cold start): any unique names
ANY = ("*",)
#: combination name -> Combination (looked up when a joint outcome is computed: a mutant replaces the entry)
COMBINES: dict[str, Combination] = {}


def combination(name: str, outcomes: tuple[str, ...], parts: tuple[str, ...], shown: tuple[str, ...] = ()):
    """Decorator: register ``fn`` (part outcomes -> outcome) as the combination ``name``."""

    def register(fn):
        if name in COMBINES and COMBINES[name].fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"combination {name!r} is declared twice")
        if not set(shown) <= set(outcomes):
            raise ValueError(f"combination {name}: shown {shown} must be among its outcomes {outcomes}")
        COMBINES[name] = Combination(name, fn, tuple(outcomes), tuple(parts), tuple(shown))
        return fn

    return register


@dataclass(frozen=True)
class Joint:
    """Named numbers (``parts``: ``(("GRPO", Count(...)), ("GSPO", Count(...)))``) read by ``combine``."""

    combine: str
    parts: tuple[tuple[str, Interval | Count | Boundaries], ...]

    def __post_init__(self):
        if self.combine not in COMBINES:
            raise StatementError(f"joint: combine must be one of {sorted(COMBINES)}, got {self.combine!r}")
        names = tuple(n for n, _ in self.parts)
        if COMBINES[self.combine].parts == ANY and names and len(set(names)) == len(names):
            pass  # one part per item of a declared set (a cold start, a checkpoint), named by it
        elif names != COMBINES[self.combine].parts:
            raise StatementError(f"joint {self.combine}: parts must be {COMBINES[self.combine].parts}, got {names}")
        for name, part in self.parts:
            if type(part) not in statements.OUTCOMES:  # a kind whose outcome has its function (a joint, a margin too)
                raise StatementError(f"joint {self.combine}: part {name!r} must be an Interval, Count, Boundaries, "
                                     f"Margin or Joint, got {type(part).__name__}")  # fmt: skip

    def part(self, name: str):
        return dict(self.parts)[name]

    @property
    def outcomes(self) -> dict[str, str]:
        """Each part's outcome, computed by its own kind's function."""
        return {name: statements.outcome_of(part) for name, part in self.parts}

    @property
    def reach(self) -> tuple[str, ...]:
        return COMBINES[self.combine].outcomes

    @property
    def shown(self) -> tuple[str, ...]:
        return COMBINES[self.combine].shown

    def __str__(self) -> str:
        shown = ((name, f"({part})" if isinstance(part, Joint) else part) for name, part in self.parts)
        return "; ".join(f"{name}: {part}" for name, part in shown if not name.startswith("_"))


def joint_outcome(x: Joint) -> str:
    """The combination's outcome on the parts' outcomes; StatementError when it returns one it did not declare."""
    c = COMBINES[x.combine]
    out = c.fn(x.outcomes)
    if out not in c.outcomes:
        raise StatementError(f"combination {c.name} gave {out!r}, not one of {c.outcomes}")
    return out


statements.OUTCOMES[Joint] = f"{__name__}:joint_outcome"
