"""``python -m gspo_lab.findings [--check | --reread METHOD]``: regenerate the findings page, check it against the
stored results, or print which of its verdicts change under another interval (gspo_lab/findings/reread.py)."""

from __future__ import annotations

import argparse

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from gspo_lab.findings.page import build, check

    parser = argparse.ArgumentParser(prog="python -m gspo_lab.findings", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument(
        "--reread",
        choices=("bootstrap_t", "percentile", "t"),
        help="print the verdicts that change from it to the page's (bootstrap_t: stats version 3; percentile: 2)",
    )
    args = parser.parse_args(argv)
    if args.reread:
        from gspo_lab.findings.page import SECTIONS
        from gspo_lab.findings.reread import reread, table

        print(table(reread(SECTIONS, args.reread), changed_only=True))
        return 0
    if args.check:
        problems = check()
        print("\n".join(problems) or "docs/findings.md matches data/results")
        return 1 if problems else 0
    print(f"wrote {build()}")
    return 0
