"""The RL loop on the shipped sweep checkpoint: exact first ratios, learning, determinism, kill-and-resume."""

from __future__ import annotations

import math
import os
from dataclasses import replace

import pandas as pd
import pytest
import torch

from gspo_lab.checkpoints import load_checkpoint
from gspo_lab.config import SMOKE, TrainConfig
from gspo_lab.policy import rollout_logprobs
from gspo_lab.step import collect, init_state, train_step, update
from gspo_lab.train import train

CFG = replace(SMOKE, checkpoint="sweep-sort")


def _table(cfg, **kw):
    return train(cfg, progress=False, **kw)


def _no_time(df):
    return df[[c for c in df.columns if not c.startswith("time/")]]


@pytest.mark.parametrize("objective", ["gspo", "grpo", "gspo_token"])
@pytest.mark.parametrize("replay", [False, True])
def test_first_update_is_on_policy(objective, replay):
    """π_old is recomputed with the update's own rows and arithmetic: ratios exactly 1, no expert change."""
    rows = train_step(init_state(replace(CFG, objective=objective, routing_replay=replay)))
    first = rows[0]
    assert first["update_in_rollout"] == 0
    assert first["ratio/tok_log_absmax"] == 0.0 and first["kl/k1"] == 0.0
    assert first["moe/expert_change"] == 0.0 and first["clip/token_frac_outside"] == 0.0
    later = rows[-1]
    assert later["update_in_rollout"] == CFG.minibatches - 1 and later["ratio/tok_log_absmax"] > 0.0


def test_smoke_run_changes_parameters_and_learns_from_its_batch():
    cfg = replace(CFG, rollouts=3, lr=1e-4)
    state = init_state(cfg)
    before = {k: v.clone() for k, v in state.model.state_dict().items()}
    for _ in range(cfg.rollouts):
        train_step(state)
    changed = [k for k, v in state.model.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) == len(before)  # every tensor moved (experts too: each is used by some token)
    rewards = [r["reward/mean"] for r in state.history if r["update_in_rollout"] == 0]
    assert 0.0 < sum(rewards) / len(rewards) < 1.0  # a cold start with partial accuracy: groups carry variance


@pytest.mark.parametrize("lr, learns", [(1e-4, True), (0.0, False)])
def test_updates_raise_the_likelihood_of_positive_advantage_responses(lr, learns):
    """What "learning" means for one rollout batch: after its M updates, log π(y_i|x) rose more for Â_i > 0 than for
    Â_i < 0. At lr = 0 nothing moves, so this fails (a check that cannot pass by sampling noise alone)."""
    state = init_state(replace(CFG, lr=1e-4, prompts_per_rollout=8, group_size=8, minibatches=2))
    for group in state.optimizer.param_groups:
        group["lr"] = group["initial_lr"] = lr
    state.scheduler.base_lrs = [lr]
    batch = collect(state)
    with torch.no_grad():
        first, _ = rollout_logprobs(state.model, batch.data)
    for m in range(2):
        update(state, batch, m)
    with torch.no_grad():
        last, _ = rollout_logprobs(state.model, batch.data)
    gain = (last - first).where(batch.data.response_mask, 0.0).sum(-1)
    margin = gain[batch.adv > 0].mean() - gain[batch.adv < 0].mean()
    assert bool(margin > 0.05) == learns, margin.item()


def test_same_seed_same_table_and_other_seed_differs():
    a, b = _table(CFG), _table(CFG)
    assert _no_time(a).equals(_no_time(b))
    c = _table(replace(CFG, seed=1))
    assert not _no_time(a).equals(_no_time(c))


class Killed(Exception):
    pass


def test_killed_run_resumes_to_the_same_table(tmp_path):
    cfg = replace(CFG, rollouts=3)
    full = _table(cfg)

    def kill_after_first(state, rows):
        if state.rollout_index == 1:
            raise Killed

    with pytest.raises(Killed):
        _table(cfg, run_dir=tmp_path, on_step=kill_after_first)
    assert (tmp_path / "LATEST").read_text() == "state-00001"
    resumed = _table(cfg, run_dir=tmp_path, resume=True)
    assert _no_time(resumed).equals(_no_time(full))
    assert (tmp_path / "metrics.csv").exists() and (tmp_path / "config.json").exists()
    assert sorted(p.name for p in tmp_path.glob("state-*")) == ["state-00003"]


