"""One RL step of gspo_lab's loop against TRL's GRPOTrainer doing the same work, on CPU, in five columns; prints its
figures.

    python bench/bench_step.py [--repeats N] [--warmup N] [--compile-warmup N] [--compile-backend B] [--quick]
                               [--preset moe|dense|sweep] [--json PATH]

The five columns, one worker process each: ``kit fast``, the kit at its new default (``with_paths(cfg, "fast")``,
what ``gspo-lab train`` runs; here, π_old recomputed, that is ``group_stats=False`` and ``fused_adam=True``); ``kit
compiled``, the kit at its compiled paths (``with_paths(cfg, "compiled")``: those and ``compile_update``, π_old's
recomputed forward and the updates' under torch.compile, and ``compile_sampler``, the decode compiled on a static KV
cache; what a compiled spec's sweep worker runs, warm); ``kit ref``, the kit at its reference paths (TrainConfig's
defaults, what every stored cell ran); ``TRL``, GRPOTrainer at its default as configured below; ``TRL compile``, the
same with TrainingArguments' ``torch_compile=True``. Each column's ratio is against TRL; kit fast is also set
against kit ref, and both kit columns that can be fastest against TRL compile (the target: the faster of them at
most 0.95× TRL compile).

Files: this entry point (arguments, the round-robin lockstep driver) · step_harness.py (the compared
configuration, the FLOP formula, timers, RSS, worker processes and their pipe) · step_ours.py, step_trl.py,
step_micro.py (one kind of worker each) · step_report.py (figures → JSON dict → printed table).

Reference configuration (printed at the top of the output): the ``moe`` preset (the shipped ``moe-sort``
checkpoint, else ``build_model("moe", vocab, seed=0)``), 16 prompts × G = 8 = 128 responses per rollout,
sort prompts of L = 20 digits (24 prompt tokens with <bos>), every response exactly 24 tokens, M = 4 minibatches
of 32 rows (4 optimizer steps per rollout), GSPO (TRL: ``importance_sampling_level="sequence"``,
``loss_type="grpo"``, ``beta=0``, ε = 3e-4 / 4e-4), float32, bf16 off, activation checkpointing off, no MoE
load-balancing loss, 1 torch thread (``torch.set_num_threads(1)`` and ``OMP_NUM_THREADS=1`` in every process).

Methodology, numbered:
    1. Each column runs in its own subprocess (peak RSS = that process's ``ru_maxrss``, imports included). All
       stay alive and run in round-robin lockstep, driven over a pipe, one RL step at a time (round r starts at
       column r mod 5), so a burst of load on this shared machine hits every column alike. The first ``--warmup``
       rounds are dropped. We report medians and the median of the per-round ratios (column / TRL; kit fast / kit
       ref). Points 5 and 6 run afterwards in a fifth process (the kit's reference paths), so they never inflate a
       column's RSS. Our timers wrap ``gspo_lab.step``'s module
       functions ``rollout``, ``_forward`` and ``collect`` (a rename there shows up in tests/test_bench_smoke.py).
    2. One RL step = sampling + scoring + π_old's no-grad log-prob forward + 4 optimizer steps:
       ours (every kit column): ``gspo_lab.step.train_step`` (collect + 4 × update);
       TRL: everything ``Trainer.train`` does between two RL-step boundaries (4 optimizer steps, a
       ``TrainerCallback`` marks them), its dataloader, logging (``logging_steps=4``) and scheduler included.
       The lockstep wait sits outside the timed span.
    3. The same work: the same weights (one checkpoint file, or the same seed), the same prompts' shape, the same
       sampled token counts (printed): TRL masks <eos> out with ``min_new_tokens=24`` (a logits processor);
       ours hides the stop token from the sampler (its tokenizer's ``eos_token_id`` reads −1 through a thin
       proxy), so every row runs exactly 24 sampling steps. Old log-probs are recomputed by a no-grad forward in
       both: TRL with ``steps_per_generation=4``, ``gradient_accumulation_steps=1``, ``num_iterations=1``
       (1 % 4 ≠ 0, so ``old_per_token_logps`` is computed; the script checks it is not None, every step, in both
       TRL columns, and that π_old's forward ran in both kit columns: a setting that skips π_old, so that every
       ratio is 1, computes another algorithm and ends the run).
       Both score with the sort task's partial credit (``Task.partial_reward``): with the exact-match reward every
       forced 24-token answer would score 0, every advantage would be 0 and the loss would be a constant.
       Each stack keeps its own defaults elsewhere (ours: torch AdamW; TRL: ``adamw_torch_fused``, constant lr).
    4. Split of a step: ``gen`` = sampling with prompt encoding and decoding (ours: ``gspo_lab.step.rollout``;
       TRL: ``GRPOTrainer._generate``); ``old_logp`` = no-grad log-prob forwards; ``collect`` = the whole
       rollout phase (ours: ``collect``; TRL: ``_generate_and_score_completions``); ``update`` = step − collect
       (4 × forward + backward + clip + optimizer step, plus each loop's bookkeeping).
    5. Update FLOP/s: one ``gspo_lab.step.update`` (forward, backward, clip, AdamW step) on a 64 × 48-token
       minibatch, counted as 6 × active params × 3,072 tokens (attention scores and the log-softmax not counted),
       interleaved with a 2048² fp32 matmul and with matmuls at the model's own shapes (N × H @ H × 2H for the
       projections, N·k/E × H @ H × 2I for one expert's gate/up), all in one process on 1 thread.
    6. Rollout tokens/s: ``gspo_lab.rollout.sample_responses`` against ``model.generate`` on the same 128 × 24
       prompt batch, ancestral sampling at temperature 1 (no top-k/top-p), 24 new tokens per row in both,
       interleaved.
    7. TRL compile: accelerate compiles the model it prepares for training (``torch.compile``, backend
       ``--compile-backend``, default inductor, on one compile thread), which TRL hands to its loss forward;
       π_old's forward and generation use the uncompiled module (the column's header says which log-prob forwards
       got the compiled one, as observed). Its compilation is kept out of the timing: the column first runs
       ``--compile-warmup`` extra warm-up steps alone (default 2, quick 1; on ``moe`` the first step compiles,
       ~70-80 s cold on this machine, ~8 s when inductor's on-disk cache already holds the graphs, and the second
       already runs warm: 3 graphs, none compiled later). Every step reports the graphs dynamo compiled during it; a
       column that compiles inside a timed step is labelled "not comparable", and one whose worker dies (no C++
       compiler, an inductor error) is reported in its column with its error while the others finish.
    8. Kit compiled: the same warm-up as TRL compile (the extra steps alone first), on the same backend; its
       compiled functions are the trainer's log-prob forward (two graphs: π_old's no-grad pass and the update's,
       with the routing hooks' record mode traced in) and the sampler's decode step (the prompt's pass stays eager).
    9. Load: the 1-minute load average before and after the timed rounds, printed beside the ratios.

The targets (kit fast's step ≤ 0.5× TRL's; the faster comparable kit column, fast or compiled, ≤ 0.95× TRL compile;
update FLOP/s ≥ 50 % of the 2048² matmul rate; the kit's peak RSS < 1 GiB) are reported, not asserted: this machine
is shared and noisy.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # `python bench/bench_step.py` puts bench/ there; runpy.run_path (gspo-lab bench) not
    sys.path.insert(0, str(BENCH))

from step_harness import ROOT, Channel, Worker  # noqa: E402
from step_micro import worker_micro  # noqa: E402
from step_ours import worker_ours  # noqa: E402
from step_report import COLUMNS, COMPILED, report, results  # noqa: E402
from step_trl import worker_trl  # noqa: E402

WORKERS = {
    "kit_fast": functools.partial(worker_ours, paths="fast"),
    "kit_compiled": functools.partial(worker_ours, paths="compiled"),
    "kit_ref": functools.partial(worker_ours, paths="reference"),
    "trl": functools.partial(worker_trl, compile=False),
    "trl_compile": functools.partial(worker_trl, compile=True),
    "micro": worker_micro,
}
#: columns whose failure is reported in their column instead of ending the run (the others are what it compares)
OPTIONAL = frozenset(COMPILED)


def _error(exc: Exception) -> str:
    """The last line of a dead worker's log that names an error (its exception), else the message's first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "Exception" in ln]
    return (errors or lines or ["unknown"])[-1][:300]


