"""Verdict rules: every verdict word on the findings page comes from one of these.

A :class:`Rule` declares its outcomes (key → the words the page prints), its named thresholds, where and when it was
declared, and a marker — the text whose first commit introduced it (:mod:`gspo_lab.experiments.provenance` finds
that commit). A finding's module holds its rule functions: pure functions of the stored table that return a
:class:`Verdict`, each tested on small synthetic tables that reach every outcome (``tests/test_rules.py``) and broken
on purpose by a mutant (``tests/test_mutants.py``). :data:`RULES` lists every rule; the page's "At a glance" and its
rules table are built from it.

Collapse counts are classified by one shared rule for a 5-seed arm (:func:`collapse_class`): *collapses* at ≥
``COLLAPSES_AT_LEAST`` of 5, *stable* at ≤ ``STABLE_AT_MOST`` of 5, *between* otherwise — the thresholds
``f2_mechanism`` declared. The one stricter rule is the target regime's (issue 9, declared before its runs): GSPO in
*none* of 5 (``TARGET_GSPO_AT_MOST``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "Rule",
    "Verdict",
    "RULES",
    "register",
    "COLLAPSES_AT_LEAST",
    "STABLE_AT_MOST",
    "TARGET_GSPO_AT_MOST",
    "collapse_class",
    "PENDING",
]

#: of 5 seeds: an arm *collapses* at >= 4 collapsed runs and is *stable* at <= 1 (f2_mechanism.toml, declared before
#: its runs); in between, neither can be said
COLLAPSES_AT_LEAST = 4
STABLE_AT_MOST = 1
#: the target regime (issue 9, before the runs): GRPO collapses in >= 4 of 5 and GSPO in none
TARGET_GSPO_AT_MOST = 0
#: the outcome of every rule while its data are missing
PENDING = "pending"


@dataclass(frozen=True)
class Verdict:
    """One rule's outcome on the stored data: its key, the words the page prints, and whether all cells finished."""

    rule: str
    outcome: str
    label: str
    provisional: str = ""  # e.g. "3 of 5 seeds finished"; empty when every declared cell is in
    post_hoc: bool = False  # the rule's thresholds were set after the results it classifies
    flips: tuple[str, ...] = ()  # the page's robustness readings under which it changes ("without seed 32: …")

    @property
    def fragile(self) -> bool:
        """True when a robustness reading (each seed left out, the secondary endpoint, the final evaluation alone;
        :mod:`gspo_lab.findings.robust`) changes the verdict."""
        return bool(self.flips)

    @property
    def mark(self) -> str:
        """`` (fragile)`` for a fragile verdict, else empty."""
        return " (fragile)" if self.flips else ""

    @property
    def when(self) -> str:
        """`` (post hoc: rule set after its results)`` for a post hoc rule, else empty."""
        return " (post hoc: rule set after its results)" if self.post_hoc else ""

    @property
    def tag(self) -> str:
        """`` (post hoc)`` for a post hoc rule, `` (fragile)`` for a fragile verdict, both as `` (post hoc; fragile)``,
        else empty: the story's short form of :attr:`when` and :attr:`mark`."""
        parts = [word for word, on in (("post hoc", self.post_hoc), ("fragile", self.fragile)) if on]
        return f" ({'; '.join(parts)})" if parts else ""

    @property
    def note(self) -> str:
        """`` (provisional: …)`` while cells are missing, else empty."""
        return f" (provisional: {self.provisional})" if self.provisional else ""

    @property
    def sure(self) -> str:
        """How the verdict was reached, in the words of the book's "how sure" column: ``declared`` (its rule was
        written before the results) or ``post hoc``; ``provisional`` added while cells are missing."""
        how = ("post hoc" if self.post_hoc else "declared") + (", provisional" if self.provisional else "")
        return how + (", fragile" if self.flips else "")

    def __str__(self) -> str:
        return self.label + self.note + self.mark


@dataclass(frozen=True)
class Rule:
    """A declared verdict rule: outcomes (key → label), thresholds (name → value), declaration, marker."""

    name: str
    finding: str
    outcomes: dict[str, str]
    thresholds: dict[str, float] = field(default_factory=dict)
    declared: str = ""  # where and when: "data/specs/f2_mechanism.toml, before its runs", or "after its results"
    marker: str = ""  # text whose first commit introduced the rule (provenance)
    post_hoc: bool = False  # its thresholds were set after the results it classifies
    specs: tuple[str, ...] = ()  # the specs whose stored cells it classifies (provenance: cells before / after it)
    supersedes: tuple[str, ...] = ()  # rules this later declared reading replaces (a 10-seed one its 5-seed one);
    # a summary that reads one of them while this rule is read on its page fails the referee lint (lint.superseded)

    def __post_init__(self):
        if isinstance(self.supersedes, str) or self.name in self.supersedes:
            raise ValueError(f"rule {self.name}: supersedes must be a tuple of other rules' names, got "
                             f"{self.supersedes!r}")  # fmt: skip

    def verdict(self, outcome: str, provisional: str = "") -> Verdict:
        if outcome == PENDING:
            return Verdict(self.name, PENDING, PENDING)
        if outcome not in self.outcomes:
            raise ValueError(f"rule {self.name}: outcome must be one of {sorted(self.outcomes)}, got {outcome!r}")
        return Verdict(self.name, outcome, self.outcomes[outcome], provisional, self.post_hoc)


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add ``rule`` to :data:`RULES` (names are unique)."""
    if rule.name in RULES and RULES[rule.name] != rule:
        raise ValueError(f"rule {rule.name!r} is declared twice")
    RULES[rule.name] = rule
    return rule


def collapse_class(k: int, n: int) -> str:
    """``collapses`` / ``stable`` / ``between`` for k collapsed runs of n (thresholds scaled from 5 seeds)."""
    if n == 0:
        return PENDING
    if k >= COLLAPSES_AT_LEAST * n / 5:
        return "collapses"
    if k <= STABLE_AT_MOST * n / 5:
        return "stable"
    return "between"


COLLAPSE_CLASS = register(
    Rule(
        "collapse.class",
        "2",
        {"collapses": "collapses", "stable": "does not collapse", "between": "between the thresholds"},
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST},
        declared="data/specs/f2_mechanism.toml, before its runs (scaled to n seeds: >= 4n/5, <= n/5)",
        marker="this arm collapses on <= 1/5 seeds and its largest gradient norm falls",
        specs=("f2_mechanism",),
    )
)


def class_verdict(k: int, n: int) -> Verdict:
    """Rule ``collapse.class`` on k collapsed runs of n (:func:`collapse_class`)."""
    return COLLAPSE_CLASS.verdict(collapse_class(k, n))