def test_rows_appended_by_a_save_killed_before_its_state_landed_are_dropped(tmp_path, monkeypatch):
    """The rows live in history.jsonl, appended per save; the state's meta.json says how many are its own. A save
    killed after appending but before renaming its state into place leaves extra rows: the resume cuts them."""
    import gspo_lab.train as train_mod

    cfg = replace(CFG, rollouts=3)
    full = _table(cfg)
    real_replace = os.replace

    def die_on_second_state(src, dst):
        if str(dst).endswith("state-00002"):
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(train_mod.os, "replace", die_on_second_state)
    with pytest.raises(Killed):
        _table(cfg, run_dir=tmp_path)
    monkeypatch.undo()
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    assert len(lines) == 2 * CFG.minibatches  # rollout 2's rows were appended, its state never landed
    assert (tmp_path / "LATEST").read_text() == "state-00001"
    resumed = _table(cfg, run_dir=tmp_path, resume=True)
    assert _no_time(resumed).equals(_no_time(full))
    assert len((tmp_path / "history.jsonl").read_text().splitlines()) == 3 * CFG.minibatches
    assert _no_time(pd.read_csv(tmp_path / "metrics.csv")).shape == _no_time(full).shape


def test_a_state_saved_with_its_rows_inside_still_resumes(tmp_path):
    """Run folders saved before the rows moved to JSON lines kept them in meta.json: they resume unchanged."""
    import json

    cfg = replace(CFG, rollouts=2)
    full = _table(cfg)
    _table(replace(cfg, rollouts=1), run_dir=tmp_path)
    meta_path = tmp_path / "state-00001" / "meta.json"
    meta = json.loads(meta_path.read_text())
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    evals = [json.loads(line) for line in (tmp_path / "eval.jsonl").read_text().splitlines()]
    meta_path.write_text(json.dumps({**{k: meta[k] for k in ("rollout_index", "update_index")},
                                     "history": history, "eval_history": evals}))  # fmt: skip
    (tmp_path / "history.jsonl").unlink()
    (tmp_path / "eval.jsonl").unlink()
    resumed = _table(cfg, run_dir=tmp_path, resume=True)
    assert _no_time(resumed).equals(_no_time(full))


def test_run_dir_is_never_overwritten_and_config_must_match(tmp_path):
    _table(replace(CFG, rollouts=1), run_dir=tmp_path)
    with pytest.raises(FileExistsError, match="already holds a run"):
        _table(replace(CFG, rollouts=1), run_dir=tmp_path)
    with pytest.raises(ValueError, match=r"changed fields: \['lr'\]"):
        _table(replace(CFG, rollouts=2, lr=1.0), run_dir=tmp_path, resume=True)


def test_sampler_logprobs_as_old_policy_are_close_but_not_exact():
    rows = train_step(init_state(replace(CFG, old_logp="sampler")))
    assert 0.0 < rows[0]["ratio/tok_log_absmax"] < 1e-4
    rows = train_step(init_state(replace(CFG, old_logp="sampler_bf16")))
    assert rows[0]["ratio/tok_log_absmax"] > 1e-3  # bf16 inference engine: a real mismatch


def test_skipping_pi_olds_forward_changes_nothing_but_the_expert_change_metrics():
    """old_forward=False (issue 25's fast path, with π_old from the sampler): the same rows, bit for bit, less the
    metrics that compare π_old's routing with the update's."""
    cfg = replace(CFG, old_logp="sampler", rollouts=2)
    slow, fast = _table(cfg), _table(replace(cfg, old_forward=False))
    moe = [c for c in slow.columns if c.startswith("moe/")]
    assert moe and slow[moe].notna().all().all() and not set(moe) & set(fast.columns)
    keep = [c for c in slow.columns if c not in moe and not c.startswith("time/")]
    pd.testing.assert_frame_equal(slow[keep], fast[keep])
    with pytest.raises(ValueError, match="old_forward=False needs old_logp='sampler'"):
        replace(CFG, old_forward=False)
    with pytest.raises(ValueError, match="routing_replay=True"):
        replace(CFG, old_logp="sampler", routing_replay=True, old_forward=False)


def test_leaving_out_the_group_statistics_changes_nothing_else():
    """group_stats=False (issue 25's fast path): the same rows, bit for bit, less the per-group gradient norms and
    AdamW peaks."""
    slow, fast = _table(replace(CFG, rollouts=2)), _table(replace(CFG, rollouts=2, group_stats=False))
    groups = [c for c in slow.columns if c.startswith(("grad/norm_", "adam/peak_"))]
    assert len(groups) >= 10 and not set(groups) & set(fast.columns)
    keep = [c for c in slow.columns if c not in groups and not c.startswith("time/")]
    pd.testing.assert_frame_equal(slow[keep], fast[keep])


