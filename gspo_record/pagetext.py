"""Reading a rendered page back: the units the referee lint (:mod:`gspo_record.lint`) reasons over.

A page is cut into *units*: each Markdown table row (with its table's header cells) and each sentence of prose. Two
things "sit together" when they are in one unit. The page's printed forms, read here and nowhere else:

    interval     ``0.37 [0.202, 0.538]``, optionally ``(n = 5)``, and the sign count stats version 4 prints beside a
                 paired interval: ``(n = 5; 5/5 > 0)`` (k of n seeds in the majority direction; ``> 1`` / ``< 1``
                 for a ratio). A Wilson count ``4/5 [0.376, 0.964]`` is not an interval of a mean and is skipped.
    definition   a term in bold (``**…**``) on the glossary page
    summary      At a glance's rule footnotes, a finding page's brief footnote and a "**Together**" paragraph: the
                 rule names (in backticks) each one reads

Sentences are split at ``.``/``!``/``?`` followed by white space and a capital, ``*``, ``(`` or ``[`` (a decimal
point is never followed by a space, so numbers survive; "e.g. X" splits early, which only makes a unit smaller).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Unit",
    "Interval",
    "units",
    "intervals",
    "first_interval_cell",
    "column_bounds",
    "strip_markup",
    "section",
    "bold_terms",
    "summaries",
    "clauses",
    "sign_counts",
    "ROBUSTNESS",
    "phrases",
    "phrase_signs",
]

NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
#: a mean, its bracket, and an optional ``(n = 5)`` or ``(n = 5; 5/5 > 0)``; not preceded by ``/`` (a Wilson count)
INTERVAL = re.compile(
    rf"(?<![\w./\-])(?P<mean>{NUM}) \[(?P<lo>{NUM}), (?P<hi>{NUM})\]"
    rf"(?: \(n = (?P<n>\d+)(?:; (?P<k>\d+)/(?P<m>\d+) (?P<dir>[<>]) (?P<null>{NUM}))?\))?"
)
#: a clause that reports a robustness reading ("without seed 60: no difference shown"): its verdict is read on other
#: data (4 seeds, another endpoint) than the printed interval, so a null phrase in it says nothing about that interval
ROBUSTNESS = re.compile(r"^(?:fragile: )?(?:without seed \d+|final evaluation(?: alone)?|training-reward AUC|"
                        r"late held-out accuracy): ")  # fmt: skip
#: a sign count as printed beside a paired interval or after a null phrase: ``5/5 > 0``, ``7/10 < 1``
SIGN_COUNT = re.compile(rf"(?<![\d/.])(?P<k>\d+)/(?P<n>\d+) (?P<dir>[<>]) (?P<null>{NUM})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(\[_])")
_SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")


@dataclass(frozen=True)
class Unit:
    """One table row or one sentence of ``page``, starting at ``line`` (1-based); ``cells`` and ``header`` for a row."""

    page: str
    line: int
    text: str
    section: str = ""
    cells: tuple[str, ...] = ()
    header: tuple[str, ...] = ()

    @property
    def is_row(self) -> bool:
        return bool(self.cells)


@dataclass(frozen=True)
class Interval:
    """One printed interval: its strings as printed (so equal means compare as printed) and its sign count, if any."""

    unit: Unit
    mean: str
    lo: str
    hi: str
    n: int | None
    sign: tuple[int, int, str, float] | None  # (k, n, ">" or "<", the null value)
    start: int  # offset in unit.text
    column: str = ""  # its table column's header; empty in prose

    @property
    def bracket(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)


def _cells(line: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in line.strip().strip("|").split("|"))


def units(page: str, text: str) -> list[Unit]:
    """Every table row and prose sentence of ``text`` (the HTML comment and headings skipped; a list item starts a new
    paragraph)."""
    out: list[Unit] = []
    lines = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group().count("\n"), text, flags=re.S).splitlines()
    header: tuple[str, ...] = ()
    para: list[tuple[int, str]] = []
    heading = ""

    def flush():
        if para:
            out.extend(_sentences(page, para, heading))
            para.clear()

    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("|"):
            flush()
            if _SEPARATOR.match(stripped):
                continue
            if i == 1 or not lines[i - 2].strip().startswith("|"):
                header = _cells(stripped)
                continue
            out.append(Unit(page, i, stripped, heading, _cells(stripped), header))
        elif not stripped or stripped.startswith("#"):
            flush()
            heading = stripped.lstrip("#").strip() if stripped else heading
        else:
            if re.match(r"[-*] |\d+\. ", stripped):
                flush()
            para.append((i, stripped))
    flush()
    return out


def _sentences(page: str, para: list[tuple[int, str]], heading: str) -> list[Unit]:
    text, starts = "", []
    for line_no, chunk in para:
        starts.append((len(text), line_no))
        text += chunk + " "
    out, pos = [], 0
    for piece in _SENTENCE_END.split(text.strip()):
        at = text.index(piece, pos)
        line = max(line for offset, line in starts if offset <= at)
        out.append(Unit(page, line, piece, heading))
        pos = at + len(piece)
    return out


def intervals(unit: Unit) -> list[Interval]:
    """The intervals printed in ``unit``, each with its column's header in a table row."""
    pieces = [(0, unit.text, "")]
    if unit.is_row:
        at, pieces = 0, []
        for i, cell in enumerate(unit.cells):
            at = unit.text.index(cell, at)
            pieces.append((at, cell, unit.header[i] if i < len(unit.header) else ""))
    out = []
    for at, text, column in pieces:
        for m in INTERVAL.finditer(text):
            sign = (int(m["k"]), int(m["m"]), m["dir"], float(m["null"])) if m["k"] else None
            n = int(m["n"]) if m["n"] else None
            out.append(Interval(unit, m["mean"], m["lo"], m["hi"], n, sign, at + m.start(), column))
    return out


