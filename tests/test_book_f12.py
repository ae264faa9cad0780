"""Issue 48 on finding 12, end to end on the stored results: its verdicts are statements, a boundary prints the two
lags it compares with the paired difference beside it carrying its own outcome, 12c's re-readings supersede 12b's,
and At a glance row 12 is written prose on the newest statements. Mutants of the data and of the prose flip or fail
it: stored results changed (in a temporary copy) so that a statement's outcome flips fail the build; a summary naming
a superseded statement fails; a number written into prose fails."""

from __future__ import annotations

import json
import lzma
import shutil

import pytest

import gspo_record.f12.lag_page as lag_page
from gspo_lab.experiments.store import cached, results_root
from gspo_record.book import Book
from gspo_record.headline import _row
from gspo_record.page import SECTIONS
from gspo_record.prose import HERE, literals, render
from gspo_record.statements import StatementError

F12 = ("f12", "f12b", "f12c")


def _read(prose: bool = True) -> dict:
    with cached():
        ctx = {k: SECTIONS[k]()[0] for k in F12}
    ctx["book"] = Book.of(ctx)
    if prose:
        ctx["f12_prose"] = lag_page.prose(ctx)  # as the build does before At a glance
    return ctx


@pytest.fixture(scope="module")
def ctx():
    return _read()


def test_every_f12_verdict_the_page_prints_is_a_statement_and_the_lint_passes(ctx):
    book = ctx["book"]
    assert book.problems() == []
    assert {"f12b.gspo_vs_grpo", "f12c.gspo_vs_grpo", "f12c.mask_vs_proximal"} <= set(book.statements)
    tolerates = [s for s in book.statements.values() if ".tolerates." in s.id]
    assert len(tolerates) >= 24 and all(s.rule in ("f12.tolerates", "f12c.lag32") for s in tolerates)


def test_a_boundary_prints_its_two_lags_and_the_difference_beside_it_has_its_own_outcome(ctx):
    """The audit's case: "no difference shown" about the boundaries (16 and 16) beside a difference of drops that
    excludes 0. Now the two are two statements, each worded from its own number."""
    old = ctx["book"]["f12b.gspo_vs_grpo"]
    assert (old.outcome, str(old.number)) == ("both_top", "16 against 16")
    assert old.secondary.outcome == "below" and old.secondary.number.hi < 0
    assert old.secondary.label.startswith("GSPO (behaviour π_old) lost more accuracy")
    (entry,) = ctx["f12b"]["gspo_vs_grpo"]
    assert "(16 against 16)" in entry["text"] and "lost more accuracy at lag 16" in entry["text"]


def test_12c_supersedes_12b_and_row_12_renders_the_newest(ctx):
    book = ctx["book"]
    assert book.superseded_by("f12b.gspo_vs_grpo") == "f12c.gspo_vs_grpo"
    with pytest.raises(StatementError, match="f12c.gspo_vs_grpo supersedes"):
        book.summary("f12b.gspo_vs_grpo")
    row = lag_page.glance_row(ctx, _row)
    new = book["f12c.gspo_vs_grpo"]
    assert f"at {new.number.a} against GRPO's {new.number.b}" in row["verdict"]
    assert new.secondary.number.brief in row["verdict"]
    assert "(" not in row["verdict"] and "`" not in row["verdict"]  # no nested brackets, no rule ids in prose


def test_a_difference_of_drops_read_again_at_the_same_lag_is_one_statement(ctx):
    """12c re-reads 12b's pairs on the ladder to 32; where the deciding lag did not move (TIS against uncorrected GRPO,
    at lag 4) the difference of drops is the same number, so 12c's statement supersedes 12b's instead of standing
    beside it; where it moved (GSPO against GRPO, 16 → 32) both stand, each at its own lag."""
    book = ctx["book"]
    assert book.superseded_by("f12b.tis_vs_proximal.drops") == "f12c.tis_vs_proximal.drops"
    assert str(book["f12b.tis_vs_proximal.drops"].number) == str(book["f12c.tis_vs_proximal.drops"].number)
    assert book.superseded_by("f12b.gspo_vs_grpo.drops") is None
    assert str(book["f12b.gspo_vs_grpo.drops"].number) != str(book["f12c.gspo_vs_grpo.drops"].number)


