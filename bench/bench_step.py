"""One RL step of gspo_lab's loop against TRL's GRPOTrainer doing the same work, on CPU; prints its figures.

    python bench/bench_step.py [--repeats N] [--quick] [--preset moe|dense|sweep] [--json PATH]

Files: this entry point (arguments, the lockstep driver) · step_harness.py (the compared configuration, the FLOP
formula, timers, RSS, worker processes and their pipe) · step_ours.py, step_trl.py, step_micro.py (one worker
each) · step_report.py (figures → JSON dict → printed table).

Reference configuration (printed at the top of the output): the ``moe`` preset (the shipped ``moe-sort``
checkpoint, else ``build_model("moe", vocab, seed=0)``), 16 prompts × G = 8 = 128 responses per rollout,
sort prompts of L = 20 digits (24 prompt tokens with <bos>), every response exactly 24 tokens, M = 4 minibatches
of 32 rows (4 optimizer steps per rollout), GSPO (TRL: ``importance_sampling_level="sequence"``,
``loss_type="grpo"``, ``beta=0``, ε = 3e-4 / 4e-4), float32, bf16 off, activation checkpointing off, no MoE
load-balancing loss, 1 torch thread (``torch.set_num_threads(1)`` and ``OMP_NUM_THREADS=1`` in every process).

Methodology, numbered:
    1. Each stack runs in its own subprocess (peak RSS = that process's ``ru_maxrss``, imports included). Both
       stay alive and run in lockstep, driven over a pipe: ours, TRL, ours, TRL, …, one RL step at a time, so a
       burst of load on this shared machine hits both alike. The first ``--warmup`` steps of each are dropped.
       We report medians and the median of the per-pair ratio ours / TRL. Points 5 and 6 run afterwards in a
       third process, so they never inflate either stack's RSS. Our timers wrap ``gspo_lab.step``'s module
       functions ``rollout``, ``_forward`` and ``collect`` (a rename there shows up in tests/test_bench_smoke.py).
    2. One RL step = sampling + scoring + π_old's no-grad log-prob forward + 4 optimizer steps:
       ours: ``gspo_lab.step.train_step`` (collect + 4 × update);
       TRL: everything ``Trainer.train`` does between two RL-step boundaries (4 optimizer steps, a
       ``TrainerCallback`` marks them), its dataloader, logging (``logging_steps=4``) and scheduler included.
       The lockstep wait sits outside the timed span.
    3. The same work: the same weights (one checkpoint file, or the same seed), the same prompts' shape, the same
       sampled token counts (printed): TRL masks <eos> out with ``min_new_tokens=24`` (a logits processor);
       ours hides the stop token from the sampler (its tokenizer's ``eos_token_id`` reads −1 through a thin
       proxy), so every row runs exactly 24 sampling steps. Old log-probs are recomputed by a no-grad forward in
       both: TRL with ``steps_per_generation=4``, ``gradient_accumulation_steps=1``, ``num_iterations=1``
       (1 % 4 ≠ 0, so ``old_per_token_logps`` is computed; the script checks it is not None, every step).
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

The targets (our step ≤ 0.5× TRL's; update FLOP/s ≥ 50 % of the 2048² matmul rate; our peak RSS < 1 GiB) are
reported, not asserted: this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # `python bench/bench_step.py` puts bench/ there; runpy.run_path (gspo-lab bench) not
    sys.path.insert(0, str(BENCH))

from step_harness import ROOT, Channel, Worker  # noqa: E402
from step_micro import worker_micro  # noqa: E402
from step_ours import worker_ours  # noqa: E402
from step_report import report, results  # noqa: E402
from step_trl import worker_trl  # noqa: E402

WORKERS = {"ours": worker_ours, "trl": worker_trl, "micro": worker_micro}


def lockstep(ours: Worker, trl: Worker, warmup: int, repeats: int) -> dict:
    """Interleaved RL steps (ours, TRL, ours, TRL, …); the first ``warmup`` of each are dropped."""
    steps = {"ours": [], "trl": []}
    for i in range(warmup + repeats):
        for name, w in (("ours", ours), ("trl", trl)):
            reply = w.ask("step")
            if not reply["old_logp_computed"]:
                raise RuntimeError(f"{name}: old log-probs were not computed; every ratio would be exactly 1")
            if i >= warmup:
                steps[name].append(reply)
    return steps


def run(opts) -> dict:
    workers = {kind: Worker(kind, opts) for kind in WORKERS}  # imports and setup overlap; no timing yet
    try:
        info = {kind: w.ask() for kind, w in workers.items()}
        steps = lockstep(workers["ours"], workers["trl"], opts.warmup, opts.repeats)
        final = {kind: workers[kind].ask("done") for kind in ("ours", "trl")}
        micro = workers["micro"].ask("run")
    finally:
        for w in workers.values():
            w.close()
    return results(opts, info, steps, final, micro)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=None, help="timed RL steps per stack (default 15; quick: 2)")
    ap.add_argument("--warmup", type=int, default=None, help="discarded RL steps per stack (default 2; quick: 1)")
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
