"""The book of one build: every statement its sections made, by id (issue 48, items 1-2).

:meth:`Book.of` collects them from the build's context. :meth:`Book.summary` — what At a glance, the story, the
recipe and the notebooks' take-aways render — refuses a superseded statement; :meth:`Book.page` (a finding page)
renders it marked "superseded by …". Written prose declares the outcome it assumes (:meth:`Book.expect`), and the
build fails when the data give another, so the sentence is rewritten, never silently re-labelled.
:meth:`Book.problems` is the statement lint: each outcome against its own number, each ``supersedes`` resolved.
"""

from __future__ import annotations

from collections.abc import Mapping

from gspo_record.statements import Statement, StatementError, consistent

__all__ = ["Book", "statements_in"]


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

    def expect(self, id: str, outcome: str) -> str:
        """Empty when statement ``id``'s outcome is ``outcome`` (what a written sentence assumes); StatementError
        otherwise, naming both, so the sentence is rewritten."""
        got = self.summary(id).outcome
        if got != outcome:
            raise StatementError(f"prose assumes {id} reads {outcome!r}; the data give {got!r}: rewrite the sentence")
        return ""
