"""The research rig (gspo_lab.experiments): specs checked before any run, cells run / skipped / resumed, results
reproducible, the collapse rule as declared."""

from __future__ import annotations

import pandas as pd
import pytest

import gspo_lab.experiments.runner as runner
import gspo_lab.experiments.store as store
from gspo_lab.experiments.runner import rerun_prefix, run_cell, run_sweep
from gspo_lab.experiments.spec import CODE_VERSION, cell_key, cells, core_specs, load_spec
from gspo_lab.experiments.store import compare_results, load_result, merge, result_path
from gspo_lab.experiments.summary import summarize
from gspo_lab.paths import data_dir

SPEC = """
name = "smoke_test"
description = "two objectives x two seeds on the sweep preset, 2 rollouts"
core = false

[seeds]
search = [0]
confirm = [1]

[base]
checkpoint = "sweep-sort"
length = 6
prompts_per_rollout = 4
group_size = 4
minibatches = 2
rollouts = 2
eval_every = 1
eval_prompts = 8

[grid]
objective = ["grpo", "gspo"]
"""


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "runs"))
    path = tmp_path / "smoke_test.toml"
    path.write_text(SPEC)
    return load_spec(path)


@pytest.mark.parametrize(
    "edit, match",
    [
        (("confirm = [1]", "confirm = [0, 1]"), "confirmation seeds must be fresh"),
        (("rollouts = 2", "rollout = 2"), "fields TrainConfig does not"),
        (('objective = ["grpo", "gspo"]', 'objective = ["grpo", "gpso"]'), "objective must be one of"),
        (('objective = ["grpo", "gspo"]', "objective = []"), "must be a non-empty list"),
        (("rollouts = 2", "seed = 3"), "seeds go in"),
        (('objective = ["grpo", "gspo"]', '"seed,objective" = [[5, "grpo"]]'), "names seeds \\[5\\]"),
    ],
)
def test_bad_spec_fails_at_load(tmp_path, edit, match):
    path = tmp_path / "bad.toml"
    path.write_text(SPEC.replace(*edit))
    with pytest.raises(ValueError, match=match):
        load_spec(path)


def test_zipped_grid_keys_and_off(tmp_path):
    path = tmp_path / "zip.toml"
    path.write_text(
        SPEC.replace(
            'objective = ["grpo", "gspo"]',
            '"objective,routing_replay" = [["grpo", true], ["gspo", false]]\ngrad_clip = ["off", 1.0]',
        )
    )
    got = [(c.cfg.objective, c.cfg.routing_replay, c.cfg.grad_clip) for c in cells(load_spec(path), "search")]
    assert got == [("grpo", True, None), ("grpo", True, 1.0), ("gspo", False, None), ("gspo", False, 1.0)]


def test_a_point_on_one_seed(tmp_path):
    """A zipped grid key naming ``seed`` gives that point on that seed alone (a branch point chosen per seed)."""
    path = tmp_path / "per_seed.toml"
    path.write_text(SPEC.replace('objective = ["grpo", "gspo"]', '"seed,objective" = [[0, "grpo"], [1, "gspo"]]'))
    got = [(c.seed, c.cfg.objective, c.point) for c in cells(load_spec(path))]
    assert got == [(0, "grpo", {"objective": "grpo"}), (1, "gspo", {"objective": "gspo"})]
    assert [c.seed for c in cells(load_spec(path), "confirm")] == [1]


def test_cells_keys_and_seed_sets(spec):
    assert [(c.point["objective"], c.seed) for c in cells(spec)] == [("grpo", 0), ("grpo", 1), ("gspo", 0), ("gspo", 1)]
    assert [c.seed for c in cells(spec, "confirm")] == [1, 1]
    keys = [c.key for c in cells(spec)]
    assert len(set(keys)) == 4 and all(len(k) == 16 for k in keys)


