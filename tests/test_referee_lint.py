"""The referee lint (gspo_record/lint.py, issue 35 item 2): each lint rule passes a small clean book and catches
a mutant page (or mutant facts) made to break it; the ``supersedes`` field of a verdict rule; the ``--lint`` flag.

(tests/test_lint.py is ruff's; this file is the findings pages' referee.)"""

from __future__ import annotations

import dataclasses
import math

import pytest

from gspo_lab.experiments.endpoint_range import ACCURACY, DIFFERENCE, RATIO
from gspo_record import pagetext
from gspo_record.facts import Facts, PrintedCount, PrintedInterval, SummaryReads
from gspo_record.lint import LINT_RULES, NULL_PHRASES, lint
from gspo_record.page import PAGES
from gspo_record.rules import Rule

GLOSSARY = """# Glossary

- **GRPO** — token ratios. **GSPO** — one ratio per response.
- **MoE** — mixture of experts. **CAP10** — a branch under a cap of 10.
"""
STORY = """# The story

GSPO − GRPO on the MoE: 0.37 [0.202, 0.538] (n = 5; 5/5 > 0), *higher*. A CAP10 branch protects. Runs on a laptop CPU.
"""
FINDINGS = """# Findings

## At a glance

| finding | the toy shows | verdict |
| --- | --- | --- |
| **2. Collapse** | GRPO 8/10, GSPO 0/10 | GRPO collapses where GSPO does not |
| **10. Why** | MoE 2×2 at 10 seeds | mixed |

[^r2]: Rules behind this row: `x.ten`.
[^r10]: Rules behind this row: `y.ten`.

## How to read this page

| model | arm | late acc. |
| --- | --- | --- |
| MoE | GRPO | 0.0906 [0.0543, 0.489] (n = 5) |

| model | comparison | paired difference | reading |
| --- | --- | --- | --- |
| dense | GSPO − GRPO | 0.0678 [-0.224, 0.251] (n = 5; 3/5 > 0) | no difference shown |

The direction effect is 0.0456 [-0.152, 0.267] (n = 5; 4/5 > 0), no difference shown. Later, MoE GRPO again: 0.0906
[0.0543, 0.489] (n = 5).

| model | quantity | GRPO ÷ GSPO | reading |
| --- | --- | --- | --- |
| dense | noise ratio | 1.72 [1.1, 2.23] (n = 5; 5/5 > 1) | above 1 |

**Together** (rule `y.ten`): mixed.
"""
BOOK = {"story.md": STORY, "findings.md": FINDINGS, "glossary.md": GLOSSARY, "recipe.md": "# Recipe\n"}
#: verdict rules of the clean book: x.ten and y.ten are ten-seed readings; y.ten supersedes y.five (not read)
RULES = {
    "x.five": Rule("x.five", "2", {"a": "a"}),
    "x.ten": Rule("x.ten", "2", {"a": "a"}, supersedes=("x.five",)),
    "y.five": Rule("y.five", "10", {"a": "a"}),
    "y.ten": Rule("y.ten", "10", {"a": "a"}, supersedes=("y.five",)),
}
#: facts of a clean build: in-range intervals, distinct per-seed values, v2 counts, summaries reading current rules
FACTS = Facts(
    intervals=(
        PrintedInterval("findings.md", "§2 MoE GRPO", 0.0906, 0.0543, 0.489, ACCURACY, (0.05, 0.06, 0.07, 0.08, 0.19)),
        PrintedInterval(
            "findings.md",
            "§10 B − C",
            0.0678,
            -0.224,
            0.251,
            DIFFERENCE,
            (0.1, -0.2, 0.3, -0.1, 0.24),
            label="no difference shown",
        ),  # fmt: skip
        PrintedInterval(
            "findings.md", "§6 ratio", 1.72, 1.1, 2.23, RATIO, (1.2, 1.5, 2.0, 1.9, 2.0), null=1.0, label="above 1"
        ),  # fmt: skip
    ),
    counts=(
        PrintedCount("findings.md", "§10f trunks", 4, 5, "v2"),
        PrintedCount("findings.md", "§2f first flag column", 5, 5, "v1", labelled=True),
    ),  # fmt: skip
    summaries=(SummaryReads("story.md", "question 3", ("y.ten",)),),
    rules_read={"story.md": ("y.ten",)},
)


def _only(problems, rule):
    return [p for p in problems if p.rule == rule]


