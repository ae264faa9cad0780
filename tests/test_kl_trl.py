"""Issue 51: the kit's KL term at β > 0 equals TRL 1.16's inside its real ``_compute_loss``, with TRL's
``use_bias_correction_kl`` on (its default: k3 times the importance ratio, with its gradient) and off (the GRPO paper's
Eq. 4 term, the kit's default), for GRPO (``importance_sampling_level="token"``) and GSPO (``"sequence"``, the
sequence ratio broadcast onto every token's k3). Compared as tests/test_trl_successors.py compares the objectives:
the loss and its gradient w.r.t. ``logp`` (padding included), within 1e-6 in float64 on several seeds."""

from __future__ import annotations

import pytest
import torch
from test_trl_agreement import SEEDS, B, T, trainer  # noqa: F401 (fixture)
from test_trl_successors import _close, _data, _trl

from gspo_lab.config import TrainConfig
from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP, grpo, gspo
from gspo_lab.penalties import kl_level, kl_penalty

BETA = 0.1


def _ref(data: dict, seed: int) -> torch.Tensor:
    """π_ref's log-probs: π_old's plus noise on valid tokens, finite junk at padding (it must not leak)."""
    g = torch.Generator().manual_seed(200 + seed)
    ref = data["old_per_token_logps"] + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    return torch.where(data["completion_mask"].bool(), ref, -4 * torch.rand(B, T, generator=g, dtype=torch.float64))


def _ours(fn, data, ref, eps, *, weigh: bool, level: str):
    logp = data["logp"].clone().requires_grad_(True)
    mask = data["completion_mask"]
    loss, _ = fn(logp, data["old_per_token_logps"], data["advantages"], mask, eps_low=eps[0], eps_high=eps[1])
    extra = {"old_logp": data["old_per_token_logps"], "level": level} if weigh else {}
    kl, _ = kl_penalty(logp, ref, mask, **extra)
    loss = loss + BETA * kl
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bias_correction", [True, False], ids=["trl-default", "flag-off"])
@pytest.mark.parametrize("name, fn, level, eps", [("grpo", grpo, "token", GRPO_CLIP),
                                                  ("gspo", gspo, "sequence", GSPO_CLIP)])  # fmt: skip
def test_the_kl_term_equals_trls_at_positive_beta(trainer, monkeypatch, seed, bias_correction, name, fn, level, eps):  # noqa: F811
    data = _data(seed)
    ref = _ref(data, seed)
    eps = (eps.low, eps.high)
    monkeypatch.setattr(trainer, "beta", BETA)
    monkeypatch.setattr(trainer.args, "use_bias_correction_kl", bias_correction)
    theirs = _trl(trainer, monkeypatch, data, {"ref_per_token_logps": ref}, level=level, loss_type="grpo", eps=eps)
    ours = _ours(fn, data, ref, eps, weigh=bias_correction, level=level)
    _close(f"{name} beta={BETA} use_bias_correction_kl={bias_correction} seed={seed}", ours, theirs[:2])
    assert kl_level(name) == level


def test_the_flag_changes_the_gradient_even_where_every_ratio_is_one():
    """On-policy (π_θ = π_old) the weight is 1 but its gradient is not 0: the weighted term's gradient adds
    β · k3_t · ∇ log w to the unweighted one (token level: exactly k3_t per token, × β / |y_i| / B)."""
    data = _data(0)
    mask = data["completion_mask"].bool()
    ref = _ref(data, 0)
    logp = data["old_per_token_logps"].clone().requires_grad_(True)
    grads = {}
    for weigh in (False, True):
        extra = {"old_logp": data["old_per_token_logps"], "level": "token"} if weigh else {}
        kl, k3 = kl_penalty(logp, ref, mask, **extra)
        (grads[weigh],) = torch.autograd.grad(kl, logp)
    n = mask.sum(-1, keepdim=True).clamp(min=1)
    _, k3 = kl_penalty(logp.detach(), ref, mask)
    torch.testing.assert_close(grads[True] - grads[False], (k3 / n / B).where(mask, 0.0), rtol=0, atol=1e-12)
    assert float((grads[True] - grads[False]).abs().max()) > 1e-3


def test_a_bad_kl_setting_gets_a_clear_error():
    data = _data(0)
    with pytest.raises(ValueError, match="level must be one of"):
        kl_penalty(data["logp"], data["logp"], data["completion_mask"], old_logp=data["logp"], level="seq")
    with pytest.raises(ValueError, match="old_logp must have the shape of logp"):
        kl_penalty(data["logp"], data["logp"], data["completion_mask"], old_logp=data["logp"][:, :3])
    with pytest.raises(ValueError, match="kl_bias_correction=True weighs the KL term, which is off at beta = 0"):
        TrainConfig(kl_bias_correction=True)
    assert TrainConfig(beta=0.04, kl_bias_correction=True).kl_bias_correction


@pytest.mark.parametrize("objective", ["grpo", "gspo"])
def test_the_loop_weighs_the_kl_term_only_when_asked(objective):
    """The loop at β > 0 after one RL step (so π_θ is no longer π_ref and k3 > 0), the next batch's first update with
    the flag off and on: the same loss (every ratio is 1), a different gradient (the weight's), the default's key
    unchanged."""
    from dataclasses import replace

    from gspo_lab.experiments.spec import KEY_IF_NOT_DEFAULT
    from gspo_lab.step import collect, init_state, train_step, update

    rows = {}
    for weigh in (False, True):
        cfg = TrainConfig(checkpoint="sweep-addfmt-L2", task="add_format", length=2, prompts_per_rollout=4,
                          group_size=4, minibatches=2, objective=objective, beta=0.5, lr=1e-3, seed=3)  # fmt: skip
        state = init_state(cfg)
        train_step(state)
        state.cfg = replace(cfg, kl_bias_correction=weigh)
        rows[weigh] = update(state, collect(state), 0)
    assert rows[True]["ref/kl_k3"] > 0
    assert rows[True]["loss/total"] == pytest.approx(rows[False]["loss/total"], rel=1e-6)
    assert rows[True]["grad/norm"] != pytest.approx(rows[False]["grad/norm"], rel=1e-4)
    assert KEY_IF_NOT_DEFAULT["kl_bias_correction"] is False
