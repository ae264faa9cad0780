"""The paired comparisons the findings print, and each one's coverage as its own population (issue 35).

    python -m gspo_record.comparisons [--reps 2000]   # one page pass (~2 min), then the study (~1 min)

collects every paired per-seed comparison the page pass prints (each value list printed with a sign count, on its
endpoint's declared bounds; a robustness reading's are skipped, duplicates kept once), runs
:func:`gspo_record.intervals.comparison_coverage.study` on them for every interval method and writes its ``STORED``
table, which the page's stats section summarises (``comparison_coverage.summary``).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

import gspo_record.intervals.comparison_coverage as cc
from gspo_lab.experiments.endpoint_range import UNBOUNDED
from gspo_lab.paths import repo_root

__all__ = ["collect", "main"]


def collect() -> pd.DataFrame:
    """Every paired comparison a page pass prints: columns values (tuple), lo, hi (its declared bounds). Reads the
    values :func:`gspo_record.fmt.signs` is given (only paired values get a sign count) and the bounds its
    caller computed."""
    import gspo_lab.experiments.reading as reading
    import gspo_record.fmt as fmt
    from gspo_record.page import compute

    seen: dict[tuple, tuple[float, float]] = {}
    original = fmt.signs

    def spy(values, null: float = 0.0) -> str:
        if not reading.in_inner() and reading.left_out() is None and reading.endpoint() == "late":
            x = tuple(float(v) for v in values if v == v)
            bounds = sys._getframe(1).f_locals.get("bounds") or UNBOUNDED
            if len(x) >= 2:
                seen.setdefault(x, (float(bounds[0]), float(bounds[1])))
        return original(values, null)

    fmt.signs = spy
    try:
        compute()
    finally:
        fmt.signs = original
    return pd.DataFrame([{"values": x, "lo": b[0], "hi": b[1]} for x, b in seen.items()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gspo_record.comparisons", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=cc.REPS, help="resamples per comparison and method")
    args = parser.parse_args(argv)
    comparisons = collect()
    table = cc.study(comparisons, reps=args.reps)
    values = comparisons.assign(values=comparisons["values"].map(lambda x: " ".join(repr(v) for v in x)))
    out = table.merge(values.reset_index(names="comparison"), on="comparison")
    out.to_csv(repo_root() / cc.STORED, index=False)
    print(cc.summarise(table).to_string(index=False))
    print(f"wrote {cc.STORED}: {len(comparisons)} comparisons")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
