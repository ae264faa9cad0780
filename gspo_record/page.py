"""The page: every finding's numbers and verdicts, rendered through the Markdown templates, its figures and their
lock file; and the check that the committed page matches the stored results. The templates (``templates/``, Jinja2)
hold the prose; they loop but never decide (``tests/test_findings.py`` rejects an ``if``). Each figure's input table
is hashed into ``docs/findings.lock.json``; the check recomputes the tables and compares the hashes (not pixels: fonts
differ between machines) and the page's text exactly."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd

import gspo_record.bookkeeping as bookkeeping
import gspo_record.brief as brief
import gspo_record.f1.clipping as f1_clipping
import gspo_record.f2.candidate as f2_candidate
import gspo_record.f2.collapse as f2_collapse
import gspo_record.f2.late as f2_late
import gspo_record.f2.mechanism as f2_mechanism
import gspo_record.f2.remeasure as f2_remeasure
import gspo_record.f2.search as f2_search
import gspo_record.f2.spikes as f2_spikes
import gspo_record.f2.ten as f2_ten
import gspo_record.f3.volatility as f3_volatility
import gspo_record.f4.replay as f4_replay
import gspo_record.f5.confirm as f5_confirm
import gspo_record.f5.mask_form as f5_mask_form
import gspo_record.f5.precision as f5_precision
import gspo_record.f5.r3 as f5_r3
import gspo_record.f5.topk as f5_topk
import gspo_record.f6.drift as f6_drift
import gspo_record.f6.length as f6_length
import gspo_record.f6.stability as f6_stability
import gspo_record.f6.variance as f6_variance
import gspo_record.f7.token_adv as f7_token_adv
import gspo_record.f8.dense as f8_dense
import gspo_record.f9.precursors as f9_precursors
import gspo_record.f10.runs as f10_runs
import gspo_record.f11.arms_page as f11_arms
import gspo_record.f11.corrections as f11_corrections
import gspo_record.f11.ladder_page as f11_ladder
import gspo_record.f11.successors as f11_successors
import gspo_record.f12.clip_lag as f12_clip_lag
import gspo_record.f12.confirm as f12_confirm
import gspo_record.f12.isolate as f12_isolate
import gspo_record.f12.lag_page as f12_lag
import gspo_record.headline as headline
import gspo_record.methods as methods
import gspo_record.predictions as predictions
import gspo_record.recipe as recipe
from gspo_lab.paths import repo_root
from gspo_record.book import book_json
from gspo_record.figures import DPI, legible
from gspo_record.fmt import FILTERS
from gspo_record.prose import sep

__all__ = ["SECTIONS", "TEMPLATES", "template_files", "PAGES", "compute", "render", "build", "check",
           "md_table"]  # fmt: skip

HERE = Path(__file__).parent
#: the book's shared templates (the story, the overview, the glossary, the recipe, methods, macros); each finding's own
#: template sits in its room beside its modules, ``f2/f2_collapse.md`` (issue 36, item 6)
TEMPLATES = HERE / "templates"
#: the findings, one page each (issue 36): the At a glance row numbers each page holds -> its page (and template)
FINDING_PAGES = {("1",): "f1_clipping.md", ("2", "2b"): "f2_collapse.md", ("3",): "f3_volatility.md",
                 ("4",): "f4_replay.md", ("5",): "f5_precision.md", ("6",): "f6_variance.md",
                 ("7",): "f7_token_adv.md", ("8",): "f8_dense.md", ("9",): "f9_precursors.md", ("10",): "f10_why.md",
                 ("11",): "f11_successors.md", ("12",): "f12_stale.md"}  # fmt: skip
#: each generated page in docs/ -> its template (a name under TEMPLATES, or ``fN/<page>`` under HERE), rendered from
#: one context, so a number on the story is the number its section computes
PAGES = {"story.md": "story.md", "findings.md": "page.md", "glossary.md": "glossary.md", "recipe.md": "recipe.md",
         "methods.md": "methods.md", **{p: f"{p.split('_')[0]}/{p}" for p in FINDING_PAGES.values()}}  # fmt: skip


def template_files() -> list[Path]:
    """Every page template: the shared ones and each finding room's (not its ``prose.md``: :mod:`.prose` reads it)."""
    return sorted(TEMPLATES.glob("*.md")) + sorted(p for p in HERE.glob("f*/*.md") if p.name != "prose.md")