def test_row_12_says_which_printed_lags_are_fragile_and_counts_their_statements(ctx):
    """Row 12 prints each arm's largest tolerated lag; where that lag rests on a fragile tolerance statement (the one
    at the lag, or the one at the next rung that ended the run) the row says what moves it, and its "how sure" reads
    those statements too. Fragility is marked by the build's robustness pass, which this context skips, so the
    mutants mark it by hand: none fragile, one, all."""
    from dataclasses import replace

    book, lags = ctx["book"], lag_page.largest_lags(ctx)
    edges = lag_page.edges(book, lags)
    assert [s.id for s in edges["grpo/behaviour"]] == ["f12c.tolerates.grpo/behaviour.32"]  # the top: no next rung
    assert [s.id for s in edges["grpo/proximal"]] == ["f12b.tolerates.grpo/proximal.2",
                                                      "f12b.tolerates.grpo/proximal.4"]  # fmt: skip
    robust = {arm: [replace(s, flips=()) for s in found] for arm, found in edges.items()}
    assert lag_page.fragile_lags(robust, lags) == ""
    auc = ("training-reward AUC: degrades",)
    one = {**robust, "grpo/behaviour": [replace(s, flips=auc) for s in edges["grpo/behaviour"]]}
    said = " Some of these lags are fragile: reading the training-reward AUC moves GRPO (behaviour π_old)'s 32."
    assert lag_page.fragile_lags(one, lags) == said
    every = {arm: [replace(s, flips=auc) for s in found] for arm, found in edges.items()}
    assert lag_page.fragile_lags(every, lags).startswith(" Each of these lags is fragile: reading the training-reward")
    row = lag_page.glance_row(ctx, _row)
    assert "`f12.tolerates`" in row["rules"] and "`f12c.lag32`" in row["rules"]
    page = (HERE.parent / "docs" / "findings.md").read_text()  # the build's page, robustness marked
    assert "reading the training-reward AUC moves GRPO (behaviour π_old)'s 32" in page


def test_mutant_a_summary_naming_a_superseded_statement_fails(ctx, tmp_path):
    source = (HERE / "f12/prose.md").read_text().replace('s("f12c.gspo_vs_grpo")', 's("f12b.gspo_vs_grpo")')
    (tmp_path / "prose.md").write_text(source)
    with pytest.raises(StatementError, match="a summary renders f12b.gspo_vs_grpo, which f12c.gspo_vs_grpo supersedes"):
        render(tmp_path / "prose.md", "verdict", ctx["book"], at={}, lags={})


def test_mutant_a_number_written_into_prose_fails(ctx, tmp_path):
    assert literals((HERE / "f12/prose.md").read_text()) == []
    source = (HERE / "f12/prose.md").read_text().replace("{{ pair.secondary.number.brief }}", "-0.00891", 1)
    (tmp_path / "prose.md").write_text(source)
    with pytest.raises(StatementError, match=r"numbers written into prose, not placeholders: \['-0.00891'\]"):
        render(tmp_path / "prose.md", "verdict", ctx["book"])


@pytest.mark.parametrize(("text", "found"), [("lost 0.09 more", ["0.09"]), ("section 12c, §3, bf16, k3", []),
                                              ("$\\epsilon = 0.2$ and `lr = 3e-4`", []), ("at lag 32", ["32"]),
                                              ("{{ x }} of 3e-4", ["3e-4"])])  # fmt: skip
def test_the_literal_check_finds_numbers_outside_placeholders_equations_and_code(text, found):
    assert literals(text) == found


def _flip_gspo_at_32(root, by: float = 0.09) -> int:
    """In a copy of the stored results at ``root``: every f12c run of GSPO on the sampler's π_old at lag 32 gains
    ``by`` on each held-out evaluation from rollout 40 (its drop from lag 0 moves inside the margin)."""
    changed = 0
    for path in (root / "f12c_lag_isolate").glob("*.json.xz"):
        run = json.loads(lzma.open(path).read())
        c = run["config"]
        if (c["objective"], c.get("old_logp"), c.get("rollout_lag")) != ("gspo", "sampler", 32):
            continue
        ev = run["eval"]
        ev["eval/accuracy_sampled"] = [
            min(1.0, a + by) if r >= 40 else a for r, a in zip(ev["rollout"], ev["eval/accuracy_sampled"], strict=True)
        ]
        path.write_bytes(lzma.compress(json.dumps(run).encode()))
        changed += 1
    return changed


