"""Our objectives agree with TRL's own GRPO/GSPO loss code, not with a re-implementation of its formula.

The TRL side is the real ``GRPOTrainer._compute_loss`` (``trl/trainer/grpo_trainer.py``, TRL 1.16) of a real
``GRPOTrainer``, built once per module around a tiny float64 Qwen3 model and a word-level tokenizer, both
built locally (no hub access). Only the per-instance method ``_get_per_token_logps_and_entropies`` is
replaced: it returns our own float64 leaf tensor ``logp`` (with zero entropies and no aux loss) instead of
a forward pass. Everything after it (ratio, clipping, aggregation, the ``loss_type`` normaliser, the
``clip_ratio/*`` metrics) is TRL's code. The same ``logp``, ``old_logp``, advantages, mask and ε_low / ε_high go to our
objective, and we compare:

* the loss and its gradient w.r.t. ``logp`` (every (B, T) entry, padding included);
* TRL's logged ``clip_ratio/{region,low,high}_mean`` with our ``ObjectiveStats``: a fraction of valid tokens
  (``clip_token_frac*``) at ``importance_sampling_level="token"``, a fraction of all B sequences
  (``clip_seq_frac*``) at ``"sequence"`` (TRL's ``global_masked_mean`` counts one value per sequence there).

Pairs (TRL ``importance_sampling_level`` + ``loss_type`` -> ours):
    token + grpo -> grpo;  sequence + grpo -> gspo, and gspo_token (verl's construction);
    token + bnpo -> grpo_token_mean;  sequence + bnpo -> gspo_token_mean;
    token + dr_grpo -> grpo_const_norm(norm_len=max_completion_length);
    token + grpo with ``delta = δ`` -> grpo_dual_clip(clip_c=δ) (verl's dual-clip ``clip_ratio_c``: the same function).

TRL state set by hand, because ``_compute_loss`` reads it and only the training loop sets it:
``current_gradient_accumulation_steps = 1`` (``Trainer``'s loop sets it; TRL divides the loss by it), and
train mode (``self.model.training``; in eval mode the normaliser is 1 and metrics go to ``_metrics["eval"]``).

Inputs: random float64 (B, T), right-padded variable-length int masks with a full-length and an empty
response, finite junk at padding, log-ratios of scale ~0.3 on most responses and ~1e-5 on the others, so that
both GRPO's band and GSPO's (3e-4, 4e-4) band see clipped and unclipped units.
``pytest -s`` prints the observed differences.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from gspo_lab.objectives import (
    DAPO_CLIP,
    GRPO_CLIP,
    GSPO_CLIP,
    PPO_CLIP,
    ClipRange,
    grpo,
    grpo_const_norm,
    grpo_dual_clip,
    grpo_token_mean,
    gspo,
    gspo_token,
    gspo_token_mean,
)

B, T, PROMPT_LEN = 8, 12, 4
MAX_COMPLETION_LENGTH = 16  # > T on purpose: dr_grpo normalises by this constant, not by the padded length
LENGTHS = (T, 7, 0, 3, T, 1, 9, 5)  # valid tokens per response: a full one and an empty one
TOL = 1e-6
SEEDS = (0, 1, 2)
VOCAB = ("<pad>", "<eos>", "<unk>", *"abcdefgh")


@dataclass(frozen=True)
class Case:
    id: str
    level: str  # TRL importance_sampling_level
    loss_type: str  # TRL loss_type
    ours: Callable  # our objective, signature of gspo_lab.objectives.grpo
    clip: ClipRange
    delta: float | None = None  # TRL's two-sided clip bound (``GRPOConfig.delta``), our dual-clip c

    @property
    def clip_unit(self) -> str:
        """The unit TRL's clip_ratio/* counts: tokens at token level, sequences at sequence level."""
        return "token" if self.level == "token" else "seq"


CASES = (
    Case("token-grpo~grpo", "token", "grpo", grpo, GRPO_CLIP),
    Case("sequence-grpo~gspo", "sequence", "grpo", gspo, GSPO_CLIP),
    Case("sequence-grpo~gspo_token", "sequence", "grpo", gspo_token, GSPO_CLIP),
    Case("token-bnpo~grpo_token_mean", "token", "bnpo", grpo_token_mean, DAPO_CLIP),
    Case("sequence-bnpo~gspo_token_mean", "sequence", "bnpo", gspo_token_mean, GSPO_CLIP),
    Case(
        "token-dr_grpo~grpo_const_norm",
        "token",
        "dr_grpo",
        functools.partial(grpo_const_norm, norm_len=MAX_COMPLETION_LENGTH),
        PPO_CLIP,
    ),
    # c = 1.3 (just above 1 + ε_high) rather than verl's 3: these inputs' ratios (|log w| ~ 0.3) never reach 3
    Case(
        "token-grpo-delta~grpo_dual_clip",
        "token",
        "grpo",
        functools.partial(grpo_dual_clip, clip_c=1.3),
        GRPO_CLIP,
        delta=1.3,
    ),
)


# --- the TRL trainer --------------------------------------------------------------------------------------


