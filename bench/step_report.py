"""bench/bench_step.py's parent side after the runs: the workers' replies → one result dict → the printed table."""

from __future__ import annotations

import statistics

from step_harness import GROUP, GSPO_EPS, MINIBATCHES, PROMPTS, RESPONSE_TOKENS, update_flop

PARTS = ("total", "gen", "old_logp", "collect", "update")
#: the compared columns, in lockstep order: the kit at its fast paths (gspo-lab train's default), at its compiled paths
#: (a compiled spec's sweep worker) and at its reference paths (TrainConfig's defaults, every stored cell), TRL's
#: GRPOTrainer at its default and with its torch_compile
COLUMNS = ("kit_fast", "kit_compiled", "kit_ref", "trl", "trl_compile")
LABELS = {"kit_fast": "kit fast", "kit_compiled": "kit compiled", "kit_ref": "kit ref", "trl": "TRL",
          "trl_compile": "TRL compile"}  # fmt: skip
BASE = "trl"  # every column's ratio is against TRL at its default
PEER = "trl_compile"  # TRL at its best: the kit's fastest comparable column is set against it (issue 52's target)
KIT_BEST = ("kit_fast", "kit_compiled")  # the kit's columns that can be its fastest
COMPILED = ("kit_compiled", "trl_compile")  # more warm-up steps, and graphs compiled in a timed step reported
RATIOS = (("kit_fast", BASE), ("kit_compiled", BASE), ("kit_ref", BASE), ("trl_compile", BASE),
          ("kit_fast", "kit_ref"), ("kit_fast", PEER), ("kit_compiled", PEER))  # fmt: skip
PEER_TARGET = 0.95


def summarise_steps(steps: dict, warm: dict, failed: dict) -> dict:
    """Per column and part: every timed step and the median; the medians of the per-round ratios (:data:`RATIOS`);
    per column the graphs ``torch.compile`` compiled in its warm-up and timed steps; the failed columns' errors."""
    live = [c for c in COLUMNS if c not in failed]
    out = {"shape": {c: steps[c][-1]["shape"] for c in live}, "failed": dict(failed), "compile": {}}
    for c in live:
        out[c] = {p: [r["times"].get(p, 0.0) for r in steps[c]] for p in PARTS}
        out[c]["median"] = {p: statistics.median(out[c][p]) for p in PARTS}
    out["ratio"] = {
        f"{a}/{b}": {p: statistics.median(x / y for x, y in zip(out[a][p], out[b][p], strict=True)) for p in PARTS}
        for a, b in RATIOS
        if a in live and b in live
    }
    for c in COLUMNS:
        timed = [r["graphs"] for r in steps[c]]
        out["compile"][c] = {
            "warmup_steps": len(warm[c]),
            "warmup_total_s": [r["times"]["total"] for r in warm[c]],
            "graphs_in_warmup": sum(r["graphs"] for r in warm[c]),
            "graphs_in_timed": sum(timed),
            "timed_steps_compiling": sum(g > 0 for g in timed),
            "compiled_forwards": sorted(
                k for k, v in (steps[c] or warm[c] or [{}])[-1].get("compiled", {}).items() if v
            ),
        }
    return out


def column_status(step: dict, c: str) -> str:
    """``comparable``, or why a column's figures are not (its worker failed, or it compiled inside timed steps)."""
    if c in step["failed"]:
        return f"failed: {step['failed'][c]}"
    k = step["compile"][c]["timed_steps_compiling"]
    if k:
        return f"not comparable: compiled graphs in {k} of {len(step[c]['total'])} timed steps"
    return "comparable"


def fastest_kit(step: dict) -> tuple[str | None, float | None]:
    """The kit column of :data:`KIT_BEST` with the smallest median per-round ratio to :data:`PEER` on the whole step,
    among the comparable ones, and that ratio; (None, None) when none is comparable or the peer failed."""
    ratios = {c: step["ratio"][f"{c}/{PEER}"]["total"] for c in KIT_BEST
              if step["status"][c] == "comparable" and f"{c}/{PEER}" in step["ratio"]}  # fmt: skip
    if step["status"][PEER] != "comparable" or not ratios:
        return None, None
    best = min(ratios, key=ratios.get)
    return best, ratios[best]


