"""Stats version 4's interval of a mean over seeds, chosen on coverage, range, power and width (issue 35, item 1).

    python -m gspo_record.intervals.interval_study [--reps 2000] [--seed 0] [--csv PATH]
    python -m gspo_record.intervals.interval_study --csv data/interval_study.csv   # the stored table the page reads

prints one table — per population of :data:`~gspo_record.intervals.coverage.STUDY` and n in (5, 10), per method of
:data:`~gspo_record.intervals.coverage.ALL_METHODS`: coverage, median (unclamped) width, the share of intervals
leaving the endpoint's declared range, and power where the population is a stored 5/5-sign effect — then the rule's
inputs per method and the method :func:`choose` picks. Seeded; ``reps`` simulated samples per cell (Monte Carlo sd
of a coverage near 0.95 at 2,000: 0.005).

The rule (:func:`choose`, a pure function of that table, thresholds named below, declared before the study was run):
    1. coverage >= COVERAGE_FLOOR on every "required" population (steady, skewed, half-bimodal and its difference)
       at n = 5 and at n = 10; none: outcome "none covers";
    2. of those, the share of intervals leaving the declared range at most LEAVE_CEILING (= never) on every
       population at both n; none: "none stays in range";
    3. one left: "only one"; else the highest power (mean over the power cases at both n), "most power", unless
       others come within POWER_TIE of it: then the narrowest (mean median width over the required populations at
       both n) of those, "narrowest".
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gspo_record.intervals.coverage import ALL_METHODS, STUDY, simulate

__all__ = ["COVERAGE_FLOOR", "LEAVE_CEILING", "POWER_TIE", "NS", "OUTCOMES", "STORED", "Choice", "study", "stored",
           "summarise", "choose", "wide"]  # fmt: skip

COVERAGE_FLOOR = 0.93  # issue 35's bar for a nominal 95 % interval (issue 22's too)
LEAVE_CEILING = 0.0  # no clamping: an interval must stay in the endpoint's range by construction
POWER_TIE = 0.02  # power differences under this are ~2 Monte Carlo sd at 2,000 reps: not a difference
NS = (5, 10)
STORED = "data/interval_study.csv"
"""The study table at the defaults (2,000 samples per cell, seed 0), committed: the findings page's stats section reads
it (a fresh run takes ~30 s); tests/test_interval_study.py checks it against a fresh run at fewer samples."""
OUTCOMES = ("none covers", "none stays in range", "only one", "most power", "narrowest")


@dataclass(frozen=True)
class Choice:
    """The rule's pick: ``method`` (None when no method passes), its ``outcome`` (:data:`OUTCOMES`) and the methods
    that passed the coverage and range bars (``passing``)."""

    method: str | None
    outcome: str
    passing: tuple[str, ...]


def study(*, reps: int = 2000, seed: int = 0, methods=ALL_METHODS, ns=NS, populations=None) -> pd.DataFrame:
    """The study table: one row per method × population × n, columns method, population, group, n, coverage,
    median_width, leaves, power (:func:`~gspo_record.intervals.coverage.simulate`)."""
    rows = []
    for population in populations or STUDY:
        for n in ns:
            for method in methods:
                sim = simulate(method, population, n, reps=reps, seed=seed)
                rows.append({"method": method, "population": population, "group": STUDY[population].group, "n": n,
                             **sim})  # fmt: skip
    return pd.DataFrame(rows)


def stored() -> pd.DataFrame:
    """The committed study table (:data:`STORED`), as :func:`study` returns it."""
    from gspo_lab.paths import repo_root

    return pd.read_csv(repo_root() / STORED)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per method, the rule's inputs: the lowest coverage on the required populations (``min_coverage``), the highest
    leave share anywhere (``max_leaves``), the mean power over the power cases (``power``) and the mean median width
    over the required populations (``width``)."""
    required, power = table[table["group"] == "required"], table[table["group"] == "power"]
    return pd.DataFrame({
        "min_coverage": required.groupby("method", sort=False)["coverage"].min(),
        "max_leaves": table.groupby("method", sort=False)["leaves"].max(),
        "power": power.groupby("method", sort=False)["power"].mean(),
        "width": required.groupby("method", sort=False)["median_width"].mean(),
    })  # fmt: skip


def choose(table: pd.DataFrame) -> Choice:
    """The declared rule (module docstring) on a study table (:func:`study`'s columns)."""
    s = summarise(table)
    covering = s[s["min_coverage"] >= COVERAGE_FLOOR]
    if covering.empty:
        return Choice(None, "none covers", ())
    inside = covering[covering["max_leaves"] <= LEAVE_CEILING]
    passing = tuple(inside.index)
    if inside.empty:
        return Choice(None, "none stays in range", ())
    if len(inside) == 1:
        return Choice(passing[0], "only one", passing)
    best = inside["power"].max()
    close = inside[inside["power"] >= best - POWER_TIE]
    if len(close) == 1:
        return Choice(close.index[0], "most power", passing)
    return Choice(close["width"].idxmin(), "narrowest", passing)


def wide(table: pd.DataFrame) -> pd.DataFrame:
    """The study table as one row per population and n, one column per method: ``coverage · width · leaves %``, and
    ``· power`` for a power case."""

    def cell(r) -> str:
        text = f"{r.coverage:.3f} · {r.median_width:.3g} · {r.leaves:.1%}"
        return text if np.isnan(r.power) else f"{text} · p {r.power:.2f}"

    out = table.assign(cell=[cell(r) for r in table.itertuples()])
    return out.pivot_table(index=["group", "population", "n"], columns="method", values="cell", aggfunc="first",
                           sort=False)[list(dict.fromkeys(table["method"]))]  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="simulated samples per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples (and of the bootstrap draws)")
    parser.add_argument("--csv", help="also write the long table here")
    args = parser.parse_args(argv)
    table = study(reps=args.reps, seed=args.seed)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(f"cells: coverage · median width · share leaving the declared range [· power]; {args.reps} samples each, "
          f"seed {args.seed}\n")  # fmt: skip
    print(wide(table).to_markdown())
    print("\nthe rule's inputs per method\n")
    print(summarise(table).to_markdown(floatfmt=".3f"))
    choice = choose(table)
    print(f"\nchosen: {choice.method} ({choice.outcome}; passing coverage and range: {', '.join(choice.passing)})")


if __name__ == "__main__":
    main()
