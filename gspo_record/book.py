"""The book of one build: every statement its sections made, by id (issue 48, items 1-2).

:meth:`Book.of` collects them from the build's context. :meth:`Book.summary` — what At a glance, the story, the
recipe and the notebooks' take-aways render — refuses a superseded statement; :meth:`Book.page` (a finding page)
renders it marked "superseded by …". Written prose declares the outcome it assumes (:meth:`Book.expect`), and the
build fails when the data give another, so the sentence is rewritten, never silently re-labelled.
:meth:`Book.problems` is the statement lint: each outcome against its own number, each ``supersedes`` resolved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gspo_record.statements import Count, Interval, Statement, StatementError

__all__ = ["Book", "Superseded", "statements_in", "consistent", "diff_statement", "book_json", "bare_verdicts"]


def consistent(number, outcome: str) -> bool:
    """Whether ``outcome`` can be said of ``number``: the lint's own check of every statement, written apart from
    :data:`OUTCOMES` (a mutant outcome function is caught by it). A side needs its interval past the null, a null
    reading an interval that holds it; a count's class its thresholds; a boundary's its two lags."""
    if isinstance(number, Interval):
        lo, hi, null, m = number.lo, number.hi, number.null, number.margin
        inside = m > 0 and null - m <= lo and hi <= null + m
        side = {"above": lo > null, "below": hi < null, "none": lo <= null <= hi}
        return {"above": side["above"] and not inside, "below": side["below"] and not inside,
                "within_above": inside and side["above"], "within_below": inside and side["below"],
                "within": inside and side["none"], "none": m == 0 and side["none"],
                "inconclusive": m > 0 and not inside and side["none"]}.get(outcome, False)  # fmt: skip
    if hasattr(number, "parts"):  # a joint: each part's outcome found by this check alone, then its combination
        return _joint_consistent(number, outcome)
    from gspo_record.margin import Margin

    if isinstance(number, Margin):  # a mean against a declared margin
        inside = abs(number.estimate) <= number.margin
        return {"within": inside, "outside": not inside}.get(outcome, False)
    if hasattr(number, "allows"):  # a band, two rates, a split, a ladder's largest rung (gspo_record/kinds.py)
        return number.allows(outcome)
    if isinstance(number, Count):
        k, n = number.k * number.per, number.n
        high, low = k >= number.at_least * n, k <= number.at_most * n
        return {"at_least": high, "at_most": low and not high, "between": not high and not low}.get(outcome, False)
    a, b = (-1 if v is None else v for v in (number.a, number.b))
    return {"higher": a > b, "lower": a < b, "same": a == b != number.top,
            "both_top": a == b == number.top}.get(outcome, False)  # fmt: skip


def _joint_consistent(number, outcome: str) -> bool:
    """A joint outcome is its combination of the parts' outcomes, each the one :func:`consistent` allows of its
    number; an outcome declared ``shown`` needs a part whose outcome excludes its null."""
    from gspo_record.joint import COMBINES
    from gspo_record.statements import _EXCLUDES_NULL, reach

    parts = {}
    for name, part in number.parts:
        said = [o for o in reach(part) if consistent(part, o)]
        if len(said) != 1:
            return False
        parts[name] = said[0]
    excludes = [
        o in getattr(part, "shown", _EXCLUDES_NULL) for (_, part), o in zip(number.parts, parts.values(), strict=True)
    ]  # a joint or margin part: an outcome it shows
    shown = outcome not in number.shown or any(excludes)
    return COMBINES[number.combine].fn(parts) == outcome and shown


class Superseded:
    """What a summary's context holds in place of a superseded statement: any use of it fails the build, naming the
    statement that supersedes it (:meth:`Book.guard`)."""

    def __init__(self, id: str, newer: str):
        self._id, self._newer = id, newer

    def _fail(self, *_args, **_kw):
        raise StatementError(f"a summary renders {self._id}, which {self._newer} supersedes: render {self._newer}")

    __str__ = __format__ = __bool__ = __iter__ = _fail

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self._fail()


def statements_in(tree) -> list[Statement]:
    """Every statement in a nested context (dicts, lists, tuples), with their secondaries, in order of first sight."""
    out, stack = [], [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, Statement):
            out.append(x)
            if x.secondary is not None:
                stack.append(x.secondary)
        elif isinstance(x, Mapping):
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
    return out


class Book:
    """Every statement of one build, by id; what summaries and pages may render."""

    def __init__(self):
        self.statements: dict[str, Statement] = {}

    def add(self, statement: Statement) -> Statement:
        if statement.id in self.statements:
            raise StatementError(f"statement {statement.id} is made twice in one build")
        self.statements[statement.id] = statement
        return statement

    @classmethod
    def of(cls, tree) -> Book:
        """The statements of a build's context (:func:`statements_in`); one object seen twice counts once, two
        different statements with one id fail."""
        book = cls()
        for s in statements_in(tree):
            if s.id in book.statements and book.statements[s.id] is s:
                continue
            book.add(s)
        return book

    def guard(self, tree):
        """``tree`` (a build's context) with every superseded statement replaced by a :class:`Superseded`: what a
        summary template (the story, the recipe, At a glance) is rendered with, so rendering an older reading where a
        newer one exists fails the build. Dicts, lists and tuples are copied; everything else is shared."""
        if isinstance(tree, Statement):
            newer = self.superseded_by(tree.id)
            return Superseded(tree.id, newer) if newer else tree
        if isinstance(tree, dict):
            return {k: self.guard(v) for k, v in tree.items()}
        if isinstance(tree, (list, tuple)):
            return type(tree)(self.guard(v) for v in tree) if type(tree) in (list, tuple) else tree
        return tree

    def export(self) -> dict:
        """Every statement as the book prints it, by id (``docs/book.json``: the notebooks' take-aways read it)."""
        return {s.id: {"question": s.question, "outcome": s.outcome, "label": s.label, "number": str(s.number),
                       "sure": s.sure, "superseded_by": self.superseded_by(s.id)}
                for s in self.statements.values()}  # fmt: skip

    def problems(self) -> list[str]:
        """The lint's statement checks: each outcome against its own number (:func:`consistent`), each rule's
        reading of it, and each ``supersedes`` naming a statement of this build."""
        out = []
        for s in self.statements.values():
            if not consistent(s.number, s.outcome):
                out.append(f"{s.id}: outcome {s.outcome!r} cannot be said of {s.number}")
            out += [f"{s.id}: supersedes {old!r}, which this build does not make" for old in s.supersedes
                    if old not in self.statements]  # fmt: skip
        return out

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

    def expect(self, id, outcome: str) -> str:
        """Empty when statement ``id``'s outcome is ``outcome`` (what a written sentence assumes); StatementError
        otherwise, naming both, so the sentence is rewritten. ``id`` may also be a statement itself (its outcome or
        its rule's reading of it is compared); a rule's bare Verdict is refused: summaries render statements only."""
        if not isinstance(id, str | Statement):  # a rule's Verdict: words with no number to be about (issue 48)
            raise StatementError(f"prose assumes rule {getattr(id, 'rule', id)!r} reads {outcome!r}: a summary renders "
                                 "statements only; make the rule's verdict a statement (Rule.state)")  # fmt: skip
        s = self.summary(id if isinstance(id, str) else id.id)
        got, said = s.outcome, {s.outcome, s.rule_outcome}  # its own outcome, or its rule's reading of it
        id = s.id
        if outcome not in said:
            raise StatementError(f"prose assumes {id} reads {outcome!r}; the data give {got!r}: rewrite the sentence")
        return ""


def diff_statement(diff, id: str, question: str, words: dict[str, str], declared: bool = True):
    """A paired per-seed difference as a :class:`~gspo_record.statements.Statement` (``words``: above / below /
    none): the page's interval on the difference range of the metric ``diff`` is named for, as :func:`diff_cell`
    prints it (``diff``: a named Series); None when fewer than 2 seeds have both arms."""
    from gspo_lab.experiments.stats import seed_interval
    from gspo_record.endpoints import bounds_of, difference_bounds

    values = [float(v) for v in diff if v == v]
    if len(values) < 2:
        return None
    bounds = difference_bounds(bounds_of(getattr(diff, "name", None)))
    number = Interval.of(values, lambda x: seed_interval(x, bounds), bounds=bounds)
    return Statement(id, question, number, words, declared=declared)


def book_json(context: dict) -> str:
    """``docs/book.json``: At a glance's written rows and every statement, what the notebooks' take-aways quote
    (:mod:`gspo_record.takeaways`) so that they say what the book says."""
    glance = {r["n"]: {k: r[k] for k in ("title", "number", "verdict", "sure")} for r in context["glance"]}
    out = {"glance": glance, "statements": context["book"].export(), "prose": {"f12": context["f12_prose"]}}
    return json.dumps(out, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def bare_verdicts(tree, path: str = "") -> list[str]:
    """Where a section's context holds a rule's :class:`~gspo_record.rules.Verdict` that is not pending: a verdict
    rendered without the number it is about (issue 48: every verdict the book prints is a statement), as
    ``"path: rule outcome"``."""
    from gspo_record.rules import PENDING, Verdict

    if isinstance(tree, Verdict):
        return [] if tree.outcome == PENDING else [f"{path}: {tree.rule} {tree.outcome}"]
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list | tuple) else ()
    return [b for key, item in items for b in bare_verdicts(item, f"{path}/{key}" if path else str(key))]