def lockstep(
    workers: dict[str, Worker], warmup: dict[str, int], repeats: int, failed: dict | None = None
) -> tuple[dict, dict, dict]:
    """RL steps in round-robin lockstep; returns (timed steps, warm-up steps, failures) by column.

    A column with more warm-up steps than the least (a compiled one) runs its extra ones first, alone; then every
    column runs ``min(warmup)`` dropped rounds and ``repeats`` timed rounds, one RL step each, round r starting at
    column r mod N. A
    column in :data:`OPTIONAL` whose worker dies is dropped, its error kept (``failed``: those that died before);
    any other failure ends the run.
    """
    steps = {name: [] for name in workers}
    warm = {name: [] for name in workers}
    failed, common = dict(failed or {}), min(warmup.values())
    plan = [(name,) for name in workers for _ in range(warmup[name] - common)]
    names = tuple(workers)  # round r starts at column r mod N: no column always follows the same one
    plan += [names[r % len(names) :] + names[: r % len(names)] for r in range(common + repeats)]
    done = {name: 0 for name in workers}
    for names in plan:
        for name in names:
            if name in failed:
                continue
            try:
                reply = workers[name].ask("step")
            except RuntimeError as exc:
                if name not in OPTIONAL:
                    raise
                failed[name] = _error(exc)
                continue
            if not reply["old_logp_computed"]:
                raise RuntimeError(f"{name}: old log-probs were not computed; every ratio would be exactly 1")
            (warm if done[name] < warmup[name] else steps)[name].append(reply)
            done[name] += 1
    return steps, warm, failed