def _tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer built in memory (no hub)."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def _model() -> Qwen3ForCausalLM:
    """A one-layer float64 Qwen3 built from a config (never run: the log-prob method is patched)."""
    cfg = Qwen3Config(
        vocab_size=len(VOCAB),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    return Qwen3ForCausalLM(cfg).to(torch.float64)


def _zero_reward(completions, **kwargs) -> list[float]:
    return [0.0] * len(completions)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory) -> GRPOTrainer:
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("trl_out")),
        bf16=False,
        use_cpu=True,
        activation_checkpointing=False,  # `gradient_checkpointing` is its deprecated alias in transformers 5
        beta=0.0,
        report_to=[],
        logging_strategy="no",
        save_strategy="no",
        per_device_train_batch_size=B,
        num_generations=B,
        max_completion_length=MAX_COMPLETION_LENGTH,
        # TRL's defaults, pinned: no extra term in the loss (entropy bonus/mask, ratio cap, OPSM, vLLM IS weights)
        entropy_coef=0.0,
        top_entropy_quantile=1.0,
        delta=None,
        off_policy_mask_threshold=None,
        use_vllm=False,
    )
    trainer = GRPOTrainer(
        model=_model(),
        reward_funcs=_zero_reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["a b c", "d e f"]}),
        processing_class=_tokenizer(),
    )
    trainer.model.train()
    return trainer


@pytest.fixture
def configure_trl(trainer, monkeypatch):
    """A function that sets the shared trainer up for one case (undone after the test)."""

    def configure(case: Case, logp: torch.Tensor) -> None:
        for name, value in {
            "importance_sampling_level": case.level,
            "loss_type": case.loss_type,
            "epsilon_low": case.clip.low,
            "epsilon_high": case.clip.high,
            "max_completion_length": MAX_COMPLETION_LENGTH,
            "current_gradient_accumulation_steps": 1,
        }.items():
            monkeypatch.setattr(trainer, name, value, raising=False)
        monkeypatch.setattr(trainer.args, "delta", case.delta)
        monkeypatch.setattr(trainer, "_get_per_token_logps_and_entropies", _fake_logps(logp))
        trainer._metrics["train"].clear()

    return configure


def _fake_logps(logp: torch.Tensor):
    """Stand-in for ``_get_per_token_logps_and_entropies``: our leaf log-probs, zero entropies, no aux."""

    def fake(model, input_ids, attention_mask, logits_to_keep, compute_entropy=False, **kwargs):
        assert logits_to_keep == logp.shape[1]
        assert input_ids.shape == (logp.shape[0], PROMPT_LEN + logp.shape[1])
        return logp, torch.zeros_like(logp.detach()), None

    return fake


# --- inputs -----------------------------------------------------------------------------------------------


def _inputs(seed: int) -> dict[str, torch.Tensor]:
    """Random float64 log-probs and advantages and a right-padded int mask, as TRL's rollout hands them."""
    g = torch.Generator().manual_seed(seed)
    mask = (torch.arange(T) < torch.tensor(LENGTHS).unsqueeze(-1)).int()  # TRL's completion_mask is int
    old_logp = -3 * torch.rand(B, T, generator=g, dtype=torch.float64) - 0.05
    scale = torch.where(torch.arange(B) % 3 == 1, 1e-5, 0.3).to(torch.float64).unsqueeze(-1)
    logp = old_logp + scale * torch.randn(B, T, generator=g, dtype=torch.float64)
    junk = -5 * torch.rand(B, T, generator=g, dtype=torch.float64)  # finite junk at padding: must not leak
    return {
        "prompt_ids": torch.randint(3, len(VOCAB), (B, PROMPT_LEN), generator=g),
        "prompt_mask": torch.ones(B, PROMPT_LEN, dtype=torch.int),
        "completion_ids": torch.randint(3, len(VOCAB), (B, T), generator=g),
        "completion_mask": mask,
        "logp": torch.where(mask.bool(), logp, junk),
        "old_per_token_logps": torch.where(mask.bool(), old_logp, junk.flip(0)),
        "advantages": torch.randn(B, generator=g, dtype=torch.float64),
    }


# --- the two sides ----------------------------------------------------------------------------------------


