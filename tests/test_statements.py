"""Issue 22, item 8: statements a referee found wrong on the findings page, each now computed or checked, with the
test that would have caught it. They read the stored results (no training)."""

from __future__ import annotations

import re

import pytest

import gspo_record.f9.precursors as f9_precursors
import gspo_record.f10.runs as f10_runs
from gspo_lab.experiments.spec import cells, spec_named
from gspo_lab.experiments.store import result_path, results_root, stored_files
from gspo_lab.paths import data_dir, repo_root
from gspo_record import bookkeeping
from gspo_record.f10.why import SPECS
from gspo_record.page import FINDING_PAGES
from gspo_record.rules import RULES

#: the findings pages (the overview, each finding's page, the methods page): what the statements below are read on
FINDINGS_PAGES = (
    "findings.md",
    "methods.md",
    *FINDING_PAGES.values(),
)


@pytest.fixture(scope="module")
def page() -> str:
    return "\n".join((repo_root() / "docs" / name).read_text() for name in FINDINGS_PAGES)


def test_a_cell_called_re_run_has_a_stored_result_under_its_key(page):
    """'36 cells … were re-run': 30 of them (f10c_relative_confirm) were withdrawn, never re-run."""
    ctx, _ = bookkeeping.provenance_section()
    superseded = ctx["superseded"]
    stored = [bool(stored_files(results_root() / e["spec"], e["key"])) for e in superseded]
    assert ctx["rerun"] == sum(stored) and ctx["withdrawn"] == len(superseded) - sum(stored)
    assert f"({ctx['rerun']} cells that did were re-run under the same key" in " ".join(page.split())
    assert ctx["withdrawn"] == 0 or f"{ctx['withdrawn']} more cells were withdrawn there and not re-run" in " ".join(
        page.split()
    )


def test_finding_9_names_only_specs_that_contribute_runs():
    """Finding 9 listed f10c_relative_confirm among its later runs' sources; it holds no stored cell."""
    ctx, _ = f9_precursors.section()
    for name in ctx["later_specs"]:
        assert any(result_path(c).exists() for c in cells(spec_named(name), "all")), name
    silent = [n for n in f9_precursors.LATER if n not in ctx["later_specs"]]
    assert all(not any(result_path(c).exists() for c in cells(spec_named(n), "all")) for n in silent)


def test_relative_caps_are_not_called_equal_norms(page):
    """Relative caps sit at 3x each run's own median, so GRPO's cap is not GSPO's: 'where the norms are equal' erred."""
    assert "norms are equal" not in page
    assert "the same factor, not the same norm" in " ".join(page.split())


def test_f10_relative_says_its_declared_label(page):
    """The printed label of f10.relative's third outcome differs from the declared one: the page must say so."""
    declared = "equal relative caps close the gap"
    spec_text = " ".join((data_dir() / "specs" / "f10_shrink_skip.toml").read_text().split())
    assert declared in spec_text and declared not in RULES["f10.relative"].outcomes.values()
    assert f'declared in the spec as "{declared}"' in " ".join(page.split())


def test_f9_skill_is_post_hoc():
    """f9.skill was committed after a partial score on 60 held-out runs had been printed."""
    assert RULES["f9.skill"].post_hoc and "partial score" in RULES["f9.skill"].declared


def test_dual_clip_under_a_cap_shows_both_arms_collapse_counts(page):
    """'Dual-clip hurts (dense, cap 30)' hid that it still collapsed 2/5 there and that the cap alone collapsed 0/5 on
    the dense model but 4/5 on the MoE: each row carries both arms' counts, recomputed here from the table."""
    table = f10_runs.runs()
    ctx, _ = f10_runs.section()
    assert ctx["duals"]
    for model, cap, with_dual, alone, *_ in ctx["duals"]:
        m = table[(table["model"] == model) & table["source"].isin([SPECS["onset"], "f2"])]  # seeds 10-14 (f10v: 60-64)
        for arm, shown in ((f"grpo_dual_clip clip {cap}", with_dual), (f"grpo clip {cap}", alone)):
            g = m[m["arm_id"] == arm]
            assert shown == f"{int(g['collapsed'].sum())}/{len(g)}", (model, cap, arm)
        assert re.search(rf"\| {model} \| {cap} \| {re.escape(with_dual)} \| {re.escape(alone)} \|", page)


def test_every_stored_result_is_xz_compressed_and_data_stays_within_its_budget():
    """scripts/recompress_results.py left no gzip result behind, and data/ holds at most 50 MB."""
    root = results_root()
    assert not list(root.rglob("*.json.gz"))
    assert sum(p.stat().st_size for p in data_dir().rglob("*") if p.is_file()) < 50e6
