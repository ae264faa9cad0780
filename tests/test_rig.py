"""Rig corrections of issue 8, each guarded by a test that failed before its fix: sampling temperature, the Dr. GRPO
normaliser, task vs checkpoint, the final-answer reward, the learning-rate schedule, the KL-to-reference penalty,
held-out evaluation inside the run, masks of the exported helpers."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from dataclasses import replace

import pytest
import torch

from gspo_lab.checkpoints import checkpoint_path, load_checkpoint
from gspo_lab.config import SMOKE, TrainConfig
from gspo_lab.objectives import OBJECTIVES, get_objective
from gspo_lab.penalties import kl_penalty
from gspo_lab.policy import response_logprobs, rollout_logprobs
from gspo_lab.ratios import gspo_token_log_ratio, seq_log_ratio, seq_log_ratio_sum, tok_log_ratio
from gspo_lab.reductions import masked_mean, masked_sum, seq_lengths, seq_mean, seq_mean_token_mean, token_mean
from gspo_lab.rollout import rollout
from gspo_lab.schedule import lr_factor
from gspo_lab.step import init_state, train_step
from gspo_lab.tasks import get_task, load_split
from gspo_lab.train import train

CFG = replace(SMOKE, checkpoint="sweep-sort")


# --- temperature: every log-prob and the entropy are those of softmax(logits / τ) ---


@pytest.fixture(scope="module")
def sweep():
    torch.set_num_threads(1)
    return load_checkpoint("sweep-sort")[:2]


@pytest.mark.parametrize("tau", [0.5, 1.5])
def test_recomputed_old_logp_is_on_policy_at_any_temperature(tau):
    rows = train_step(init_state(replace(CFG, temperature=tau)))
    assert rows[0]["ratio/tok_log_absmax"] == 0.0 and rows[0]["kl/k1"] == 0.0


@pytest.mark.parametrize("tau", [0.5, 1.5])
def test_sampler_logprobs_match_the_full_forward_at_the_sampling_temperature(sweep, tau):
    """Before the fix the full forward scored at τ = 1: |log w| up to ~0.9 at τ = 0.5."""
    model, tok = sweep
    problems = load_split(get_task("sort"), "train", 8)[:8]
    r = rollout(model, tok, problems, 4, max_new_tokens=12, generator=torch.Generator().manual_seed(0), temperature=tau)
    assert r.temperature == tau
    gap = (r.old_logp - r.sampler_logp).abs()[r.response_mask].max().item()
    assert gap < 1e-4, gap
    at_one, _ = response_logprobs(model, r.prompt_ids, r.prompt_mask, r.response_ids, r.response_mask)
    assert (at_one - r.sampler_logp).abs()[r.response_mask].max().item() > 1e-2  # τ matters: the test can fail
    rows = train_step(init_state(replace(CFG, temperature=tau, old_logp="sampler")))
    assert rows[0]["ratio/tok_log_absmax"] < 1e-4


def test_entropy_is_that_of_the_tempered_policy(sweep):
    model, tok = sweep
    problems = load_split(get_task("sort"), "train", 6)[:4]
    r = rollout(model, tok, problems, 2, max_new_tokens=10, generator=torch.Generator().manual_seed(1), temperature=0.5)
    _, entropy = rollout_logprobs(model, r, with_entropy=True)
    with torch.no_grad():
        ids = torch.cat([r.prompt_ids, r.response_ids], 1)
        attn = torch.cat([r.prompt_mask, r.response_mask], 1).long()
        logits = model(input_ids=ids, attention_mask=attn, position_ids=(attn.cumsum(-1) - 1).clamp(min=0)).logits
    logits = logits[:, r.prompt_ids.shape[1] - 1 : -1]
    p = torch.softmax(logits / 0.5, -1)
    expected = -(p * p.clamp_min(1e-30).log()).sum(-1)
    assert torch.allclose(entropy[r.response_mask], expected[r.response_mask], atol=1e-5)


def test_response_logprobs_rejects_a_bad_temperature(sweep):
    model, tok = sweep
    ids = torch.ones(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="temperature must be a number > 0"):
        response_logprobs(model, ids, ids.bool(), ids, ids.bool(), temperature=0.0)


# --- Dr. GRPO: a constant normaliser, the response budget ---


def test_const_norm_divides_by_the_response_budget_not_the_padded_length(monkeypatch):
    seen = []
    real = get_objective("grpo_const_norm").fn

    def spy(*args, **kwargs):
        seen.append((kwargs.get("norm_len"), args[0].shape[1]))
        return real(*args, **kwargs)

    monkeypatch.setitem(OBJECTIVES, "grpo_const_norm", dataclasses.replace(OBJECTIVES["grpo_const_norm"], fn=spy))
    train_step(init_state(replace(CFG, objective="grpo_const_norm", max_new_tokens=20)))
    assert seen and all(norm == 20 for norm, _ in seen)
    assert all(T < 20 for _, T in seen)  # rollouts end before the budget: the padded length would differ
    # the registry passes the budget only to objectives that take one
    logp = torch.zeros(2, 3)
    loss, _ = get_objective("gspo")(logp, logp, torch.tensor([1.0, -1.0]), torch.ones(2, 3), budget=20)
    assert loss.item() == 0.0


# --- task and checkpoint ---


def test_task_must_match_the_checkpoint():
    with pytest.raises(ValueError, match="does not match checkpoint 'sweep-sort', which was trained on 'sort'"):
        TrainConfig(checkpoint="sweep-sort", task="add", length=4)
    with pytest.raises(ValueError, match="which was trained on 'add_format'"):
        TrainConfig(checkpoint="sweep-addfmt-L7", task="sort", length=7)
    TrainConfig(checkpoint="sweep-add", task="add", length=4)
    # add and add_format share problems and targets (only the reward differs): their cold starts serve both
    TrainConfig(checkpoint="sweep-addfmt-L7", task="add", length=7)
    TrainConfig(checkpoint="sweep-add", task="add_format", length=4)


def test_a_checkpoint_that_states_no_task_is_refused(tmp_path):
    folder = tmp_path / "ck"
    shutil.copytree(checkpoint_path("sweep-sort"), folder)
    (folder / "sft.json").unlink()
    with pytest.raises(ValueError, match="does not state its task"):
        TrainConfig(checkpoint=str(folder))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "task": "sort"}))
    assert TrainConfig(checkpoint=str(folder)).task == "sort"


def test_reward_checks_the_final_answer_only():
    add, sort = get_task("add"), get_task("sort")
    p = add.make([9, 5, 0, 7], 2)
    assert add.reward(p, "102") == 1.0 and add.reward(p, "1+1+1=11|102") == 1.0 and add.reward(p, "|103") == 0.0
    q = sort.make([3, 1, 4], 3)
    assert sort.reward(q, "134") == 1.0 and sort.reward(q, "1|134") == 0.0  # sort has no scratchpad separator


# --- learning-rate schedule ---


def test_schedule_helper():
    assert lr_factor(0, warmup_steps=0) == 1.0  # sft --warmup-steps 0 divided by zero before
    assert [lr_factor(s, warmup_steps=4) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    cos = [lr_factor(s, warmup_steps=2, schedule="cosine", horizon_steps=6) for s in range(8)]
    assert cos[:3] == [0.5, 1.0, 1.0] and cos[4] == pytest.approx(0.5) and cos[6] == cos[7] == 0.0
    with pytest.raises(ValueError, match="lr_horizon_steps must be an int > warmup_steps"):
        TrainConfig(lr_schedule="cosine")
    with pytest.raises(ValueError, match="lr_schedule must be one of"):
        TrainConfig(lr_schedule="linear")


def test_cosine_schedule_in_the_loop():
    cfg = replace(CFG, lr=1e-3, lr_schedule="cosine", lr_horizon_steps=4, rollouts=3)
    lrs = list(train(cfg, progress=False)["optim/lr"])
    expected = [1e-3 * 0.5 * (1 + math.cos(math.pi * min(1, s / 4))) for s in range(6)]
    assert lrs == pytest.approx(expected)


# --- KL to the reference policy ---


def test_kl_penalty_k3_by_hand():
    logp = torch.tensor([[-1.0, -2.0, 0.0]], requires_grad=True)
    ref = torch.tensor([[-1.5, -1.0, 5.0]])
    mask = torch.tensor([[1, 1, 0]])  # an int mask, as TRL's
    loss, k3 = kl_penalty(logp, ref, mask)
    x = torch.tensor([-0.5, 1.0])
    by_hand = (x.exp() - x - 1).mean()
    assert loss.item() == pytest.approx(by_hand.item()) and k3[0, 2] == 0.0
    loss.backward()
    assert logp.grad[0, 2] == 0.0 and logp.grad[0, 0] != 0.0


def test_beta_zero_loads_no_reference_and_beta_positive_penalises():
    state = init_state(CFG)
    assert state.ref_model is None
    rows = train_step(state)
    assert "ref/kl_k3" not in rows[0] and rows[0]["loss/total"] == rows[0]["loss/policy"]
    rows = train_step(init_state(replace(CFG, beta=0.5)))
    assert rows[0]["ref/kl_k3"] == 0.0  # the reference is the starting policy: no divergence yet
    assert rows[-1]["ref/kl_k3"] > 0.0
    assert rows[-1]["loss/total"] == pytest.approx(rows[-1]["loss/policy"] + 0.5 * rows[-1]["ref/kl_k3"])


# --- held-out evaluation in the run ---


def test_evaluation_rows_and_the_training_stream_does_not_change(tmp_path):
    cfg = replace(CFG, rollouts=3, eval_every=2, eval_prompts=8)
    table = train(cfg, tmp_path / "run", progress=False)
    evals = table.attrs["eval"]
    assert list(evals["rollout"]) == [0, 2, 3]  # before the first, every 2, after the last
    assert {"eval/accuracy_sampled", "eval/accuracy_greedy"} <= set(evals.columns)
    assert ((evals["eval/accuracy_greedy"] >= 0) & (evals["eval/accuracy_greedy"] <= 1)).all()
    assert (tmp_path / "run" / "eval.csv").is_file()
    plain = train(replace(cfg, eval_every=0), progress=False)
    cols = [c for c in plain.columns if not c.startswith("time/")]
    assert table[cols].equals(plain[cols])  # evaluation draws from its own generator


def test_evaluation_resumes_with_its_generator(tmp_path):
    cfg = replace(CFG, rollouts=2, eval_every=1, eval_prompts=8)
    full = train(cfg, progress=False).attrs["eval"]

    class Killed(Exception):
        pass

    def kill(state, rows):
        raise Killed

    with pytest.raises(Killed):
        train(cfg, tmp_path, on_step=kill, progress=False)
    resumed = train(cfg, tmp_path, resume=True, progress=False).attrs["eval"]
    assert resumed.equals(full)


def test_resume_needs_a_saved_state_and_auto_resumes_or_starts(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"holds no saved state \(no LATEST file\) to continue from"):
        train(CFG, tmp_path / "empty", resume=True, progress=False)
    assert not (tmp_path / "empty").exists()  # nothing was written
    cfg = replace(CFG, rollouts=1)
    assert len(train(cfg, tmp_path / "a", resume="auto", progress=False)) == 2
    assert len(train(replace(cfg, rollouts=2), tmp_path / "a", resume="auto", progress=False)) == 4


# --- masks of the exported helpers ---


def test_exported_helpers_take_an_int_mask_like_trl():
    logp, old = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), torch.zeros(3, 4)
    bool_mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=torch.bool)
    for int_mask in (bool_mask.long(), bool_mask.int(), bool_mask.float()):
        for fn in (tok_log_ratio, seq_log_ratio, seq_log_ratio_sum, gspo_token_log_ratio):
            assert torch.equal(fn(logp, old, int_mask), fn(logp, old, bool_mask)), fn.__name__
        for fn in (masked_mean, masked_sum):
            assert torch.equal(fn(logp, int_mask), fn(logp, bool_mask))
        for fn in (seq_mean_token_mean, token_mean):
            assert torch.equal(fn(logp, int_mask), fn(logp, bool_mask))
        assert torch.equal(seq_mean(logp[:, 0], int_mask), seq_mean(logp[:, 0], bool_mask))
        assert seq_lengths(int_mask).tolist() == [2, 4, 0]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x, m: tok_log_ratio(x, x, m * 2), "mask must hold only 0/1 values"),
        (lambda x, m: seq_log_ratio(x, x, m[:, :2]), r"mask must have shape \(B, T\)"),
        (lambda x, m: masked_mean(x, m * 0.5), "mask must hold only 0/1 values"),
        (lambda x, m: masked_sum(x, m.tolist()), "mask must be a torch.Tensor"),
        (lambda x, m: seq_lengths(m[0]), "mask must be 2-D"),
    ],
)
def test_exported_helpers_reject_a_bad_mask_naming_it(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.long))
