"""The constants every interval of the rig uses: Student-t's 0.975 quantiles and the bootstrap's declared resamples
and seed (their own module so that :mod:`~gspo_lab.experiments.stats` and
:mod:`~gspo_lab.experiments.endpoint_range`, which build on each other's intervals, share them without an import
cycle)."""

from __future__ import annotations

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "T_975"]

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0

#: two-sided 95 % Student-t quantiles t_{0.975, df} for df = 1..30 (standard tables, e.g. NIST/SEMATECH e-Handbook of
#: Statistical Methods §1.3.6.7.2); past 30 the normal quantile 1.96 is within 2 %
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