def test_data_mutant_stored_results_that_flip_a_statement_fail_the_build(ctx, tmp_path, monkeypatch):
    """Stored results changed in a temporary copy so that GSPO tolerates lag 32: f12c.gspo_vs_grpo flips from
    "lower" to "both_top", and the prose that assumes "lower" fails instead of printing a stale sentence."""
    root = tmp_path / "results"
    root.mkdir()
    for spec in results_root().iterdir():
        (root / spec.name).symlink_to(spec)
    (root / "f12c_lag_isolate").unlink()
    shutil.copytree(results_root() / "f12c_lag_isolate", root / "f12c_lag_isolate")
    assert _flip_gspo_at_32(root) == 10
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(root))
    flipped = _read(prose=False)
    assert ctx["book"]["f12c.gspo_vs_grpo"].outcome == "lower"
    assert flipped["book"]["f12c.gspo_vs_grpo"].outcome == "both_top"
    with pytest.raises(StatementError, match="prose assumes f12c.gspo_vs_grpo reads 'lower'; the data give 'both_top'"):
        lag_page.prose(flipped)  # the prose At a glance row 12, the story and the recipe print


def test_a_summary_template_that_renders_a_superseded_statement_fails_and_a_finding_page_may(ctx, monkeypatch):
    """The story and the recipe read 12b's comparisons until this issue; rendered through the book's guard, any use of
    a superseded statement fails the build, while the finding page (unguarded) keeps 12b's section."""
    import jinja2

    text = "{% for c in f12b.gspo_vs_grpo %}{{ c.verdict.label }}{% endfor %}"
    assert jinja2.Template(text).render(f12b=ctx["f12b"]) == "the same boundary: both tolerate every lag tried"
    with pytest.raises(StatementError, match="a summary renders f12b.gspo_vs_grpo, which f12c.gspo_vs_grpo supersedes"):
        jinja2.Template(text).render(**ctx["book"].guard({"f12b": ctx["f12b"]}))
    monkeypatch.setattr(Book, "superseded_by", lambda self, id: None)  # mutant: a book that forgets supersession
    assert jinja2.Template(text).render(**ctx["book"].guard({"f12b": ctx["f12b"]})).startswith("the same boundary")


def test_the_story_is_at_most_1500_words_and_its_first_200_say_what_to_do():
    from gspo_lab.paths import repo_root

    words = (repo_root() / "docs" / "story.md").read_text().split()
    assert len(words) <= 1500
    first = " ".join(words[:200])
    for setting in ("What to do", "ε_low = 3e-4", "grad-norm cap of 1", "sequence mask", "What happens"):
        assert setting in first, setting


def test_mutant_a_literal_number_in_the_story_template_fails_the_build(tmp_path, monkeypatch):
    import gspo_record.page as page

    shutil.copytree(page.TEMPLATES, tmp_path / "templates")
    story = tmp_path / "templates" / "story.md"
    story.write_text(story.read_text().replace("{{ story.clipping.ratio }}× more tokens", "105× more tokens", 1))
    monkeypatch.setattr(page, "TEMPLATES", tmp_path / "templates")
    with pytest.raises(StatementError, match=r"story.md: numbers written into prose, not placeholders: \['105'\]"):
        page.render({}, "story.md")


def test_notebook_takeaways_quote_the_books_own_words_and_never_a_superseded_statement():
    """Notebooks 04-06 quote At a glance's written rows and finding 12's prose from docs/book.json, so their
    take-aways say what the book says (issue 48: 04's said "MoE, size; dense, mixed" where the story said "MoE,
    content; dense, size")."""
    from gspo_lab.paths import repo_root
    from gspo_record import takeaways

    assert "on the MoE their content" in takeaways.glance("10")["verdict"]
    assert takeaways.statement("f12c.gspo_vs_grpo")["number"] == "16 against 32"
    with pytest.raises(KeyError, match="superseded by f12c.gspo_vs_grpo"):
        takeaways.statement("f12b.gspo_vs_grpo")
    with pytest.raises(KeyError, match="no row '13'"):
        takeaways.glance("13")
    for name, quoted in (
        ("04_collapse", ("glance('2')", "glance('10')")),
        ("05_precision", ("glance('5')", "prose('f12', 'story')")),
        ("06_successors", ("glance('11')", 'statement("f11f.mask")')),
    ):
        source = (repo_root() / "notebooks" / f"{name}.py").read_text()
        assert all(q in source for q in quoted), name
        assert "two_verdicts" not in source.split("## What to take away")[1]  # the five-seed 2×2, superseded


@pytest.mark.parametrize("path", ["glance_prose.md", "f2/prose.md", "f10/prose.md", "f11/prose.md", "f12/prose.md"])
def test_every_written_prose_file_holds_no_literal_number_and_names_the_outcomes_it_assumes(path):
    source = (HERE / path).read_text()
    assert literals(source) == []
    assert "expect(" in source
    assert "{% if" not in source  # prose may loop, never decide (a fragile note is a filter: fragile_note)