def results(opts, info: dict, steps: dict, warm: dict, failed: dict, final: dict, micro: dict, warmup: dict,
            load: list[float]) -> dict:  # fmt: skip
    """The figures written to ``--json``: config, step, rss_mib, flops, rollout, targets."""
    step = summarise_steps(steps, warm, failed)
    live = [c for c in COLUMNS if c not in failed]
    shape = step["shape"][BASE]
    active = info[BASE]["active"]
    tokens = PROMPTS * GROUP * (shape["prompt_cols"] + shape["response_cols"])
    step["update_gflops"] = {  # the RL step's 4 updates on 32 × 48 tokens each: 6 · N_active · tokens per pass
        c: update_flop(active, tokens) / step[c]["median"]["update"] / 1e9 for c in live
    }
    step["status"] = {c: column_status(step, c) for c in COLUMNS}
    step["load"] = load
    step["fastest_kit"] = dict(zip(("column", "ratio_to_peer"), fastest_kit(step), strict=True))
    rss = {c: final[c]["rss_mib"] for c in live} | {"micro": micro["rss_mib"]}
    threads = {c: final[c]["threads"] for c in live} | {"micro": micro["threads"]}
    flops, roll = micro["flops"], micro["rollout"]
    targets = {
        "step_ratio_le_0.5": step["ratio"]["kit_fast/trl"]["total"] <= 0.5,
        "fastest_kit_le_0.95_trl_compile": (step["fastest_kit"]["ratio_to_peer"] or float("inf")) <= PEER_TARGET,
        "update_flops_ge_half_matmul": flops["update_vs_2048_matmul"] >= 0.5,
        "ours_rss_lt_1GiB": max(rss[c] for c in live if c.startswith("kit")) < 1024,
    }
    config = {
        "preset": opts.preset,
        "weights": info[BASE]["source"],
        "params_total": info[BASE]["total"],
        "params_active": active,
        "prompts": PROMPTS,
        "group_size": GROUP,
        "minibatches": MINIBATCHES,
        "prompt_tokens": shape["prompt_cols"],
        "response_tokens": RESPONSE_TOKENS,
        "objective": f"GSPO eps={GSPO_EPS}",
        "threads": threads,
        "warmup": opts.warmup,
        "compile_warmup": opts.compile_warmup,
        "compile_backend": opts.compile_backend,
        "repeats": opts.repeats,
        "columns": {c: {"label": LABELS[c], "warmup": warmup[c], "settings": _asked(opts, info, c)} for c in COLUMNS},
    }
    return {"config": config, "step": step, "rss_mib": rss, "flops": flops, "rollout": roll, "targets": targets}


def _asked(opts, info: dict, c: str) -> dict:
    """A column's settings as its worker reported them; for a worker that died first, what it was asked to run."""
    if c in info:
        return info[c]["settings"]
    return {"torch_compile": True, "torch_compile_backend": opts.compile_backend} if c in COMPILED else {}


