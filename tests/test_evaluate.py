"""Held-out evaluation on the shipped ``sweep-sort`` cold start: determinism, hand counts, the global RNG, the
model's mode, greedy decoding against a cache-free reference, export round trip, bad inputs."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoModelForCausalLM

from gspo_lab.checkpoints import load_checkpoint
from gspo_lab.evaluate import eval_keys, evaluate, evaluate_lengths, export_policy
from gspo_lab.rollout import encode_prompts, rollout
from gspo_lab.tasks import get_task, load_split

TASK = get_task("sort")


@pytest.fixture(scope="module")
def policy():
    model, tok, _ = load_checkpoint("sweep-sort")
    return model, tok


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _naive_greedy(model, tok, problem, budget: int) -> list[int]:
    """Argmax decoding of one unpadded prompt, a full forward per token (no KV cache, no batching)."""
    ids = tok(tok.bos_token + problem.prompt, add_special_tokens=False).input_ids
    out: list[int] = []
    while len(out) < budget and (not out or out[-1] != tok.eos_token_id):
        logits = model(input_ids=torch.tensor([ids + out])).logits[0, -1]
        out.append(int(logits.argmax()))
    return out


def test_sampled_same_seed_same_numbers(policy):
    model, tok = policy
    g = _gen(3)
    a = evaluate(model, tok, TASK, 6, prompts=16, temperature=1.0, generator=g, greedy=False)
    assert not torch.equal(g.get_state(), _gen(3).get_state())  # the sampled mode draws from the generator
    b = evaluate(model, tok, "sort", 6, prompts=16, temperature=1.0, generator=_gen(3), greedy=False)
    assert a == b and set(a) == set(eval_keys(greedy=False))
    assert 0.0 <= a["eval/accuracy_sampled"] <= 1.0


def test_greedy_is_deterministic_and_ignores_the_generator(policy):
    model, tok = policy
    g = _gen(1)
    state = g.get_state()
    a = evaluate(model, tok, TASK, 6, prompts=16, temperature=1.0, generator=g, greedy=True)
    b = evaluate(model, tok, TASK, 6, prompts=16, temperature=0.3, generator=_gen(2), greedy=True)
    c = evaluate(model, tok, TASK, 6, prompts=16, greedy=True)  # no generator needed
    assert a == b == c and set(a) == set(eval_keys(greedy=True))
    assert torch.equal(g.get_state(), state)


def test_greedy_matches_a_cache_free_hand_count(policy):
    """KV-cache batched argmax == one-prompt full-forward argmax; accuracy == Σ Task.reward / n; wrong targets ~0."""
    model, tok = policy
    model.eval()
    problems = load_split(TASK, "eval", 5)[:8]
    budget = len(problems[0].target) + 4
    with torch.no_grad():
        responses = [_naive_greedy(model, tok, p, budget) for p in problems]
    completions = [tok.decode([t for t in r if t != tok.eos_token_id]) for r in responses]
    correct = [TASK.reward(p, c) for p, c in zip(problems, completions, strict=True)]
    got = evaluate(model, tok, TASK, 5, prompts=8, temperature=1.0, generator=None, greedy=True)
    assert got["eval/accuracy_greedy"] == sum(correct) / 8
    assert got["eval/response_length_greedy"] == pytest.approx(sum(map(len, responses)) / 8)
    assert got["eval/truncated_frac_greedy"] == sum(r[-1] != tok.eos_token_id for r in responses) / 8
    shifted = problems[1:] + problems[:1]  # an evaluator scoring against the wrong targets
    assert sum(TASK.reward(p, c) for p, c in zip(shifted, completions, strict=True)) <= 1 < sum(correct)


def test_sampled_accuracy_is_the_hand_count_of_a_rollout(policy):
    model, tok = policy
    problems = load_split(TASK, "eval", 7)[:12]
    r = rollout(model, tok, problems, 1, max_new_tokens=11, generator=_gen(4), recompute_old_logp=False)
    correct = sum(TASK.reward(p, c) for p, c in zip(problems, r.completions, strict=True))
    got = evaluate(model, tok, TASK, 7, prompts=12, temperature=1.0, generator=_gen(4), greedy=False)
    assert got["eval/accuracy_sampled"] == correct / 12
    assert got["eval/response_length_sampled"] == pytest.approx(r.response_mask.sum(-1).float().mean().item())


def test_several_samples_per_prompt_are_the_hand_count_of_a_grouped_rollout(policy):
    """samples = k scores k responses per prompt (the rollout's group layout); greedy still gives one per prompt."""
    model, tok = policy
    problems = load_split(TASK, "eval", 7)[:6]
    r = rollout(model, tok, problems, 3, max_new_tokens=11, generator=_gen(5), recompute_old_logp=False)
    scored = [p for p in problems for _ in range(3)]
    correct = sum(TASK.reward(p, c) for p, c in zip(scored, r.completions, strict=True))
    got = evaluate(model, tok, TASK, 7, prompts=6, generator=_gen(5), samples=3)
    assert got["eval/accuracy_sampled"] == correct / 18
    one = evaluate(model, tok, TASK, 7, prompts=6, generator=_gen(5), samples=1)
    assert one == evaluate(model, tok, TASK, 7, prompts=6, generator=_gen(5))  # the default: the old draws
    assert evaluate(model, tok, TASK, 7, prompts=6, greedy=True, samples=3) == evaluate(
        model, tok, TASK, 7, prompts=6, greedy=True
    )


def test_greedy_cold_start_is_accurate_and_a_short_budget_truncates(policy):
    model, tok = policy
    good = evaluate(model, tok, TASK, 4, prompts=32, temperature=1.0, generator=None, greedy=True)
    assert good["eval/accuracy_greedy"] >= 0.6  # sft.json: ~0.78 sampled at L = 4; greedy is higher
    cut = evaluate(model, tok, TASK, 4, prompts=8, temperature=1.0, generator=None, greedy=True, max_new_tokens=2)
    assert cut == {"eval/accuracy_greedy": 0.0, "eval/response_length_greedy": 2.0, "eval/truncated_frac_greedy": 1.0}


@pytest.mark.parametrize("greedy", [False, True], ids=["sampled", "greedy"])
@pytest.mark.parametrize("training", [True, False], ids=["train-mode", "eval-mode"])
def test_global_rng_mode_and_grad_untouched(policy, greedy, training):
    model, tok = policy
    model.train(training)
    grad_enabled = []
    hook = model.register_forward_hook(lambda *_: grad_enabled.append(torch.is_grad_enabled()))
    rng = torch.random.get_rng_state()
    try:
        evaluate(model, tok, TASK, 5, prompts=4, temperature=1.0, generator=_gen(0), greedy=greedy)
    finally:
        hook.remove()
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert model.training is training and all(m.training is training for m in model.modules())
    assert grad_enabled and not any(grad_enabled)
    model.eval()


def test_evaluate_lengths_one_row_per_length(policy):
    model, tok = policy
    table = evaluate_lengths(model, tok, TASK, [4, 6], prompts=4, greedy=True)
    assert list(table["length"]) == [4, 6] and list(table.columns) == ["length", *eval_keys(greedy=True)]
    row = evaluate(model, tok, TASK, 6, prompts=4, greedy=True)
    assert table.iloc[1].drop("length").to_dict() == row
    for bad in ([], [4, 3], [4, 21]):
        with pytest.raises(ValueError, match="lengths must"):
            evaluate_lengths(model, tok, TASK, bad, prompts=4, greedy=True)


def test_export_round_trip_is_bitwise(policy, tmp_path):
    model, tok = policy
    model.eval()
    out = export_policy(model, tok, tmp_path / "policy", {"config": {"task": "sort"}, "rollouts": 3})
    loaded, loaded_tok, record = load_checkpoint(out)
    plain = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    assert record == {"config": {"task": "sort"}, "rollouts": 3, "task": "sort"}
    problems = load_split(TASK, "eval", 6)[:4]
    ids, mask = encode_prompts(tok, [p.prompt for p in problems])
    assert torch.equal(encode_prompts(loaded_tok, [p.prompt for p in problems])[0], ids)
    with torch.no_grad():
        ref, a, b = (m.eval()(input_ids=ids, attention_mask=mask.long()).logits for m in (model, loaded, plain))
    assert torch.equal(ref, a) and torch.equal(ref, b)
    with pytest.raises(FileExistsError, match="policy"):
        export_policy(model, tok, out, {"task": "sort"})
    (tmp_path / "empty").mkdir()
    assert (export_policy(model, tok, tmp_path / "empty", {"task": "sort"}) / "sft.json").is_file()
    with pytest.raises(ValueError, match="record must name the task"):
        export_policy(model, tok, tmp_path / "other", {"steps": 3})
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize(
    "kw, error, match",
    [
        ({"prompts": 0}, ValueError, "prompts must"),
        ({"prompts": 129}, ValueError, "prompts must"),
        ({"prompts": 2.0}, ValueError, "prompts must"),
        ({"temperature": 0.0}, ValueError, "temperature must"),
        ({"temperature": -1.0}, ValueError, "temperature must"),
        ({"temperature": math.nan}, ValueError, "temperature must"),
        ({"temperature": math.inf}, ValueError, "temperature must"),
        ({"generator": None}, TypeError, "generator must"),
        ({"max_new_tokens": 0}, ValueError, "max_new_tokens must"),
        ({"length": 3}, ValueError, "length must"),
        ({"length": 21}, ValueError, "length must"),
        ({"length": 4.0}, TypeError, "length must"),
        ({"task": "nope"}, ValueError, "task must"),
        ({"samples": 0}, ValueError, "samples must"),
        ({"samples": 1.5}, ValueError, "samples must"),
    ],
)
def test_bad_inputs_name_the_argument(policy, kw, error, match):
    model, tok = policy
    args = {"task": TASK, "length": 4, "prompts": 4, "temperature": 1.0, "generator": _gen(0), "greedy": False} | kw
    with pytest.raises(error, match=match):
        evaluate(model, tok, args.pop("task"), args.pop("length"), **args)