def test_the_clean_book_passes_every_rule():
    assert lint(BOOK, FACTS, rules=RULES) == []
    assert lint(BOOK, rules=RULES) == []


def test_the_table_of_lint_rules():
    assert list(LINT_RULES) == ["range", "null-with-consistent-sign", "superseded", "endpoint", "two-spreads",
                                "undefined-term"]  # fmt: skip
    for rid, rule in LINT_RULES.items():
        assert rule.id == rid and rule.description and "\n" not in rule.description


# range -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "interval",
    [
        PrintedInterval("findings.md", "§2 dense GRPO", 0.198, 0.0502, 1.46, ACCURACY),  # issue 35's accuracy
        PrintedInterval("findings.md", "§2e", 0.0664, -4.19, 0.308, DIFFERENCE),  # issue 35's difference
        PrintedInterval("findings.md", "§6", 0.5, -0.1, 2.0, RATIO),
    ],
)
def test_range_catches_an_interval_outside_its_bounds(interval):
    mutant = dataclasses.replace(FACTS, intervals=(*FACTS.intervals, interval))
    (problem,) = _only(lint(BOOK, mutant, rules=RULES), "range")
    assert (problem.page, problem.where) == (interval.page, interval.where)


@pytest.mark.parametrize(
    "old, new",
    [
        ("0.0906 [0.0543, 0.489]", "0.198 [0.0502, 1.46]"),  # an accuracy above 1
        ("| late acc. |\n", "| late acc. |\n| --- | --- | --- |\n| MoE | cispo | 1.56e-04 [-2.77e-04, 5.90e-04] |\n"),
        ("| paired difference |", "| paired difference in held-out accuracy |"),  # now a difference of accuracies...
    ],
)
def test_range_text_reading_catches_a_mutant_table(old, new):
    mutant = FINDINGS.replace(old, new, 1)
    if "held-out accuracy |" in new:
        mutant = mutant.replace("0.0678 [-0.224, 0.251]", "0.0664 [-4.19, 0.308]")  # ...whose interval leaves (-1, 1)
    assert mutant != FINDINGS
    (problem,) = _only(lint({**BOOK, "findings.md": mutant}, rules=RULES), "range")
    assert problem.page == "findings.md" and "range of its column" in problem.why


def test_column_bounds():
    assert pagetext.column_bounds("late held-out acc. (mean [95 % interval])") == ACCURACY
    assert pagetext.column_bounds("training-reward AUC") == ACCURACY
    assert pagetext.column_bounds("branch − trunk, late held-out acc. (seeds 60-64)") == DIFFERENCE
    for unnamed in ("paired difference (mean [95 % interval], n)", "noise ratio GRPO ÷ GSPO", "the toy shows"):
        assert pagetext.column_bounds(unnamed) is None


def test_range_reads_facts_alone_when_given():
    """With facts the text reading stands down: the facts' bounds are the declared ones."""
    mutant = FINDINGS.replace("0.0906 [0.0543, 0.489]", "0.198 [0.0502, 1.46]")
    assert _only(lint({**BOOK, "findings.md": mutant}, FACTS, rules=RULES), "range") == []


def test_range_accepts_an_interval_on_its_bounds():
    edge = PrintedInterval("findings.md", "§x", 0.0, 0.0, 0.0, ACCURACY)  # an absorbing collapse: every seed 0.000
    unbounded = PrintedInterval("findings.md", "§y", 5.0, -math.inf, 9.0)
    assert _only(lint(BOOK, Facts(intervals=(edge, unbounded)), rules=RULES), "range") == []


# null-with-consistent-sign ---------------------------------------------------------------------------------------


def test_null_phrases_include_the_issues():
    for phrase in ("no difference", "not distinguishable", "no effect shown", "does not rise detectably"):
        assert phrase in NULL_PHRASES


@pytest.mark.parametrize(
    "old, new",
    [
        ("(n = 5; 3/5 > 0) | no difference shown", "(n = 5; 5/5 > 0) | no difference shown"),  # same table row
        ("(n = 5; 4/5 > 0), no difference shown", "(n = 5; 5/5 > 0), no difference shown"),  # same sentence
        ("(n = 5; 5/5 > 1) | above 1", "(n = 5; 5/5 > 1) | not distinguishable from 1"),  # a ratio's sign count
    ],
)
def test_null_with_consistent_sign_catches_a_mutant_page(old, new):
    assert old in FINDINGS
    pages = {**BOOK, "findings.md": FINDINGS.replace(old, new)}
    (problem,) = _only(lint(pages, rules=RULES), "null-with-consistent-sign")
    assert problem.page == "findings.md" and "5/5" in problem.why and "size unresolved" in problem.why


