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

__all__ = ["ALLOWED", "literals", "sep", "why_fragile", "fragile_note", "fragile_brief", "macros", "render"]

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


def sep(loop, between: str = "; ", last: str = "") -> str:
    """The separator after a loop item (the templates' ``sep``): ``between``, or ``last`` after the final one."""
    return last if loop.last else between


def _either(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]


def why_fragile(statement) -> str:
    """What makes ``statement`` (or a verdict) fragile, in words: "leaving out seed 62 or reading the training-reward
    AUC changes it", "leaving out any one of seeds 10, 11 or 13 changes it" (its robustness readings,
    :mod:`gspo_record.robust`); empty for a robust one."""
    readings = list(dict.fromkeys(f.split(":")[0].strip() for f in statement.flips))
    seeds = [r.removeprefix("without seed ").strip() for r in readings if r.startswith("without seed")]
    words = [f"reading the {r}" for r in readings if not r.startswith("without seed")]
    if len(seeds) == 1:
        words.insert(0, f"leaving out seed {seeds[0]}")
    elif len(seeds) == 2:
        words.insert(0, f"leaving out seed {seeds[0]} or {seeds[1]}")
    elif seeds:
        words.insert(0, f"leaving out any one of seeds {_either(seeds)}")
    return f"{_either(words)} changes it" if words else ""


def fragile_note(statement, lead: str) -> str:
    """``lead`` + ": " + :func:`why_fragile` for a fragile statement ("…, and that ordering is fragile: reading the
    training-reward AUC changes it"), empty for a robust one: prose says "fragile" once, with its reason."""
    return f"{lead}: {why_fragile(statement)}" if statement.flips else ""


def fragile_brief(statements, form: str = "{}", full: bool = False) -> str:
    """``form`` around "fragile: one seed left out or reading the training-reward AUC changes it" for the fragile ones
    among ``statements`` (their flips in short words; ``full``: :func:`why_fragile`'s, seeds named), empty when none is:
    a summary says "fragile" once where it renders a fragile statement, the template deciding nothing."""
    fragile = [s for s in statements if s.flips]
    if not fragile:
        return ""
    if full:
        return form.format("fragile: " + "; ".join(dict.fromkeys(why_fragile(s) for s in fragile)))
    readings = list(dict.fromkeys(f.split(":")[0].strip() for s in fragile for f in s.flips))
    other = [r for r in readings if not r.startswith("without seed")]
    words = (["one seed left out"] if len(other) < len(readings) else []) + (
        ["reading the " + " or the ".join(other)] if other else [])  # fmt: skip
    return form.format(f"fragile: {' or '.join(words)} changes it")


def _environment(book):
    import jinja2

    from gspo_record.fmt import FILTERS

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             autoescape=False)  # fmt: skip
    env.filters.update(FILTERS, why_fragile=why_fragile, fragile_note=fragile_note)
    env.globals.update(s=book.summary, expect=book.expect, sep=sep)
    return env


def macros(path: str | Path, book, **context):
    """The macros of prose file ``path`` (relative to gspo_record/, e.g. ``"f12/prose.md"``, or absolute) bound to
    ``book`` and ``context`` (guarded: rendering a superseded statement fails, :meth:`~gspo_record.book.Book.guard`);
    StatementError when its source writes a literal number (:func:`literals`)."""
    source = (HERE / path).read_text()
    if found := literals(source):
        raise StatementError(f"{path}: numbers written into prose, not placeholders: {found}")
    return _environment(book).from_string(source).make_module(book.guard(context))


def render(path: str | Path, macro: str, book, **context) -> str:
    """One macro of a prose file, rendered and with its whitespace folded to single spaces (a table cell's text)."""
    return " ".join(str(getattr(macros(path, book, **context), macro)()).split())
