"""Notebook 04's live runs (gspo_lab.live) and its routing measurement (gspo_lab.analysis.routing_change): a run is
saved as it goes and read back on a re-run without training; Routing Replay's forward uses π_old's experts."""

from __future__ import annotations

import pytest
import torch

import gspo_lab.train
from gspo_lab.analysis import routing_change
from gspo_lab.config import TrainConfig
from gspo_lab.live import live_runs, run_folder
from gspo_lab.widgets import live_view

CFG = TrainConfig(
    checkpoint="sweep-sort",
    length=6,
    prompts_per_rollout=4,
    group_size=4,
    minibatches=2,
    rollouts=2,
    eval_every=1,
    eval_prompts=4,
)


def test_a_live_run_is_saved_and_read_back_without_training(tmp_path, monkeypatch):
    seen = []
    runs = live_runs(
        {"GRPO": CFG}, tmp_path, on_step=lambda name, run: seen.append((name, len(run.per_rollout))), progress=False
    )
    assert seen == [("GRPO", 1), ("GRPO", 2)]
    run = runs["GRPO"]
    assert list(run.per_rollout["rollout"]) == [0, 1] and list(run.evals["rollout"]) == [0, 1, 2]
    assert (run_folder(tmp_path, "GRPO", CFG) / "LATEST").is_file()
    real = gspo_lab.train.train_step

    def no_training(state):
        raise AssertionError("a finished live run trained again")

    monkeypatch.setattr(gspo_lab.train, "train_step", no_training)
    again = live_runs({"GRPO": CFG}, tmp_path, progress=False)["GRPO"]
    pd_equal = again.per_rollout.equals(run.per_rollout) and again.evals.equals(run.evals)
    assert pd_equal
    monkeypatch.setattr(gspo_lab.train, "train_step", real)
    fig, text = live_view(runs)
    assert "GRPO: 2 rollouts" in text and fig.axes
    from gspo_lab.widgets import LivePanel

    panel = LivePanel({"GRPO": CFG}, tmp_path, initial=runs)  # drawn before any click, from the runs given
    assert panel.readout.value == text
    assert LivePanel({"GRPO": CFG}, tmp_path).readout.value == ""


def test_side_by_side_runs_are_the_runs_one_after_another(tmp_path):
    """Two configs train in two worker processes, a live plot following both from this process (the run folders
    read back as they are saved): the same rows as in turn, in this process."""
    from dataclasses import replace

    cfgs = {"GRPO": replace(CFG, rollouts=3), "GSPO": replace(CFG, rollouts=3, objective="gspo")}
    seen, order = {name: [] for name in cfgs}, []

    def on_step(name, run):
        seen[name].append(run)
        order.append(name)

    apart = live_runs(cfgs, tmp_path / "apart", progress=False, workers=2, poll_s=0.05, on_step=on_step)
    # each time a run advanced, every run with a saved state was passed in the configs' order, GSPO's call last: a
    # plot drawn there shows both runs' newest states
    assert all(order[i - 1] == "GRPO" for i, n in enumerate(order) if n == "GSPO" and "GRPO" in order[:i]), order
    in_turn = live_runs(cfgs, tmp_path / "in-turn", progress=False, workers=1)
    for name in cfgs:
        cols = [c for c in in_turn[name].per_rollout.columns if not c.startswith("time/")]
        assert apart[name].per_rollout[cols].equals(in_turn[name].per_rollout[cols]), name
        assert apart[name].evals.equals(in_turn[name].evals), name
        counts = [len(run.per_rollout) for run in seen[name]]
        assert counts and counts == sorted(counts) and counts[-1] == 3, (name, counts)  # never back, to the end
        assert len(set(counts)) > 1 or counts == [3], (name, counts)  # followed while it trained (or done at once)
        for run in seen[name]:  # each a prefix of the finished run, read back from a state saved while it trained
            assert run.per_rollout.equals(apart[name].per_rollout.iloc[: len(run.per_rollout)]), name
            assert run.evals.equals(apart[name].evals.iloc[: len(run.evals)]), name
    assert (run_folder(tmp_path / "apart", "GSPO", cfgs["GSPO"]) / "LATEST").read_text() == "state-00003"


def test_another_config_is_another_folder(tmp_path):
    from dataclasses import replace

    assert run_folder(tmp_path, "GRPO", CFG) != run_folder(tmp_path, "GRPO", replace(CFG, grad_clip=None))


def test_routing_change_natural_moves_and_replay_is_exact():
    torch.set_num_threads(1)
    table = routing_change(
        TrainConfig(
            checkpoint="sweep-sort",
            length=8,
            prompts_per_rollout=4,
            group_size=4,
            minibatches=2,
            lr=1e-3,
            objective="grpo",
        ),
        updates=1,
    )
    layers = table[table["layer"] != "all"]
    assert len(layers) == 4 and (table["replayed"] == 0).all() and table.iloc[-1]["natural"] > 0
    with pytest.raises(ValueError, match="needs an MoE checkpoint"):
        routing_change(TrainConfig(checkpoint="dense-sort", length=8, prompts_per_rollout=4, group_size=4))
