"""Verdict rules: every verdict word on the findings page comes from one of these.

A :class:`Rule` declares its outcomes (key → the words the page prints), its named thresholds, where and when it was
declared, and a marker — the text whose first commit introduced it (:mod:`gspo_record.provenance` finds
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

#: frames of this module make statements; where a verdict was read is the caller (gspo_record/reread.py)
MAKES_STATEMENTS = True
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
    "MIN_SEEDS_FOR_SIGN",
    "consistent",
    "majority",
    "consistent_label",
    "null_clause",
    "null_words",
]

#: of 5 seeds: an arm *collapses* at >= 4 collapsed runs and is *stable* at <= 1 (f2_mechanism.toml, declared before
#: its runs); in between, neither can be said
COLLAPSES_AT_LEAST = 4
STABLE_AT_MOST = 1
#: the target regime (issue 9, before the runs): GRPO collapses in >= 4 of 5 and GSPO in none
TARGET_GSPO_AT_MOST = 0
#: the outcome of every rule while its data are missing
PENDING = "pending"
#: fewest paired seeds for "all seeds share a sign" to overrule a null label (issue 35): at n = 5 all five on one
#: side happens by chance with probability 2 × 0.5^5 = 0.0625 under a symmetric null
MIN_SEEDS_FOR_SIGN = 5


def consistent(values, null: float = 0.0) -> str:
    """``k/k > null`` (or ``<``) when all of at least :data:`MIN_SEEDS_FOR_SIGN` paired per-seed ``values`` lie on one
    side of ``null`` (NaN dropped); empty otherwise. The sign count a null label must then carry (issue 35)."""
    x = [float(v) for v in values if v == v]
    n = len(x)
    if n < MIN_SEEDS_FOR_SIGN:
        return ""
    if all(v > null for v in x):
        return f"{n}/{n} > {null:g}"
    if all(v < null for v in x):
        return f"{n}/{n} < {null:g}"
    return ""


def majority(values, null: float = 0.0) -> str:
    """The sign count of the majority side of ``null``: ``k/n > 0`` or ``k/n < 0`` (``>`` on a tie)."""
    x = [float(v) for v in values if v == v]
    above, below = sum(v > null for v in x), sum(v < null for v in x)
    return f"{above}/{len(x)} > {null:g}" if above >= below else f"{below}/{len(x)} < {null:g}"


def consistent_label(count: str) -> str:
    """The words a null outcome prints when every seed shares a sign (``count`` from :func:`consistent`)."""
    return f"direction consistent ({count}), size unresolved"


def null_words(rule: Rule, values, null: float = 0.0) -> dict[str, str]:
    """The words :meth:`Rule.state` gives each statement outcome (through ``rule.reads``), the one read as the rule's
    :attr:`~Rule.null` outcome qualified as :meth:`Rule.verdict` qualifies it for the per-seed ``values``: "direction
    consistent (5/5 > 0), size unresolved" when they all share a side of ``null`` (issue 35)."""
    reads = rule.reads or {o: o for o in rule.outcomes}  # a joint's combination gives the rule's outcomes
    words = {o: rule.outcomes[r] for o, r in reads.items()}
    count = consistent(values, null)
    for o, r in reads.items():
        if r == rule.null and count:
            words[o] = consistent_label(count)
        elif r == rule.null and rule.null_count:
            words[o] = f"{words[o]} ({rule.null_count} {majority(values, null)})"
    return words


