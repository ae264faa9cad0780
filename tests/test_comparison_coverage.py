"""Per-comparison coverage (gspo_record/intervals/comparison_coverage.py, gspo_record/comparisons.py): each
stored paired comparison taken as its own population; the committed table recomputes row for row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gspo_record.intervals.comparison_coverage as cc
from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_record.intervals.coverage import ALL_METHODS


def test_coverage_of_a_spread_population_is_near_nominal_and_a_point_interval_misses():
    values = np.random.default_rng(3).normal(0.2, 0.05, 10)
    cov, width = cc.coverage_of(values, "t", DIFFERENCE, reps=2000)
    assert 0.9 < cov < 0.97 and width > 0
    # every resample of a population with one outlying seed of five that misses it holds too little
    outlier = [0.1, 0.11, 0.09, 0.1, 0.6]
    assert cc.coverage_of(outlier, "t", DIFFERENCE)[0] < cc.coverage_of(values[:5], "t", DIFFERENCE)[0]


@pytest.mark.parametrize("values", [[0.1], [0.1, float("nan")], [[0.1, 0.2]]])
def test_coverage_of_names_bad_values(values):
    with pytest.raises(ValueError, match="values must be"):
        cc.coverage_of(values, "t")


def test_coverage_of_names_a_bad_method():
    with pytest.raises(ValueError, match="method must be one of"):
        cc.coverage_of([0.1, 0.2, 0.3], "wald")


def test_summarise_counts_comparisons_below_the_bar():
    table = pd.DataFrame({"comparison": [0, 1, 2], "n": 5, "method": "t", "coverage": [0.95, 0.92, 0.80],
                          "median_width": [0.1, 0.2, 0.3]})  # fmt: skip
    (row,) = cc.summarise(table).to_dict("records")
    assert row["comparisons"] == 3 and row["below_bar"] == 2 and row["min_coverage"] == 0.80
    assert row["median_coverage"] == 0.92


def test_the_stored_table_recomputes():
    """Three stored comparisons, every method: the seeded coverage and width recompute exactly."""
    table = cc.stored()
    assert set(table["method"]) == set(ALL_METHODS)
    for i in sorted(set(table["comparison"]))[:: max(1, table["comparison"].nunique() // 3)][:3]:
        rows = table[table["comparison"] == i]
        values = [float(v) for v in rows["values"].iloc[0].split()]
        bounds = (float(rows["lo"].iloc[0]), float(rows["hi"].iloc[0]))
        for r in rows.itertuples():
            cov, width = cc.coverage_of(values, r.method, bounds, reps=cc.REPS, seed=cc.SEED + int(i))
            assert cov == pytest.approx(r.coverage, abs=1e-12) and width == pytest.approx(r.median_width, rel=1e-9)


def test_the_page_prints_the_per_comparison_summary():
    from gspo_lab.paths import repo_root

    text = (repo_root() / "docs" / "methods.md").read_text()
    assert "**Each comparison as its own population**" in text
    for row in cc.summary():
        assert "| " + " | ".join(str(c) for c in row) + " |" in text