def _run_trl(trainer, configure, case: Case, data: dict) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """TRL's loss, its gradient w.r.t. logp, and the clip metrics it logged for this call."""
    logp = data["logp"].clone().requires_grad_(True)
    configure(case, logp)
    inputs = {k: v for k, v in data.items() if k != "logp"}
    loss = trainer._compute_loss(trainer.model, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    logged = {k: trainer._metrics["train"][f"clip_ratio/{k}_mean"] for k in ("region", "low", "high")}
    assert all(len(v) == 1 for v in logged.values()), logged
    return loss.detach(), grad, {k: v[0] for k, v in logged.items()}


def _run_ours(case: Case, data: dict):
    """Our loss, its gradient w.r.t. logp, and our stats."""
    logp = data["logp"].clone().requires_grad_(True)
    loss, stats = case.ours(
        logp,
        data["old_per_token_logps"],
        data["advantages"],
        data["completion_mask"],
        eps_low=case.clip.low,
        eps_high=case.clip.high,
    )
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, stats


def _our_clip_fracs(case: Case, stats) -> dict[str, float]:
    """Our clip fractions in the unit TRL counts at this importance-sampling level."""
    prefix = f"clip_{case.clip_unit}_frac"
    return {
        "region": getattr(stats, prefix),
        "low": getattr(stats, f"{prefix}_low"),
        "high": getattr(stats, f"{prefix}_high"),
    }


def _zero_at_padding(grad: torch.Tensor, mask: torch.Tensor) -> bool:
    return bool((grad[~mask.bool()] == 0).all())


# --- the test ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_matches_trl_compute_loss(trainer, configure_trl, case, seed):
    data = _inputs(seed)
    trl_loss, trl_grad, trl_clip = _run_trl(trainer, configure_trl, case, data)
    our_loss, our_grad, stats = _run_ours(case, data)
    our_clip = _our_clip_fracs(case, stats)

    assert trl_loss.dtype == torch.float64 and our_loss.dtype == torch.float64
    d_loss = (trl_loss - our_loss).abs().item()
    d_grad = (trl_grad - our_grad).abs().max().item()
    d_clip = max(abs(trl_clip[k] - our_clip[k]) for k in trl_clip)
    print(
        f"\n[trl-agreement] {case.id} seed={seed}: loss={our_loss.item():+.6f} |dloss|={d_loss:.2e} "
        f"max|dgrad|={d_grad:.2e} max|dclip|={d_clip:.2e} clip(trl)={trl_clip} clip(ours)={our_clip}"
    )

    torch.testing.assert_close(our_loss, trl_loss, rtol=TOL, atol=TOL)
    torch.testing.assert_close(our_grad, trl_grad, rtol=TOL, atol=TOL)
    for key in trl_clip:
        assert our_clip[key] == pytest.approx(trl_clip[key], rel=TOL, abs=TOL), key
    # the case must exercise the clip, with some units clipped and some not, or the comparison proves little
    assert 0.0 < our_clip["region"] < 1.0
    assert _zero_at_padding(trl_grad, data["completion_mask"])
    assert _zero_at_padding(our_grad, data["completion_mask"])
    if case.delta is not None:  # the bound must act on some token (Â < 0, w > δ) for the case to test it
        w = (data["logp"] - data["old_per_token_logps"]).exp()
        acts = (w > case.delta) & (data["advantages"] < 0).unsqueeze(-1) & data["completion_mask"].bool()
        assert acts.any(), "no token reaches the dual-clip bound: the case does not exercise it"


# --- temperature: our log-probs and entropies are TRL's at the sampling temperature --------------------------------


def test_logprobs_and_entropy_match_trl_at_the_sampling_temperature(tmp_path):
    """TRL's real ``_get_per_token_logps_and_entropies`` (not patched here) scores softmax(logits / τ) through the
    fused LM head it installs with the trainer's temperature; ours (``gspo_lab.policy.response_logprobs``) must score
    the same policy. TRL's fused head computes in float32, hence the tolerance. Prompts are unpadded so both sides
    use the same positions (TRL passes no position_ids)."""
    from gspo_lab.policy import response_logprobs

    tau = 0.7
    args = GRPOConfig(
        output_dir=str(tmp_path), bf16=False, use_cpu=True, activation_checkpointing=False, beta=0.0, report_to=[],
        per_device_train_batch_size=B, num_generations=B, max_completion_length=MAX_COMPLETION_LENGTH,
        temperature=tau, use_vllm=False,
    )  # fmt: skip
    trl = GRPOTrainer(
        model=_model(),
        reward_funcs=_zero_reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["a b c"]}),
        processing_class=_tokenizer(),
    )
    g = torch.Generator().manual_seed(7)
    prompt_ids = torch.randint(2, len(VOCAB), (B, PROMPT_LEN), generator=g)
    response_ids = torch.randint(2, len(VOCAB), (B, T), generator=g)
    valid = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]
    input_ids = torch.cat([prompt_ids, response_ids], 1)
    attention_mask = torch.cat([torch.ones_like(prompt_ids), valid.long()], 1)
    with torch.no_grad():
        trl_logp, trl_entropy, _ = trl._get_per_token_logps_and_entropies(
            trl.model, input_ids, attention_mask, T, compute_entropy=True
        )
        prompt_mask = torch.ones_like(prompt_ids, dtype=torch.bool)
        ours, our_entropy = response_logprobs(
            trl.model, prompt_ids, prompt_mask, response_ids, valid, temperature=tau, with_entropy=True
        )
        at_one, _ = response_logprobs(trl.model, prompt_ids, prompt_mask, response_ids, valid)
    assert (ours - trl_logp).abs()[valid].max().item() < 1e-5
    assert (our_entropy - trl_entropy).abs()[valid].max().item() < 1e-5
    assert (at_one - trl_logp).abs()[valid].max().item() > 1e-2  # the check can fail: τ = 1 scores another policy