#: context name -> the section function that computes it: () -> (context, {figure name: (data, plot function)})
SECTIONS: dict[str, Callable[[], tuple[dict, dict]]] = {
    "f1": f1_clipping.section,
    "f1_eps": f1_clipping.eps_section,
    "f2": f2_collapse.section,
    "f2_dense": f2_collapse.dense_section,
    "f2_search": f2_search.section,
    "f2_map": f2_search.map_section,
    "f2d": f2_spikes.section,
    "f2_confirm": f2_candidate.section,
    "f2e": f2_mechanism.section,
    "f2f": f2_remeasure.section,
    "f2late": lambda: (f2_late.context(), {}),
    "f2t": f2_ten.section,
    "f3": f3_volatility.section,
    "f4": f4_replay.section,
    "f5": f5_precision.section,
    "f5_train": f5_precision.train_section,
    "f5_confirm": f5_confirm.confirm_section,
    "f5t": f5_topk.section,
    "f5g": f5_mask_form.section,
    "f5r": f5_r3.section,
    "f6": f6_variance.section,
    "f6b": f6_length.section,
    "f6c": f6_stability.section,
    "f6c_confirm": f6_stability.confirm_section,
    "f6d": f6_drift.section,
    "f7": f7_token_adv.section,
    "f8": f8_dense.section,
    "f9": f9_precursors.section,
    "f10": f10_runs.section,
    "f11": f11_successors.section,
    "f11c": f11_corrections.section,
    "f11e": f11_ladder.section,
    "f11f": f11_arms.section,
    "f12": f12_lag.section,
    "f12b": f12_confirm.section,
    "f12c": f12_isolate.section,
    "f12clip": f12_clip_lag.section,
    "specs": bookkeeping.section,
    "prov": bookkeeping.provenance_section,
}


def _docs() -> Path:
    return repo_root() / "docs"


def md_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table (the templates' ``table``); "(no results yet)" without rows."""
    if not rows:
        return "(no results yet)"
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def _lead(loop, first: str, other: str) -> str:  # the text before a loop item: `first` before the first one
    return first if loop.first else other


def compute() -> tuple[dict, dict]:
    """Every section's context and figures (under the page's interval, each verdict marked with the robustness
    readings that change it: gspo_record/robust.py), and the re-reading of every verdict under stats version
    3's interval (gspo_record/reread.py). Each stored result is parsed, each spec's cells built, once."""
    import gspo_record.reread as reread
    import gspo_record.robust as robust
    from gspo_lab.experiments.stats import PAGE_INTERVAL, interval_method
    from gspo_lab.experiments.store import cached
    from gspo_record.book import Book, bare_verdicts
    from gspo_record.facts import SummaryReads, collecting
    from gspo_record.statements import StatementError

    context, figures = {}, {}
    reread.SECONDS.clear()
    with cached(), collecting() as collected:
        with interval_method(PAGE_INTERVAL):
            checked = robust.robustness(SECTIONS)
        outputs, rows = reread.page_pass(SECTIONS, reread.PREVIOUS, marks=robust.marks(checked))
    robust.check_pairing(checked, rows)  # the marks sit on the verdicts the robustness pass read, or the build stops
    for name, (ctx, figs) in outputs.items():
        context[name] = ctx
        figures.update(figs)
    if bare := bare_verdicts({name: context[name] for name in outputs}):  # every verdict a page prints: a statement
        raise StatementError("verdicts a page would print without the number they are about (make them statements):"
                             "\n  " + "\n  ".join(bare))  # fmt: skip
    if problems := (book := Book.of({name: context[name] for name in outputs})).problems():  # the statement lint
        raise StatementError("the book's statements fail the lint:\n  " + "\n  ".join(problems))
    context["book"] = book
    context["stats"] = methods.stats_section(rows) | {"departures": methods.departures(context)}
    context["robust"] = robust.summary(checked)
    context["f12_prose"] = f12_lag.prose(context)  # finding 12's written prose, for the story and the recipe
    context["predictions"] = predictions.context(context)
    context["story"], context["glance"] = headline.story(context), headline.glance(context)
    context["recipe"] = recipe.recipe(context)
    where = {n: page for ns, page in FINDING_PAGES.items() for n in ns}
    context.update(brief.context(context["glance"], where, FINDING_PAGES))  # At a glance; each page's opening
    context["finding_pages"] = [{"page": page, "title": _title(page)} for page in FINDING_PAGES.values()]
    summaries = tuple(SummaryReads(f"{key}.md", key, tuple(dict.fromkeys(v.rule for v in _verdicts(context[key]))))
                      for key in ("story", "recipe"))  # fmt: skip
    # what the sections recorded printing, and the verdicts the story and recipe read: the referee lint's input
    context["facts"] = replace(collected[0], summaries=collected[0].summaries + summaries)
    return context, figures


def _title(template: str) -> str:
    """The first level-1 heading of a finding's template: the page's title."""
    return next(line[2:].strip() for line in (HERE / PAGES[template]).read_text().splitlines() if line.startswith("# "))


def _verdicts(tree) -> list:
    """Every :class:`~gspo_record.rules.Verdict`, and statement a rule read, in a context's dicts, lists, tuples."""
    from gspo_record.rules import Verdict
    from gspo_record.statements import Statement

    if isinstance(tree, Verdict) or (isinstance(tree, Statement) and tree.rule):
        return [tree]
    items = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, list | tuple) else ()
    return [v for item in items for v in _verdicts(item)]


