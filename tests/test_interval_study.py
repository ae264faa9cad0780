"""gspo_record/intervals/interval_study.py: the rule that picks stats version 4's interval (issue 35, item 1), on small
synthetic study tables reaching every outcome, and the chosen method's properties pinned by a seeded simulation."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gspo_record.intervals import coverage as cov
from gspo_record.intervals import interval_study as s


def _table(methods: dict) -> pd.DataFrame:
    """A study table from ``{method: (coverage on the required population, leave share, power, width)}``: one
    required population and one power case at each n."""
    rows = []
    for method, (coverage, leaves, power, width) in methods.items():
        for n in s.NS:
            rows.append({"method": method, "population": "req", "group": "required", "n": n, "coverage": coverage,
                         "median_width": width, "leaves": leaves, "power": math.nan})  # fmt: skip
            rows.append({"method": method, "population": "eff", "group": "power", "n": n, "coverage": 0.95,
                         "median_width": 2 * width, "leaves": 0.0, "power": power})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "methods, expected",
    [
        ({"a": (0.92, 0.0, 1.0, 0.1), "b": (0.90, 0.0, 1.0, 0.1)}, s.Choice(None, "none covers", ())),
        ({"a": (0.95, 0.01, 1.0, 0.1), "b": (0.90, 0.0, 1.0, 0.1)}, s.Choice(None, "none stays in range", ())),
        ({"a": (0.95, 0.0, 0.5, 0.3), "b": (0.95, 0.02, 1.0, 0.1)}, s.Choice("a", "only one", ("a",))),
        ({"a": (0.95, 0.0, 0.90, 0.1), "b": (0.94, 0.0, 0.95, 0.3)}, s.Choice("b", "most power", ("a", "b"))),
        ({"a": (0.95, 0.0, 0.94, 0.1), "b": (0.94, 0.0, 0.95, 0.3)}, s.Choice("a", "narrowest", ("a", "b"))),
    ],
)
def test_the_rule_reaches_every_outcome(methods, expected):
    assert s.choose(_table(methods)) == expected


def test_the_bars_bind_at_their_thresholds_and_at_either_n():
    at_floor = {"a": (s.COVERAGE_FLOOR, 0.0, 1.0, 0.1)}
    assert s.choose(_table(at_floor)).method == "a"
    table = _table(at_floor)
    table.loc[(table["n"] == 10) & (table["group"] == "required"), "coverage"] = s.COVERAGE_FLOOR - 0.001
    assert s.choose(table).outcome == "none covers"  # n = 10 counts as much as n = 5
    table = _table(at_floor)
    table.loc[table["group"] == "power", "leaves"] = 0.0005  # leaving the range anywhere counts, not only required
    assert s.choose(table).outcome == "none stays in range"
    assert set(s.OUTCOMES) == {"none covers", "none stays in range", "only one", "most power", "narrowest"}


def test_summarise_reads_the_rule_inputs():
    got = s.summarise(_table({"a": (0.95, 0.0, 0.9, 0.2)})).loc["a"]
    assert got.to_dict() == pytest.approx({"min_coverage": 0.95, "max_leaves": 0.0, "power": 0.9, "width": 0.2})


def test_the_study_table_and_its_wide_view():
    table = s.study(reps=200, methods=("t", "transformed_t"), ns=(5,),
                    populations=("steady", "dense GSPO − GRPO, no cap (0.37)"))  # fmt: skip
    assert list(table.columns) == ["method", "population", "group", "n", "coverage", "median_width", "leaves",
                                   "power"]  # fmt: skip
    assert len(table) == 4 and table["power"].isna().sum() == 2
    view = s.wide(table)
    assert list(view.columns) == ["t", "transformed_t"] and view.shape == (2, 2)
    assert view.iloc[1, 1].count("·") == 3  # coverage · width · leaves · power


def test_the_chosen_method_covers_stays_in_range_and_has_the_power():
    """transformed_t, the study's pick (module docstring of coverage.py: 2,000 samples per cell): seeded, 1,000 samples
    here (Monte Carlo sd of a coverage near 0.94: 0.0075), so the coverage bar is pinned 1.3 sd loose."""
    table = s.study(reps=1000, methods=("t", "transformed_t"))
    chosen, t = (table[table["method"] == m].set_index(["population", "n"]) for m in ("transformed_t", "t"))
    required = chosen[chosen["group"] == "required"]
    assert required["coverage"].min() >= 0.92, required["coverage"]
    assert chosen["leaves"].max() == 0.0  # on every population, near a bound too, at both n
    assert t["leaves"].max() > 0.3  # where Student-t leaves the range (an arm collapsed on every seed)
    power5 = chosen[(chosen["group"] == "power")].xs(5, level="n")["power"]
    assert power5.min() >= 0.85, power5
    ratio = ("noise ratio GRPO ÷ GSPO, L 16 (1.72)", 5)
    assert chosen.loc[ratio, "power"] > t.loc[ratio, "power"] + 0.1  # the log scale reads a ratio's 5/5 better
    assert set(chosen["group"]) == set(cov.GROUPS)


def test_the_stored_table_is_a_run_of_the_study_and_picks_the_page_interval():
    """data/interval_study.csv (what the findings page's stats section reads) holds every method × population × n at
    the defaults, its rule picks the page's interval, and a fresh run at 200 samples per cell agrees with it within
    Monte Carlo error on a spread of cells (a steady, a half-bimodal, a near-a-bound and a power case)."""
    from gspo_lab.experiments.stats import PAGE_INTERVAL

    stored = s.stored()
    assert len(stored) == len(cov.ALL_METHODS) * len(cov.STUDY) * len(s.NS)
    assert set(stored["method"]) == set(cov.ALL_METHODS) and set(stored["population"]) == set(cov.STUDY)
    assert s.choose(stored).method == PAGE_INTERVAL
    populations = ["steady", "half (p 0.5)", "collapsed (near 0)", "noise ratio GRPO ÷ GSPO, L 16 (1.72)"]
    fresh = s.study(reps=200, methods=("t", "bootstrap_t", "transformed_t"), ns=(5,), populations=populations)
    both = fresh.merge(stored, on=["method", "population", "n"], suffixes=("", "_stored"))
    assert len(both) == len(fresh) == 12
    assert (both["coverage"] - both["coverage_stored"]).abs().max() < 0.06  # sd at 200 samples ~0.016
    assert (both["leaves"] - both["leaves_stored"]).abs().max() < 0.1
    assert ((both["median_width"] / both["median_width_stored"]) - 1).abs().max() < 0.2
    power = both.dropna(subset=["power"])
    assert len(power) == 3 and (power["power"] - power["power_stored"]).abs().max() < 0.1
