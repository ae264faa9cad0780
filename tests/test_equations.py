"""Equation numbers agree everywhere: one table (gspo_lab/equations.py) and a scan of every text a reader sees.

A reader found GSPO's and GRPO's gradient equations swapped on one page of the book and numbered three ways across
three pages. The scan below catches that recurrence: wherever the library, a notebook, a template, the README or a
generated page cites Eq. 10, 11 or 12, the algorithm it is attributed to must be that equation's owner.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gspo_lab.equations import EQUATIONS, OWNERS, eq

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *sorted(p for p in (ROOT / "gspo_lab").rglob("*.py") if p.name != "equations.py"),  # the table itself
    *sorted((ROOT / "gspo_record").rglob("*.py")),
    *sorted((ROOT / "gspo_record" / "templates").glob("*.md")),
    *sorted((ROOT / "notebooks").glob("*.py")),
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "README.md",
]
CITE = re.compile(r"Eqs?\.\s*(\d+)(?:\s*[-–,]\s*(?:Eq\.\s*)?(\d+))?")
NAME = re.compile(r"\b(GSPO|GRPO)(?!-token)")
AFTER = re.compile(r"\s*\((GSPO|GRPO)\)")
WINDOW = 160  # characters before a citation searched for the algorithm it is attributed to


def misattributed(text: str) -> list[str]:
    """Each citation of a gradient equation (10-12) whose algorithm — a "(GRPO)" right after it, else the last GSPO
    or GRPO named within WINDOW characters before it — is not the equation's owner."""
    found = []
    for m in CITE.finditer(text):
        numbers = {int(m.group(1))} | ({int(m.group(2))} if m.group(2) else set())
        if m.group(2) and ("-" in m.group(0) or "–" in m.group(0)):
            numbers |= set(range(int(m.group(1)), int(m.group(2)) + 1))
        owners = {OWNERS[n] for n in numbers if n in OWNERS}
        if not owners:
            continue
        after = AFTER.match(text, m.end())
        names = NAME.findall(text[max(0, m.start() - WINDOW) : m.start()])
        said = after.group(1) if after else (names[-1] if names else None)
        if said is not None and said not in owners:
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {m.group(0)!r} attributed to {said}, but it is {'/'.join(sorted(owners))}'s")
    return found


def test_table_matches_the_paper_notes_and_names_its_owners():
    assert eq("gspo_gradient") == "Eq. 10" and eq("grpo_gradient") == "Eqs. 11-12"
    assert eq("sequence_ratio") == "Eq. 7" and eq("token_ratio") == "Eq. 3" and eq("group_advantage") == "Eq. 6"
    notes = (ROOT.parent / "shared" / "PAPER.md").read_text() if (ROOT.parent / "shared").is_dir() else ""
    if notes:  # the numbering the paper's notes use (v2)
        assert "GRPO (Eqs. 2-3)" in notes and "GSPO (Eqs. 5-7)" in notes and "Eqs. 10-12" in notes
    with pytest.raises(KeyError, match="known: grpo_objective"):
        eq("gspo_grad")
    assert all(cite.startswith("Eq") for cite, _ in EQUATIONS.values())


def test_the_scan_catches_the_swap_the_reader_found():
    """The mutant: finding 6's old sentence, GRPO's gradient cited as Eq. 10 and GSPO's as Eq. 11."""
    old = (
        "GRPO's minibatch gradient is (1/B) Σ_i Â_i (1/|y_i|) Σ_t w_{i,t} ∇log π(y_{i,t}) (Eq. 10, unclipped); "
        "GSPO's is (1/B) Σ_i Â_i s_i (1/|y_i|) Σ_t ∇log π(y_{i,t}) (Eq. 11)"
    )
    assert len(misattributed(old)) == 2
    fixed = old.replace("Eq. 10, unclipped", "Eqs. 11-12, unclipped").replace("(Eq. 11)", "(Eq. 10)")
    assert misattributed(fixed) == []
    assert misattributed("GSPO §4.2, Eq. 10 (GSPO) vs Eqs. 11-12 (GRPO)") == []
    assert misattributed("GRPO's gradient (Eqs. 11-12) against GSPO's (Eq. 11)") != []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_gradient_equation_is_cited_for_its_own_algorithm(path):
    assert misattributed(path.read_text(encoding="utf-8")) == []
