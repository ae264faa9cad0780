"""Statements: one object per verdict the book prints (issue 48, item 1), and the checks that keep the words to it.

A :class:`Statement` holds the question it answers, *the number its outcome is about* and the outcome, which is not
an argument: one function per kind of number computes it (:data:`OUTCOMES`), so the words cannot contradict the
number printed beside them.

    Interval     an estimate with its 95 % interval, n and its sign count about a null (a paired difference of late
                 accuracies, a ratio of spreads): "above" / "below" when the interval excludes the null, else "none";
                 with a margin (an equivalence reading), "within" (also "within_below" / "within_above" when it
                 excludes the null), else "below" / "above" / "inconclusive"
    Count        k of n (collapsed runs) with its Wilson interval: "at_least" / "at_most" / "between" two declared
                 thresholds scaled to n — what a rate prints when half its seeds or more sit at 0 or 1
    Boundaries   two arms' largest tolerated lags on one ladder: "higher" / "lower" / "same"; a tie at the ladder's
                 top is "both_top" (the ladder cannot separate them, it is not "no difference")

A comparative word ("tolerates more lag", "higher") may only name an outcome whose interval excludes the null — not a
boundary's, which two margin readings give (the paired difference beside it says whether one arm lost more); a
statement's ``words`` are checked against that when it is made (:func:`check_words`). The book of one build,
supersession, prose's ``expect`` and the lint's own check of an outcome against its number
(:func:`gspo_record.book.consistent`, written apart from :data:`OUTCOMES`): :mod:`gspo_record.book`. Several numbers
read together by a rule (two collapse counts, four effects): :mod:`gspo_record.joint`. A statement on more data (ten
seeds over five, endpoint v2 over v1) names what it supersedes (item 2)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

#: frames of this module make statements; where a verdict was read is the caller (gspo_record/reread.py)
MAKES_STATEMENTS = True
__all__ = ["Interval", "Count", "Boundaries", "Statement", "OUTCOMES", "COMPARATIVE", "StatementError",
           "interval_outcome", "count_outcome", "boundary_outcome", "outcome_of", "check_words", "reach"]  # fmt: skip


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
        slack = 1e-9 * (1.0 + abs(self.estimate))  # an interval of identical seeds is the mean to float rounding
        if not self.lo - slack <= self.estimate <= self.hi + slack:
            raise StatementError(f"interval: need lo <= estimate <= hi, got {self.lo!r} {self.estimate!r} {self.hi!r}")
        from gspo_lab.experiments import stats  # a re-reading under the old interval (not printed) may leave it

        if stats._INTERVAL[0] == stats.PAGE_INTERVAL and not (self.bounds[0] <= self.lo and self.hi <= self.bounds[1]):
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

    @property
    def signs(self) -> str:
        """The sign count as the page prints it (:func:`gspo_record.fmt.signs`): the majority side, both on a tie."""
        from gspo_record.fmt import sign_count

        return sign_count(self.n, self.above, self.below, self.null)

    @property
    def brief(self) -> str:
        """As prose prints it, without nested brackets: ``mean [lo, hi], k of n seeds > 0`` (the majority side)."""
        from gspo_record.fmt import num

        side, k = (">", self.above) if self.above >= self.below else ("<", self.below)
        return f"{num(self.estimate)} [{num(self.lo)}, {num(self.hi)}], {k} of {self.n} seeds {side} {num(self.null)}"

    def __str__(self) -> str:
        """As the page prints a paired difference: ``mean [lo, hi] (n = k; signs)``."""
        from gspo_record.fmt import num

        return f"{num(self.estimate)} [{num(self.lo)}, {num(self.hi)}] (n = {self.n}; {self.signs})"


@dataclass(frozen=True)
class Count:
    """k of n runs (e.g. collapsed) with the thresholds of its rule, declared for ``per`` seeds and scaled to n:
    ``at_least`` of ``per`` or more reads "at_least", ``at_most`` of ``per`` or fewer "at_most"."""

    k: int
    n: int
    at_least: int
    at_most: int
    per: int = 5
    wilson_shown: bool = True  # False for a count of steps or grid points, not of seeds: no rate to estimate

    def __post_init__(self):
        if not 0 <= self.k <= self.n or self.n < 1:
            raise StatementError(f"count: need 0 <= k <= n and n >= 1, got {self.k}/{self.n}")

    @property
    def wilson(self) -> tuple[float, float]:
        from gspo_lab.experiments.stats import wilson

        return wilson(self.k, self.n)

    def __str__(self) -> str:
        lo, hi = self.wilson
        return f"{self.k}/{self.n}" + (f" [{lo:.2f}, {hi:.2f}]" if self.wilson_shown else "")


@dataclass(frozen=True)
class Boundaries:
    """Two arms' largest tolerated lags on one ladder (None: no lag tolerated), and the ladder's top."""

    a: int | None
    b: int | None
    top: int

    def __str__(self) -> str:
        return " against ".join("none" if lag is None else str(lag) for lag in (self.a, self.b))


def interval_outcome(x: Interval) -> str:
    """ "above" / "below" when the interval excludes the null, else "none". An equivalence reading (margin > 0):
    "within" when the interval lies inside [null − margin, null + margin] ("within_below" / "within_above" when it
    also excludes the null: a drop or a gain inside the margin shown), else "below" / "above" when it excludes the
    null, else "inconclusive"."""
    side = "above" if x.lo > x.null else "below" if x.hi < x.null else ""
    if x.margin > 0:
        if x.null - x.margin <= x.lo and x.hi <= x.null + x.margin:
            return f"within_{side}" if side else "within"
        return side or "inconclusive"
    return side or "none"


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


#: the kind of number -> the name of the one function that computes a statement's outcome from it (looked up when
#: called, so a mutant of the function is the function every statement reads)
OUTCOMES = {Interval: "interval_outcome", Count: "count_outcome", Boundaries: "boundary_outcome"}


def outcome_of(number) -> str:
    """The outcome of ``number``, computed by its kind's function (:data:`OUTCOMES`; a joint's in
    :mod:`gspo_record.joint`)."""
    name = OUTCOMES[type(number)]
    module, _, name = name.rpartition(":")  # a kind registered from another module: "module:function"
    return getattr(sys.modules[module] if module else sys.modules[__name__], name)(number)


_MARGIN = ("within", "within_below", "within_above", "below", "above", "inconclusive")
COMPARATIVE = ("more", "less", "higher", "lower", "above", "below", "better", "worse", "beats", "protects", "saves",
               "tolerates more", "outlasts")  # fmt: skip
#: the outcomes that exclude the null: the only ones a comparative word may name. A boundary that differs is not one:
#: two largest tolerated lags are read on a margin, not against each other, so "tolerates more lag" needs the paired
#: difference printed beside it (its own statement)
_EXCLUDES_NULL = {"above", "below", "within_below", "within_above", "at_least"}


def reach(number) -> tuple[str, ...]:
    """The outcomes a number of its kind can reach (an interval with a margin has the equivalence reading's)."""
    if isinstance(number, Interval):
        return _MARGIN if number.margin > 0 else ("above", "below", "none")
    if isinstance(number, Count):
        return ("at_least", "at_most", "between")
    if hasattr(number, "reach"):  # a joint: its combination's outcomes
        return number.reach
    return ("higher", "lower", "same", "both_top")


def check_words(number, words: Mapping[str, str]) -> None:
    """StatementError unless ``words`` names every outcome ``number``'s kind can reach, and only those, and no
    comparative word names an outcome that does not exclude the null ("no difference" may not say "higher"); a
    joint's are those its combination declares ``shown``."""
    if set(words) != set(reach(number)):
        raise StatementError(f"words must name each outcome of {type(number).__name__}: {sorted(reach(number))}, "
                             f"got {sorted(words)}")  # fmt: skip
    for outcome, text in words.items():
        said = [w for w in COMPARATIVE if f" {w} " in f" {text.lower()} "]
        if said and outcome not in getattr(number, "shown", _EXCLUDES_NULL):
            raise StatementError(f"{outcome!r} does not exclude the null, but its words compare: {text!r} ({said})")


@dataclass(frozen=True)
class Statement:
    """One verdict the book prints: its question, the number it is about, the words per outcome, how sure.

    A statement read by a declared rule (:meth:`gspo_record.rules.Rule.state`) names it (``rule``) and maps each of
    its outcomes to the rule's (``reads``: "within_below" -> "tolerates"); its ``flips`` are the robustness readings
    under which the rule's verdict changed. ``provisional``: "3 of 5 seeds" while cells are missing."""

    id: str
    question: str
    number: Interval | Count | Boundaries  # or a joint of them (gspo_record.joint)
    words: Mapping[str, str]
    declared: bool = True  # False: post hoc (its rule was set after the results it reads)
    flips: tuple[str, ...] = ()  # the readings under which the outcome changes, in words ("without seed 132")
    supersedes: tuple[str, ...] = ()
    secondary: Statement | None = field(default=None, compare=False)  # e.g. the paired difference beside a boundary
    rule: str = ""
    reads: Mapping[str, str] = field(default_factory=dict)
    provisional: str = ""

    def __post_init__(self):
        if type(self.number) not in OUTCOMES:
            raise StatementError(f"statement {self.id}: number must be one of {[k.__name__ for k in OUTCOMES]}, "
                                 f"got {type(self.number).__name__}")  # fmt: skip
        check_words(self.number, self.words)
        if self.reads and set(self.reads) != set(reach(self.number)):
            raise StatementError(f"statement {self.id}: reads must map each outcome {sorted(reach(self.number))}")
        if isinstance(self.supersedes, str) or self.id in self.supersedes:
            raise StatementError(f"statement {self.id}: supersedes must be a tuple of other ids, "
                                 f"got {self.supersedes!r}")  # fmt: skip

    @property
    def outcome(self) -> str:
        """Computed from :attr:`number` by its kind's function (:data:`OUTCOMES`): never given."""
        return outcome_of(self.number)

    @property
    def rule_outcome(self) -> str:
        """The declared rule's outcome key this outcome reads as (the outcome itself without a rule)."""
        return self.reads.get(self.outcome, self.outcome) if self.reads else self.outcome

    @property
    def fragile(self) -> bool:
        return bool(self.flips)

    @property
    def post_hoc(self) -> bool:
        return not self.declared

    @property
    def note(self) -> str:
        return f" (provisional: {self.provisional})" if self.provisional else ""

    @property
    def mark(self) -> str:
        return " (fragile)" if self.flips else ""

    @property
    def tag(self) -> str:
        parts = [word for word, on in (("post hoc", not self.declared), ("fragile", self.fragile)) if on]
        return f" ({'; '.join(parts)})" if parts else ""

    @property
    def label(self) -> str:
        """The words of its outcome (``str`` adds the number, "provisional" while cells are missing, the mark)."""
        return self.words[self.outcome]

    @property
    def when(self) -> str:
        return " (post hoc: rule set after its results)" if not self.declared else ""

    @property
    def short(self) -> str:
        """Its words without the number, for a table whose next columns print that number."""
        return self.label + self.note + self.mark

    @property
    def sure(self) -> str:
        """How sure, in words: declared or post hoc, and fragile with what flips it."""
        how = "declared" if self.declared else "post hoc"
        return f"{how}; fragile: {', '.join(self.flips)} changes it" if self.flips else how

    def __str__(self) -> str:
        sep = " — " if hasattr(self.number, "parts") else ", "  # a joint's parts are named: "words — GRPO: 4/5 …"
        text = f"{self.label}{sep}{self.number}{self.note}{self.mark}"
        return text + (f"; {self.secondary}" if self.secondary is not None else "")
