"""One RL step of gspo_lab's loop against TRL's GRPOTrainer doing the same work, on CPU; prints its figures.

    python bench/bench_step.py [--repeats N] [--quick] [--preset moe|dense|sweep] [--json PATH]

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
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS, GROUP, MINIBATCHES = 16, 8, 4
LENGTH = 20  # sort digits: <bos> + "S:" + 20 digits + ">" = 24 prompt tokens
RESPONSE_TOKENS = 24
FLOP_ROWS = 64  # the FLOP/s minibatch: 64 rows × (24 + 24) tokens
GSPO_EPS = (3e-4, 4e-4)
MIB = 1024.0  # ru_maxrss is in KiB on Linux


# --- worker side: each stack in its own process ---------------------------------------------------------------


class Channel:
    """JSON lines over the process's original stdout; anything else printed goes to stderr."""

    def __init__(self):
        self._out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)

    def send(self, msg: dict) -> None:
        self._out.write(json.dumps(msg) + "\n")

    def recv(self) -> str:
        line = sys.stdin.readline()
        if not line:
            raise SystemExit("bench worker: parent went away")
        return line.strip()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / MIB


def load_policy(preset: str):
    """(model, tokenizer, source): the shipped ``<preset>-sort`` checkpoint, else a fresh seed-0 build."""
    from gspo_lab.checkpoints import load_checkpoint
    from gspo_lab.model import build_model
    from gspo_lab.tokenizer import build_tokenizer

    try:
        model, tokenizer, _ = load_checkpoint(f"{preset}-sort")
        return model, tokenizer, f"data/checkpoints/{preset}-sort"
    except FileNotFoundError:
        tokenizer = build_tokenizer()
        return build_model(preset, len(tokenizer), seed=0), tokenizer, f'build_model("{preset}", seed=0)'


class NoStopTokenizer:
    """The tokenizer, except that ``eos_token_id`` reads −1: the sampler never stops early (fixed lengths)."""

    eos_token_id = -1

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __call__(self, *args, **kwargs):
        return self._tokenizer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def timed(fn, timers: dict, key, after=None):
    """``fn`` wrapped to add its wall time to ``timers[key(...)]`` (key: a name, or a function of nothing)."""

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        name = key() if callable(key) else key
        timers[name] = timers.get(name, 0.0) + time.perf_counter() - t0
        if after is not None:
            after(out)
        return out

    return wrapper


def our_state(preset: str, minibatches: int):
    """A TrainState on the reference configuration, its rollout patched to fixed-length responses, and its timers."""
    import torch

    import gspo_lab.step as loop
    from gspo_lab.config import TrainConfig

    model, tokenizer, source = load_policy(preset)
    cfg = TrainConfig(
        checkpoint=source,
        task="sort",
        length=LENGTH,
        objective="gspo",
        prompts_per_rollout=PROMPTS,
        group_size=GROUP,
        minibatches=minibatches,
        max_new_tokens=RESPONSE_TOKENS,
        reward="partial",
        threads=1,
    )
    state = loop.init_state(cfg, model=model, tokenizer=tokenizer)
    timers, seen = {}, {}
    real_rollout = loop.rollout
    loop.rollout = timed(
        lambda m, tok, *a, **k: real_rollout(m, NoStopTokenizer(tok), *a, **k),
        timers,
        "gen",
        after=lambda data: seen.update(data=data),
    )
    loop._forward = timed(loop._forward, timers, lambda: "fwd_grad" if torch.is_grad_enabled() else "old_logp")
    loop.collect = timed(loop.collect, timers, "collect")
    return state, source, timers, seen


def batch_shape(data) -> dict:
    return {
        "rows": int(data.response_ids.shape[0]),
        "prompt_cols": int(data.prompt_ids.shape[1]),
        "response_cols": int(data.response_ids.shape[1]),
        "response_tokens": int(data.response_mask.sum()),
    }


def worker_ours(opts, chan: Channel) -> None:
    import torch

    import gspo_lab.step as loop
    from gspo_lab.model import count_params

    torch.set_num_threads(1)
    state, source, timers, seen = our_state(opts.preset, MINIBATCHES)
    chan.send({"ready": True, "source": source, "threads": torch.get_num_threads(), **count_params(state.model)})
    while chan.recv() == "step":
        timers.clear()
        t0 = time.perf_counter()
        loop.train_step(state)
        total = time.perf_counter() - t0
        split = {"total": total, "update": total - timers["collect"], **timers}
        chan.send({"times": split, "shape": batch_shape(seen["data"]), "old_logp_computed": True})
    chan.send({"rss_mib": peak_rss_mib(), "threads": torch.get_num_threads()})