def test_run_skip_merge_and_reproduce(spec, tmp_path, monkeypatch):
    table = run_sweep(spec, workers=1, command="test", progress=False)
    assert len(table) == 4 and set(table["seed_set"]) == {"search", "confirm"}
    assert {"eval_start", "eval_final", "collapsed", "clip_token_frac"} <= set(table.columns)
    result = load_result(result_path(cells(spec)[0]))
    assert result["per_rollout"]["rollout"] == [0, 1] and "clip/token_frac:max" in result["per_rollout"]
    # a new result keeps every mean and only the maxima something reads (summary.READ_SERIES)
    assert "policy/entropy:mean" in result["per_rollout"] and "policy/entropy:max" not in result["per_rollout"]
    assert "grad/norm:max" in result["per_rollout"] and "grad/norm_attn:max" in result["per_rollout"]
    assert result["eval"]["rollout"] == [0, 1, 2] and result["code_version"] == CODE_VERSION

    def boom(*a, **k):
        raise AssertionError("a finished cell ran again")

    monkeypatch.setattr(runner, "run_cell", boom)
    assert len(run_sweep(spec, workers=1, progress=False)) == 4  # finished cells are skipped
    monkeypatch.undo()
    # the same cell re-run from scratch on this machine and thread count reproduces its rows exactly
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "runs-again"))
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results-again"))
    again = run_cell(cells(spec)[0])
    for key, values in result["per_rollout"].items():
        if not key.startswith("time/"):
            assert again["per_rollout"][key] == values, key
    assert again["eval"] == result["eval"]
    # compare_results: the re-run cell against the stored ones (what scripts/time_core_set.sh records)
    got = compare_results(tmp_path / "results-again", tmp_path / "results")
    assert got == {
        "compared": 1,
        "identical": 1,
        "same_collapse": 1,
        "missing": 0,
        "max_abs_diff": 0.0,
        "differing": [],
    }
    import gzip
    import json

    path = next((tmp_path / "results-again").glob("*/*.json.xz"))  # results are written xz-compressed
    tampered = {**again, "summary": {**again["summary"], "eval_final": again["summary"]["eval_final"] + 0.25}}
    path.unlink()  # a result written before the switch to xz (gzip) is still read and compared
    with gzip.open(path.with_name(path.name.replace(".xz", ".gz")), "wt") as f:
        json.dump(tampered, f)
    got = compare_results(tmp_path / "results-again", tmp_path / "results")
    assert got["identical"] == 0 and got["max_abs_diff"] == pytest.approx(0.25) and len(got["differing"]) == 1


def test_a_killed_cell_resumes(spec, monkeypatch):
    from gspo_lab.paths import runs_dir
    from gspo_lab.train import train

    cell = cells(spec)[0]
    run_dir = runs_dir() / "sweeps" / spec.name / cell.key

    class Killed(Exception):
        pass

    def kill(state, rows):
        raise Killed

    with pytest.raises(Killed):
        train(cell.cfg, run_dir, on_step=kill, progress=False)
    assert not result_path(cell).exists()
    result = run_cell(cell)
    assert result["per_rollout"]["rollout"] == [0, 1]


def test_a_resumed_cell_records_its_total_wall_time(spec, monkeypatch):
    """A cell killed after its first RL step and resumed records the time of both segments, not only the last."""
    import gspo_lab.train

    real = gspo_lab.train.train

    class Killed(Exception):
        pass

    def train_killed_after_one_step(cfg, run_dir, *, on_step=None, **kw):
        def step(state, rows):
            on_step(state, rows)
            raise Killed

        return real(cfg, run_dir, on_step=step, **kw)

    cell = cells(spec)[0]
    monkeypatch.setattr(gspo_lab.train, "train", train_killed_after_one_step)
    with pytest.raises(Killed):
        run_cell(cell)
    monkeypatch.undo()
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(spec.path.parent / "results"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(spec.path.parent / "runs"))
    result = run_cell(cell)
    first, second = result["wall_segments_s"]
    assert first > 0 and second > 0 and result["wall_s"] == pytest.approx(first + second, abs=0.11)


def test_two_workers(spec):
    assert len(run_sweep(spec, seeds="search", workers=2, progress=False)) == 2
    assert len(merge(spec)) == 2


def test_collapse_rule():
    def evals(acc):
        return pd.DataFrame({"rollout": range(len(acc)), "eval/accuracy_sampled": acc, "eval/accuracy_greedy": acc})

    empty = pd.DataFrame()
    assert summarize(evals([0.4, 0.3, 0.1, 0.05]), empty)["collapsed"] is True
    assert summarize(evals([0.4, 0.3, 0.1, 0.05]), empty)["collapse_rollout"] == 2
    assert summarize(evals([0.4, 0.1, 0.3, 0.4]), empty)["collapsed"] is False  # recovered: not a collapse
    assert summarize(evals([0.4, 0.25, 0.3]), empty)["collapsed"] is False  # 0.2 is the threshold, not crossed
    assert summarize(evals([0.4, 0.5]), empty, diverged=True)["collapsed"] is True


PROBE_SPEC = """
name = "probe_test"
probe = "{probe}"
description = "a probe on the sweep preset"
core = false

[seeds]
search = []
confirm = [0, 1]

[base]
checkpoint = "{checkpoint}"
length = 6
prompts_per_rollout = 4
group_size = 4
minibatches = 2
{extra}

[grid]
lr = [1e-4]
"""