def test_null_with_consistent_sign_needs_five_seeds_and_one_unit():
    four = FINDINGS.replace("(n = 5; 3/5 > 0) | no difference shown", "(n = 4; 4/4 > 0) | no difference shown")
    apart = FINDINGS.replace("(n = 5; 4/5 > 0), no difference shown", "(n = 5; 5/5 > 0). No difference shown")
    for text in (four, apart):
        assert _only(lint({**BOOK, "findings.md": text}, rules=RULES), "null-with-consistent-sign") == []


def test_null_with_consistent_sign_reads_facts():
    dense = FACTS.intervals[1]
    mutant = dataclasses.replace(dense, per_seed=(0.1, 0.2, 0.3, 0.05, 0.24))  # every seed > 0, label still null
    ratio = dataclasses.replace(FACTS.intervals[2], label="not distinguishable from 1")  # every seed > 1
    facts = dataclasses.replace(FACTS, intervals=(FACTS.intervals[0], mutant, ratio))
    assert [p.where for p in _only(lint(BOOK, facts, rules=RULES), "null-with-consistent-sign")] == [
        "§10 B − C",
        "§6 ratio",
    ]


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


CLAUSE_BOOK = """# Findings

| arm | norm effect | direction effect | verdict | robustness |
| --- | --- | --- | --- | --- |
{row}

Per comparison: A − B: 0.1 [0.02, 0.2] (n = 5; {a}/5 > 0), higher; C − D: 0.06 [-0.25, 0.37] (n = 5; {c}/5 > 0), no
difference shown.
"""
NORM, DIRECTION = "0.2 [0.1, 0.3] (n = 5; 5/5 > 0)", "0.01 [-0.1, 0.1] (n = 5; {d}/5 > 0)"


@pytest.mark.parametrize(
    "row, a, c, caught",
    [
        # the null phrase carries its own count: the 5/5 norm effect in its row is not what it speaks of
        (_row("X", NORM, DIRECTION.format(d=3), "size; no direction effect shown (3/5 > 0)", "robust"), 5, 3, 0),
        (_row("X", NORM, DIRECTION.format(d=5), "size; no direction effect shown (5/5 > 0)", "robust"), 5, 3, 1),
        # a robustness reading's clause reads other data (4 seeds): skipped
        (
            _row(
                "X",
                NORM,
                DIRECTION.format(d=3),
                "protects (fragile)",
                "fragile: without seed 60: no difference shown; final evaluation alone: no difference shown",
            ),
            5,
            3,
            0,
        ),  # fmt: skip
        # a label cell without a count speaks of its row's intervals
        (_row("X", NORM, DIRECTION.format(d=3), "no difference shown", "robust"), 5, 3, 1),
        # in a list, a label speaks of the interval just before it in its clause
        (_row("X", NORM, DIRECTION.format(d=3), "size", "robust"), 5, 5, 1),
    ],
)
def test_null_with_consistent_sign_reads_each_phrase_in_its_clause(row, a, c, caught):
    page = CLAUSE_BOOK.format(row=row, a=a, c=c)
    found = _only(lint({**BOOK, "findings.md": page}, rules=RULES), "null-with-consistent-sign")
    assert len(found) == caught, found


def test_clauses_cut_cells_and_semicolons_outside_brackets():
    unit = pagetext.units("p.md", "One: 0.1 [0.0, 0.2] (n = 5; 5/5 > 0), higher; two: none (x; y).\n")[0]
    assert [c for _, c in pagetext.clauses(unit)] == ["One: 0.1 [0.0, 0.2] (n = 5; 5/5 > 0), higher",
                                                      "two: none (x; y)."]  # fmt: skip
    at, second = pagetext.clauses(unit)[1]
    assert unit.text[at:].startswith(second)
    assert pagetext.sign_counts("a (n = 5; 5/5 > 0) and (7/10 < 1), 4/5 [0.3, 0.9]") == [(5, 5, ">", 0.0),
                                                                                       (7, 10, "<", 1.0)]  # fmt: skip


# superseded ------------------------------------------------------------------------------------------------------


