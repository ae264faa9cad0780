"""The research rig: committed experiment specs, their cells run in worker processes, one stored result per cell,
and the statistics every number about them is read with. The findings page (:mod:`gspo_record`) and the
notebooks ask their questions here.

spec        a spec file → its cells (grid × seeds) and their keys; CODE_VERSION, KEY_IF_NOT_DEFAULT
summary     the catalogue of a cell's summary keys, per-rollout aggregates, the declared collapse rule, sensitivity
            endpoints (two-evaluation collapse, late held-out accuracy)
failure     two failure modes told apart (collapsed, frozen) with their onsets; the out-of-band kept-gradient share
runner      run cells (resumable, worker processes), the core set, re-run a stored cell's first rollouts
store       results on disk: load / write / merge / compare / supersede
stats       bootstrap and Wilson intervals, per-arm tables, paired per-seed ratios and differences
endpoint_range  an endpoint's declared range (bounds) and the intervals that stay inside it
quantiles   Student-t's 0.975 quantiles and the bootstrap's resamples and seed, shared by stats and endpoint_range
read        per-rollout curves of any stored arm
probes      measurements without a training run (expert volatility, precision, gradient noise)
reading     how the reader reads: a training seed left out, the endpoint read as late_acc, the seeds read

The interval studies (each interval's coverage by simulation, the rule that picks the page's) and provenance are the
research record's (``gspo_record.intervals``, ``gspo_record.provenance``): the record imports this package, never
the reverse.
"""

from gspo_lab.experiments.read import curves, stored_curves
from gspo_lab.experiments.spec import CODE_VERSION, Cell, Spec, cells, core_specs, load_spec, spec_named
from gspo_lab.experiments.stats import arm_table, bootstrap_ci, paired_diff, paired_ratio, rate_table, wilson
from gspo_lab.experiments.store import finished, load_result, merge, result_path
from gspo_lab.experiments.summary import COLLAPSE_FRACTION, SUMMARY_KEYS, endpoints, summarize

__all__ = [
    "CODE_VERSION",
    "COLLAPSE_FRACTION",
    "SUMMARY_KEYS",
    "Cell",
    "Spec",
    "arm_table",
    "bootstrap_ci",
    "cells",
    "core_specs",
    "curves",
    "endpoints",
    "finished",
    "load_result",
    "load_spec",
    "merge",
    "paired_diff",
    "paired_ratio",
    "rate_table",
    "result_path",
    "spec_named",
    "stored_curves",
    "summarize",
    "wilson",
]