def null_clause(what: str, values: list, below: int = 0) -> str:
    """The words for effects of one kind (``what``: "norm") that no interval showed, each with its sign count
    (:func:`majority`): "no norm effect shown (3/5 > 0, 4/5 < 0)"; "norm effects direction consistent (5/5 > 0,
    5/5 > 0), size unresolved" when every effect's seeds share a side; "norm effects unresolved by interval (5/5 > 0,
    3/5 > 0: sign consistent in 1 of 2)" when some do; "norm effects: 1 of 2 below 0 by interval (…)" when
    ``below`` of them were shown below 0. ``values``: each effect's paired per-seed values."""
    counts = ", ".join(majority(v) for v in values)
    if below:
        return f"{what} effects: {below} of {len(values)} below 0 by interval ({counts})"
    agree = sum(bool(consistent(v)) for v in values)
    if agree and agree == len(values):
        return f"{what} effects direction consistent ({counts}), size unresolved"
    if agree:
        return f"{what} effects unresolved by interval ({counts}: sign consistent in {agree} of {len(values)})"
    return f"no {what} effect shown ({counts})"


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
    def rule_outcome(self) -> str:
        """The outcome key (as a :class:`~gspo_record.statements.Statement`'s reading of its rule is named)."""
        return self.outcome

    @property
    def fragile(self) -> bool:
        """True when a robustness reading (each seed left out, the secondary endpoint, the final evaluation alone;
        :mod:`gspo_record.robust`) changes the verdict."""
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

    @property
    def short(self) -> str:
        """As a table cell prints it (a statement's :attr:`~gspo_record.statements.Statement.short` alike)."""
        return str(self)

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
    null: str = ""  # the outcome that says "not shown" (e.g. "none"): printed as "direction consistent (k/k > 0),
    # size unresolved" when the per-seed values given to :meth:`verdict` all share a sign (n >= MIN_SEEDS_FOR_SIGN)
    null_count: str = ""  # when set (e.g. "lift"), a null label carries its own sign count, "no recovery shown (lift
    # 3/5 < 0)": where its row prints other intervals, the count says which one the words read (lint)
    supersedes: tuple[str, ...] = ()  # rules this later declared reading replaces (a 10-seed one its 5-seed one);
    # a summary that reads one of them while this rule is read on its page fails the referee lint (lint.superseded)
    reads: dict[str, str] = field(default_factory=dict)  # a statement's outcome -> this rule's (:meth:`state`)

    def __post_init__(self):
        if isinstance(self.supersedes, str) or self.name in self.supersedes:
            raise ValueError(f"rule {self.name}: supersedes must be a tuple of other rules' names, got "
                             f"{self.supersedes!r}")  # fmt: skip
        if self.null and self.null not in self.outcomes:
            raise ValueError(f"rule {self.name}: null must be one of {sorted(self.outcomes)}, got {self.null!r}")

    def verdict(self, outcome: str, provisional: str = "", *, values=None, null: float = 0.0) -> Verdict:
        """The verdict for ``outcome``. ``values``: the paired per-seed values the outcome was read on; when the
        outcome is the rule's :attr:`null` one and they all share a side of ``null`` (1 for a ratio), the label says
        so (:func:`consistent_label`) instead of the null outcome's words; the outcome key is unchanged."""
        if outcome == PENDING:
            return Verdict(self.name, PENDING, PENDING)
        if outcome not in self.outcomes:
            raise ValueError(f"rule {self.name}: outcome must be one of {sorted(self.outcomes)}, got {outcome!r}")
        label = self.outcomes[outcome]
        count = consistent(values, null) if values is not None and outcome == self.null else ""
        if count:
            label = consistent_label(count)
        elif values is not None and outcome == self.null and self.null_count:
            label = f"{label} ({self.null_count} {majority(values, null)})"
        return Verdict(self.name, outcome, label, provisional, self.post_hoc)

    def state(
        self,
        id: str,
        question: str,
        number,
        *,
        provisional: str = "",
        supersedes: tuple[str, ...] = (),
        secondary=None,
        words: dict[str, str] | None = None,
        reads: dict[str, str] | None = None,
    ):
        """The :class:`~gspo_record.statements.Statement` this rule makes of ``number`` (an Interval, Count,
        Boundaries, or a :class:`~gspo_record.joint.Joint` of them, whose combination gives this rule's outcomes):
        its outcome computed from the number, read as this rule's outcome through :attr:`reads`, worded by the rule's
        labels (or ``words``, per statement outcome). The rule's verdict is read too, so the robustness
        pass sees it and marks the statement fragile where a re-reading changes it."""
        from gspo_record.statements import Statement, outcome_of

        reads = reads or self.reads or ({o: o for o in number.reach} if hasattr(number, "reach") else {})
        if not reads:
            raise ValueError(f"rule {self.name}: state() needs reads, the statement outcome -> rule outcome map")
        verdict = self.verdict(reads[outcome_of(number)], provisional)
        words = words or {o: self.outcomes[r] for o, r in reads.items()}
        return Statement(id, question, number, words, declared=not self.post_hoc, flips=verdict.flips,
                         supersedes=supersedes, secondary=secondary, rule=self.name, reads=reads,
                         provisional=provisional)  # fmt: skip


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
        {"collapses": "collapses", "stable": "stable", "between": "between the thresholds"},
        {"COLLAPSES_AT_LEAST": COLLAPSES_AT_LEAST, "STABLE_AT_MOST": STABLE_AT_MOST},
        declared="data/specs/f2_mechanism.toml, before its runs (scaled to n seeds: >= 4n/5, <= n/5)",
        marker="this arm collapses on <= 1/5 seeds and its largest gradient norm falls",
        specs=("f2_mechanism",),
    )
)


def class_verdict(k: int, n: int, id: str = ""):
    """Rule ``collapse.class`` on k collapsed runs of n (:func:`collapse_class`); with ``id``, the statement about
    that count (a page verdict), else the rule's verdict (a label inside a table cell beside its count)."""
    if not id or not n:
        return COLLAPSE_CLASS.verdict(collapse_class(k, n))
    from gspo_record.statements import Count

    return COLLAPSE_CLASS.state(id, "does this arm collapse (>= 4 of 5 seeds, scaled)?",
                                Count(k, n, COLLAPSES_AT_LEAST, STABLE_AT_MOST),
                                reads={"at_least": "collapses", "at_most": "stable", "between": "between"})  # fmt: skip
