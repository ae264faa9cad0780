"""One catalogue of metric keys: every column the loop, the evaluation and the objectives write is defined in
``gspo_lab.metrics.CATALOGUE``, namespaced (``prefix/name``) unless it is an index column."""

from __future__ import annotations

from dataclasses import fields, replace

from gspo_lab.advantages import AdvantageStats
from gspo_lab.config import SMOKE
from gspo_lab.metrics import CATALOGUE, ObjectiveStats, catalogue
from gspo_lab.train import train

INDEX = {"rollout", "update", "update_in_rollout", "epoch"}


def test_every_key_written_by_a_run_is_catalogued():
    cfg = replace(SMOKE, checkpoint="sweep-sort", rollouts=1, beta=0.1, eval_every=1, eval_prompts=4)
    table = train(cfg, progress=False)
    stale = train(replace(cfg, rollouts=2, rollout_lag=1, beta=0.0, eval_every=0), progress=False)
    written = set(table.columns) | set(table.attrs["eval"].columns) | set(stale.columns)
    assert {"stale/lag", "stale/kl_k3", "stale/ess_frac"} <= written
    assert written - set(CATALOGUE) == set()
    assert {k for k in written if "/" not in k} <= INDEX  # nothing un-namespaced but the index columns


def test_dataclass_stats_name_catalogue_keys():
    for cls in (ObjectiveStats, AdvantageStats):
        for f in fields(cls):
            assert f.metadata["doc"] == CATALOGUE[f.metadata["key"]]
    assert set(catalogue("clip/")) == {k for k in CATALOGUE if k.startswith("clip/")}
    assert all(k in INDEX or "/" in k for k in CATALOGUE)
    assert "our reading" in CATALOGUE["clip/token_frac"]  # the paper never defines a clipped token
