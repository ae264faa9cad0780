"""Every verdict of the findings page re-read under another interval (issue 22, item 1): which ones change.

    python -m gspo_lab.findings --reread bootstrap_t      # prints the table below

Each section of the page (:data:`gspo_lab.findings.page.SECTIONS`) is computed twice, once with the page's interval
(the percentile bootstrap) and once within :func:`gspo_lab.experiments.stats.interval_method` — every
``bootstrap_ci`` the findings call, and so every ``interval_sign`` and every bracketed interval, gives the other
interval. A spy on :meth:`gspo_lab.findings.rules.Rule.verdict` records each verdict in the order the section
reads them; the two passes read the same rules in the same order, so the i-th verdict of a rule in one pass is the
i-th in the other. Rules whose specs declared the Student-t interval (f10t, f11) do not move: their readings already
use it.
"""

from __future__ import annotations

from collections import defaultdict

from gspo_lab.experiments.stats import interval_method
from gspo_lab.findings.rules import Rule

__all__ = ["verdicts", "reread", "table"]


def verdicts(sections) -> dict[str, list[tuple[str, str]]]:
    """``{section: [(rule, outcome), ...]}`` in the order each section reads them."""
    log: dict[str, list[tuple[str, str]]] = defaultdict(list)
    original = Rule.verdict
    current = [""]

    def spy(self, outcome, provisional=""):
        log[current[0]].append((self.name, outcome))
        return original(self, outcome, provisional)

    Rule.verdict = spy
    try:
        for name, section in sections.items():
            current[0] = name
            section()
    finally:
        Rule.verdict = original
    return dict(log)


def reread(method: str, sections=None) -> list[dict]:
    """Per section and rule: the verdicts read, and those that change under ``method`` (old -> new, with the
    position among that rule's readings in the section)."""
    if sections is None:
        from gspo_lab.findings.page import SECTIONS

        sections = SECTIONS
    before = verdicts(sections)
    with interval_method(method):
        after = verdicts(sections)
    rows = []
    for section, old in before.items():
        new = after.get(section, [])
        if [r for r, _ in old] != [r for r, _ in new]:
            raise RuntimeError(f"section {section!r} read other rules under {method!r}: the passes do not pair up")
        per_rule: dict[str, dict] = {}
        seen: dict[str, int] = defaultdict(int)
        for (rule, a), (_, b) in zip(old, new, strict=True):
            entry = per_rule.setdefault(rule, {"section": section, "rule": rule, "read": 0, "changed": []})
            entry["read"] += 1
            if a != b:
                entry["changed"].append((seen[rule], a, b))
            seen[rule] += 1
        rows.extend(per_rule.values())
    return rows


def table(rows: list[dict]) -> str:
    """The re-reading as a Markdown table: section, rule, verdicts read, and each change."""
    lines = ["| section | rule | read | changed (position: page's → re-read) |", "| --- | --- | --- | --- |"]
    for r in rows:
        changes = "; ".join(f"{i}: {a} → {b}" for i, a, b in r["changed"]) or "—"
        lines.append(f"| {r['section']} | `{r['rule']}` | {r['read']} | {changes} |")
    moved = sum(len(r["changed"]) for r in rows)
    lines.append(f"\n{moved} of {sum(r['read'] for r in rows)} verdicts change.")
    return "\n".join(lines)