def test_rule_supersedes_defaults_empty_and_is_checked():
    assert Rule("a.b", "1", {"x": "x"}).supersedes == ()
    assert RULES["y.ten"].supersedes == ("y.five",)
    with pytest.raises(ValueError, match="supersedes"):
        Rule("a.b", "1", {"x": "x"}, supersedes="a.c")  # a bare string, not a tuple
    with pytest.raises(ValueError, match="supersedes"):
        Rule("a.b", "1", {"x": "x"}, supersedes=("a.b",))


def test_every_registered_rule_supersedes_only_registered_rules():
    import gspo_record.page  # noqa: F401  (registers every rule)
    from gspo_record.rules import RULES as registered

    assert {old for r in registered.values() for old in r.supersedes} <= set(registered)


@pytest.mark.parametrize("where", ["glance", "together", "brief"])
def test_superseded_catches_a_summary_reading_the_old_rule(where):
    """At a glance's footnotes, a "Together" paragraph and a finding page's brief footnote (issue 36) are summaries:
    one naming a superseded rule fails."""
    book = dict(BOOK)
    if where == "brief":
        brief = "# 10. Why\n\n**Verdict: mixed.**[^rules10]\n\n[^rules10]: The rules behind this verdict: `y.five`.\n"
        book["f10_why.md"] = brief
        mutant = FINDINGS
    else:
        old, new = (("[^r2]: Rules behind this row: `x.ten`", "[^r2]: Rules behind this row: `x.five`, `x.ten`")
                    if where == "glance" else ("(rule `y.ten`)", "(rule `y.five`)"))  # fmt: skip
        assert old in FINDINGS
        mutant = FINDINGS.replace(old, new) + "\nRead at ten seeds: rule `y.ten`.\n"
    (problem,) = _only(lint({**book, "findings.md": mutant}, rules=RULES), "superseded")
    assert ("x.five" if where == "glance" else "y.five") in problem.why
    assert problem.where.startswith({"glance": "At a glance row 2", "together": "Together", "brief": "brief of row 10"}[
        where])  # fmt: skip


def test_superseded_reads_facts():
    stale = SummaryReads("story.md", "question 3", ("y.five",))  # the story reads the five-seed verdict
    facts = dataclasses.replace(FACTS, summaries=(stale,))
    (problem,) = _only(lint(BOOK, facts, rules=RULES), "superseded")
    assert (problem.page, problem.where) == ("story.md", "question 3") and "`y.ten`" in problem.why
    elsewhere = dataclasses.replace(facts, rules_read={"story.md": ()})
    assert _only(lint({**BOOK, "findings.md": "# F\n"}, elsewhere, rules=RULES), "superseded") == []


# endpoint --------------------------------------------------------------------------------------------------------


def test_endpoint_catches_an_unlabelled_count_on_the_old_flag():
    v1 = PrintedCount("findings.md", "§10f trunks at rollout 120", 5, 5, "v1")  # issue 35: 5/5 by v1, 4/5 by v2
    (problem,) = _only(lint(BOOK, dataclasses.replace(FACTS, counts=(v1,)), rules=RULES), "endpoint")
    assert problem.excerpt == "5/5" and "v1" in problem.why and "v2" in problem.why


# two-spreads -----------------------------------------------------------------------------------------------------


def test_two_spreads_catches_one_arm_with_two_brackets_in_facts():
    again = dataclasses.replace(FACTS.intervals[0], where="§11 MoE grpo", lo=0.0321, hi=0.149)  # Student-t
    (problem,) = _only(lint(BOOK, dataclasses.replace(FACTS, intervals=(*FACTS.intervals, again)), rules=RULES),
                       "two-spreads")  # fmt: skip
    assert problem.where == "§11 MoE grpo" and "§2 MoE GRPO" in problem.why


def test_two_spreads_text_fallback_catches_a_mutant_table():
    mutant = FINDINGS + "\n| model | objective | late acc. [95 % t] |\n| --- | --- | --- |\n"
    mutant += "| MoE | grpo | 0.0906 [0.0321, 0.149] (n = 5) |\n"
    (problem,) = _only(lint({**BOOK, "findings.md": mutant}, rules=RULES), "two-spreads")
    assert "[0.0543, 0.489]" in problem.why and "[0.0321, 0.149]" in problem.why


