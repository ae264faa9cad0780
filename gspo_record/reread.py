"""Every verdict of the findings page read under two intervals (issue 22, item 1): which ones change.

    python -m gspo_record --reread bootstrap_t    # stats version 3 (the bootstrap-t) -> the page's (version 4)
    python -m gspo_record --reread percentile     # stats version 2 (the percentile bootstrap) -> the page's

Each section of the page (:data:`gspo_record.page.SECTIONS`) is computed twice, each pass within
:func:`gspo_lab.experiments.stats.interval_method`: every ``seed_interval`` the findings call, and so every
``interval_sign``, arm interval and bracketed difference, gives that pass's interval. A spy on
:meth:`gspo_record.rules.Rule.verdict` records each verdict in the order the section reads it, with where it was
read (the names the calling code holds: model, arm, cap, …); the two passes read the same rules in the same order, so
the i-th verdict of a section in one pass is the i-th in the other. Rules whose specs declared the Student-t interval
(:data:`T_DECLARED_SPECS`) read :func:`gspo_lab.experiments.stats.declared_t_interval`: Student-t under versions 2
and 3's intervals, the page's transformed t under version 4's, so re-reading version 3 -> 4 shows what moved there too.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import replace

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.stats import PAGE_INTERVAL, interval_method
from gspo_record.rules import Rule

__all__ = ["PREVIOUS", "T_DECLARED_SPECS", "verdicts", "pair", "reread", "page_pass", "table"]

PREVIOUS = "bootstrap_t"
"""Stats version 3's interval: the page re-reads every verdict under it and tables those that change."""
T_DECLARED_SPECS = (
    "f2t_collapse_ten", "f10t_two_by_two_ten", "f10u_shrink_skip_ten", "f10v_dual_cap_ten", "f10w_adam_state",
    "f10x_sgd_lr_search", "f10y_sgd_two_by_two", "f10z_branch", "f10z_onset_branch", "f11_successors_collapse",
    "f11b_production_dense", "f11b_successors_production", "f11c_corrections_dense", "f11c_corrections_precision",
    "f11d_production_confirm",
)  # fmt: skip
"""The specs that declared the Student-t interval before their runs (data/specs/*.toml say so); stats version 4 reads
them with the page's one interval instead (tests/test_findings.py checks each spec names Student-t)."""

WHERE = ("model", "cap", "name", "pair", "comparison", "arm", "base", "label", "objective", "signal", "length")
"""Local names whose values say where a verdict was read (the first caller frame holding any of them)."""


#: every rule a pass has read, by name (its outcomes' labels name a changed verdict)
SEEN: dict[str, Rule] = {}
#: seconds each section took, summed over every pass (:func:`verdicts` adds; the build clears it and prints the
#: slowest: :func:`gspo_record.cli.timing`)
SECONDS: dict[str, float] = defaultdict(float)


def _where(frame, depth: int = 5) -> str:
    """Where a verdict was read: ``model`` from any of the ``depth`` caller frames (it names the table a verdict sits
    in), then up to two more of :data:`WHERE`'s names from the nearest frame holding any."""
    found: dict[str, str] = {}
    nearest: list[str] = []
    for _ in range(depth):
        frame = frame.f_back
        while frame is not None and frame.f_globals.get("MAKES_STATEMENTS"):  # a statement's making: not where
            frame = frame.f_back
        if frame is None or frame.f_code.co_filename == __file__:  # past the section: nothing of the caller's
            break
        here = {k: v for k in WHERE if isinstance(v := frame.f_locals.get(k), (str, int, float)) and len(str(v)) < 40}
        if here and not nearest:
            nearest = [k for k in here if k != "model"][:2]
            found.update({k: here[k] for k in nearest})
        if "model" in here and "model" not in found:
            found["model"] = here["model"]
    keys = (["model"] if "model" in found else []) + nearest
    return ", ".join(f"{k} {found[k]}" for k in keys)


def verdicts(sections, marks: dict | None = None) -> tuple[dict[str, list[tuple[str, str, str]]], dict]:
    """``({section: [(rule, outcome, where), ...]}, {section: its output})``, verdicts in the order read (a section's
    own re-readings, within :func:`gspo_lab.experiments.reading.inner`, left out). ``marks``: ``{section: {i:
    flips}}``, the re-readings under which a section's i-th verdict changes (:mod:`gspo_record.robust`),
    attached to that verdict as it is read."""
    log: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    outputs = {}
    original = Rule.verdict
    current = [""]

    def spy(self, outcome, provisional="", **kw):
        made = original(self, outcome, provisional, **kw)
        if reading.in_inner():
            return made
        SEEN[self.name] = self
        entries = log[current[0]]
        flips = (marks or {}).get(current[0], {}).get(len(entries))
        entries.append((self.name, outcome, _where(sys._getframe())))
        return replace(made, flips=tuple(flips)) if flips else made

    Rule.verdict = spy
    try:
        for name, section in sections.items():
            current[0] = name
            start = time.perf_counter()
            outputs[name] = section()
            SECONDS[name] += time.perf_counter() - start
    finally:
        Rule.verdict = original
    return dict(log), outputs


def pair(before: dict, after: dict, new: str) -> list[dict]:
    """Per section and rule: verdicts read, and those that differ between two passes' logs."""
    rows = []
    for section, first in before.items():
        second = after.get(section, [])
        if [r for r, *_ in first] != [r for r, *_ in second]:
            raise RuntimeError(f"section {section!r} read other rules under {new!r}: the passes do not pair up")
        per_rule: dict[str, dict] = {}
        seen: dict[str, int] = defaultdict(int)
        for (rule, a, where), (_, b, _) in zip(first, second, strict=True):
            entry = per_rule.setdefault(rule, {"section": section, "rule": rule, "read": 0, "changed": []})
            entry["read"] += 1
            if a != b:
                entry["changed"].append((seen[rule], where, a, b))
            seen[rule] += 1
        rows.extend(per_rule.values())
    return rows


def reread(sections: dict, old: str = PREVIOUS, new: str = PAGE_INTERVAL) -> list[dict]:
    """Per section (``{name: section function}``, e.g. :data:`gspo_record.page.SECTIONS`) and rule: how many
    verdicts were read, and those that differ between the ``old`` and the ``new`` interval (position among the
    section's verdicts of that rule, where, old outcome, new outcome)."""
    return page_pass(sections, old, new)[1]


def page_pass(sections: dict, old: str = PREVIOUS, new: str = PAGE_INTERVAL, marks: dict | None = None) -> tuple[
        dict, list[dict]]:  # fmt: skip
    """Every section's output under ``new`` (the page's interval; verdicts marked by ``marks``, see :func:`verdicts`)
    and the re-reading against ``old``: one pass each."""
    with interval_method(old):
        before, _ = verdicts(sections)
    with interval_method(new):
        after, outputs = verdicts(sections, marks)
    return outputs, pair(before, after, new)


def table(rows: list[dict], changed_only: bool = False) -> str:
    """The re-reading as a Markdown table: section, rule, verdicts read, and each change."""
    lines = ["| section | rule | read | changed (where: before → after) |", "| --- | --- | --- | --- |"]
    for r in rows:
        if changed_only and not r["changed"]:
            continue
        changes = "; ".join(f"{w or f'#{i}'}: {a} → {b}" for i, w, a, b in r["changed"]) or "—"
        lines.append(f"| {r['section']} | `{r['rule']}` | {r['read']} | {changes} |")
    moved = sum(len(r["changed"]) for r in rows)
    lines.append(f"\n{moved} of {sum(r['read'] for r in rows)} verdicts change.")
    return "\n".join(lines)
