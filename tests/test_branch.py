"""Branching from saved states (issue 22, item 5): a branch starts from its trunk's kept state and continues under
its own config; an unchanged branch continues the trunk bit for bit; the sweep runs trunks first and a branch
whose trunk state is not kept runs the trunk's first rollouts itself, with the same numbers."""

from __future__ import annotations

import dataclasses
import json
import lzma

import pytest

from gspo_lab.config import SMOKE, TrainConfig
from gspo_lab.experiments.runner import branch_points, run_sweep
from gspo_lab.experiments.spec import cell_key, cells, load_spec
from gspo_lab.experiments.store import load_result, result_path, supersede
from gspo_lab.train import branch_from, train

CFG = dataclasses.replace(SMOKE, checkpoint="sweep-sort", rollouts=3, eval_every=1, eval_prompts=8, objective="grpo")


def _rows(table) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.startswith("time/")} for row in table.to_dict(orient="records")]


@pytest.fixture(scope="module")
def trunk(tmp_path_factory):
    """A 3-rollout GRPO run keeping its state after rollout 1; (folder, metrics table)."""
    folder = tmp_path_factory.mktemp("trunk")
    return folder, train(CFG, folder, keep=(1,), progress=False)


def test_the_trunk_keeps_its_branch_points_and_its_newest_state(trunk):
    folder, _ = trunk
    assert sorted(p.name for p in folder.glob("state-*")) == ["state-00001", "state-00003"]


def test_an_unchanged_branch_continues_its_trunk_bit_for_bit(trunk, tmp_path):
    folder, table = trunk
    cfg = dataclasses.replace(CFG, branch_at=1)
    branch_from(folder, cfg, tmp_path / "b")
    got = train(cfg, tmp_path / "b", resume=True, progress=False)
    assert _rows(got) == _rows(table)
    assert (
        got.attrs["eval"]
        .drop(columns=[c for c in got.attrs["eval"] if c.startswith("time/")])
        .equals(table.attrs["eval"].drop(columns=[c for c in table.attrs["eval"] if c.startswith("time/")]))
    )


def test_a_changed_branch_shares_the_rows_before_its_branch_point_and_then_departs(trunk, tmp_path):
    folder, table = trunk
    cfg = dataclasses.replace(CFG, objective="gspo", branch_at=1, trunk=json.dumps({"objective": "grpo"}))
    assert cfg.trunk_config() == CFG
    branch_from(folder, cfg, tmp_path / "b")
    got = train(cfg, tmp_path / "b", resume=True, progress=False)
    before = (table["rollout"] < 1).sum()
    assert _rows(got)[:before] == _rows(table)[:before]
    assert len(got) == len(table)
    after = got[got["rollout"] >= 1]["loss/policy"].tolist()
    assert after != table[table["rollout"] >= 1]["loss/policy"].tolist()


def test_bad_branches_are_refused_with_the_field_named(trunk, tmp_path):
    folder, _ = trunk
    with pytest.raises(ValueError, match="branch_at must be in"):
        dataclasses.replace(CFG, branch_at=3)
    with pytest.raises(ValueError, match="trunk may only set the fields"):
        dataclasses.replace(CFG, branch_at=1, trunk='{"seed": 4}')
    with pytest.raises(ValueError, match="needs branch_at > 0"):
        dataclasses.replace(CFG, trunk='{"objective": "gspo"}')
    with pytest.raises(ValueError, match="a JSON object"):
        dataclasses.replace(CFG, branch_at=1, trunk="objective=gspo")
    branch = dataclasses.replace(CFG, branch_at=2)
    with pytest.raises(FileNotFoundError, match="kept no state after rollout 2"):
        branch_from(folder, branch, tmp_path / "b")
    with pytest.raises(ValueError, match=r"another trunk .*\['grad_clip'\]"):
        branch_from(folder, dataclasses.replace(CFG, branch_at=1, trunk='{"grad_clip": 5.0}'), tmp_path / "c")
    with pytest.raises(ValueError, match="starts from its trunk's saved state"):
        train(dataclasses.replace(CFG, branch_at=1), tmp_path / "d", progress=False)
    with pytest.raises(ValueError, match="may only change"):
        TrainConfig.trunk_of(CFG, dataclasses.replace(CFG, seed=5))


SPEC = """
name = "branch_test"
description = "a GRPO trunk and two branches from its state after rollout 1"
core = false

[seeds]
search = []
confirm = [0]

[base]
checkpoint = "sweep-sort"
objective = "grpo"
length = 6
prompts_per_rollout = 4
group_size = 4
minibatches = 2
rollouts = 3
eval_every = 1
eval_prompts = 8

[grid]
"branch_at,objective,grad_clip" = [[0, "grpo", 1.0], [1, "grpo", 0.01], [1, "gspo", 1.0]]
"""


def test_a_sweep_runs_the_trunk_first_and_a_branch_without_its_trunk_state_gets_the_same_numbers(tmp_path, monkeypatch):
    path = tmp_path / "branch_test.toml"
    path.write_text(SPEC)
    spec = load_spec(path)
    trunk, cap, switch = cells(spec)
    assert (trunk.cfg.trunk, cap.cfg.trunk, switch.cfg.trunk) == ("", '{"grad_clip": 1.0}', '{"objective": "grpo"}')
    assert cap.cfg.trunk_config() == switch.cfg.trunk_config() == trunk.cfg
    assert branch_points([trunk, cap, switch]) == {trunk.key: (1,)}
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "runs"))
    table = run_sweep(spec, workers=1, progress=False)
    assert len(table) == 3
    assert (tmp_path / "runs" / "sweeps" / spec.name / trunk.key / "state-00001").is_dir()
    shared = load_result(result_path(cap))
    assert cell_key(cap.cfg.trunk_config()) == trunk.key
    # a branch's file holds only what it adds to its trunk's stored rows; loading puts them back, losslessly
    with lzma.open(result_path(cap), "rt") as f:
        raw = json.load(f)
    assert raw["shared"]["base"] == f"{spec.name}/{trunk.key}" and raw["shared"]["per_rollout"]["rollout"] == 3
    assert raw["per_rollout"]["rollout"] == [] and shared["per_rollout"]["rollout"] == [0, 1, 2]
    assert sum(map(len, raw["per_rollout"].values())) < sum(map(len, shared["per_rollout"].values()))
    assert shared["per_rollout"]["reward/mean:mean"][:1] == load_result(result_path(trunk))["per_rollout"][
        "reward/mean:mean"][:1]  # fmt: skip
    with pytest.raises(ValueError, match="supersede that result first"):
        supersede(result_path(trunk), "test")
    # the same branch in a fresh store, its trunk's state not kept anywhere: it runs the trunk's first rollout itself
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results2"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "runs2"))
    from gspo_lab.experiments.runner import run_cell

    alone = run_cell(cap)
    assert (tmp_path / "runs2" / "sweeps" / spec.name / cap.key / "trunk" / "state-00001").is_dir()
    for key, values in shared["per_rollout"].items():
        if not key.startswith("time/"):
            assert alone["per_rollout"][key] == values, key
    assert alone["eval"] == shared["eval"] and alone["summary"] == shared["summary"]