def _probe_spec(tmp_path, monkeypatch, probe, checkpoint="sweep-sort", extra=""):
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    path = tmp_path / "probe_test.toml"
    path.write_text(PROBE_SPEC.format(probe=probe, checkpoint=checkpoint, extra=extra))
    return path


def test_probe_spec_checks_its_arguments(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="probe must be one of"):
        load_spec(_probe_spec(tmp_path, monkeypatch, "nonsense"))
    with pytest.raises(ValueError, match=r"fields TrainConfig and probe 'precision' does not: \['updates'\]"):
        load_spec(_probe_spec(tmp_path, monkeypatch, "precision", extra="updates = 2"))
    spec = load_spec(_probe_spec(tmp_path, monkeypatch, "expert_volatility", extra="updates = 2"))
    cell = cells(spec)[0]
    assert cell.probe_kw == {"updates": 2} and not hasattr(cell.cfg, "updates")
    # the same config as a training cell, or with other probe arguments, is another cell
    assert cell.key != cell_key(cell.cfg) != cell_key(cell.cfg, "expert_volatility", {"updates": 3})


def test_probe_cells_run_merge_and_reproduce(tmp_path, monkeypatch):
    spec = load_spec(_probe_spec(tmp_path, monkeypatch, "expert_volatility", extra="updates = 2"))
    table = run_sweep(spec, workers=1, progress=False)
    assert len(table) == 2 and set(table.seed) == {0, 1}
    assert (table.change_k1 > 0).all() and (table.change_k1 < 1).all()  # the update moved some routing, not all
    result = load_result(result_path(cells(spec)[0]))
    assert result["probe"] == {"name": "expert_volatility", "kw": {"updates": 2}}
    assert {r["k"] for r in result["tables"]["per_layer"]} == {1, 2}
    from gspo_lab.experiments.probes import run_probe

    rerun = run_probe("expert_volatility", cells(spec)[0].cfg, updates=2)
    assert rerun["summary"] == result["summary"]


def test_precision_probe_floor_and_bf16(tmp_path, monkeypatch):
    from gspo_lab.experiments.probes import run_probe

    spec = load_spec(_probe_spec(tmp_path, monkeypatch, "precision"))
    out = run_probe("precision", cells(spec)[0].cfg)["summary"]
    assert out["fp32_tok_max"] < 1e-4  # same precision: KV cache vs full forward differ only by rounding
    assert out["bf16_tok_mean"] > 10 * out["fp32_tok_mean"]  # bf16 autocast is a real mismatch
    # length normalisation shrinks the per-sequence mismatch below the summed one
    assert out["bf16_seq_mean"] < out["bf16_seqsum_mean"]


def test_expert_volatility_refuses_a_dense_model(tmp_path, monkeypatch):
    from gspo_lab.experiments.probes import run_probe

    spec = load_spec(_probe_spec(tmp_path, monkeypatch, "expert_volatility", checkpoint="dense-sort"))
    with pytest.raises(ValueError, match="needs an MoE checkpoint, 'dense-sort' is dense"):
        run_probe("expert_volatility", cells(spec)[0].cfg)


def test_cli_core_runs_the_confirmation_cells_and_times_them(monkeypatch, tmp_path):
    import json

    from gspo_lab import cli

    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    seen = []

    def fake(spec, seeds, core=False, **kw):
        seen.append((spec.name, seeds, core))
        return pd.DataFrame()

    monkeypatch.setattr(runner, "run_sweep", fake)
    assert cli.main(["sweep", "--core"]) == 0
    assert seen and {(s, c) for _, s, c in seen} == {("confirm", True)}
    assert {name for name, _, _ in seen} == {s.name for s in core_specs()}
    record = json.loads((tmp_path / "results" / "core_timing.json").read_text())
    assert record["cells_skipped"] == 0 and record["cells_run"] == sum(record["per_spec"].values()) > 0
    assert record["per_spec"]["f1_clip_fractions"] == 30  # its core set: lr 3e-5 only, of lr 3e-5 and 1e-4
    seen.clear()
    cli.main(["sweep", "--core", "--seeds", "all"])
    assert {s for _, s, _ in seen} == {"all"}
    # a spec named next to --core runs whole (core=False) after the core set; --merge --core merges the core specs
    seen.clear()
    named = str(data_dir() / "specs" / "f2_search_clip.toml")
    assert cli.main(["sweep", "--core", named]) == 0
    assert seen[-1] == ("f2_search_clip", "confirm", False) and len(seen) == len(core_specs()) + 1
    merged = []
    monkeypatch.setattr(store, "merge", lambda spec: merged.append(spec.name) or pd.DataFrame())
    assert cli.main(["sweep", "--merge", "--core", named]) == 0
    assert merged == ["f2_search_clip", *(s.name for s in core_specs())]


