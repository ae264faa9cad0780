"""TRL's worker: ``GRPOTrainer.train`` on the compared configuration, held in lockstep by a TrainerCallback; at TRL's
default (eager) or with its own ``torch_compile=True`` (TrainingArguments: accelerate compiles the model it prepares
for training)."""

from __future__ import annotations

import tempfile
import time

from step_harness import (
    GROUP,
    GSPO_EPS,
    LENGTH,
    MINIBATCHES,
    PROMPTS,
    RESPONSE_TOKENS,
    Channel,
    compiled_graphs,
    load_policy,
    peak_rss_mib,
    timed,
)


def trl_trainer(opts, out_dir: str, n_steps: int, compile: bool = False):
    """TRL's GRPOTrainer on the compared configuration (see bench_step.py's docstring, point 3); ``compile``: with
    ``torch_compile=True`` and ``torch_compile_backend=opts.compile_backend`` (point 7)."""
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
        torch_compile=compile,
        torch_compile_backend=opts.compile_backend if compile else None,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=sort_reward, args=args, train_dataset=dataset, processing_class=tokenizer
    )
    return trainer, source


def instrument_trl(trainer, timers: dict, seen: dict) -> None:
    """Time TRL's rollout phase, sampling and log-prob forwards; keep the last rollout's output, and which log-prob
    forwards got a ``torch.compile``d module (``seen["compiled"]``: fwd_grad, the loss's; old_logp, π_old's)."""
    import torch

    def kind():
        return "fwd_grad" if torch.is_grad_enabled() else "old_logp"

    logps = trainer._get_per_token_logps_and_entropies

    def logps_seen(model, *args, **kwargs):
        seen.setdefault("compiled", {})[kind()] = hasattr(model, "_orig_mod")  # torch.compile's OptimizedModule
        return logps(model, *args, **kwargs)

    trainer._generate = timed(trainer._generate, timers, "gen")
    trainer._get_per_token_logps_and_entropies = timed(logps_seen, timers, kind)
    trainer._generate_and_score_completions = timed(
        trainer._generate_and_score_completions, timers, "collect", after=lambda out: seen.update(out=out)
    )


def worker_trl(opts, chan: Channel, compile: bool) -> None:
    import torch
    from transformers import TrainerCallback

    from gspo_lab.model import count_params

    torch.set_num_threads(1)
    n_steps = opts.warmup + opts.repeats
    timers, seen = {}, {}

    class Lockstep(TrainerCallback):
        """Waits for the parent's "step" at each RL-step boundary (every 4 optimizer steps) and reports."""

        t0, graphs = 0.0, 0

        def _wait(self):
            chan.recv()  # the parent sends exactly n_steps "step"s, then "done" after the last one
            timers.clear()
            self.graphs, self.t0 = compiled_graphs(), time.perf_counter()

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
            graphs = compiled_graphs() - self.graphs
            reply = {"times": split, "shape": shape, "graphs": graphs, "compiled": seen.get("compiled", {})}
            chan.send({**reply, "old_logp_computed": old})
            self._wait()

    with tempfile.TemporaryDirectory() as out_dir:
        trainer, source = trl_trainer(opts, out_dir, n_steps, compile)
        instrument_trl(trainer, timers, seen)
        trainer.add_callback(Lockstep())
        settings = {k: getattr(trainer.args, k) for k in ("torch_compile", "torch_compile_backend")}
        chan.send({"ready": True, "source": source, "threads": torch.get_num_threads(), "settings": settings,
                   **count_params(trainer.model)})  # fmt: skip
        trainer.train()
    chan.send({"rss_mib": peak_rss_mib(), "threads": torch.get_num_threads()})