def trl_trainer(opts, out_dir: str, n_steps: int):
    """TRL's GRPOTrainer on the reference configuration (see the module docstring, point 3)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from gspo_lab.tasks import Problem, get_task, load_split

    model, tokenizer, source = load_policy(opts.preset)
    task = get_task("sort")
    problems = load_split(task, "train", LENGTH)
    dataset = Dataset.from_dict(
        {"prompt": [tokenizer.bos_token + p.prompt for p in problems], "answer": [p.answer for p in problems]}
    )

    def sort_reward(prompts, completions, answer, **kwargs):  # TrainConfig(reward="partial") on our side
        prompts = [p.removeprefix(tokenizer.bos_token) for p in prompts]
        return [task.partial_reward(Problem(p, a, a), c) for p, c, a in zip(prompts, completions, answer, strict=True)]

    args = GRPOConfig(
        output_dir=out_dir,
        use_cpu=True,
        bf16=False,  # TRL's default is True: on CPU it errors or silently runs log-prob forwards in bf16
        activation_checkpointing=False,  # TRL's default is on (`gradient_checkpointing`, its deprecated alias)
        router_aux_loss_coef=0.0,
        per_device_train_batch_size=PROMPTS * GROUP // MINIBATCHES,
        gradient_accumulation_steps=1,
        steps_per_generation=MINIBATCHES,  # 1 % 4 != 0: TRL computes old_per_token_logps
        num_iterations=1,
        num_generations=GROUP,
        max_completion_length=RESPONSE_TOKENS,
        generation_kwargs={"min_new_tokens": RESPONSE_TOKENS},
        temperature=1.0,
        loss_type="grpo",  # TRL's default is "dapo"
        importance_sampling_level="sequence",
        beta=0.0,
        epsilon=GSPO_EPS[0],
        epsilon_high=GSPO_EPS[1],
        learning_rate=3e-5,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=1.0,
        max_steps=MINIBATCHES * n_steps,
        logging_steps=MINIBATCHES,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=sort_reward, args=args, train_dataset=dataset, processing_class=tokenizer
    )
    return trainer, source


def instrument_trl(trainer, timers: dict, seen: dict) -> None:
    """Time TRL's rollout phase, sampling and log-prob forwards; keep the last rollout's output."""
    import torch

    trainer._generate = timed(trainer._generate, timers, "gen")
    trainer._get_per_token_logps_and_entropies = timed(
        trainer._get_per_token_logps_and_entropies,
        timers,
        lambda: "fwd_grad" if torch.is_grad_enabled() else "old_logp",
    )
    trainer._generate_and_score_completions = timed(
        trainer._generate_and_score_completions, timers, "collect", after=lambda out: seen.update(out=out)
    )


def worker_trl(opts, chan: Channel) -> None:
    import torch
    from transformers import TrainerCallback

    from gspo_lab.model import count_params

    torch.set_num_threads(1)
    n_steps = opts.warmup + opts.repeats
    timers, seen = {}, {}

    class Lockstep(TrainerCallback):
        """Waits for the parent's "step" at each RL-step boundary (every 4 optimizer steps) and reports."""

        t0 = 0.0

        def _wait(self):
            chan.recv()  # the parent sends exactly n_steps "step"s, then "done" after the last one
            timers.clear()
            self.t0 = time.perf_counter()

        def on_train_begin(self, args, state, control, **kwargs):
            self._wait()

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % MINIBATCHES:
                return
            total = time.perf_counter() - self.t0
            out = seen.pop("out")
            mask = out["completion_mask"]
            shape = {
                "rows": int(mask.shape[0]),
                "prompt_cols": int(out["prompt_ids"].shape[1]),
                "response_cols": int(mask.shape[1]),
                "response_tokens": int(mask.sum()),
            }
            split = {"total": total, "update": total - timers["collect"], **timers}
            old = out.get("old_per_token_logps") is not None
            chan.send({"times": split, "shape": shape, "old_logp_computed": old})
            self._wait()

    with tempfile.TemporaryDirectory() as out_dir:
        trainer, source = trl_trainer(opts, out_dir, n_steps)
        instrument_trl(trainer, timers, seen)
        trainer.add_callback(Lockstep())
        chan.send({"ready": True, "source": source, "threads": torch.get_num_threads(), **count_params(trainer.model)})
        trainer.train()
    chan.send({"rss_mib": peak_rss_mib(), "threads": torch.get_num_threads()})


