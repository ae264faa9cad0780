"""Statements: one object per verdict the book prints (issue 48, item 1), and the checks that keep the words to it.

A :class:`Statement` holds the question it answers, *the number its outcome is about* and the outcome, which is not
an argument: one function per kind of number computes it (:data:`OUTCOMES`), so the words cannot contradict the
number printed beside them.

    Interval     an estimate with its 95 % interval, n and its sign count about a null (a paired difference of late
                 accuracies, a ratio of spreads): "above" / "below" when the interval excludes the null, else "none";
                 with a margin (an equivalence reading), "within" / "beyond" / "inconclusive" instead
    Count        k of n (collapsed runs) with its Wilson interval: "at_least" / "at_most" / "between" two declared
                 thresholds scaled to n — what a rate prints when half its seeds or more sit at 0 or 1
    Boundaries   two arms' largest tolerated lags on one ladder: "higher" / "lower" / "same"; a tie at the ladder's
                 top is "both_top" (the ladder cannot separate them, it is not "no difference")

A comparative word ("tolerates more lag", "higher") may only name an outcome that excludes the null; a statement's
``words`` are checked against that when it is made (:func:`check_words`).

Supersession (item 2): a statement that asks the same question on more data (a longer ladder, ten seeds over five,
endpoint v2 over v1) names the ids it supersedes. :meth:`Book.summary` — what At a glance, the story, the recipe and
the notebooks' take-aways render — refuses a superseded statement; :meth:`Book.page` (a finding page) renders it
marked "superseded by …". Written prose declares the outcome it assumes (:meth:`Book.expect`), and the build fails
when the data give another, so the sentence is rewritten, never silently re-labelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Interval", "Count", "Boundaries", "Statement", "Book", "OUTCOMES", "COMPARATIVE", "StatementError",
           "interval_outcome", "count_outcome", "boundary_outcome", "check_words"]  # fmt: skip


class StatementError(ValueError):
    """A statement that cannot be made or rendered as asked (the build fails on it)."""


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95 % interval [lo, hi] over n seeds, ``above`` / ``below`` of them on each side of
    ``null`` (0 for a difference, 1 for a ratio), inside the endpoint's declared ``bounds``; ``margin`` > 0 makes it
    an equivalence reading about ``null - margin`` (a drop within the margin is tolerated)."""

    estimate: float
    lo: float
    hi: float
    n: int
    above: int
    below: int
    null: float = 0.0
    bounds: tuple[float, float] = (-math.inf, math.inf)
    margin: float = 0.0

    def __post_init__(self):
        if any(math.isnan(v) for v in (self.estimate, self.lo, self.hi)):
            raise StatementError(f"interval: estimate and bounds must be numbers, got {self}")
        if not self.lo <= self.estimate <= self.hi:
            raise StatementError(f"interval: need lo <= estimate <= hi, got {self.lo!r} {self.estimate!r} {self.hi!r}")
        if not (self.bounds[0] <= self.lo and self.hi <= self.bounds[1]):
            raise StatementError(f"interval: [{self.lo:g}, {self.hi:g}] leaves the endpoint's range {self.bounds}")
        if self.n < 1 or self.above < 0 or self.below < 0 or self.above + self.below > self.n:
            raise StatementError(f"interval: sign counts {self.above} above, {self.below} below of n = {self.n}")

    @classmethod
    def of(cls, values, interval, *, null: float = 0.0, bounds=(-math.inf, math.inf), margin: float = 0.0):
        """From per-seed ``values`` and an interval function (values -> (lo, hi)), the page's declared one."""
        x = [float(v) for v in values if v == v]
        if len(x) < 2:
            raise StatementError(f"interval: need at least 2 finished seeds, got {len(x)}")
        lo, hi = interval(x)
        return cls(sum(x) / len(x), lo, hi, len(x), sum(v > null for v in x), sum(v < null for v in x), null,
                   tuple(bounds), margin)  # fmt: skip

    def __str__(self) -> str:
        side, k = (">", self.above) if self.above >= self.below else ("<", self.below)
        return f"{self.estimate:.3g} [{self.lo:.3g}, {self.hi:.3g}] ({k}/{self.n} {side} {self.null:g})"


@dataclass(frozen=True)
class Count:
    """k of n runs (e.g. collapsed) with the thresholds of its rule, declared for ``per`` seeds and scaled to n:
    ``at_least`` of ``per`` or more reads "at_least", ``at_most`` of ``per`` or fewer "at_most"."""

    k: int
    n: int
    at_least: int
    at_most: int
    per: int = 5

    def __post_init__(self):
        if not 0 <= self.k <= self.n or self.n < 1:
            raise StatementError(f"count: need 0 <= k <= n and n >= 1, got {self.k}/{self.n}")

    @property
    def wilson(self) -> tuple[float, float]:
        from gspo_lab.experiments.stats import wilson

        return wilson(self.k, self.n)

    def __str__(self) -> str:
        lo, hi = self.wilson
        return f"{self.k}/{self.n} [{lo:.2f}, {hi:.2f}]"


@dataclass(frozen=True)
class Boundaries:
    """Two arms' largest tolerated lags on one ladder (None: no lag tolerated), and the ladder's top."""

    a: int | None
    b: int | None
    top: int

    def __str__(self) -> str:
        return f"{_lag(self.a)} against {_lag(self.b)}"


def _lag(lag: int | None) -> str:
    return "none" if lag is None else str(lag)


