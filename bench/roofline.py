"""Where an update's time goes by kind of work, and the ceiling that sets on issue 25's FLOP/s target.

    python bench/roofline.py [--preset moe] [--repeats 20] [--compile] [--json FILE]

The work is bench_step.py's FLOP/s minibatch (point 5: one ``gspo_lab.step.update`` of the reference GSPO
configuration on 64 rows × 48 tokens, forward, backward, clip and AdamW, 1 torch thread). Methodology, numbered:
    1. Wall: the median of ``--repeats`` unprofiled updates, each beside a 2048² fp32 matmul (the target's
       yardstick); FLOPs as bench_step.py counts them, 6 · N_active · tokens (step_harness.update_flop).
    2. Split: torch.profiler over ``--repeats`` more updates; each operator's self time goes to one kind:
       *matmul* (``aten::mm``/``addmm``/``bmm`` and ``aten::_grouped_mm``, the experts' per-group matmuls),
       *attention* (the fused scaled-dot-product kernels, forward and backward), *optimizer* (AdamW's step,
       whatever ops it runs) and *other* (every element-wise op, gather, copy, norm, softmax, the gradient clip and
       autograd's bookkeeping). Shares are of the profiled self time; the profiler inflates small ops, so
       the split is read as shares and applied to the unprofiled wall.
    3. Ceilings: the FLOP/s of the matmul kind alone (its FLOPs over its time: how close the matmuls run to the
       2048² rate), and the update's fraction of the 2048² rate if every other kind took no time at all. Issue
       25's target (≥ 0.5) is out of reach of any lever that leaves the matmuls as they are when that ceiling is
       near it; the share that would have to go is printed.
    4. ``--compile``: the same update on the fast path (π_old from the sampler, no routing recorded) with and without
       ``compile_update`` (the policy's forward under ``torch.compile(dynamic=True)``: inductor's fused C++ kernels
       for the element-wise work; transformers runs its fp32 experts through its own ``grouped_mm_fallback`` loop
       there), warm (the compile time printed apart).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from step_harness import update_flop  # noqa: E402
from step_micro import flop_minibatch, matmul_rate  # noqa: E402

MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_grouped_mm")
ATTENTION = "aten::_scaled_dot_product"
OPTIMIZER = "Optimizer.step"  # torch.optim's record_function around each step
KINDS = ("matmul", "attention", "optimizer", "other")
TARGET = 0.5  # issue 25: update FLOP/s >= 0.5 of the 2048² fp32 matmul rate (bench_step.py's point 5)


def kind_of(name: str, in_optimizer: bool) -> str:
    if in_optimizer:
        return "optimizer"
    if name in MATMUL:
        return "matmul"
    return "attention" if name.startswith(ATTENTION) else "other"


def split(events) -> dict[str, float]:
    """Self CPU seconds per kind; an op inside an optimizer step counts as optimizer."""
    spans = [(e.time_range.start, e.time_range.end) for e in events if e.name.startswith(OPTIMIZER)]
    out = dict.fromkeys(KINDS, 0.0)
    for e in events:
        if e.name.startswith(OPTIMIZER):
            continue  # a wrapper's own time is Python: it goes to optimizer through its children below
        inside = any(a <= e.time_range.start < b for a, b in spans)
        out[kind_of(e.name, inside)] += e.self_cpu_time_total / 1e6
    return out


def timed_updates(loop, state, batch, repeats: int) -> tuple[list[float], list[float]]:
    walls, rates = [], []
    for _ in range(repeats):
        rates.append(matmul_rate(2048, 2048, 2048))
        t0 = time.perf_counter()
        loop.update(state, batch, 0)
        walls.append(time.perf_counter() - t0)
    return walls, rates


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="moe", help="the policy preset (default: moe)")
    p.add_argument("--repeats", type=int, default=20, help="updates timed, and updates profiled (default: 20)")
    p.add_argument("--compile", action="store_true", help="also the update under torch.compile, warm (point 4)")
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    if args.repeats < 3:
        raise SystemExit(f"--repeats must be >= 3, got {args.repeats}")
    import torch

    import gspo_lab.step as loop

    torch.set_num_threads(1)
    state, batch, rows, cols, active = flop_minibatch(args.preset)
    tokens = rows * cols
    flop = update_flop(active, tokens)
    loop.update(state, batch, 0)  # warm
    walls, rates = timed_updates(loop, state, batch, args.repeats)
    wall, peak = statistics.median(walls), statistics.median(rates)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(args.repeats):
            loop.update(state, batch, 0)
    seconds = split(prof.events())
    total = sum(seconds.values())
    share = {k: v / total for k, v in seconds.items()}
    matmul_rate_ = flop / (share["matmul"] * wall) / 1e9
    ceiling = matmul_rate_ / peak
    rate = flop / wall / 1e9
    print(f"update, {args.preset}, {tokens} tokens, 1 thread: {wall * 1e3:.1f} ms, {rate:.1f} GFLOP/s = "
          f"{rate / peak:.2f} of the 2048² matmul rate ({peak:.1f} GFLOP/s); target >= {TARGET:.2f}")  # fmt: skip
    for k in KINDS:
        print(f"  {k:10} {share[k]:6.1%}  ~{share[k] * wall * 1e3:6.1f} ms")
    print(f"  the matmuls alone run at {matmul_rate_:.1f} GFLOP/s = {ceiling:.2f} of the 2048² rate: with every other "
          f"kind at zero time the update would reach {ceiling:.2f}")  # fmt: skip
    need = max(0.0, 1 - rate / peak / TARGET)  # the wall's share that must go for the target
    print(f"  reaching {TARGET:.2f} with these matmuls needs {need:.0%} of the wall gone: "
          f"{need / max(1e-9, 1 - share['matmul']):.0%} of all non-matmul time")  # fmt: skip
    out = {"wall_s": wall, "flop": flop, "matmul_2048_gflops": peak, "share": share, "matmul_ceiling": ceiling}
    if args.compile:  # the library's own fast path (TrainConfig.compile_update), against the same path eager
        batch.old_routing[:] = [None] * len(batch.old_routing)  # the fast path records no routing
        eager_cfg = dataclasses.replace(state.cfg, old_logp="sampler", old_forward=False)
        state.cfg = dataclasses.replace(eager_cfg, compile_update=True)
        t0 = time.perf_counter()
        loop.update(state, batch, 0)
        compile_s = time.perf_counter() - t0
        loop.update(state, batch, 0)
        cwalls, _ = timed_updates(loop, state, batch, args.repeats)
        state.cfg = eager_cfg
        ewalls, _ = timed_updates(loop, state, batch, args.repeats)
        compiled, eager = statistics.median(cwalls), statistics.median(ewalls)
        print(f"  compile_update=True (torch.compile, dynamic shapes), warm: {compiled * 1e3:.1f} ms against eager "
              f"{eager * 1e3:.1f} ms = {eager / compiled:.2f}x (first call, compiling: {compile_s:.0f} s)")  # fmt: skip
        out.update({"compile_s": compile_s, "compiled_wall_s": compiled, "compile_ratio": eager / compiled})
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