def run(opts) -> dict:
    warmup = {name: opts.warmup + (opts.compile_warmup if name in COMPILED else 0) for name in COLUMNS}
    workers = {name: Worker(name, opts, warmup[name]) for name in COLUMNS}
    workers["micro"] = Worker("micro", opts, opts.warmup)  # imports and setup overlap; no timing yet
    info, failed = {}, {}
    try:
        for name, w in workers.items():
            try:
                info[name] = w.ask()
            except RuntimeError as exc:
                if name not in OPTIONAL:
                    raise
                failed[name] = _error(exc)
        load = [os.getloadavg()[0]]
        steps, warm, failed = lockstep({n: workers[n] for n in COLUMNS}, warmup, opts.repeats, failed)
        load.append(os.getloadavg()[0])
        final = {name: workers[name].ask("done") for name in COLUMNS if name not in failed}
        micro = workers["micro"].ask("run")
    finally:
        for w in workers.values():
            w.close()
    return results(opts, info, steps, warm, failed, final, micro, warmup, load)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repeats", type=int, default=None, help="timed rounds, one RL step per column each (default 15; quick: 2)"
    )
    ap.add_argument("--warmup", type=int, default=None, help="discarded rounds (default 2; quick: 1)")
    ap.add_argument(
        "--compile-warmup",
        type=int,
        default=None,
        help="extra discarded RL steps of a compiled column, run alone first (default 2; quick: 1)",
    )
    ap.add_argument("--compile-backend", default="inductor",
                    help="TRL's torch_compile_backend in the compiled column (default inductor; the smoke test "
                         "uses aot_eager: the same tracing, no code generation)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="a smoke run: fewer repeats")
    ap.add_argument("--preset", default="moe", choices=("moe", "dense", "sweep"), help="model preset (default moe)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:  # `gspo-lab bench -- --quick`: the CLI's pass-through keeps the separator
        argv = argv[1:]
    opts = ap.parse_args(argv)
    opts.repeats = opts.repeats or (2 if opts.quick else 15)
    opts.warmup = opts.warmup if opts.warmup is not None else (1 if opts.quick else 2)
    if opts.compile_warmup is None:
        opts.compile_warmup = 1 if opts.quick else 2
    return opts


def main(argv=None) -> dict | None:
    opts = parse_args(argv)
    if opts.worker:
        sys.path.insert(0, str(ROOT))
        WORKERS[opts.worker](opts, Channel())
        return None
    res = run(opts)
    print(report(res))
    if opts.json is not None:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
