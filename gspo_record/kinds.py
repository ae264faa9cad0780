"""The book's other kinds of number (issue 48, item 1): what the rules left as bare verdicts read, each with the one
function that computes its outcome (registered in :data:`gspo_record.statements.OUTCOMES`) and, written apart from it,
the check the statement lint makes (:meth:`allows`, called by :func:`gspo_record.book.consistent`), so a mutant of
either is caught by the other.

    Band      a point value (a ratio of medians, a delay in rollouts, a drop) against a declared band [low, high]:
              "below" / "inside" / "above" (an open side cannot be reached), "unmeasured" for a value that is not one
    Rates     two rates k/n with their Wilson intervals at a declared level: "above" / "below" when the intervals are
              disjoint, else "overlap" (a precursor's alarms in collapsing runs against its false alarms)
    Split     k of n runs in one class: "all", "none", "few" (fewer than ``min_each`` of a class), else "both" —
              whether a fit across the two classes can be read at all
    Largest   the largest rung of a declared ladder that met its rule (the rule's reading is beside it): "found" /
              "none"
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import gspo_record.statements as statements
from gspo_record.statements import StatementError

__all__ = ["Band", "Rates", "Split", "Largest", "band_outcome", "rates_outcome", "split_outcome", "largest_outcome"]


def _num(x) -> str:
    from gspo_record.fmt import num

    return num(x)


@dataclass(frozen=True)
class Band:
    """``value`` (what: ``name``) against the declared band [low, high]; an infinite side is open."""

    value: float
    low: float
    high: float
    name: str = "value"
    against: str = ""  # how the page names the band when it is not a declared constant: "0.015 (0.5 × sd unpaired)"
    shown = ("below", "above")

    def __post_init__(self):
        if not (self.low <= self.high) or (math.isinf(self.low) and math.isinf(self.high)):
            raise StatementError(f"band: need low <= high with one finite side, got [{self.low}, {self.high}]")

    @property
    def measured(self) -> bool:
        return self.value is not None and self.value == self.value

    @property
    def reach(self) -> tuple[str, ...]:
        out = (("below",) if math.isfinite(self.low) else ()) + ("inside",)
        out += ("above",) if math.isfinite(self.high) else ()
        return out + (() if self.measured else ("unmeasured",))

    def allows(self, outcome: str) -> bool:
        if not self.measured:
            return outcome == "unmeasured"
        v = float(self.value)
        return {"below": v < self.low, "above": v > self.high, "inside": self.low <= v <= self.high}.get(outcome, False)

    def __str__(self) -> str:
        value = _num(self.value) if self.measured else "not measured"
        value = f"{self.name} {value}" if self.name else value  # unnamed: a joint's part name says what it is
        if self.against:
            return f"{value} against {self.against}"
        if math.isinf(self.low):
            band = f"at most {_num(self.high)}"
        elif math.isinf(self.high):
            band = f"at least {_num(self.low)}"
        else:
            band = f"[{_num(self.low)}, {_num(self.high)}]"
        return f"{value} (declared: {band})"


def band_outcome(x: Band) -> str:
    """ "unmeasured" for NaN; "below" under ``low``, "above" over ``high``, else "inside"."""
    if not x.measured:
        return "unmeasured"
    return "below" if x.value < x.low else "above" if x.value > x.high else "inside"


@dataclass(frozen=True)
class Rates:
    """Rate a (``a_k`` of ``a_n``, interval [a_lo, a_hi]) against rate b, intervals at ``level`` (Wilson)."""

    a_k: int
    a_n: int
    a_lo: float
    a_hi: float
    b_k: int
    b_n: int
    b_lo: float
    b_hi: float
    level: float = 0.95
    names: tuple[str, str] = ("a", "b")
    shown = ("above", "below")
    reach = ("above", "below", "overlap")

    def __post_init__(self):
        for k, n, lo, hi in ((self.a_k, self.a_n, self.a_lo, self.a_hi), (self.b_k, self.b_n, self.b_lo, self.b_hi)):
            if not (0 <= k <= n and n >= 1 and 0 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1):
                raise StatementError(f"rates: need 0 <= k <= n, n >= 1 and lo <= k/n <= hi in [0, 1], got "
                                     f"{k}/{n} [{lo}, {hi}]")  # fmt: skip

    def allows(self, outcome: str) -> bool:
        apart = {"above": self.b_hi < self.a_lo, "below": self.a_hi < self.b_lo}
        apart["overlap"] = not (apart["above"] or apart["below"])
        return apart.get(outcome, False)

    def __str__(self) -> str:
        level = f"{self.level:.4g}".rstrip("0").rstrip(".")
        return "; ".join(f"{name}: {k}/{n} [{_num(lo)}, {_num(hi)}]" for name, k, n, lo, hi in (
            (self.names[0], self.a_k, self.a_n, self.a_lo, self.a_hi),
            (self.names[1], self.b_k, self.b_n, self.b_lo, self.b_hi))) + f" (Wilson, level {level})"  # fmt: skip


def rates_outcome(x: Rates) -> str:
    """ "above" when a's interval lies wholly above b's, "below" when wholly below, else "overlap"."""
    if x.a_lo > x.b_hi:
        return "above"
    return "below" if x.a_hi < x.b_lo else "overlap"


@dataclass(frozen=True)
class Split:
    """``k`` of ``n`` runs in one class (``what``: "collapsed") and the fewest of each class a fit needs."""

    k: int
    n: int
    min_each: int
    what: str = "in the class"
    shown = ()
    reach = ("all", "none", "few", "both")

    def __post_init__(self):
        if not 0 <= self.k <= self.n or self.n < 1 or self.min_each < 1:
            raise StatementError(f"split: need 0 <= k <= n, n >= 1, min_each >= 1, got {self.k}/{self.n}, "
                                 f"{self.min_each}")  # fmt: skip

    def allows(self, outcome: str) -> bool:
        other = self.n - self.k
        return {"all": other == 0, "none": self.k == 0, "few": 0 < min(self.k, other) < self.min_each,
                "both": min(self.k, other) >= self.min_each}.get(outcome, False)  # fmt: skip

    def __str__(self) -> str:
        return f"{self.k}/{self.n} {self.what}"


def split_outcome(x: Split) -> str:
    """ "all" / "none" when one class is empty, "few" when a class has fewer than ``min_each``, else "both"."""
    if x.k in (0, x.n):
        return "none" if x.k == 0 else "all"
    return "few" if min(x.k, x.n - x.k) < x.min_each else "both"


@dataclass(frozen=True)
class Largest:
    """The largest rung of ``ladder`` that met its rule (None: no rung did); ``unit`` prints before it ("lr")."""

    value: float | None
    ladder: tuple[float, ...]
    unit: str = ""
    shown = ()
    reach = ("found", "none")

    def __post_init__(self):
        if self.value is not None and self.value not in self.ladder:
            raise StatementError(f"largest: {self.value} is not a rung of the ladder {self.ladder}")

    def allows(self, outcome: str) -> bool:
        return {"found": self.value in self.ladder, "none": self.value is None}.get(outcome, False)

    def __str__(self) -> str:
        rungs = ", ".join(f"{v:g}" for v in self.ladder)
        value = "none" if self.value is None else f"{self.value:g}"
        return f"{self.unit} {value} of {{{rungs}}}".strip()


def largest_outcome(x: Largest) -> str:
    """ "none" without a rung, else "found"."""
    return "none" if x.value is None else "found"


for _kind, _fn in ((Band, "band_outcome"), (Rates, "rates_outcome"), (Split, "split_outcome"),
                   (Largest, "largest_outcome")):  # fmt: skip
    statements.OUTCOMES[_kind] = f"{__name__}:{_fn}"
