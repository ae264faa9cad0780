"""bench/profile_cell.py and bench/bench_cell.py run end to end on one rollout of a stored cell, bench/roofline.py on
a few updates; no timing assertions.

The cell bench compares HEAD's code (a git worktree) with this tree's: on a clean checkout the two runs must give the
same rows (the script's identity check), and every phase of the profile must be accounted for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_profile_cell_accounts_for_every_phase():
    cmd = [sys.executable, str(ROOT / "bench" / "profile_cell.py"), "--rollouts", "1", "--set", "fused_adam=true"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for phase in ("sampling", "pi_old", "fwd", "bwd", "optim", "grad stats", "evaluation", "save", "other"):
        assert f"  {phase} " in proc.stdout, phase
    assert "1 rollouts:" in proc.stdout and "; fused_adam=true" in proc.stdout  # --set reached the cell's config


def test_bench_cell_runs_both_trees_and_checks_identity(tmp_path):
    out = tmp_path / "cell.json"
    cmd = [sys.executable, str(ROOT / "bench" / "bench_cell.py"), "--rollouts", "1", "--rounds", "1", "--ref", "HEAD"]
    proc = subprocess.run([*cmd, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    fig = json.loads(out.read_text())
    assert fig["rollouts"] == 1 and len(fig["old_wall_s"]) == len(fig["new_wall_s"]) == 1
    assert fig["old_cells_per_hour"] > 0 and fig["new_cells_per_hour"] > 0 and fig["new_rss_mib"] > 0
    dirty = subprocess.run(["git", "status", "--porcelain", "gspo_lab"], cwd=ROOT, capture_output=True, text=True)
    if not dirty.stdout.strip():  # HEAD's code is this tree's code: the same rows, bit for bit
        assert fig["identical"] is True
    assert "identical rows and evaluations:" in proc.stdout


def test_bench_cell_measures_an_opt_in_lever_on_the_new_side_only(tmp_path):
    """``--set`` changes the new side's config alone: π_old from the sampler's own log-probs gives other rows; with
    ``--warm`` each side trains one rollout untimed first."""
    out = tmp_path / "cell.json"
    cmd = [sys.executable, str(ROOT / "bench" / "bench_cell.py"), "--rollouts", "1", "--rounds", "1", "--ref", "HEAD"]
    proc = subprocess.run([*cmd, "--set", "old_logp=sampler", "--warm", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    fig = json.loads(out.read_text())
    assert fig["set"] == {"old_logp": "sampler"} and fig["identical"] is False and fig["warm"] is True
    assert "; warm (1 rollout first)" in proc.stdout
    bad = subprocess.run([*cmd, "--set", "old_logpp=sampler"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--set wants FIELD=VALUE" in bad.stderr


def test_bench_cell_puts_the_new_side_on_the_fast_paths(tmp_path):
    """``--paths fast`` applies ``with_paths(cfg, "fast")`` to the new side alone, on top of ``--both`` (set on both
    sides; here π_old from the sampler, so that old_forward=False applies); a ``--set`` field is kept; ``--ref tree``
    runs this tree on both sides; each side's resolved fields are printed."""
    out = tmp_path / "cell.json"
    cmd = [sys.executable, str(ROOT / "bench" / "bench_cell.py"), "--rollouts", "1", "--rounds", "1", "--ref", "tree"]
    cmd += ["--both", "old_logp=sampler", "--set", "fused_adam=false", "--paths", "fast"]
    proc = subprocess.run([*cmd, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    fig = json.loads(out.read_text())
    ref = {"old_logp": "sampler", "group_stats": True, "fused_adam": False, "old_forward": True,
           "compile_update": False, "compile_sampler": False}  # fmt: skip
    assert fig["fields"] == {"old": ref, "new": {**ref, "group_stats": False, "old_forward": False}}
    assert fig["paths"] == "fast" and fig["both"] == {"old_logp": "sampler"} and fig["identical"] is False
    assert "  old side (this tree): old_logp=sampler, group_stats=True" in proc.stdout
    assert "new side on the fast paths" in proc.stdout
    bad = subprocess.run([*cmd[:-2], "--compile"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--compile applies to --paths fast only" in bad.stderr


def test_roofline_splits_the_whole_update_into_kinds(tmp_path):
    out = tmp_path / "roofline.json"
    cmd = [sys.executable, str(ROOT / "bench" / "roofline.py"), "--preset", "sweep", "--repeats", "3"]
    proc = subprocess.run([*cmd, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    fig = json.loads(out.read_text())
    assert set(fig["share"]) == {"matmul", "attention", "optimizer", "other"}
    assert abs(sum(fig["share"].values()) - 1) < 1e-9 and all(v > 0 for v in fig["share"].values())
    assert fig["wall_s"] > 0 and fig["flop"] > 0 and 0 < fig["matmul_ceiling"]
    assert "the matmuls alone run at" in proc.stdout
