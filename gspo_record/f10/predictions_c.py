"""Finding 10's branches, their declared predictions scored (issue 48, item 6): branching GRPO's trunks before any
onset (f10z_branch: rules f10z.branch and f10z.paired per arm and branch point) and after it (f10z_onset_branch: rule
f10z.reversible per arm, the trunks' own change, the two arms' lifts), each read from the book's statements."""

from __future__ import annotations

from collections.abc import Callable

from gspo_record.f10.branch import ARMS, POINTS, TIGHTER
from gspo_record.fmt import num
from gspo_record.prediction import Prediction, parts, result_of

__all__ = ["PREDICTIONS"]

#: the two arms of f10z_onset_branch
AFTER_ONSET = ("CAP10", "GSPO")


def _branch(ctx: dict, arm: str, point: int):
    return ctx["book"].summary(f"f10z.branch.{arm}@{point}")


def _protect(arms: tuple[str, ...], points: tuple[int, ...], outcome: str) -> Callable[[dict], tuple[str, str]]:
    """Rule f10z.branch reads ``outcome`` ("higher": protects; "none": no difference shown) for each arm at each
    branch point."""

    def score(ctx: dict) -> tuple[str, str]:
        reads = [(f"{a}@{p}", _branch(ctx, a, p)) for a in arms for p in points]
        return parts([(s.rule_outcome == outcome, f"{name} {s.label}{s.mark}") for name, s in reads])

    return score


def _shrinks(ctx: dict) -> tuple[str, str]:
    """Each arm's mean lift (branch − trunk) falls at every later branch point."""
    checks = []
    for arm in ARMS:
        lifts = [_branch(ctx, arm, p).number.estimate for p in POINTS]
        held = all(a > b for a, b in zip(lifts, lifts[1:], strict=False))
        checks.append((held, f"{arm} " + " → ".join(f"{num(x)} at {p}" for x, p in zip(lifts, POINTS, strict=True))))
    return parts(checks)


def _tighter(ctx: dict) -> tuple[str, str]:
    """Rule f10z.paired reads "tighter" at every arm and point; beside it, each arm's paired sd as a share of the
    unpaired one per point (the rule's limit is :data:`TIGHTER` of it), so "most at 30" can be read."""
    held, shares = 0, []
    for arm in ARMS:
        reads = [ctx["book"].summary(f"f10z.paired.{arm}@{p}") for p in POINTS]
        held += sum(s.rule_outcome == "tighter" for s in reads)
        ratio = [s.number.value / (s.number.low / TIGHTER) for s in reads]
        least = POINTS[ratio.index(min(ratio))]
        shares.append(f"{arm} {', '.join(num(r) for r in ratio)} (least at {least})")
    of, at = len(ARMS) * len(POINTS), ", ".join(map(str, POINTS))
    words = f"sd paired / sd unpaired at {at}, tighter below {TIGHTER:g}: {'; '.join(shares)}"
    return result_of(held, of), f"tighter at {held} of {of} arm × point; {words}"


def _reversible(ctx: dict, arm: str):
    return ctx["book"].summary(f"f10z.reversible.{arm}")


def _part(s, name: str):
    return dict(s.number.parts)[name]


def _partly_reversed(ctx: dict) -> tuple[str, str]:
    """Rule f10z.reversible reads "partly reversed" for both arms."""
    reads = [(a, _reversible(ctx, a)) for a in AFTER_ONSET]
    return parts([(s.rule_outcome == "partly", f"{a}: {s.label}{s.mark}, lift {_part(s, 'lift').brief}, gap to "
                   f"before {_part(s, 'gap to before').brief}") for a, s in reads])  # fmt: skip


def _trunks_stay(ctx: dict) -> tuple[str, str]:
    """The trunks' own after − pre (the section's interval, not its printed cell) lies below 0."""
    revert = ctx["f10"]["revert"]
    number = revert["trunk_interval"]
    return result_of(int(number.hi < 0), 1), f"trunks' after − pre {number.brief}; {revert['trunk_collapsed']} " \
                                             "collapsed at rollout 120"  # fmt: skip


def _gspo_lifts_more(ctx: dict) -> tuple[str, str]:
    """GSPO's mean lift above CAP10's (read from the table, as declared); whether either lift's interval lies above
    0 beside it."""
    lifts = {a: _part(_reversible(ctx, a), "lift") for a in AFTER_ONSET}
    shown = [a for a, i in lifts.items() if i.lo > i.null]
    held = lifts["GSPO"].estimate > lifts["CAP10"].estimate
    words = "; ".join(f"{a} lift {i.brief}" for a, i in lifts.items())
    return result_of(int(held), 1), f"{words}; lift shown above 0 for {', '.join(shown) or 'neither arm'}"


PREDICTIONS = (
    Prediction("f10z_branch", "10", "CAP10, SKIP10 and GSPO protect at every branch point",
               _protect(("CAP10", "SKIP10", "GSPO"), POINTS, "higher")),
    Prediction("f10z_branch", "10", "GSPO_NORM protects at 10 and 20 under the SIZE account (10a's five-seed MoE "
               "reading)", _protect(("GSPO_NORM",), (10, 20), "higher")),
    Prediction("f10z_branch", "10", 'shows no difference under CONTENT (10a\'s ten-seed MoE reading was "mixed", so '
               "we do not predict which)", _protect(("GSPO_NORM",), (10, 20), "none")),
    Prediction("f10z_branch", "10", "every lift shrinks from branch point 10 to 30", _shrinks),
    Prediction("f10z_branch", "10", '"tighter" at every arm and point, most at 30', _tighter),
    Prediction("f10z_onset_branch", "10", 'both arms "partly reversed"', _partly_reversed),
    Prediction("f10z_onset_branch", "10", "the unchanged trunks do not recover (after − pre below 0)", _trunks_stay),
    Prediction("f10z_onset_branch", "10", "GSPO lifts more than CAP10", _gspo_lifts_more),
)  # fmt: skip