def interval_outcome(x: Interval) -> str:
    """ "above" / "below" when the interval excludes the null, else "none"; for an equivalence reading (margin > 0)
    "within" when the interval lies above ``null - margin``, "beyond" when below it, else "inconclusive"."""
    if x.margin > 0:
        edge = x.null - x.margin
        return "within" if x.lo > edge else "beyond" if x.hi < edge else "inconclusive"
    return "above" if x.lo > x.null else "below" if x.hi < x.null else "none"


def count_outcome(x: Count) -> str:
    """ "at_least" at >= at_least·n/per, "at_most" at <= at_most·n/per, else "between"."""
    if x.k >= x.at_least * x.n / x.per:
        return "at_least"
    return "at_most" if x.k <= x.at_most * x.n / x.per else "between"


def boundary_outcome(x: Boundaries) -> str:
    """ "higher" / "lower" (a's boundary against b's), "both_top" when both reach the ladder's top, else "same"."""
    a, b = (-1 if v is None else v for v in (x.a, x.b))
    if a == b:
        return "both_top" if a == x.top else "same"
    return "higher" if a > b else "lower"


#: the kind of number -> the one function that computes a statement's outcome from it
OUTCOMES = {Interval: interval_outcome, Count: count_outcome, Boundaries: boundary_outcome}
#: outcomes each kind can reach, and the ones that exclude the null (the only ones a comparative word may name)
REACH = {Interval: ("above", "below", "none", "within", "beyond", "inconclusive"),
         Count: ("at_least", "at_most", "between"), Boundaries: ("higher", "lower", "same", "both_top")}  # fmt: skip
COMPARATIVE = ("more", "less", "higher", "lower", "above", "below", "better", "worse", "beats", "protects", "saves")
_EXCLUDES_NULL = {"above", "below", "beyond", "higher", "lower", "at_least"}


def check_words(kind: type, words: Mapping[str, str]) -> None:
    """StatementError unless ``words`` names every outcome ``kind`` can reach, and only those, and no comparative word
    names an outcome whose number does not exclude the null ("no difference" may not say "higher")."""
    if set(words) != set(REACH[kind]):
        raise StatementError(f"words must name each outcome of {kind.__name__}: {sorted(REACH[kind])}, "
                             f"got {sorted(words)}")  # fmt: skip
    for outcome, text in words.items():
        said = [w for w in COMPARATIVE if w in text.lower().split()]
        if said and outcome not in _EXCLUDES_NULL:
            raise StatementError(f"{outcome!r} does not exclude the null, but its words compare: {text!r} ({said})")


@dataclass(frozen=True)
class Statement:
    """One verdict the book prints: its question, the number it is about, the words per outcome, how sure."""

    id: str
    question: str
    number: Interval | Count | Boundaries
    words: Mapping[str, str]
    declared: bool = True  # False: post hoc (its rule was set after the results it reads)
    flips: tuple[str, ...] = ()  # the readings under which the outcome changes, in words ("without seed 132")
    supersedes: tuple[str, ...] = ()
    secondary: Statement | None = field(default=None, compare=False)  # e.g. the paired difference beside a boundary

    def __post_init__(self):
        if type(self.number) not in OUTCOMES:
            raise StatementError(f"statement {self.id}: number must be one of {[k.__name__ for k in OUTCOMES]}")
        check_words(type(self.number), self.words)
        if self.id in self.supersedes:
            raise StatementError(f"statement {self.id} supersedes itself")

    @property
    def outcome(self) -> str:
        """Computed from :attr:`number` by its kind's function (:data:`OUTCOMES`): never given."""
        return OUTCOMES[type(self.number)](self.number)

    @property
    def sure(self) -> str:
        """How sure, in words: declared or post hoc, and fragile with what flips it."""
        how = "declared" if self.declared else "post hoc"
        return f"{how}; fragile: {', '.join(self.flips)} changes it" if self.flips else how

    def __str__(self) -> str:
        text = f"{self.words[self.outcome]}, {self.number}"
        return text + (f"; {self.secondary}" if self.secondary is not None else "")


class Book:
    """Every statement of one build, by id; what summaries and pages may render."""

    def __init__(self):
        self.statements: dict[str, Statement] = {}

    def add(self, statement: Statement) -> Statement:
        if statement.id in self.statements:
            raise StatementError(f"statement {statement.id} is made twice in one build")
        self.statements[statement.id] = statement
        return statement

    def __getitem__(self, id: str) -> Statement:
        if id not in self.statements:
            raise StatementError(f"no statement {id!r} in this build (known: {len(self.statements)})")
        return self.statements[id]

    def superseded_by(self, id: str) -> str | None:
        """The id of the statement that supersedes ``id``, or None."""
        return next((s.id for s in self.statements.values() if id in s.supersedes), None)

    def summary(self, id: str) -> Statement:
        """The statement a summary renders: StatementError when a newer one supersedes it."""
        newer = self.superseded_by(id)
        if newer is not None:
            raise StatementError(f"a summary renders {id}, which {newer} supersedes: render {newer}")
        return self[id]

    def page(self, id: str) -> str:
        """A finding page's rendering: the statement, marked when a newer one supersedes it."""
        newer = self.superseded_by(id)
        return str(self[id]) + (f" (superseded by {newer})" if newer else "")

    def expect(self, id: str, outcome: str) -> str:
        """Empty when statement ``id``'s outcome is ``outcome`` (what a written sentence assumes); StatementError
        otherwise, naming both, so the sentence is rewritten."""
        got = self.summary(id).outcome
        if got != outcome:
            raise StatementError(f"prose assumes {id} reads {outcome!r}; the data give {got!r}: rewrite the sentence")
        return ""
