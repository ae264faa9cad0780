"""``python -m gspo_record [--check | --reread METHOD | --lint]``: regenerate the findings page, check it against
the stored results, print which of its verdicts change under another interval (gspo_record/reread.py), or run
every referee lint rule's text reading over the committed docs/*.md (gspo_record/lint.py; --check and every
build fail on the rules not in lint.REPORTED_ONLY).

``python -m gspo_record provenance [--check]``: write (or compare) ``data/results/provenance.json``, which stored
cells ran at a commit that already held their spec, with every verdict rule's first commit
(:mod:`gspo_record.provenance`)."""

from __future__ import annotations

import argparse
import time

__all__ = ["main", "timing", "rule_markers"]


def timing(seconds: float, slowest: int = 5) -> str:
    """The build's time and where it went: ``[build] 48.2 s; slowest: f10 12.1 s, …`` (each section's seconds summed
    over the robustness readings and the page's two passes: :data:`gspo_record.reread.SECONDS`)."""
    from gspo_record.reread import SECONDS

    top = sorted(SECONDS.items(), key=lambda kv: -kv[1])[:slowest]
    return f"[build] {seconds:.1f} s; slowest: " + ", ".join(f"{name} {s:.1f} s" for name, s in top)


def rule_markers() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every registered rule's marker and specs (for :mod:`gspo_record.provenance`); the page's modules register
    them."""
    import gspo_record.page  # noqa: F401
    from gspo_record.rules import RULES

    return {name: (rule.marker, rule.specs) for name, rule in RULES.items()}


def main(argv: list[str] | None = None) -> int:
    import sys

    from gspo_record.page import build, check

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["provenance"]:
        from gspo_record.provenance import main as provenance

        return provenance(argv[1:], rule_markers())

    parser = argparse.ArgumentParser(prog="python -m gspo_record", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument(
        "--reread",
        choices=("bootstrap_t", "percentile", "t"),
        help="print the verdicts that change from it to the page's (bootstrap_t: stats version 3; percentile: 2)",
    )
    parser.add_argument("--lint", action="store_true", help="run the referee lint over docs/*.md; exit 1 on a problem")
    args = parser.parse_args(argv)
    if args.lint:
        return _lint()
    if args.reread:
        from gspo_record.page import SECTIONS
        from gspo_record.reread import reread, table

        print(table(reread(SECTIONS, args.reread), changed_only=True))
        return 0
    start = time.perf_counter()
    if args.check:
        problems = check()
        print("\n".join(problems) or "docs/findings.md matches data/results")
        print(timing(time.perf_counter() - start))
        return 1 if problems else 0
    from gspo_record.page import LintError

    try:
        print(f"wrote {build()}")
    except LintError as err:
        print(err)
        return 1
    finally:
        print(timing(time.perf_counter() - start))
    return 0


def _lint() -> int:
    """The referee lint over the committed pages, text rules only (the build collects no facts yet)."""
    from gspo_lab.paths import repo_root
    from gspo_record.lint import lint, report
    from gspo_record.page import PAGES  # importing the page registers every verdict rule

    docs = repo_root() / "docs"
    problems = lint({name: (docs / name).read_text() for name in PAGES})
    print(report(problems))
    return 1 if problems else 0