#: a column header naming an endpoint in [0, 1] (held-out accuracy, training-reward AUC), and one naming a difference
_UNIT_COLUMN = re.compile(r"\bacc(?:\.|uracy)|\bAUC\b|training reward", re.I)
_DIFFERENCE_COLUMN = re.compile(r"−|\bdifference|\blift\b|\bgap\b|\bchange", re.I)


def column_bounds(header: str) -> tuple[float, float] | None:
    """The range a table column's header declares for its values: (0, 1) for an accuracy or a reward AUC, (−1, 1) for
    a difference of one; None when the header names neither (a ratio, a slope, an unnamed "paired difference")."""
    if not _UNIT_COLUMN.search(header):
        return None
    return (-1.0, 1.0) if _DIFFERENCE_COLUMN.search(header) else (0.0, 1.0)


def first_interval_cell(unit: Unit) -> int:
    """The index of the first of ``unit``'s cells that holds an interval (len(cells) when none does)."""
    return next((i for i, c in enumerate(unit.cells) if INTERVAL.search(c)), len(unit.cells))


def strip_markup(text: str) -> str:
    """``text`` without HTML comments, code spans, ``$…$`` math and link targets: what a reader reads as words."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    return re.sub(r"\]\([^)\s]*\)", "]", text)


def section(text: str, title: str) -> tuple[int, str]:
    """The section of ``text`` under the heading ``title`` (to the next heading of any level): (its first line, its
    text); (0, "") when the page has no such heading."""
    m = re.search(rf"^#+ {re.escape(title)}\s*$", text, flags=re.M)
    if not m:
        return 0, ""
    end = re.search(r"^#", text[m.end() :], flags=re.M)
    body = text[m.start() : m.end() + end.start()] if end else text[m.start() :]
    return text[: m.start()].count("\n") + 1, body


def bold_terms(glossary: str) -> str:
    """Every bold span of the glossary, joined: the text a term must appear in to count as defined."""
    return " \n ".join(re.findall(r"\*\*(.+?)\*\*", strip_markup(glossary)))


_RULE_NAME = re.compile(r"`([a-z0-9_]+\.[a-z0-9_]+)`")
#: a footnote naming the rules behind a summary: At a glance's ``[^r2b]: Rules behind this row: …`` and a finding
#: page's ``[^rules2b]: The rules behind this verdict: …`` (gspo_record/brief.py)
_RULE_NOTE = re.compile(r"^\[\^(rules|r)(\w+)\]: (?:Rules behind this row|The rules behind this verdict): (.*)$", re.M)


def summaries(text: str) -> list[tuple[str, int, tuple[str, ...]]]:
    """The summaries on ``text`` that name the rules they read: each At a glance row (from its footnote, or an older
    page's "Rules behind each row"), each finding page's brief (its footnote) and each "**Together**" paragraph, as
    (where, line, rule names)."""
    out = []
    first, glance = section(text, "At a glance")
    m = re.search(r"Rules behind each row.*?:(.*?)(?:\n\s*\n|$)", glance, flags=re.S)
    if m:
        line = first + glance[: m.start()].count("\n")
        for part in m.group(1).split(";"):
            row = re.match(r"\s*(\w+)\s", part)
            names = tuple(_RULE_NAME.findall(part))
            if row and names:
                out.append((f"At a glance row {row.group(1)}", line, names))
    for m in _RULE_NOTE.finditer(text):  # At a glance's footnotes, and each finding page's brief (issue 36)
        where = ("At a glance row " if m.group(1) == "r" else "brief of row ") + m.group(2)
        out.append((where, text[: m.start()].count("\n") + 1, tuple(_RULE_NAME.findall(m.group(3)))))
    for m in re.finditer(r"^\*\*Together\*\*(.*?)(?:\n\s*\n|$)", text, flags=re.M | re.S):
        names = tuple(_RULE_NAME.findall(m.group(1)))
        if names:
            out.append(("Together", text[: m.start()].count("\n") + 1, names))
    return out


def clauses(unit: Unit) -> list[tuple[int, str]]:
    """``unit`` cut into clauses, each as (offset in ``unit.text``, text): a row's cells, a sentence whole, each then
    cut at every ``;`` outside brackets (so ``(n = 5; 5/5 > 0)`` stays whole). A clause is the referee lint's finest
    place: "…: 0.0664 [-0.252, 0.371] (n = 5; 3/5 > 0), no difference shown; …" pairs the label with its interval."""
    pieces = [(0, unit.text)]
    if unit.is_row:
        at, pieces = 0, []
        for cell in unit.cells:
            at = unit.text.index(cell, at)
            pieces.append((at, cell))
    out = []
    for at, text in pieces:
        depth, start = 0, 0
        for i, ch in enumerate(text + ";"):
            depth += (ch in "([") - (ch in ")]")
            if ch == ";" and depth <= 0:
                if text[start:i].strip():
                    lead = len(text[start:i]) - len(text[start:i].lstrip())
                    out.append((at + start + lead, text[start:i].strip()))
                start, depth = i + 1, 0
    return out


def sign_counts(text: str) -> list[tuple[int, int, str, float]]:
    """Every sign count printed in ``text`` (beside an interval or alone), as (k, n, ">" or "<", null)."""
    return [(int(m["k"]), int(m["n"]), m["dir"], float(m["null"])) for m in SIGN_COUNT.finditer(text)]


def phrases(clause: str, words) -> list[tuple[int, str]]:
    """(offset, phrase) of every occurrence in ``clause`` of each of ``words`` (case-insensitive)."""
    low = clause.lower()
    return sorted((m.start(), p) for p in words for m in re.finditer(re.escape(p), low))


def _own_segment(tail: str) -> str:
    """``tail`` up to its first comma or semicolon outside brackets: the words a null phrase heads."""
    depth = 0
    for i, ch in enumerate(tail):
        depth += (ch in "([") - (ch in ")]")
        if ch in ",;" and depth <= 0:
            return tail[:i]
    return tail


def phrase_signs(unit: Unit, at: int, clause: str, where: int) -> list[tuple[int, int, str, float]]:
    """The sign counts a null phrase at ``where`` in ``clause`` speaks of: those it heads (its own count, e.g. "no
    direction effect shown (7/10 > 0)", up to the next comma), else the interval just before it in its clause ("0.06
    [-0.25, 0.37] (n = 5; 3/5 > 0), no difference shown"), else its clause's, else (a table row's label cell, which
    holds none) its row's."""
    own = sign_counts(_own_segment(clause[where:]))
    if own:
        return own
    found = intervals(unit)
    inside = [iv for iv in found if at <= iv.start < at + len(clause)]
    before = [iv for iv in inside if iv.start < at + where]
    return [iv.sign for iv in (before[-1:] or inside or (found if unit.is_row else [])) if iv.sign]