def _settings(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def report(res: dict) -> str:
    c, s, f, r, rss = res["config"], res["step"], res["flops"], res["rollout"], res["rss_mib"]
    ms, ok, w = 1e3, {True: "met", False: "MISSED"}, 13
    cols, live = c["columns"], [k for k in COLUMNS if k not in s["failed"]]
    forwards = s["compile"]["trl_compile"]["compiled_forwards"]
    shapes = "; ".join(
        f"{LABELS[k]}: {v['rows']} rows × ({v['prompt_cols']} + {v['response_cols']}) cols, {v['response_tokens']} "
        "sampled tokens"
        for k, v in s["shape"].items()
    )
    lines = [
        "RL step benchmark: gspo_lab's train_step at its fast, compiled and reference paths beside TRL's GRPOTrainer "
        "at its default and with torch_compile; the same work, one process per column, round-robin lockstep",
        f"  policy    {c['preset']} preset from {c['weights']}: {c['params_total'] / 1e6:.2f} M params, "
        f"{c['params_active'] / 1e6:.2f} M active",
        f"  rollout   {c['prompts']} prompts × G = {c['group_size']}, {c['prompt_tokens']} prompt + "
        f"{c['response_tokens']} response tokens per row (<eos> suppressed), partial-credit sort reward",
        f"  update    M = {c['minibatches']} minibatches → {c['minibatches']} optimizer steps per rollout, "
        f"{c['objective']} (TRL: sequence-level IS, loss_type grpo, beta 0); π_old recomputed by a no-grad forward "
        "in every column (checked every step)",
        f"  numerics  float32, bf16 off, activation checkpointing off, no MoE aux loss, threads {c['threads']}",
        f'  kit fast     with_paths(cfg, "fast") (gspo-lab train): {_settings(cols["kit_fast"]["settings"])}',
        f'  kit compiled with_paths(cfg, "compiled") (a compiled spec\'s sweep worker, warm): '
        f"{_settings(cols['kit_compiled']['settings'])}, backend {c['compile_backend']}",
        f"  kit ref      TrainConfig's defaults, what every stored cell ran: {_settings(cols['kit_ref']['settings'])}",
        f"  TRL          GRPOTrainer as above, its default elsewhere: {_settings(cols['trl']['settings'])}",
        f"  TRL compile  the same with {_settings(cols['trl_compile']['settings'])}: accelerate compiles the training "
        f"model; the log-prob forwards given the compiled module: {', '.join(forwards) or 'none'} (of fwd_grad, the "
        "loss's, and old_logp, π_old's); generation calls the original module's generate",
        f"  timing    {c['repeats']} timed round(s) after {c['warmup']} warm-up round(s), one RL step per column each; "
        f"a compiled column first runs {c['compile_warmup']} more warm-up step(s) alone "
        f"({c['warmup'] + c['compile_warmup']} in all); 1-minute load average {s['load'][0]:.1f} before the rounds, "
        f"{s['load'][1]:.1f} after",
        f"  tokens    {shapes}",
        "",
        f"{'RL step (median ms)':<22}" + "".join(f"{LABELS[k]:>{w}}" for k in COLUMNS),
    ]
    for p in PARTS:
        vals = [f"{s[k]['median'][p] * ms:>{w}.1f}" if k in live else f"{'—':>{w}}" for k in COLUMNS]
        lines.append(f"  {p:<20}" + "".join(vals))
    g = s["update_gflops"]
    lines.append(
        f"  {'update GFLOP/s':<20}" + "".join(f"{g[k]:>{w}.1f}" if k in live else f"{'—':>{w}}" for k in COLUMNS)
    )
    widths = {k: max(20, len(_ratio_label(k)) + 2) for k in s["ratio"]}
    heads = "".join(f"{_ratio_label(k):>{widths[k]}}" for k in widths)
    lines += ["", f"{'ratio (median of per-round ratios)':<36}" + heads]
    for p in PARTS:
        lines.append(f"  {p:<34}" + "".join(f"{v[p]:>{widths[k]}.3f}" for k, v in s["ratio"].items()))
    lines += ["", "columns:"]
    for k in COLUMNS:
        comp = s["compile"][k]
        line = f"  {LABELS[k]:<12} {s['status'][k]}"
        if k in COMPILED and k in live:
            first = ", ".join(f"{t:.1f}" for t in comp["warmup_total_s"])
            line += (
                f"; {comp['graphs_in_warmup']} graphs compiled in its {comp['warmup_steps']} warm-up steps "
                f"(their walls: {first} s), {comp['graphs_in_timed']} in the timed steps"
            )
        lines.append(line)
    lines += [
        "",
        "peak RSS (MiB): "
        + ", ".join(f"{LABELS[k]} {rss[k]:.0f}" for k in live)
        + f" (micro-benchmark process: {rss['micro']:.0f})",
        "",
        f"one update on {f['rows']} × {f['tokens_per_row']} tokens: median {statistics.median(f['update_s']) * ms:.1f}"
        f" ms = {f['update_gflops_median']:.1f} GFLOP/s (6 × {f['active_params']:,} active × "
        f"{f['rows'] * f['tokens_per_row']:,} tokens; the reference paths)",
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
        f"  kit fast step ≤ 0.5 × TRL's:        {s['ratio']['kit_fast/trl']['total']:.3f}  "
        f"{ok[res['targets']['step_ratio_le_0.5']]}",
        f"  update FLOP/s ≥ 0.5 × 2048² matmul: {f['update_vs_2048_matmul']:.3f}  "
        f"{ok[res['targets']['update_flops_ge_half_matmul']]}",
        f"  {_fastest(s)}  {ok[res['targets']['fastest_kit_le_0.95_trl_compile']]}",
        f"  kit peak RSS < 1024 MiB:           {max(v for k, v in rss.items() if k.startswith('kit')):.0f}  "
        f"{ok[res['targets']['ours_rss_lt_1GiB']]}",
    ]
    return "\n".join(lines)


def _fastest(s: dict) -> str:
    best = s["fastest_kit"]
    if best["column"] is None:
        return f"fastest kit column ≤ {PEER_TARGET} × TRL compile: no comparable pair"
    return f"fastest kit column ({LABELS[best['column']]}) ≤ {PEER_TARGET} × TRL compile: {best['ratio_to_peer']:.3f}"


def _ratio_label(key: str) -> str:
    a, b = key.split("/")
    return f"{LABELS[a]} / {LABELS[b]}"