def matmul_rate(m: int, k: int, n: int, min_s: float = 0.05) -> float:
    """GFLOP/s of an fp32 (m × k) @ (k × n) matmul, looped until ``min_s`` has passed."""
    import torch

    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b
    reps, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < min_s:
        a @ b
        reps += 1
    return 2 * m * k * n * reps / elapsed / 1e9


def flops_figures(opts, repeats: int) -> dict:
    """Update FLOP/s at 64 × 48 tokens, interleaved with the 2048² matmul and the model-shape matmuls."""
    import gspo_lab.step as loop
    from gspo_lab.model import count_params

    state, _, _, _ = our_state(opts.preset, PROMPTS * GROUP // FLOP_ROWS)
    batch = loop.collect(state)
    rows, cols = len(batch.minibatches[0]), batch.data.prompt_ids.shape[1] + batch.data.response_ids.shape[1]
    c = state.model.config
    tokens, hidden = rows * cols, c.hidden_size
    shapes = {"2048x2048x2048": (2048, 2048, 2048), f"{tokens}x{hidden}x{2 * hidden}": (tokens, hidden, 2 * hidden)}
    if getattr(c, "num_experts", 0):
        per_expert = tokens * c.num_experts_per_tok // c.num_experts
        shapes[f"{per_expert}x{hidden}x{2 * c.moe_intermediate_size}"] = (
            per_expert,
            hidden,
            2 * c.moe_intermediate_size,
        )
    active = count_params(state.model)["active"]
    flop = 6 * active * tokens
    loop.update(state, batch, 0)  # warm
    rates = {name: [] for name in shapes}
    update_s = []
    for _ in range(repeats):
        for name, shape in shapes.items():
            rates[name].append(matmul_rate(*shape))
        t0 = time.perf_counter()
        loop.update(state, batch, 0)
        update_s.append(time.perf_counter() - t0)
    update_rate = [flop / s / 1e9 for s in update_s]
    ref = rates["2048x2048x2048"]
    return {
        "rows": rows,
        "tokens_per_row": cols,
        "active_params": active,
        "flop_per_update": flop,
        "update_s": update_s,
        "update_gflops_median": statistics.median(update_rate),
        "matmul_gflops_median": {k: statistics.median(v) for k, v in rates.items()},
        "update_vs_2048_matmul": statistics.median(u / r for u, r in zip(update_rate, ref, strict=True)),
    }


def rollout_figures(opts, repeats: int) -> dict:
    """Our sampler against ``model.generate`` on the same 128-row batch, 24 new tokens each, interleaved."""
    import torch
    from transformers import GenerationConfig

    from gspo_lab.rollout import encode_prompts, sample_responses
    from gspo_lab.tasks import get_task, load_split

    model, tokenizer, _ = load_policy(opts.preset)
    model.eval()
    problems = load_split(get_task("sort"), "train", LENGTH)[:PROMPTS]
    ids, mask = encode_prompts(tokenizer, [p.prompt for p in problems for _ in range(GROUP)])
    gen_cfg = GenerationConfig(
        do_sample=True,
        max_new_tokens=RESPONSE_TOKENS,
        min_new_tokens=RESPONSE_TOKENS,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        disable_compile=True,
    )
    gen = torch.Generator().manual_seed(0)
    kw = dict(max_new_tokens=RESPONSE_TOKENS, eos_id=-1, pad_id=tokenizer.pad_token_id, generator=gen)

    def ours():
        return int(sample_responses(model, ids, mask, **kw)[1].sum())

    def theirs():
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask.long(), generation_config=gen_cfg)
        return int((out.shape[1] - ids.shape[1]) * out.shape[0])

    times, counts = {"ours": [], "generate": []}, {}
    for r in range(repeats + 1):
        for name, fn in (("ours", ours), ("generate", theirs)):
            t0 = time.perf_counter()
            counts[name] = fn()
            if r:  # the first round warms up
                times[name].append(time.perf_counter() - t0)
    rate = {k: [counts[k] / s for s in v] for k, v in times.items()}
    return {
        "rows": int(ids.shape[0]),
        "new_tokens": counts,
        "tokens_per_s_median": {k: statistics.median(v) for k, v in rate.items()},
        "ours_vs_generate": statistics.median(o / g for o, g in zip(rate["ours"], rate["generate"], strict=True)),
    }


