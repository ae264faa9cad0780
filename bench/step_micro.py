"""The micro-benchmark worker (bench_step.py's points 5 and 6): update FLOP/s against matmul rates, and our sampler
against ``model.generate``. It runs in a third process, after the lockstep, so it never inflates either stack's RSS."""

from __future__ import annotations

import statistics
import time

from step_harness import (
    FLOP_ROWS,
    GROUP,
    LENGTH,
    PROMPTS,
    RESPONSE_TOKENS,
    Channel,
    load_policy,
    peak_rss_mib,
    update_flop,
)
from step_ours import our_state


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


def flop_minibatch(preset: str):
    """The FLOP/s work: a TrainState on the reference configuration with ``FLOP_ROWS``-row minibatches, one collected
    batch, its minibatch's rows and columns, and the policy's active parameters (bench/roofline.py uses it too)."""
    import gspo_lab.step as loop
    from gspo_lab.model import count_params

    state, _, _, _ = our_state(preset, PROMPTS * GROUP // FLOP_ROWS)
    batch = loop.collect(state)
    rows, cols = len(batch.minibatches[0]), batch.data.prompt_ids.shape[1] + batch.data.response_ids.shape[1]
    return state, batch, rows, cols, count_params(state.model)["active"]


def flops_figures(opts, repeats: int) -> dict:
    """Update FLOP/s at 64 × 48 tokens, interleaved with the 2048² matmul and the model-shape matmuls."""
    import gspo_lab.step as loop

    state, batch, rows, cols, active = flop_minibatch(opts.preset)
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
    flop = update_flop(active, tokens)
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
