"""What the notebooks' "What to take away" quote from the book, so that a take-away says what the book says (issue
48, item 1): At a glance's written rows, the written prose and the statements, as the last page build wrote them to
``docs/book.json`` (``python -m gspo_record --check`` fails when that file differs from a regeneration).

    from gspo_record.takeaways import glance
    glance("10")["verdict"]    # finding 10's verdict, the words At a glance prints
"""

from __future__ import annotations

import functools
import json

from gspo_lab.paths import repo_root

__all__ = ["book", "glance", "prose", "statement"]


@functools.cache
def book() -> dict:
    """``docs/book.json`` as the last page build wrote it."""
    path = repo_root() / "docs" / "book.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: build the book with `python -m gspo_record`")
    return json.loads(path.read_text())


def glance(n: str) -> dict:
    """At a glance row ``n`` ("2", "10", …): its title, number, verdict and how sure."""
    rows = book()["glance"]
    if n not in rows:
        raise KeyError(f"At a glance has no row {n!r}; rows: {sorted(rows)}")
    return rows[n]


def prose(finding: str, part: str) -> str:
    """A finding's written prose (``prose("f12", "story")``)."""
    return book()["prose"][finding][part]


def statement(id: str) -> dict:
    """Statement ``id`` as the book prints it; KeyError when a newer statement supersedes it (quote that one)."""
    s = book()["statements"][id]
    if s["superseded_by"]:
        raise KeyError(f"statement {id} is superseded by {s['superseded_by']}: quote that one")
    return s
