"""Issue 22, item 1: which 95 % interval of a mean over seeds covers 93 % or more at 5 and 10 seeds, on per-seed
distributions like the stored ones (gspo_record/intervals/coverage.py declares them). Seeded simulations, 2,000
samples each (Monte Carlo sd of a coverage near 0.95: 0.005)."""

from __future__ import annotations

import numpy as np
import pytest

from gspo_lab.experiments.stats import bootstrap_ci, t_interval
from gspo_record.intervals import coverage as cov

FLOOR = 0.93  # the bar for a nominal 95 % interval
REPS = 2000
COMMON = [p for p in cov.POPULATIONS if p not in cov.RARE]


@pytest.mark.parametrize("n", [5, 10])
@pytest.mark.parametrize("population", COMMON)
def test_bootstrap_t_covers_on_every_common_population(population, n):
    assert cov.coverage("bootstrap_t", population, n, reps=REPS) >= FLOOR


def test_the_percentile_bootstrap_and_student_t_fall_short_where_bootstrap_t_does_not():
    assert cov.coverage("percentile", "steady", 5, reps=REPS) < 0.88  # the ~84 % issue 22 reports
    assert cov.coverage("t", "steady", 5, reps=REPS) >= FLOOR  # t is fine on a steady arm ...
    assert cov.coverage("t", "collapsing − steady", 5, reps=REPS) < FLOOR  # ... not on a collapsing arm's difference


@pytest.mark.parametrize("population", cov.RARE)
def test_no_interval_covers_a_mode_of_probability_two_tenths(population):
    """The unseen-mode limit: the rare populations defeat issue 22's three methods at 5 seeds or at 10, and the
    range-respecting ones (issue 35) where the rare mode is a collapse."""
    methods = cov.ALL_METHODS if population != "collapsing (p 0.8)" else cov.METHODS
    worst = {m: min(cov.coverage(m, population, n, reps=REPS) for n in (5, 10)) for m in methods}
    assert all(c < FLOOR for c in worst.values()), worst


def test_transformed_t_reaches_the_bar_where_the_rare_mode_is_the_survivors():
    """On a p 0.8 collapsing arm the rare mode (a survivor) lies on the far side from the bound, where the logit
    stretches the interval: transformed t covers ~0.94 at 5 seeds and ~0.93 at 10 (0.944, 0.928 at 20,000 samples),
    at the bar rather than under it as in the module docstring's claim for the other methods."""
    got = [cov.coverage("transformed_t", "collapsing (p 0.8)", n, reps=REPS) for n in (5, 10)]
    assert all(0.92 <= c <= 0.96 for c in got), got


def test_mutant_bootstrap_t_with_normal_quantiles_undercovers(monkeypatch):
    """The claim can fail: studentizing with the normal quantile instead of t*'s own bootstrap quantiles (a plain
    z interval) drops below the bar at 5 seeds."""

    def z_interval(x, method, **kw):
        mean, se = x.mean(1), x.std(1, ddof=1) / np.sqrt(x.shape[1])
        return np.stack([mean - 1.959964 * se, mean + 1.959964 * se], 1)

    monkeypatch.setattr(cov, "intervals", z_interval)
    assert cov.coverage("bootstrap_t", "steady", 5, reps=REPS) < FLOOR


def test_vectorised_intervals_match_the_scalar_ones():
    x = np.array([[0.41, 0.52, 0.47, 0.60, 0.39], [0.02, 0.31, 0.55, 0.12, 0.48]])
    for row, (lo, hi) in zip(x, cov.intervals(x, "t"), strict=True):
        assert (lo, hi) == pytest.approx(t_interval(row), abs=1e-12)
    pct = cov.intervals(x, "percentile", resamples=20_000)
    for row, (lo, hi) in zip(x, pct, strict=True):
        assert (lo, hi) == pytest.approx(bootstrap_ci(row), abs=0.01)
    bt = cov.intervals(x, "bootstrap_t")
    assert np.all(bt[:, 0] < x.mean(1)) and np.all(x.mean(1) < bt[:, 1])
    with pytest.raises(ValueError, match="method must be one of"):
        cov.intervals(x, "bca")
    with pytest.raises(ValueError, match="population must be one of"):
        cov.coverage("t", "normal", 5)


def test_the_page_interval_is_transformed_t_and_can_be_switched():
    from gspo_lab.experiments.endpoint_range import ACCURACY, transformed_t_ci
    from gspo_lab.experiments.stats import STATS_VERSION, bootstrap_t_ci, interval_method, seed_interval

    values = [0.02, 0.31, 0.55, 0.12, 0.48]
    assert STATS_VERSION == 4 and seed_interval(values, ACCURACY) == transformed_t_ci(values, ACCURACY)
    with interval_method("bootstrap_t"):  # version 3
        assert seed_interval(values, ACCURACY) == bootstrap_t_ci(values)
    with interval_method("t"):
        assert seed_interval(values) == t_interval(values)
    with interval_method("percentile"):
        assert seed_interval(values) == bootstrap_ci(values)
    assert seed_interval(values, ACCURACY) == transformed_t_ci(values, ACCURACY)
    with pytest.raises(ValueError, match="method must be one of"):
        with interval_method("bca"):
            pass
    vec = cov.intervals(np.array([values]), "bootstrap_t", resamples=20_000)[0]
    assert tuple(vec) == pytest.approx(bootstrap_t_ci(values), abs=0.03)
    assert bootstrap_t_ci([0.5] * 5) == (0.5, 0.5)


def test_reread_pairs_each_rules_verdicts_and_names_the_changes():
    """A verdict at the edge (percentile above 0, bootstrap-t across it) changes; a clear one does not; a mutant that
    reads other rules in the second pass is refused."""
    from gspo_lab.experiments.stats import interval_sign
    from gspo_record.reread import reread, table
    from gspo_record.rules import Rule

    rule = Rule("test.edge", "0", {"higher": "higher", "none": "none", "lower": "lower"}, {}, declared="test")
    pick = {1: "higher", 0: "none", -1: "lower"}
    edge, clear = [0.01, -0.002, 0.03, 0.004, 0.02], [0.5, 0.52, 0.49, 0.51, 0.5]
    sections = {"s": lambda: [rule.verdict(pick[interval_sign(v)]) for v in (clear, edge)]}
    rows = reread(sections, "percentile", "bootstrap_t")
    assert rows == [{"section": "s", "rule": "test.edge", "read": 2, "changed": [(1, "", "higher", "none")]}]
    assert "1 of 2 verdicts change" in table(rows)
    from gspo_lab.experiments import stats

    other = Rule("test.other", "0", {"x": "x"}, {}, declared="test")
    mutant = {"s": lambda: rule.verdict("higher") if stats._INTERVAL[0] == "percentile" else other.verdict("x")}
    with pytest.raises(RuntimeError, match="do not pair up"):
        reread(mutant, "percentile", "t")