def worker_micro(opts, chan: Channel) -> None:
    import torch

    torch.set_num_threads(1)
    chan.send({"ready": True})
    chan.recv()
    flops = flops_figures(opts, opts.repeats)
    roll = rollout_figures(opts, opts.repeats)
    chan.send({"flops": flops, "rollout": roll, "rss_mib": peak_rss_mib(), "threads": torch.get_num_threads()})


WORKERS = {"ours": worker_ours, "trl": worker_trl, "micro": worker_micro}


# --- parent side ----------------------------------------------------------------------------------------------


class Worker:
    """A worker subprocess: one JSON line per request; its stderr goes to a temporary log shown on failure."""

    def __init__(self, kind: str, opts):
        self.kind = kind
        self.log = tempfile.TemporaryFile(mode="w+")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        env["HF_HUB_OFFLINE"] = env["TRANSFORMERS_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
        cmd = [sys.executable, __file__, "--worker", kind, "--preset", opts.preset]
        cmd += ["--repeats", str(opts.repeats), "--warmup", str(opts.warmup)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=ROOT, env=env
        )

    def ask(self, command: str | None = None) -> dict:
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.log.seek(0)
            raise RuntimeError(f"{self.kind} worker died (rc {self.proc.returncode}):\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


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


def summarise_steps(steps: dict) -> dict:
    out = {"shape": {k: v[-1]["shape"] for k, v in steps.items()}}
    parts = ["total", "gen", "old_logp", "collect", "update"]
    for name, replies in steps.items():
        out[name] = {p: [r["times"].get(p, 0.0) for r in replies] for p in parts}
        out[name]["median"] = {p: statistics.median(out[name][p]) for p in parts}
    out["ratio_ours_over_trl"] = {
        p: statistics.median(o / t for o, t in zip(out["ours"][p], out["trl"][p], strict=True)) for p in parts
    }
    return out


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
    step = summarise_steps(steps)
    active = info["ours"]["active"]
    tokens = PROMPTS * GROUP * (step["shape"]["ours"]["prompt_cols"] + step["shape"]["ours"]["response_cols"])
    step["update_gflops"] = {  # the RL step's 4 updates on 32 × 48 tokens each: 6 · N_active · tokens per pass
        k: 6 * active * tokens / step[k]["median"]["update"] / 1e9 for k in ("ours", "trl")
    }
    rss = {"ours": final["ours"]["rss_mib"], "trl": final["trl"]["rss_mib"], "micro": micro["rss_mib"]}
    threads = {k: v["threads"] for k, v in final.items()} | {"micro": micro["threads"]}
    flops, roll = micro["flops"], micro["rollout"]
    targets = {
        "step_ratio_le_0.5": step["ratio_ours_over_trl"]["total"] <= 0.5,
        "update_flops_ge_half_matmul": flops["update_vs_2048_matmul"] >= 0.5,
        "ours_rss_lt_1GiB": rss["ours"] < 1024,
    }
    config = {
        "preset": opts.preset,
        "weights": info["ours"]["source"],
        "params_total": info["ours"]["total"],
        "params_active": active,
        "prompts": PROMPTS,
        "group_size": GROUP,
        "minibatches": MINIBATCHES,
        "prompt_tokens": step["shape"]["ours"]["prompt_cols"],
        "response_tokens": RESPONSE_TOKENS,
        "objective": f"GSPO eps={GSPO_EPS}",
        "threads": threads,
        "warmup": opts.warmup,
        "repeats": opts.repeats,
    }
    return {"config": config, "step": step, "rss_mib": rss, "flops": flops, "rollout": roll, "targets": targets}


def report(res: dict) -> str:
    c, s, f, r, rss = res["config"], res["step"], res["flops"], res["rollout"], res["rss_mib"]
    ms, ok = 1e3, {True: "met", False: "MISSED"}
    shapes = "; ".join(
        f"{k}: {v['rows']} rows × ({v['prompt_cols']} + {v['response_cols']}) cols, {v['response_tokens']} "
        "sampled tokens"
        for k, v in s["shape"].items()
    )
    lines = [
        "RL step benchmark: gspo_lab (train_step) vs TRL GRPOTrainer, same work, same process-per-stack setup",
        f"  policy    {c['preset']} preset from {c['weights']}: {c['params_total'] / 1e6:.2f} M params, "
        f"{c['params_active'] / 1e6:.2f} M active",
        f"  rollout   {c['prompts']} prompts × G = {c['group_size']}, {c['prompt_tokens']} prompt + "
        f"{c['response_tokens']} response tokens per row (<eos> suppressed), partial-credit sort reward",
        f"  update    M = {c['minibatches']} minibatches → {c['minibatches']} optimizer steps per rollout, "
        f"{c['objective']} (TRL: sequence-level IS, loss_type grpo, beta 0)",
        f"  numerics  float32, bf16 off, activation checkpointing off, no MoE aux loss, threads {c['threads']}",
        f"  timing    {c['repeats']} timed RL steps per stack after {c['warmup']} warm-up, interleaved ours/TRL",
        f"  tokens    {shapes}",
        "",
        f"{'RL step (median ms)':<22}{'ours':>10}{'TRL':>10}{'ours/TRL':>10}   (ratio: median of per-pair ratios)",
    ]
    for p in ("total", "gen", "old_logp", "collect", "update"):
        o, t = s["ours"]["median"][p] * ms, s["trl"]["median"][p] * ms
        lines.append(f"  {p:<20}{o:>10.1f}{t:>10.1f}{s['ratio_ours_over_trl'][p]:>10.3f}")
    g = s["update_gflops"]
    lines += [
        f"  {'update GFLOP/s':<20}{g['ours']:>10.1f}{g['trl']:>10.1f}   (6 · N_active · 128 × 48 tokens / update)",
        "",
        f"peak RSS (MiB): ours {rss['ours']:.0f}, TRL {rss['trl']:.0f} (micro-benchmark process: {rss['micro']:.0f})",
        "",
        f"one update on {f['rows']} × {f['tokens_per_row']} tokens: median {statistics.median(f['update_s']) * ms:.1f}"
        f" ms = {f['update_gflops_median']:.1f} GFLOP/s (6 × {f['active_params']:,} active × "
        f"{f['rows'] * f['tokens_per_row']:,} tokens)",
    ]
    for name, rate in f["matmul_gflops_median"].items():
        lines.append(f"  fp32 matmul {name:<20}{rate:>8.1f} GFLOP/s")
    lines += [
        f"  update / 2048² matmul rate: {f['update_vs_2048_matmul']:.3f} (median of per-pair ratios)",
        "",
        f"rollout sampling, {r['rows']} rows × {RESPONSE_TOKENS} new tokens (new tokens: {r['new_tokens']}):",
        f"  ours (sample_responses) {r['tokens_per_s_median']['ours']:.0f} tok/s, model.generate "
        f"{r['tokens_per_s_median']['generate']:.0f} tok/s, ours/generate {r['ours_vs_generate']:.3f}",
        "",
        "targets (reported, not asserted):",
        f"  our step ≤ 0.5 × TRL's:            {s['ratio_ours_over_trl']['total']:.3f}  "
        f"{ok[res['targets']['step_ratio_le_0.5']]}",
        f"  update FLOP/s ≥ 0.5 × 2048² matmul: {f['update_vs_2048_matmul']:.3f}  "
        f"{ok[res['targets']['update_flops_ge_half_matmul']]}",
        f"  our peak RSS < 1024 MiB:           {rss['ours']:.0f}  {ok[res['targets']['ours_rss_lt_1GiB']]}",
    ]
    return "\n".join(lines)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=None, help="timed RL steps per stack (default 15; quick: 2)")
    ap.add_argument("--warmup", type=int, default=None, help="discarded RL steps per stack (default 2; quick: 1)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: fewer repeats")
    ap.add_argument("--preset", default="moe", choices=("moe", "dense", "sweep"), help="model preset (default moe)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
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
