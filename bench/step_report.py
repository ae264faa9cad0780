"""bench/bench_step.py's parent side after the runs: the workers' replies → one result dict → the printed table."""

from __future__ import annotations

import statistics

from step_harness import GROUP, GSPO_EPS, MINIBATCHES, PROMPTS, RESPONSE_TOKENS, update_flop

PARTS = ("total", "gen", "old_logp", "collect", "update")


def summarise_steps(steps: dict) -> dict:
    """Per stack and part: every timed step, the median; and the median of the per-pair ratios ours / TRL."""
    out = {"shape": {k: v[-1]["shape"] for k, v in steps.items()}}
    for name, replies in steps.items():
        out[name] = {p: [r["times"].get(p, 0.0) for r in replies] for p in PARTS}
        out[name]["median"] = {p: statistics.median(out[name][p]) for p in PARTS}
    out["ratio_ours_over_trl"] = {
        p: statistics.median(o / t for o, t in zip(out["ours"][p], out["trl"][p], strict=True)) for p in PARTS
    }
    return out


def results(opts, info: dict, steps: dict, final: dict, micro: dict) -> dict:
    """The figures written to ``--json``: config, step, rss_mib, flops, rollout, targets."""
    step = summarise_steps(steps)
    active = info["ours"]["active"]
    tokens = PROMPTS * GROUP * (step["shape"]["ours"]["prompt_cols"] + step["shape"]["ours"]["response_cols"])
    step["update_gflops"] = {  # the RL step's 4 updates on 32 × 48 tokens each: 6 · N_active · tokens per pass
        k: update_flop(active, tokens) / step[k]["median"]["update"] / 1e9 for k in ("ours", "trl")
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
    for p in PARTS:
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
