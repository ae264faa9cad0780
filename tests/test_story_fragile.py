"""The story carries each statement's fragility where it renders it: for every statement the story assumes with
``expect()`` (and every one it prints through ``s()``, which must also be assumed), a fragile one has "fragile" said in
the same paragraph. The story is rendered on the stored results (the findings page's context, computed once) with a
book whose ``expect()`` leaves the statement's id in the text where the sentence assumes it."""

from __future__ import annotations

import re

import pytest

from gspo_record import page

_ID = re.compile("\x00([^\x00]*)\x00")


class _Marking:
    """``book`` with ``expect()`` rendering ``\\0id\\0`` where it is called (after checking, as the build does) and
    ``summary()`` (the templates' ``s``) recording the ids it is asked for."""

    def __init__(self, book):
        self._book, self.printed = book, set()

    def __getattr__(self, name):
        return getattr(self._book, name)

    def __getitem__(self, id):
        return self._book[id]

    def expect(self, id, outcome: str) -> str:
        self._book.expect(id, outcome)
        return f"\x00{id if isinstance(id, str) else id.id}\x00"

    def summary(self, id: str):
        self.printed.add(id)
        return self._book.summary(id)


@pytest.fixture(scope="module")
def story():
    """The story's paragraphs, each with the ids of the statements it assumes, and the book."""
    from gspo_record.f12 import lag_page

    ctx, _ = page.compute()
    book = ctx["book"]
    marking = _Marking(book)
    ctx = dict(ctx, book=marking)
    ctx["f12_prose"] = lag_page.prose(ctx)  # its story paragraph, rendered with the marking book too
    marking.printed.clear()  # its number and verdict macros are At a glance's; its s() calls read their own expect()s
    text = page.render(ctx, "story.md")
    paragraphs = [(set(_ID.findall(p)), _ID.sub("", p)) for p in re.split(r"\n\s*\n", text)]
    return paragraphs, marking.printed, book


def test_every_statement_the_story_prints_is_one_it_assumes(story):
    paragraphs, printed, _ = story
    assumed = set().union(*(ids for ids, _ in paragraphs))
    assert printed <= assumed, f"printed with s() but assumed by no expect(): {sorted(printed - assumed)}"


def test_a_fragile_statement_is_said_fragile_in_its_paragraph(story):
    paragraphs, _, book = story
    missing = [(id, text[:80]) for ids, text in paragraphs for id in sorted(ids)
               if book.summary(id).fragile and "fragile" not in text]  # fmt: skip
    assert not missing, f"fragile statements the story renders without saying so: {missing}"


def test_no_statement_is_assumed_outside_a_paragraph_of_prose(story):
    """An expect() in the template's preamble would be checked against the title, not the sentence it guards."""
    paragraphs, _, _ = story
    for ids, text in paragraphs:
        assert not ids or text.strip(), f"expect() with no sentence beside it: {sorted(ids)}"
        assert not ids or not text.lstrip().startswith("<!--"), f"expect() in the preamble: {sorted(ids)}"
