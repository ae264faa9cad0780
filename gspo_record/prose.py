"""Prose a person wrote, guarded by the data (issue 48, items 3 and 4).

A piece of prose is a Jinja macro in a finding's ``prose.md`` (e.g. ``gspo_record/f12/prose.md``): plain sentences whose
every number is a placeholder, taken from a statement (``s("f12c.gspo_vs_grpo").number``) or from the section's own
context. Each sentence declares the outcome it assumes, ``{{ expect("f12c.gspo_vs_grpo.drops", "none") }}``, which
renders nothing while the data agree and fails the build (:class:`~gspo_record.statements.StatementError`) when they
give another, so the sentence is rewritten, never silently re-labelled. ``s`` is :meth:`Book.summary
<gspo_record.book.Book.summary>`: a summary that names a superseded statement fails the build too.

:func:`literals` is the lint's check of the source: a number written into prose outside a placeholder is an error,
except inside an equation (``$…$``), a section number ("12c", "§3": digits joined to a letter are no number) and
:data:`ALLOWED`.
"""

from __future__ import annotations

import re
from pathlib import Path

from gspo_record.statements import StatementError

__all__ = ["ALLOWED", "literals", "why_fragile", "macros", "render"]

HERE = Path(__file__).parent
#: numbers prose may write as words of the language, not results: "one", "two" are words; these are digits that name
#: no measured quantity (a finding's own number is a section reference)
ALLOWED = frozenset({"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"})
_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|\$[^$]*\$|`[^`]*`|\[[^\]]*\]\([^)]*\)", re.S)
_NUMBER = re.compile(r"(?<![\w.\-−])[−-]?\d+(?:\.\d+)?(?:e[−-]?\d+)?(?![\w.]\w)")


def literals(source: str) -> list[str]:
    """The numbers written into ``source`` outside placeholders, tags, equations, code and links (a list of the
    literal strings, in order), less :data:`ALLOWED`: each one an error of the lint."""
    text = _CODE.sub(" ", source)
    return [m.group(0) for m in _NUMBER.finditer(text) if m.group(0) not in ALLOWED]


def why_fragile(statement) -> str:
    """What makes ``statement`` fragile, in words: "leaving out seed 62 or reading the training-reward AUC changes
    it" (its robustness readings, :mod:`gspo_record.robust`); empty for a robust one."""
    readings = list(dict.fromkeys(f.split(":")[0].strip() for f in statement.flips))
    words = [r.replace("without seed", "leaving out seed") if r.startswith("without") else f"reading the {r}"
             for r in readings]  # fmt: skip
    if not words:
        return ""
    return (", ".join(words[:-1]) + " or " if len(words) > 1 else "") + words[-1] + " changes it"


def _environment(book):
    import jinja2

    from gspo_record.fmt import FILTERS

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             autoescape=False)  # fmt: skip
    env.filters.update(FILTERS, why_fragile=why_fragile)
    env.globals.update(s=book.summary, expect=book.expect)
    return env


def macros(path: str | Path, book, **context):
    """The macros of prose file ``path`` (relative to gspo_record/, e.g. ``"f12/prose.md"``, or absolute) bound to
    ``book`` and ``context``; StatementError when its source writes a literal number (:func:`literals`)."""
    source = (HERE / path).read_text()
    if found := literals(source):
        raise StatementError(f"{path}: numbers written into prose, not placeholders: {found}")
    return _environment(book).from_string(source).make_module(context)


def render(path: str | Path, macro: str, book, **context) -> str:
    """One macro of a prose file, rendered and with its whitespace folded to single spaces (a table cell's text)."""
    return " ".join(str(getattr(macros(path, book, **context), macro)()).split())
