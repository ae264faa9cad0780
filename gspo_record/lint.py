"""The referee lint (issue 35, item 2): words that contradict their own numbers, found on the rendered pages.

``lint(pages, facts)``: pages ``{"story.md": markdown, ...}``; facts what the build printed, or None. Each lint rule is
one function ``(pages, facts, rules) -> list[Problem]`` in :data:`LINT_RULES` with its id and a description. Some read
the text, some :class:`Facts` (records of what the build printed: the per-seed values behind an interval, the endpoint
behind a count, the rules behind a summary), some both; without facts the facts-only rules find nothing.

    id                         reads    how
    range                      both     a printed interval reaching outside its endpoint's declared ``bounds``;
                                        text (without facts): a table cell under a header that names an accuracy or
                                        reward AUC, in [0, 1], or a difference of one, in [-1, 1]
    null-with-consistent-sign  both     a null phrase (:data:`NULL_PHRASES`) speaking of a sign count k/k, k >= 5
                                        (``pagetext.phrase_signs``: its own count, else the interval before it in
                                        its clause, else its row's; robustness clauses skipped); facts: the label
                                        beside an interval whose >= 5 per-seed values all lie on one side of its null
    superseded                 both     a summary reading rule X while a rule read in the book declares
                                        ``supersedes=(X, ...)``; text: At a glance's and each brief's rule footnotes
                                        and "**Together**" paragraphs name their rules, and a rule is "read" when a page
                                        names it in backticks; facts: the verdicts the story and recipe print
    endpoint                   facts    a collapse count computed on another endpoint than the page declares, unless
                                        its printed text names that endpoint (a deliberate side-by-side, as in 2f)
    two-spreads                both     the same per-seed values printed with two different brackets; text: two table
                                        rows whose label cells (those before the first interval) nest, with the same
                                        mean (>= 3 significant digits, the same n where both print one) and two
                                        different brackets
    undefined-term             text     an ALL-CAPS token of 3+ letters/digits (MOMENT, CAP10) or a mixed-case
                                        acronym (MoE, AdamW) on the story or in At a glance that no bold span of the
                                        glossary contains (:data:`ALLOWED_TERMS` excepted)

The endpoint rule is facts-only: a count prints as ``4/5`` whatever endpoint made it (10f's "5/5 collapsed at rollout
120" reads the v1 flag, ``summary["collapsed"]``, and looks like a v2 count), so the build records it (PrintedCount).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import gspo_record.pagetext as pagetext
from gspo_record.facts import Facts, PrintedCount, PrintedInterval, SummaryReads
from gspo_record.rules import MIN_SEEDS_FOR_SIGN, Rule

__all__ = ["Problem", "PrintedInterval", "PrintedCount", "SummaryReads", "Facts", "LintRule", "LINT_RULES",
           "NULL_PHRASES", "ALLOWED_TERMS", "REPORTED_ONLY", "lint", "failures", "report"]  # fmt: skip

Pages = Mapping[str, str]

#: words that say an effect is absent; the null-with-consistent-sign rule looks for them (case-insensitive)
NULL_PHRASES = ("no difference", "not distinguishable", "no effect shown", "does not rise detectably",
                "no direction effect shown", "no norm or direction effect shown", "no lead shown", "no recovery shown",
                "adds nothing", "shows no trend", "no trend with")  # fmt: skip
#: ordinary abbreviations a reader needs no glossary for (undefined-term); keep short, each with its reason
ALLOWED_TERMS = frozenset({"CPU", "GPU"})  # hardware words of everyday use
#: lint rules a page build reports but does not fail on: none since issue 35's item 3 rewrote the labels they flagged
REPORTED_ONLY: tuple[str, ...] = ()


@dataclass(frozen=True)
class Problem:
    """One finding of the lint: its rule id, the page, where on it (a line, or the build's label), an excerpt, why."""

    rule: str
    page: str
    where: str
    excerpt: str
    why: str

    def __str__(self) -> str:
        return f"{self.page}:{self.where}: [{self.rule}] {self.why}\n    {self.excerpt}"


Check = Callable[[Pages, Facts, Mapping[str, Rule]], list[Problem]]


@dataclass(frozen=True)
class LintRule:
    """One lint rule: its id, a one-line description, and its check."""

    id: str
    description: str
    check: Check


def _excerpt(text: str, at: int = 0, width: int = 160) -> str:
    start = max(0, at - width // 3)
    return ("…" if start else "") + text[start : start + width].strip() + ("…" if start + width < len(text) else "")


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def check_range(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``range``: an interval reaching outside the closed range its endpoint can take."""
    out = []
    for iv in facts.intervals:
        lo, hi = iv.bounds
        if iv.lo < lo or iv.hi > hi:
            out.append(Problem("range", iv.page, iv.where, f"{_fmt(iv.value)} [{_fmt(iv.lo)}, {_fmt(iv.hi)}]",
                               f"interval leaves the endpoint's range [{lo}, {hi}]"))  # fmt: skip
    if facts.intervals:
        return out
    for page, text in pages.items():  # no facts collected: the ranges table columns declare by their headers
        for unit in (u for u in pagetext.units(page, text) if u.is_row):
            for iv in pagetext.intervals(unit):
                bounds = pagetext.column_bounds(iv.column)
                if bounds and (iv.bracket[0] < bounds[0] or iv.bracket[1] > bounds[1]):
                    why = f'interval leaves [{bounds[0]:g}, {bounds[1]:g}], the range of its column "{iv.column}"'
                    out.append(Problem("range", page, f"line {unit.line}", _excerpt(unit.text, iv.start), why))
    return out


def check_null_sign(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``null-with-consistent-sign``: a null phrase beside an effect every one of >= 5 seeds shows. Read per
    clause (:func:`~gspo_record.pagetext.clauses`); a robustness reading's clause is skipped (other data)."""
    out = []
    for page, text in pages.items():
        for unit in pagetext.units(page, text):
            for at, clause in pagetext.clauses(unit):
                if pagetext.ROBUSTNESS.match(clause):
                    continue
                for where, phrase in pagetext.phrases(clause, NULL_PHRASES):
                    hit = [s for s in pagetext.phrase_signs(unit, at, clause, where) if s[1] >= MIN_SEEDS_FOR_SIGN
                           and s[0] == s[1]]  # fmt: skip
                    if hit:
                        k, n, direction, null = hit[0]
                        why = (f'"{phrase}" beside an interval whose {k}/{n} seeds are all {direction} {null:g}: '
                               f'say "direction consistent ({k}/{n}), size unresolved"')  # fmt: skip
                        out.append(Problem("null-with-consistent-sign", page, f"line {unit.line}",
                                           _excerpt(unit.text, at + where), why))  # fmt: skip
    for iv in facts.intervals:
        phrase, x = next((p for _, p in pagetext.phrases(iv.label, NULL_PHRASES)), ""), iv.per_seed
        if phrase and len(x) >= MIN_SEEDS_FOR_SIGN and (all(v > iv.null for v in x) or all(v < iv.null for v in x)):
            side = ">" if x[0] > iv.null else "<"
            why = f'"{phrase}" where all {len(x)} seeds are {side} {iv.null:g}'
            why += f': say "direction consistent ({len(x)}/{len(x)}), size unresolved"'
            out.append(Problem("null-with-consistent-sign", iv.page, iv.where, iv.label, why))
    return out


def _superseding(rules: Mapping[str, Rule], read: set[str]) -> dict[str, str]:
    """Rule name -> a rule read on the page that supersedes it."""
    return {old: name for name in sorted(read) if name in rules for old in rules[name].supersedes}


def check_superseded(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``superseded``: a summary reading a verdict that a later declared reading in the book supersedes (a rule
    is read when a page names it in backticks or the build records it read)."""
    found: list[tuple[str, str, tuple[str, ...]]] = []  # (page, where, rules read)
    read = {name for names in facts.rules_read.values() for name in names}
    for page, text in pages.items():
        read.update(n for n in re.findall(r"`([\w.]+)`", text) if n in rules)
        found += [(page, f"{where} (line {line})", names) for where, line, names in pagetext.summaries(text)]
    found += [(s.page, s.where, s.rules) for s in facts.summaries]
    newer, out = _superseding(rules, read), []
    for page, where, names in found:
        for name in names:
            if name in newer:
                why = f"reads `{name}`, which `{newer[name]}` (read in the book) supersedes"
                out.append(Problem("superseded", page, where, ", ".join(names), why))
    return out


def check_endpoint(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``endpoint``: a collapse count computed on another endpoint than the page declares, not labelled so."""
    return [
        Problem(
            "endpoint",
            c.page,
            c.where,
            f"{c.k}/{c.n}",
            f"count read on endpoint {c.endpoint}; the page declares endpoint {facts.endpoint}",
        )  # fmt: skip
        for c in facts.counts
        if c.endpoint != facts.endpoint and not c.labelled
    ]


def _sig_digits(number: str) -> int:
    mantissa = number.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


def _labels(cells: tuple[str, ...], first_interval_cell: int) -> frozenset[str]:
    numeric = re.compile(r"^[\d\s.,/%×\-–()=n]*$")
    return frozenset(c.strip("`*").lower() for c in cells[:first_interval_cell] if c and not numeric.match(c))


def _text_two_spreads(pages: Pages) -> list[Problem]:
    seen: dict[str, list[tuple[frozenset[str], object]]] = defaultdict(list)  # mean -> [(labels, Interval)]
    out = []
    for page, text in pages.items():
        for unit in (u for u in pagetext.units(page, text) if u.is_row):
            found = pagetext.intervals(unit)
            if not found:
                continue
            labels = _labels(unit.cells, pagetext.first_interval_cell(unit))
            for iv in found:
                if _sig_digits(iv.mean) < 3 or len(labels) < 2:
                    continue
                for other_labels, other in seen[iv.mean]:
                    nested = labels <= other_labels or other_labels <= labels
                    same_n = iv.n is None or other.n is None or iv.n == other.n
                    if nested and same_n and other.unit.line != unit.line and other.bracket != iv.bracket:
                        why = (f"{iv.mean} printed as [{other.lo}, {other.hi}] at {other.unit.page} line "
                               f"{other.unit.line} and [{iv.lo}, {iv.hi}] here, rows labelled alike")  # fmt: skip
                        out.append(Problem("two-spreads", page, f"line {unit.line}", _excerpt(unit.text), why))
                        break
                seen[iv.mean].append((labels, iv))
    return out


def check_two_spreads(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``two-spreads``: one number (the same per-seed values) shown with two different brackets."""
    by_values: dict[tuple[float, ...], list[PrintedInterval]] = defaultdict(list)
    for iv in facts.intervals:
        if len(iv.per_seed) >= 2:
            by_values[tuple(round(v, 12) for v in iv.per_seed)].append(iv)
    out = []
    for group in by_values.values():
        first = group[0]
        for iv in group[1:]:
            if not (math.isclose(iv.lo, first.lo, rel_tol=1e-9) and math.isclose(iv.hi, first.hi, rel_tol=1e-9)):
                why = (f"the same per-seed values as {first.page} {first.where} "
                       f"[{_fmt(first.lo)}, {_fmt(first.hi)}], another bracket")  # fmt: skip
                out.append(Problem("two-spreads", iv.page, iv.where, f"{_fmt(iv.value)} [{_fmt(iv.lo)}, "
                                   f"{_fmt(iv.hi)}]", why))  # fmt: skip
    if not facts.intervals:  # no facts collected: the conservative text reading
        out += _text_two_spreads(pages)
    return out


#: ALL-CAPS of 3+ letters/digits starting with a letter, and mixed-case acronyms (2+ capitals and a small letter)
_CAPS = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{2,}(?![\w-])")
_MIXED = re.compile(r"(?<![\w-])(?=\w*[a-z])(?=(?:\w*[A-Z]){2})[A-Z]\w{1,7}(?![\w-])")


def check_terms(pages: Pages, facts: Facts, rules: Mapping[str, Rule]) -> list[Problem]:
    """Rule ``undefined-term``: a term on the story or At a glance that no bold span of the glossary defines."""
    defined = pagetext.bold_terms(pages.get("glossary.md", ""))
    glance = pagetext.section(pages.get("findings.md", ""), "At a glance")
    places = [("story.md", 1, pages.get("story.md", "")), ("findings.md", *glance)]
    out = []
    for page, first, text in places:
        plain = pagetext.strip_markup(text)
        reported: set[str] = set()
        for m in [*_CAPS.finditer(plain), *_MIXED.finditer(plain)]:
            term = m.group()
            if term in ALLOWED_TERMS or term in reported or re.search(rf"(?<![\w-]){term}s?(?![\w-])", defined):
                continue
            reported.add(term)
            line = first + plain[: m.start()].count("\n")
            count = len(re.findall(rf"(?<![\w-]){term}(?![\w-])", plain))
            out.append(Problem("undefined-term", page, f"line {line}", _excerpt(plain.replace("\n", " "), m.start()),
                               f"{term} ({count}×) is in no bold definition of the glossary"))  # fmt: skip
    return out


LINT_RULES: dict[str, LintRule] = {
    r.id: r
    for r in (
        LintRule("range", "an interval outside its endpoint's declared range", check_range),
        LintRule("null-with-consistent-sign", "a null phrase where all n >= 5 seeds share a sign", check_null_sign),
        LintRule("superseded", "a summary reading a verdict a later declared reading supersedes", check_superseded),
        LintRule(
            "endpoint", "a collapse count read on another endpoint than the page declares (facts)", check_endpoint
        ),
        LintRule("two-spreads", "one number shown with two different spreads", check_two_spreads),
        LintRule("undefined-term", "a term on the story or At a glance the glossary does not define", check_terms),
    )
}


def lint(pages: Pages, facts: Facts | None = None, *, rules: Mapping[str, Rule] | None = None) -> list[Problem]:
    """Every lint rule's problems on ``pages`` (page name -> rendered Markdown) and ``facts``, in :data:`LINT_RULES`
    order. ``rules`` (default: the registry :data:`~gspo_record.rules.RULES`) gives each verdict rule's
    ``supersedes``."""
    if rules is None:
        from gspo_record.rules import RULES as rules
    facts = facts or Facts()
    return [p for lint_rule in LINT_RULES.values() for p in lint_rule.check(pages, facts, rules)]


def failures(problems: list[Problem]) -> list[Problem]:
    """The problems a page build fails on: those of every lint rule not in :data:`REPORTED_ONLY`."""
    return [p for p in problems if p.rule not in REPORTED_ONLY]


def report(problems: list[Problem]) -> str:
    """Counts per lint rule, then every problem."""
    counts = {rid: sum(p.rule == rid for p in problems) for rid in LINT_RULES}
    head = [f"{rid}: {n}" for rid, n in counts.items()]
    return "\n".join(["referee lint: " + ", ".join(head), *map(str, problems)])