def test_two_spreads_text_fallback_stays_conservative():
    rows = "\n| model | objective | late acc. |\n| --- | --- | --- |\n"
    other_arm = rows + "| dense | grpo | 0.0906 [0.0321, 0.149] (n = 5) |\n"  # another model: a coincidence
    two_digits = FINDINGS.replace("0.0906 [0.0543", "0.09 [0.0543") + rows + "| MoE | grpo | 0.09 [0.03, 0.15] |\n"
    other_n = rows + "| MoE | grpo | 0.0906 [0.0321, 0.149] (n = 10) |\n"
    for text in (FINDINGS + other_arm, two_digits, FINDINGS + other_n):
        assert _only(lint({**BOOK, "findings.md": text}, rules=RULES), "two-spreads") == []


# undefined-term --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "page, old, new, term",
    [
        ("story.md", "A CAP10 branch", "A MOMENT branch", "MOMENT"),
        ("findings.md", "| mixed |", "| mixed under plain SGD |", "SGD"),
        ("findings.md", "| mixed |", "| inside AdamW |", "AdamW"),
        ("glossary.md", "**CAP10**", "CAP10", "CAP10"),  # the definition's bold removed
    ],
)
def test_undefined_term_catches_a_mutant_page(page, old, new, term):
    assert old in BOOK[page]
    (problem,) = _only(lint({**BOOK, page: BOOK[page].replace(old, new)}, rules=RULES), "undefined-term")
    assert term in problem.why


def test_undefined_term_ignores_code_and_the_rest_of_the_findings_page():
    story = STORY + "\nSet `TRAIN_BATCH` in the config.\n"
    findings = FINDINGS + "\n## 10. Why\n\nA spike inside AdamW's MOMENT.\n"  # below At a glance
    assert _only(lint({**BOOK, "story.md": story, "findings.md": findings}, rules=RULES), "undefined-term") == []


# reading the page ------------------------------------------------------------------------------------------------


def test_units_cut_rows_and_sentences():
    found = pagetext.units("findings.md", FINDINGS)
    rows = [u for u in found if u.is_row]
    assert rows[0].header == ("finding", "the toy shows", "verdict") and rows[0].line == 7
    sentence = next(u for u in found if u.text.startswith("The direction effect"))
    line = 1 + next(i for i, text in enumerate(FINDINGS.splitlines()) if text.startswith("The direction effect"))
    assert sentence.text.endswith("no difference shown.") and sentence.line == line
    (iv,) = pagetext.intervals(sentence)
    assert (iv.mean, iv.bracket, iv.n, iv.sign) == ("0.0456", (-0.152, 0.267), 5, (4, 5, ">", 0.0))
    wilson = pagetext.Unit("p", 1, "collapsed 4/5 [0.376, 0.964]")
    assert pagetext.intervals(wilson) == []


def test_the_lint_flag_reports_the_committed_pages(capsys):
    from gspo_lab.paths import repo_root
    from gspo_record.cli import main

    pages = {name: (repo_root() / "docs" / name).read_text() for name in PAGES}
    rc = main(["--lint"])
    out = capsys.readouterr().out
    assert out.startswith("referee lint: range: ")
    assert rc == (1 if lint(pages) else 0)


def test_every_page_build_and_check_fails_on_the_enforced_rules():
    """page.build and page.check run the lint (issue 35: 'run by every page build, --check included'): the committed
    pages pass it; a glossary without a term the story uses fails it, and so does a null label put back beside a
    5/5 sign count (no lint rule is reported only)."""
    from gspo_lab.paths import repo_root
    from gspo_record import page
    from gspo_record.lint import REPORTED_ONLY

    pages = {name: (repo_root() / "docs" / name).read_text() for name in PAGES}
    assert page.lint_failures(pages) == []
    broken = dict(pages, **{"glossary.md": pages["glossary.md"].replace("**TRL**", "TRL")})
    # one failure per page that uses the term (the story, and every page since that names TRL): all undefined-term
    failures = [p.split("[")[1].split("]")[0] for p in page.lint_failures(broken)]
    assert failures and set(failures) == {"undefined-term"}
    assert REPORTED_ONLY == ()  # issue 35's item 3 rewrote the labels: every lint rule fails the build
    label = "(n = 5; 5/5 > 0) | direction consistent (5/5 > 0), size unresolved |"
    where = next(name for name, text in pages.items() if label in text)
    mutant = pages[where].replace(label, "(n = 5; 5/5 > 0) | no difference shown |", 1)
    found = page.lint_failures(dict(pages, **{where: mutant}))
    assert [p.split("[")[1].split("]")[0] for p in found] == ["null-with-consistent-sign"]
