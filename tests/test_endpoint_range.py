"""gspo_lab/experiments/endpoint_range.py: declared endpoint ranges and the intervals that stay inside them (issue 35).
Hand-built per-seed values, several of them the stored ones the issue names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_lab.experiments import endpoint_range as er
from gspo_lab.experiments.stats import (
    STATS_VERSION,
    bootstrap_t_ci,
    interval_method,
    interval_sign,
    seed_interval,
    t_interval,
)
from gspo_record.intervals import coverage as cov

# stored per-seed values (issue 35): dense GRPO cap 1 − no cap, late accuracy, seeds 10-14 (5/5 above 0); finding
# 6's noise ratio GRPO ÷ GSPO at L = 16 (5/5 above 1); an arm collapsed on every seed (MoE SAPO's late accuracy)
CAP1_MINUS_OFF = [0.6547, 0.6047, 0.5023, 0.2898, 0.2227]
NOISE_RATIO = [1.3396, 2.1551, 1.1183, 1.9079, 2.0847]
COLLAPSED = [0.0391, 0.0047, 0.0172, 0.0, 0.0]

ALL_KINDS = [er.ACCURACY, er.DIFFERENCE, er.RATIO, (-math.inf, 2.0), er.UNBOUNDED]


@pytest.mark.parametrize("bounds", ALL_KINDS)
def test_each_link_inverts_and_its_derivative_is_its_slope(bounds):
    lo, hi = bounds
    x = np.array([0.05, 0.3, 0.5, 0.9]) if math.isfinite(lo) and math.isfinite(hi) else np.array([0.05, 0.3, 1.5])
    x = x * (hi - lo) + lo if math.isfinite(lo) and math.isfinite(hi) else x
    lk, h = er.link(bounds), 1e-6
    assert lk.inv(lk.g(x)) == pytest.approx(x, rel=1e-12, abs=1e-12)
    assert lk.dg(x) == pytest.approx((lk.g(x + h) - lk.g(x - h)) / (2 * h), rel=1e-5)


def test_the_difference_link_is_fishers_z_and_the_accuracy_link_the_logit():
    d, p = np.array([-0.6, 0.1, 0.8]), np.array([0.1, 0.5, 0.95])
    assert er.link(er.DIFFERENCE).g(d) == pytest.approx(2 * np.arctanh(d))
    assert er.link(er.ACCURACY).g(p) == pytest.approx(np.log(p / (1 - p)))


def test_away_from_the_edges_transformed_t_is_student_t():
    values = [0.49, 0.51, 0.50, 0.52, 0.48]
    assert er.transformed_t_ci(values, er.ACCURACY) == pytest.approx(t_interval(values), abs=2e-4)
    assert er.transformed_t_ci(values, er.UNBOUNDED) == pytest.approx(t_interval(values), abs=1e-12)


def test_near_a_bound_the_interval_stays_inside_where_t_and_bootstrap_t_leave():
    near_zero = [0.0, 0.0, 0.0, 0.0, 7.8e-4]  # the page's 1.56e-04 [-2.77e-04, 5.90e-04] under t
    assert t_interval(near_zero)[0] < 0
    lo, hi = er.transformed_t_ci(near_zero, er.ACCURACY)
    assert 0 < lo < np.mean(near_zero) < hi < 1
    assert bootstrap_t_ci(NOISE_RATIO)[0] < 1.15  # the page's 1.72 [0.104, 2.23]
    lo, hi = er.transformed_t_ci(NOISE_RATIO, er.RATIO)
    assert 1 < lo < np.mean(NOISE_RATIO) < hi
    for method in (er.transformed_t_ci, er.transformed_bootstrap_t_ci):
        lo, hi = method(COLLAPSED, er.ACCURACY)
        assert 0 <= lo < np.mean(COLLAPSED) < hi <= 1


def test_degenerate_cases_are_explicit():
    for f in (er.transformed_t_ci, er.transformed_bootstrap_t_ci):
        assert f([0.0] * 5, er.ACCURACY) == (0.0, 0.0)  # an absorbing collapse: the point, the count speaks
        assert f([1.0] * 5, er.ACCURACY) == (1.0, 1.0)
        assert f([0.3] * 5, er.ACCURACY) == (0.3, 0.3)
        assert all(math.isnan(v) for v in f([0.3], er.ACCURACY))
        assert f([0.3, math.nan, None, 0.3], er.ACCURACY) == (0.3, 0.3)  # missing values dropped, as t_interval
    rows = np.array([[0.0] * 5, [0.0, 0.0, 0.0, 0.0, 5e-324], [0.0, 0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0, 0.0]])
    for ci in (er.transformed_t(rows, er.ACCURACY), er.transformed_bootstrap_t(rows, er.ACCURACY)):
        assert np.isfinite(ci).all() and not er.leaves_range(ci, er.ACCURACY).any()


def test_values_outside_their_declared_range_are_refused_by_name():
    with pytest.raises(ValueError, match=r"values must lie in the declared bounds \[0.0, 1.0\]; 1 of 3"):
        seed_interval([0.2, 1.3, 0.5], bounds=er.ACCURACY)
    with pytest.raises(ValueError, match="x must lie in the declared bounds"):
        er.transformed_t(np.array([[0.2, -0.1]]), er.ACCURACY)
    with pytest.raises(ValueError, match="bounds must be"):
        er.link((1.0, 0.0))
    er.check_bounds([0.0, 1.0, math.nan], er.ACCURACY)  # closed bounds; a missing value is not checked


def test_seed_interval_is_transformed_t_on_the_declared_bounds_from_version_4():
    values = [0.02, 0.31, 0.55, 0.12, 0.48]
    assert STATS_VERSION == 4
    assert seed_interval(values) == pytest.approx(t_interval(values), abs=1e-12)  # no range: plain Student-t
    assert seed_interval(values, bounds=er.ACCURACY) == er.transformed_t_ci(values, er.ACCURACY)
    with interval_method("bootstrap_t"):  # version 3's: ignores bounds
        assert seed_interval(values) == bootstrap_t_ci(values)
        assert seed_interval(values, bounds=er.ACCURACY) == bootstrap_t_ci(values)
    with interval_method("transformed_t"):
        assert seed_interval(values) == pytest.approx(t_interval(values), abs=1e-12)
        assert seed_interval(values, er.ACCURACY) == er.transformed_t_ci(values, er.ACCURACY)
    with interval_method("transformed_bootstrap_t"):
        assert seed_interval(values) == pytest.approx(bootstrap_t_ci(values), abs=1e-12)


def test_the_stored_five_of_five_effects_are_shown_on_their_declared_ranges():
    with interval_method("bootstrap_t"):  # version 3's page: no difference shown
        assert interval_sign(CAP1_MINUS_OFF) == 0
        assert interval_sign(np.array(NOISE_RATIO) - 1) == 0
    assert interval_sign(CAP1_MINUS_OFF, bounds=er.DIFFERENCE) == 1  # version 4's page
    assert interval_sign(np.array(NOISE_RATIO) - 1, bounds=(-1.0, math.inf)) == 1  # a ratio − 1


def test_vectorised_and_scalar_transformed_intervals_agree():
    x = np.array([CAP1_MINUS_OFF, [0.02, -0.31, 0.55, 0.12, -0.48]])
    for row, (lo, hi) in zip(x, er.transformed_t(x, er.DIFFERENCE), strict=True):
        assert (lo, hi) == pytest.approx(er.transformed_t_ci(row, er.DIFFERENCE), abs=1e-12)
    boot = er.transformed_bootstrap_t(x, er.DIFFERENCE, resamples=20_000)
    for row, (lo, hi) in zip(x, boot, strict=True):
        assert (lo, hi) == pytest.approx(er.transformed_bootstrap_t_ci(row, er.DIFFERENCE), abs=0.03)
    unbounded = er.transformed_bootstrap_t(x, er.UNBOUNDED)
    assert unbounded == pytest.approx(cov.intervals(x, "bootstrap_t"), abs=1e-12)  # no range: the plain bootstrap-t


def test_mutant_transformed_t_with_the_normal_quantile_undercovers(monkeypatch):
    """The coverage claim can fail: the delta-method interval with z = 1.96 instead of Student's t quantile."""
    monkeypatch.setattr(er, "_t_quantile", lambda n: 1.959964)
    assert cov.coverage("transformed_t", "steady", 5, reps=2000) < 0.93