def test_core_subset_of_the_grid(tmp_path):
    path = tmp_path / "sub.toml"
    path.write_text(SPEC.replace("core = false\n", "") + 'grad_clip = ["off", 1.0]\n\n[core]\ngrad_clip = ["off"]\n')
    spec = load_spec(path)
    assert spec.core and spec.core_label() == "core set at grad_clip off; the other points extended"
    assert spec.core_where() == "grad_clip off"
    assert [c.cfg.grad_clip for c in cells(spec, "confirm", core=True)] == [None, None]
    assert len(cells(spec, "confirm")) == 4
    text = SPEC.replace("core = false\n", "") + 'grad_clip = ["off", 1.0]\n\n[core]\n'
    for line, match in (
        ("lr = [1e-4]", r"\[core\] key 'lr' is not a \[grid\] key"),
        ("grad_clip = [0.5]", r"\[core\] grad_clip must be a non-empty list"),
    ):
        path.write_text(text + line + "\n")
        with pytest.raises(ValueError, match=match):
            load_spec(path)
    path.write_text(SPEC.replace("core = false", 'core = "yes"'))
    with pytest.raises(ValueError, match="core must be true, false or a table"):
        load_spec(path)


def test_a_committed_cell_reproduces_its_first_five_rollouts(tmp_path):
    """Issue 9's reproducibility rule on a stored headline cell (f1_clip_fractions, GRPO, lr 3e-5, M = 4, seed 100):
    exact on the machine that wrote it, within tolerances elsewhere (other CPUs round differently)."""
    import math
    import os
    import platform

    spec = load_spec(data_dir() / "specs" / "f1_clip_fractions.toml")
    arm = {"seed": 100, "objective": "grpo", "lr": 3e-5, "minibatches": 4}
    cell = next(c for c in cells(spec, "confirm") if {k: getattr(c.cfg, k) for k in arm} == arm)
    stored = load_result(result_path(cell))
    rows = rerun_prefix(stored, tmp_path / "run", rollouts=5)
    same_machine = stored["machine"] == {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    keys = ["reward/mean:mean", "clip/token_frac:mean", "loss/policy:mean", "grad/norm:max", "response/length:mean"]
    for key in keys:
        got, want = rows[key], stored["per_rollout"][key][:5]
        if same_machine:
            assert got == want, key
        else:  # the first rollout batch is sampled before any update: equal up to rounding; later ones may drift
            assert math.isclose(got[0], want[0], rel_tol=1e-3, abs_tol=1e-6), key
            assert abs(sum(got) / 5 - sum(want) / 5) <= 0.25 * max(abs(sum(want) / 5), 1e-3) + 0.05, key
    with pytest.raises(ValueError, match="rollouts must be <= the cell's 30"):
        rerun_prefix(stored, tmp_path / "again", rollouts=31)


def _stored(acc, rollouts=80, prompts=128, samples=2, diverged=False, rewards=None):
    every = rollouts // (len(acc) - 1)
    return {
        "key": "k",
        "config": {"rollouts": rollouts, "eval_prompts": prompts, "eval_samples": samples},
        "summary": {"diverged": diverged},
        "eval": {"rollout": [i * every for i in range(len(acc))], "eval/accuracy_sampled": acc},
        "per_rollout": {
            "reward/mean:mean": rewards or [0.5] * rollouts,
            "response/truncated_frac:mean": [0.05] * 10 + [0.5] * (rollouts - 10),
            "response/length:mean": [13.0] * rollouts,
            "adv/zero_std_frac:mean": [0.2] * (rollouts - 10) + [0.9] * 10,
        },
    }


def test_endpoint_v2_collapse_needs_the_last_two_below_the_pooled_cold_start():
    from gspo_lab.experiments.summary import endpoint_v2

    cold = 0.4  # threshold 0.2
    down = endpoint_v2(_stored([0.4, 0.3, 0.3, 0.2, 0.1, 0.1, 0.1, 0.15, 0.1]), cold)
    assert down["collapsed"] and down["threshold"] == pytest.approx(0.2) and down["samples"] == 256
    assert down["late_acc"] == pytest.approx((0.1 + 0.1 + 0.1 + 0.15 + 0.1) / 5)  # rollouts 40..80
    recovered = endpoint_v2(_stored([0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.3]), cold)
    assert not recovered["collapsed"]  # the last evaluation is back above: not collapsed
    one_dip = endpoint_v2(_stored([0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.1]), cold)
    assert not one_dip["collapsed"]  # one evaluation below is not enough
    assert endpoint_v2(_stored([0.4, 0.3], diverged=True), cold)["collapsed"]
    mode = endpoint_v2(_stored([0.4, 0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]), cold)
    assert (mode["truncated_early"], mode["truncated_late"]) == pytest.approx((0.05, 0.5))
    assert (mode["zero_std_early"], mode["zero_std_late"]) == pytest.approx((0.2, 0.9))
    with pytest.raises(ValueError, match="needs >= 256 samples per evaluation"):
        endpoint_v2(_stored([0.4, 0.1, 0.1], prompts=64, samples=1), cold)
    with pytest.raises(ValueError, match="cold_start must be an accuracy"):
        endpoint_v2(_stored([0.4, 0.1, 0.1]), 0.0)


def test_eval_samples_enters_the_key_only_away_from_its_default():
    import dataclasses

    spec = load_spec(data_dir() / "specs" / "f1_clip_fractions.toml")
    cell = cells(spec, "confirm")[0]
    assert cell_key(dataclasses.replace(cell.cfg, eval_samples=1)) == cell.key  # stored cells stay addressable
    assert cell_key(dataclasses.replace(cell.cfg, eval_samples=2)) != cell.key


def test_cold_start_probe_and_pooling(tmp_path, monkeypatch):
    from gspo_lab.experiments.probes import run_probe
    from gspo_lab.experiments.read import cold_starts

    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    path = tmp_path / "cold.toml"
    path.write_text(
        PROBE_SPEC.format(probe="cold_start", checkpoint="sweep-sort", extra="eval_prompts = 8\nsamples = 2").replace(
            "lr = [1e-4]", "temperature = [1.0]"
        )
    )
    spec = load_spec(path)
    run_sweep(spec, workers=1, progress=False)
    out = run_probe("cold_start", cells(spec)[0].cfg, samples=2)["summary"]
    assert out["samples"] == 16 and 0 <= out["accuracy_sampled"] <= 1
    monkeypatch.setattr("gspo_lab.experiments.read.spec_named", lambda name: spec)
    pooled = cold_starts("probe_test")[("sweep-sort", 6, 1.0, "sort")]
    assert pooled["seeds"] == 2 and pooled["samples"] == 32


def test_a_confirmation_spec_replicates_its_arms():
    """Each arm of f10c_relative_confirm is, seed aside, an arm of the specs it re-runs on fresh seeds (its first
    commit left grad_clip at TrainConfig's default 1.0 and ran every arm under a cap it did not declare)."""
    import dataclasses

    from gspo_lab.experiments.spec import spec_named

    def arm(cell):
        return dataclasses.replace(cell.cfg, seed=0)

    replicated = {arm(c) for name in ("f10_direction_norm", "f10_shrink_skip") for c in cells(spec_named(name), "all")}
    for name in ("f10c_relative_confirm", "f10u_shrink_skip_ten"):  # each re-runs stored arms on fresh seeds
        fresh = cells(spec_named(name), "all")
        assert fresh and all(arm(c) in replicated for c in fresh), [arm(c) for c in fresh if arm(c) not in replicated]


def test_t_interval_by_hand_and_its_coverage_on_normal_seeds():
    """mean ± t_{0.975, 4} s/√5 on five values; on normal per-seed values its coverage at n = 5 is 95 % (simulated),
    where the percentile bootstrap's is well below (the reason f11's spec declares the t interval)."""
    import math

    import numpy as np

    from gspo_lab.experiments.stats import bootstrap_ci, t_interval

    x = [0.1, 0.2, 0.3, 0.4, 0.5]
    half = 2.776 * float(np.std(x, ddof=1)) / math.sqrt(5)
    assert t_interval(x) == pytest.approx((0.3 - half, 0.3 + half))
    assert all(math.isnan(v) for v in t_interval([0.1]))
    rng = np.random.default_rng(0)
    draws = rng.normal(0.0, 1.0, (2000, 5))
    t_cover = np.mean([lo <= 0 <= hi for lo, hi in map(t_interval, draws)])
    boot_cover = np.mean([lo <= 0 <= hi for lo, hi in map(bootstrap_ci, draws[:300])])
    assert 0.935 <= t_cover <= 0.965 and boot_cover < 0.9
