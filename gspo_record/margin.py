"""A mean read against a declared margin by its value (issue 48): the one kind of number whose outcome is not an
interval's side. Some rules were declared that way before their runs — ``f5.claim``: "GSPO on bf16 log-probs ends
within 0.05 held-out accuracy of GSPO on recomputed ones" — and keep their declared reading: a :class:`Margin` is
*within* when the mean of the per-seed differences lies inside ±margin, else *outside*. The page's interval is
printed beside the mean so the reader sees how sure that is; it does not enter the outcome (a margin, not an
equivalence test, as the rule's words say).
"""

from __future__ import annotations

from dataclasses import dataclass

import gspo_record.statements as statements
from gspo_record.statements import StatementError

__all__ = ["Margin", "margin_outcome"]


@dataclass(frozen=True)
class Margin:
    """The mean of n per-seed values, its (printed, not read) 95 % interval [lo, hi], and the declared margin."""

    estimate: float
    lo: float
    hi: float
    n: int
    margin: float

    reach = ("within", "outside")
    shown = ("outside",)  # "ends more than the margin away" is what the mean shows; "within" names no difference

    def __post_init__(self):
        if self.estimate != self.estimate or self.margin <= 0 or self.n < 1:
            raise StatementError(f"margin: need a mean, a margin > 0 and n >= 1, got {self}")

    @classmethod
    def of(cls, values, interval, margin: float) -> Margin:
        x = [float(v) for v in values if v == v]
        if len(x) < 2:
            raise StatementError(f"margin: need at least 2 finished seeds, got {len(x)}")
        lo, hi = interval(x)
        return cls(sum(x) / len(x), lo, hi, len(x), margin)

    def __str__(self) -> str:
        from gspo_record.fmt import num

        past = "; the interval reaches past the margin" if max(-self.lo, self.hi) > self.margin else ""
        return (f"mean {num(self.estimate)} [{num(self.lo)}, {num(self.hi)}] (n = {self.n}; margin "
                f"±{num(self.margin)}{past})")  # fmt: skip


def margin_outcome(x: Margin) -> str:
    """ "within" when |mean| <= margin, else "outside"."""
    return "within" if abs(x.estimate) <= x.margin else "outside"


statements.OUTCOMES[Margin] = f"{__name__}:margin_outcome"
