"""``python -m gspo_lab.findings [--check]``: regenerate the findings page, or check it against the stored results."""

from __future__ import annotations

import argparse

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from gspo_lab.findings.page import build, check

    parser = argparse.ArgumentParser(prog="python -m gspo_lab.findings", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        print("\n".join(problems) or "docs/findings.md matches data/results")
        return 1 if problems else 0
    print(f"wrote {build()}")
    return 0
