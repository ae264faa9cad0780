"""The logistic fit behind rule ``f11e.kl50`` (:mod:`gspo_record.f11.ladder`): the x where P(y = 1) crosses 0.5,
one sample at a time (:func:`logistic`) or a bootstrap's resamples in one Newton loop (:func:`logistic_many`)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["RIDGE", "logistic", "logistic_many"]

#: L2 penalty on the slope of the standardised log10 drift (gspo_record/f11/ladder.py's docstring says why)
RIDGE = 0.01


def logistic(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> float:
    """The x where a logistic fit of ``y`` (0/1) on ``x`` crosses 0.5, with an L2 penalty ``ridge`` on the slope
    of the standardised ``x`` (Newton's method); NaN when the slope is not positive (collapse does not rise with x)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y) or len(x) < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"logistic: x and y must be finite, of one length >= 2; got {len(x)} and {len(y)}")
    mu, sd = x.mean(), x.std() or 1.0
    z = np.column_stack([np.ones_like(x), (x - mu) / sd])
    beta, penalty = np.zeros(2), np.diag([0.0, ridge])
    for _ in range(100):
        p = 1 / (1 + np.exp(-z @ beta))
        grad = z.T @ (y - p) - penalty @ beta
        hess = z.T @ (z * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    return mu - sd * beta[0] / beta[1] if beta[1] > 0 else math.nan


def logistic_many(xs: np.ndarray, ys: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """:func:`logistic` of each row of ``xs`` and ``ys`` (shape (R, n): R resamples of n runs), in one Newton loop
    over the rows not yet converged: each row takes :func:`logistic`'s steps on the same numbers, so its crossing is
    :func:`logistic`'s (tests/test_f11_ladder.py checks, bit for bit)."""
    mu, sd = xs.mean(axis=1), xs.std(axis=1)
    sd = np.where(sd == 0, 1.0, sd)
    z = np.stack([np.ones_like(xs), (xs - mu[:, None]) / sd[:, None]], axis=2)  # (R, n, 2)
    beta, penalty = np.zeros((len(xs), 2)), np.diag([0.0, ridge])
    active = np.ones(len(xs), dtype=bool)
    for _ in range(100):
        rows = np.flatnonzero(active)
        if not len(rows):
            break
        zr, b, zt = z[rows], beta[rows], np.swapaxes(z[rows], 1, 2)
        p = 1 / (1 + np.exp(-(zr @ b[:, :, None])[:, :, 0]))
        grad = (zt @ (ys[rows] - p)[:, :, None])[:, :, 0] - b @ penalty.T
        hess = zt @ (zr * (p * (1 - p))[:, :, None]) + penalty
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        beta[rows] = b + step
        active[rows] = np.abs(step).max(axis=1) >= 1e-10
    return np.where(beta[:, 1] > 0, mu - sd * beta[:, 0] / np.where(beta[:, 1] > 0, beta[:, 1], 1.0), np.nan)
