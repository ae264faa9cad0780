"""Where one stored cell's time goes: its config trained for N rollouts in this process, each phase timed; prints the
split and (with ``--ops``) torch.profiler's operators by self time.

    python bench/profile_cell.py [--spec f2r_collapse_moe] [--cell 0] [--rollouts 20] [--ops] [--set FIELD=VALUE ...]

``--set`` changes the cell's config (an opt-in fast path, e.g. ``--set fused_adam=true``), as in bench_cell.py.

Phases (wall time, 1 torch thread, a run folder saved after every RL step as a sweep cell is):
    sampling    gspo_lab.step.rollout: prompt encoding, the KV-cache decode loop, decoding the text
    pi_old      gspo_lab.step._forward under no_grad: π_old's log-probs and routing, one forward per minibatch
    fwd         gspo_lab.step._forward with grad: the update's forward
    bwd         torch.Tensor.backward
    optim       AdamW.step
    grad stats  clip_grad_norm_, gspo_lab.step.group_norms and adam_peaks (the per-group logging)
    evaluation  gspo_lab.train.evaluate_state (held-out accuracy, sampled and greedy)
    save        gspo_lab.train.save_state (the resumable state and the rows)
    other       everything else: scoring, advantages, objectives, metric rows, the loop
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gspo_lab.step as step  # noqa: E402
import gspo_lab.train as train_mod  # noqa: E402
from gspo_lab.experiments.spec import cells, load_spec  # noqa: E402

PHASES = ("sampling", "pi_old", "fwd", "bwd", "optim", "grad stats", "evaluation", "save")


def _timed(timers: dict, fn, name):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            key = name() if callable(name) else name
            timers[key] = timers.get(key, 0.0) + time.perf_counter() - t0

    return wrapper


def instrument(timers: dict) -> list[tuple[object, str, object]]:
    """Wrap each phase's function in place; returns (owner, attribute, original) to undo it."""
    patches = [
        (step, "rollout", "sampling"),
        (step, "_forward", lambda: "fwd" if torch.is_grad_enabled() else "pi_old"),
        (torch.Tensor, "backward", "bwd"),
        (torch.optim.AdamW, "step", "optim"),
        (torch.nn.utils, "clip_grad_norm_", "grad stats"),
        (step, "group_norms", "grad stats"),
        (step, "adam_peaks", "grad stats"),
        (train_mod, "evaluate_state", "evaluation"),
        (train_mod, "save_state", "save"),
    ]
    undo = []
    for owner, attr, name in patches:
        original = getattr(owner, attr)
        undo.append((owner, attr, original))
        setattr(owner, attr, _timed(timers, original, name))
    return undo


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", default="f2r_collapse_moe", help="a spec in data/specs/ (default: f2r_collapse_moe)")
    p.add_argument("--cell", type=int, default=0, help="index of the cell in the spec's cell list (default: 0)")
    p.add_argument("--rollouts", type=int, default=20, help="rollouts to train (default: 20)")
    p.add_argument("--ops", action="store_true", help="also torch.profiler's top operators by self CPU time")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="sets",
                   help="a TrainConfig field for the cell, e.g. fused_adam=true (repeatable)")  # fmt: skip
    args = p.parse_args(argv)
    if args.rollouts < 1:
        raise SystemExit(f"--rollouts must be >= 1, got {args.rollouts}")
    cell = cells(load_spec(ROOT / "data" / "specs" / f"{args.spec}.toml"), "all")[args.cell]
    from bench_cell import parse_sets

    cfg = dataclasses.replace(cell.cfg, rollouts=args.rollouts, **parse_sets(args.sets))
    torch.set_num_threads(1)
    timers: dict[str, float] = {}
    undo = instrument(timers)
    run_dir = Path(tempfile.mkdtemp(prefix="profile-cell-"))
    try:
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if args.ops else None
        t0 = time.perf_counter()
        if profiler:
            profiler.start()
        train_mod.train(cfg, run_dir / "run", progress=False)
        if profiler:
            profiler.stop()
        total = time.perf_counter() - t0
    finally:
        for owner, attr, original in undo:
            setattr(owner, attr, original)
        shutil.rmtree(run_dir, ignore_errors=True)
    split = {name: timers.get(name, 0.0) for name in PHASES}
    split["other"] = total - sum(split.values())
    print(f"cell {args.spec}[{args.cell}] ({cell.key}): {cfg.objective}, {cfg.checkpoint}, M = {cfg.minibatches}, "
          f"{cfg.prompts_per_rollout} x {cfg.group_size} rows, {args.rollouts} rollouts: {total:.1f} s "
          f"({total / args.rollouts * 1e3:.0f} ms per rollout)" + "".join(f"; {x}" for x in args.sets))  # fmt: skip
    for name, seconds in split.items():
        print(f"  {name:11} {seconds:7.2f} s  {seconds / total:6.1%}")
    if profiler:
        print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=48))
    return {"total_s": total, **split}


if __name__ == "__main__":
    main()
