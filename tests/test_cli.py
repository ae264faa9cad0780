"""`gspo-lab`: every config field is a flag, runs write their folders, bad flags exit 2 naming the flag."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from gspo_lab.checkpoints import load_checkpoint
from gspo_lab.cli import build_parser, main
from gspo_lab.config import TrainConfig

SMALL = ["--prompts-per-rollout", "4", "--group-size", "4", "--minibatches", "2", "--length", "6"]


def test_every_train_field_is_a_flag_with_its_docstring():
    sub = build_parser()._subparsers._group_actions[0].choices["train"]
    flags = {a.dest: a for a in sub._actions}
    for f in dataclasses.fields(TrainConfig):
        assert f.name in flags, f.name
        assert flags[f.name].help and "(default:" in flags[f.name].help


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["train", "--objective", "gpso"], "--objective must be one of"),
        (["train", "--minibatches", "3"], "--minibatches=3 must divide --prompts-per-rollout * --group-size"),
        (["train", "--length", "99"], "--length must be one of"),
        (["train", "--grad-clip", "0"], "--grad-clip must be a finite number > 0 or None"),
        (["train", "--checkpoint", "nope"], "checkpoint must be one of"),
        (["train", "--lr", "abc"], "argument --lr: invalid float value"),
        (["train", "--eps-low", "2"], "--eps-low must lie in (0, 1)"),
        (["train", "--task", "add", "--length", "4"], "--task='add' does not match --checkpoint 'sweep-sort'"),
        (["train", "--lr-schedule", "cosine"], "--lr-horizon-steps must be an int > --warmup-steps"),
        (["train", "--beta", "-1"], "--beta must be a finite number >= 0"),
        (["sft", "--out", "x", "--warmup-steps", "-1"], "--warmup-steps must be an int >= 0"),
        (["sft", "--out", "x", "--preset", "huge"], "--preset must be one of"),
        (["eval", "sweep-sort", "--lengths", "99"], "--lengths must hold problem sizes of task 'sort'"),
        (["export", "nowhere", "out"], "nowhere is not a run folder"),
        (["sweep"], "specs: name at least one spec file, or pass --core"),
        (["sweep", "nope.toml"], "spec nope.toml not found"),
    ],
)
def test_bad_flags_exit_2_with_one_line_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err


def test_bad_flags_fail_before_any_weights_load_or_folder_is_made(tmp_path, monkeypatch, capsys):
    import gspo_lab.checkpoints

    def no_loading(*args, **kwargs):
        raise AssertionError("weights were loaded before the flags were checked")

    monkeypatch.setattr(gspo_lab.checkpoints, "load_checkpoint", no_loading)
    run = tmp_path / "run"
    for argv in (["--eps-low", "2"], ["--eps-high", "0"], ["--resume"]):
        with pytest.raises(SystemExit) as exc:
            main(["train", *SMALL, "--run-dir", str(run), *argv])
        assert exc.value.code == 2
        assert "error:" in capsys.readouterr().err and not run.exists()


def test_resume_without_a_saved_state_names_the_folder(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", *SMALL, "--run-dir", str(tmp_path / "r"), "--resume"])
    assert exc.value.code == 2
    assert (
        f"--run-dir {tmp_path / 'r'} holds no saved state (no LATEST file) to continue from" in capsys.readouterr().err
    )


def test_train_writes_a_run_and_resumes(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *SMALL, "--rollouts", "1", "--grad-clip", "off", "--run-dir", str(run)]) == 0
    assert json.loads((run / "config.json").read_text())["grad_clip"] is None
    assert len(pd.read_csv(run / "metrics.csv")) == 2
    assert main(["train", *SMALL, "--rollouts", "2", "--grad-clip", "off", "--run-dir", str(run), "--resume"]) == 0
    table = pd.read_csv(run / "metrics.csv")
    assert list(table["rollout"]) == [0, 0, 1, 1]
    assert "4 updates" in capsys.readouterr().out


def test_eval_and_export_of_a_run(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "policy"
    assert main(["train", *SMALL, "--rollouts", "1", "--run-dir", str(run)]) == 0
    assert main(["eval", str(run), "--lengths", "4", "6", "--prompts", "4"]) == 0
    printed = capsys.readouterr().out
    assert f"run {run} after 1 rollouts" in printed and "accuracy_greedy" in printed
    assert main(["export", str(run), str(out)]) == 0
    model, _, record = load_checkpoint(out)
    assert record["task"] == "sort" and record["rollouts"] == 1
    assert TrainConfig(checkpoint=str(out)).task == "sort"  # an exported policy states its task: it can be trained on
    with pytest.raises(SystemExit):
        main(["export", str(run), str(out)])  # never overwrites
    assert main(["eval", "sweep-sort", "--lengths", "4", "--prompts", "4"]) == 0
    assert "checkpoint sweep-sort" in capsys.readouterr().out


def test_sft_writes_a_loadable_checkpoint_with_its_command(tmp_path):
    out = tmp_path / "ck"
    argv = [
        "sft",
        "--preset",
        "sweep",
        "--lengths",
        "4",
        "--max-steps",
        "2",
        "--eval-every",
        "1",
        "--warmup-steps",
        "0",
    ]
    argv += ["--eval-prompts", "2", "--out", str(out)]
    assert main(argv) == 0
    model, tok, record = load_checkpoint(out)
    assert record["command"] == "gspo-lab " + " ".join(argv) and record["steps"] == 2
    assert set(record["accuracy_per_length"]) == {"4"} and model.config.num_experts == 8


def test_bench_passes_every_argument_through(monkeypatch):
    import runpy
    import sys

    seen = {}
    monkeypatch.setattr(runpy, "run_path", lambda path, run_name: seen.update(path=path, argv=list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert main(["bench", "--quick", "--repeats", "3"]) == 0
    assert seen["argv"] == ["bench_step.py", "--quick", "--repeats", "3"] and seen["path"].endswith("bench_step.py")


def test_train_evaluates_on_held_out_prompts_by_default(tmp_path):
    """The CLI's run holds held-out evaluations unless told otherwise (TrainConfig's own default stays 0)."""
    run, off = tmp_path / "run", tmp_path / "off"
    assert main(["train", *SMALL, "--rollouts", "1", "--eval-prompts", "4", "--run-dir", str(run)]) == 0
    assert list(pd.read_csv(run / "eval.csv")["rollout"]) == [0, 1]  # before the first rollout and after the last
    assert main(["train", *SMALL, "--rollouts", "1", "--eval-every", "0", "--run-dir", str(off)]) == 0
    assert not (off / "eval.csv").exists() and TrainConfig().eval_every == 0


def test_a_spec_is_named_by_its_file_or_its_name():
    from gspo_lab.experiments.spec import load_spec
    from gspo_lab.paths import data_dir

    by_name, by_path = load_spec("f1_clip_fractions"), load_spec(data_dir() / "specs" / "f1_clip_fractions.toml")
    assert by_name == by_path and by_name.name == "f1_clip_fractions"
    with pytest.raises(FileNotFoundError, match="the name of one in data/specs/ .*f1_clip_fractions"):
        load_spec("f1_clip_fraction")


def test_bench_without_trl_says_what_to_install(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a))
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--quick"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "missing: trl" in err[0] and "scripts/bench.sh" in err[0]