def test_fused_adamw_is_the_loops_update_up_to_float_rounding():
    """fused_adam=True (issue 25's fast path): AdamW's fused kernel takes the loop's step to within float rounding on
    the policy's own tensors (40 steps of the same gradients), and a run's first update, taken before any step, is
    the same bit for bit; only AdamW has a fused kernel here."""
    from gspo_lab.model import build_model

    gen = torch.Generator().manual_seed(0)
    models = [build_model("sweep", 32, seed=0) for _ in range(2)]
    grads = [[torch.randn(p.shape, generator=gen) for p in models[0].parameters()] for _ in range(4)]
    opts = [torch.optim.AdamW(models[0].parameters(), lr=1e-3, weight_decay=0.0)]
    opts.append(torch.optim.AdamW(models[1].parameters(), lr=1e-3, weight_decay=0.0, fused=True))
    for i in range(40):
        for model, opt in zip(models, opts, strict=True):
            for p, g in zip(model.parameters(), grads[i % 4], strict=True):
                p.grad = g.clone()
            opt.step()
    diffs = [(a - b).abs().max().item() for a, b in zip(*(m.parameters() for m in models), strict=True)]
    assert 0.0 < max(diffs) < 1e-6  # not the same code path, the same update
    loop, fused = train_step(init_state(CFG)), train_step(init_state(replace(CFG, fused_adam=True)))
    assert loop[0]["loss/policy"] == fused[0]["loss/policy"] and loop[0]["grad/norm"] == fused[0]["grad/norm"]
    assert fused[-1]["loss/policy"] == pytest.approx(loop[-1]["loss/policy"], rel=1e-3, abs=1e-6)
    with pytest.raises(ValueError, match="fused_adam=True .* needs optimizer='adamw', got 'sgd'"):
        replace(CFG, optimizer="sgd", fused_adam=True)


@pytest.mark.slow
def test_compiled_update_is_the_eager_update_up_to_float_rounding():
    """compile_update=True (issues 25, 52): the trainer's forwards under torch.compile score the same tokens to float
    rounding, so one rollout's rows (its M updates, AdamW in between) stay within 1e-3 of eager's, with π_old the
    sampler's (no π_old forward) and with π_old recomputed, where the routing hooks run inside the compiled graphs:
    recording (the expert-change metrics equal eager's), Routing Replay (R2) and the sampler's routing (R3). The same
    compiled function serves another policy object of a configuration seen without compiling again."""
    from torch._dynamo.utils import counters

    base = replace(CFG, rollouts=1)
    arms = {
        "sampler π_old": replace(base, old_logp="sampler", old_forward=False),
        "recompute": base,
        "R2": replace(base, routing_replay=True),
        "R3": replace(base, old_logp="sampler_bf16", sampler_routing_replay=True),
    }
    keys = ("loss/policy", "grad/norm", "policy/entropy", "ratio/tok_log_absmax", "moe/expert_change")
    for name, cfg in arms.items():
        eager, compiled = train_step(init_state(cfg)), train_step(init_state(replace(cfg, compile_update=True)))
        for key in keys if name != "sampler π_old" else keys[:-1]:  # no π_old routing to compare on the fast path
            got, want = [r[key] for r in compiled], [r[key] for r in eager]
            assert got == pytest.approx(want, rel=1e-3, abs=1e-6), (name, key)
        first = (compiled[0]["loss/policy"], compiled[0]["grad/norm"]), (eager[0]["loss/policy"], eager[0]["grad/norm"])
        assert first[0] != first[1], name  # compiled code ran: float rounding, not bit for bit
    graphs = dict(counters["stats"])
    for cfg in arms.values():  # another policy object each: nothing new to compile
        train_step(init_state(replace(cfg, compile_update=True, seed=1)))
    assert graphs["unique_graphs"] > 0 and dict(counters["stats"]) == graphs
    sampler = arms["sampler π_old"]
    directed = train_step(init_state(replace(sampler, compile_update=True, norm_of="grpo")))  # a retained backward
    assert all(math.isfinite(r["grad/norm_other"]) for r in directed)