SUMMARIES = ("story.md", "recipe.md", "page.md")  # rendered with the book's guard on superseded statements
PROSE = ("story.md",)  # written prose: a literal number in the template fails the build (gspo_record/prose.py)


def render(context: dict, template: str = "page.md") -> str:
    """``template`` (default: the findings page) rendered with every section's ``context``; a summary
    (:data:`SUMMARIES`) with every superseded statement guarded (:meth:`gspo_record.book.Book.guard`)."""
    if template in SUMMARIES and "book" in context:
        context = context["book"].guard(context)
    import jinja2

    from gspo_lab.equations import eq

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([TEMPLATES, HERE]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(FILTERS)
    from gspo_record.book import StatementError
    from gspo_record.prose import literals, why_fragile
    from gspo_record.recipe import knob_map
    from gspo_record.staleness_map import staleness_map

    env.globals.update(table=md_table, sep=sep, lead=_lead, eq=eq, knob_map=knob_map, staleness_map=staleness_map)
    if template in PROSE and (found := literals((TEMPLATES / template).read_text())):
        raise StatementError(f"{template}: numbers written into prose, not placeholders: {found}")
    if "book" in context:  # written prose: each sentence's assumed outcome (gspo_record/prose.py)
        env.globals.update(expect=context["book"].expect, s=context["book"].summary)
        env.filters.update(why_fragile=why_fragile)
    return env.get_template(template).render(**context)


def _hash(data: pd.DataFrame) -> str:
    return hashlib.sha256(data.to_csv(index=False, float_format="%.12g").encode()).hexdigest()


def build() -> Path:
    """Regenerate the pages (:data:`PAGES`), their figures and the lock file; returns the findings page's path."""
    context, figures = compute()
    docs = _docs()
    lock = {}
    (docs / "figures").mkdir(parents=True, exist_ok=True)
    for name, (data, plot) in figures.items():
        fig = legible(plot(data))  # every text at least 9 pt at the book's width (issue 48, item 7)
        fig.savefig(docs / "figures" / f"{name}.png", dpi=DPI, bbox_inches="tight")
        lock[name] = _hash(data)
    pages = {out: render(context, template) for out, template in PAGES.items()}
    for out, text in pages.items():
        (docs / out).write_text(text)
    (docs / "findings.lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    (docs / "book.json").write_text(book_json(context))
    problems = lint_failures(pages, context.get("facts"))
    if problems:  # the pages are written, so the author can read them; the build still fails
        raise LintError("the referee lint fails the pages (gspo_record/lint.py):\n" + "\n".join(problems))
    return docs / "findings.md"


class LintError(RuntimeError):
    """The referee lint found problems on freshly built pages."""


def lint_failures(pages: dict[str, str], facts=None) -> list[str]:
    """The referee lint's problems a build fails on (:func:`gspo_record.lint.failures`), one line each;
    ``facts``: what the build recorded printing (:mod:`gspo_record.facts`)."""
    from gspo_record.lint import failures, lint

    return [f"referee lint: {p}".splitlines()[0] for p in failures(lint(pages, facts))]


def check(context_and_figures: tuple[dict, dict] | None = None) -> list[str]:
    """Differences between the committed page / figure inputs and a regeneration from data/results, and the referee
    lint's problems on the regenerated pages (empty = none)."""
    context, figures = context_and_figures or compute()
    problems = []
    pages = {out: render(context, template) for out, template in PAGES.items()}
    for out, text in pages.items():
        path = _docs() / out
        if not path.is_file() or path.read_text() != text:
            problems.append(f"docs/{out} differs from its regeneration (run python -m gspo_record)")
    problems += lint_failures(pages, context.get("facts"))
    if not (_docs() / "book.json").is_file() or (_docs() / "book.json").read_text() != book_json(context):
        problems.append("docs/book.json differs from its regeneration (run python -m gspo_record)")
    lock = json.loads((_docs() / "findings.lock.json").read_text())
    now = {name: _hash(data) for name, (data, _) in figures.items()}
    for name in sorted(set(lock) | set(now)):
        if lock.get(name) != now.get(name):
            problems.append(f"figure {name}: its input data changed (or it is new / gone)")
    return problems