def test_dense_model_has_no_moe_metrics():
    from gspo_lab.model import build_model

    model, tok, _ = load_checkpoint("sweep-sort")
    dense = build_model("dense", len(tok), seed=0)
    rows = train_step(init_state(CFG, model=dense, tokenizer=tok))
    assert "moe/expert_change" not in rows[0] and rows[0]["ratio/tok_log_absmax"] == 0.0


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("objective", "gpso", "objective must be one of"),
        ("length", 99, "length must be one of"),
        ("minibatches", 3, "minibatches=3 must divide"),
        ("group_size", 1, "group_size must be >= 2"),
        ("old_logp", "vllm", "old_logp must be one of"),
        ("grad_clip", 0.0, "grad_clip must be a finite number > 0 or None"),
        ("lr", -1.0, "lr and temperature must be > 0"),
        ("token_advantage", -0.5, "token_advantage must be a finite number >= 0"),
        (
            "token_advantage",
            0.5,
            r"needs an objective that takes per-token advantages "
            r"\(\['cispo_clip', 'cispo_mask', 'grpo_token_mean', 'gspo_token'\]\)",
        ),
    ],
)
def test_bad_config(field, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{field: value})


def test_clip_defaults_follow_the_objective():
    assert TrainConfig(objective="gspo").clip == (3e-4, 4e-4)
    assert TrainConfig(objective="grpo").clip == (0.2, 0.27)
    assert TrainConfig(objective="grpo", eps_low=0.1).clip == (0.1, 0.27)


def test_token_advantages_in_the_loop():
    """token_advantage = λ > 0: (B, T) advantages whose response means are the sequence Â; GSPO-token trains on them
    and its first update differs from sequence Â; λ = 0 keeps GSPO-token's first update equal to GSPO's (Eq. 14)."""
    base = replace(CFG, objective="gspo_token")
    seq_state = init_state(base)
    seq = collect(seq_state)
    tok_state = init_state(replace(base, token_advantage=0.5))
    tok = collect(tok_state)
    assert seq.adv.dim() == 1 and tok.adv.shape == tok.data.response_mask.shape
    mask = tok.data.response_mask
    means = (tok.adv * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    assert torch.allclose(means.double(), seq.adv.double(), atol=1e-6)  # same prompts and samples: same seed
    assert (tok.adv[~mask] == 0).all() and (tok.adv - seq.adv[:, None]).where(mask, 0.0).abs().max() > 0.01
    rows_tok = [update(tok_state, tok, m) for m in range(base.minibatches)]
    rows_seq = [update(seq_state, seq, m) for m in range(base.minibatches)]
    assert rows_tok[0]["loss/policy"] != rows_seq[0]["loss/policy"]
    gspo_state = init_state(replace(CFG, objective="gspo"))
    gspo_first = update(gspo_state, collect(gspo_state), 0)
    assert gspo_first["loss/policy"] == pytest.approx(rows_seq[0]["loss/policy"], abs=1e-7)


def test_sampler_correction_and_opsm_in_the_loop():
    """bf16 sampler, π_old recomputed in fp32: ρ is logged near 1, multiplies the loss, and OPSM drops responses."""
    from dataclasses import replace

    from gspo_lab.config import SMOKE
    from gspo_lab.step import collect, init_state, update

    def first_update(**kw):
        state = init_state(replace(SMOKE, objective="grpo", sampler_precision="bf16", **kw))
        batch = collect(state)
        return batch, update(state, batch, 0)

    plain_batch, plain = first_update()
    batch, row = first_update(sampler_correction="token_truncate", sampler_clip_min=0.999, sampler_clip_max=1.001)
    assert not any(k.startswith("correction/") for k in plain)
    assert batch.sampler_ratio is not None and len(batch.sampler_ratio) == SMOKE.minibatches
    assert 0 < row["correction/logp_diff_mean"] < 0.05 and abs(row["correction/rho_mean"] - 1) < 0.01
    assert row["correction/truncated_frac"] > 0 and row["correction/masked_frac"] == 0
    assert torch.equal(batch.old_logp[0], plain_batch.old_logp[0])  # the same rollout: only the weight differs
    assert row["loss/policy"] != plain["loss/policy"]
    # δ = −1: every mean log(π_sampler/π_θ) here is ~1e-3 > δ, so exactly the responses with Â < 0 are dropped
    opsm_batch, masked = first_update(opsm_threshold=-1.0)
    negative = (opsm_batch.adv[opsm_batch.minibatches[0]] < 0).double().mean().item()
    assert negative > 0 and masked["correction/opsm_dropped_frac"] == pytest.approx(negative)
    assert masked["loss/policy"] != plain["loss/policy"]
