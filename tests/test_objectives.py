"""Objectives: hand-computed values, the paper's identities, band edges, numerics.

Hand-built example used below (float64), band [0.8, 1.2] for every objective:
    response 0: w = (1.5, 0.5),  Â = +1, 2 tokens
    response 1: w = (1.1, pad),  Â = −1, 1 token
    response 2: no valid token,  Â = +0.5 (must contribute 0)
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch

from gspo_lab import OBJECTIVES, get_objective, group_advantages
from gspo_lab.objectives import DAPO_CLIP, GRPO_CLIP, GSPO_CLIP, PPO_CLIP

LN = math.log
EPS = dict(eps_low=0.2, eps_high=0.2)


def example():
    old = torch.log(torch.tensor([[0.3, 0.6], [0.5, 0.2], [0.4, 0.4]], dtype=torch.float64))
    log_w = torch.tensor([[LN(1.5), LN(0.5)], [LN(1.1), 7.0], [3.0, -3.0]], dtype=torch.float64)
    logp = (old + log_w).requires_grad_()
    mask = torch.tensor([[1, 1], [1, 0], [0, 0]])
    adv = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)
    return logp, old, adv, mask


S0 = math.sqrt(0.75)  # s_0 = (1.5 · 0.5)^(1/2)
EXPECTED_LOSS = {
    "grpo": -((1.2 + 0.5) / 2 - 1.1 + 0.0) / 3,  # token (0,0) clipped at 1.2
    "gspo": -(S0 - 1.1 + 0.0) / 3,  # s_0 = 0.866 and s_1 = 1.1 inside the band
    "gspo_token": -(S0 - 1.1 + 0.0) / 3,
    "grpo_token_mean": -(1.2 + 0.5 - 1.1) / 3,  # over the 3 valid tokens
    "grpo_const_norm": -(1.2 + 0.5 - 1.1) / (3 * 2),  # norm_len defaults to T = 2
    "gspo_token_mean": -(2 * S0 - 1.1) / 3,  # response 0 weighs twice
    "grpo_dual_clip": -((1.2 + 0.5) / 2 - 1.1 + 0.0) / 3,  # as grpo: the Â < 0 token's w = 1.1 < c = 3
    "luspo": -(2 * S0 - 1.1) / 3,  # 1/B Σ_i |y_i| · term_i: response 0 counts twice
    # CISPO at EPS: ε_max = ε_high = 0.2 caps every weight (1.5, 0.5, 1.1) at 0.2; J = Σ sg[w] Â log π / 3 tokens
    "cispo": -(0.2 * (LN(0.45) + LN(0.3)) - 0.2 * LN(0.55)) / 3,
    # cispo_clip at EPS: weights clip(w, 0.8, 1.2) = (1.2, 0.8, 1.1); J = Σ sg[c] Â log π / 3 tokens
    "cispo_clip": -(1.2 * LN(0.45) + 0.8 * LN(0.3) - 1.1 * LN(0.55)) / 3,
    # cispo_mask at EPS (mask band [0.8, 1.2], cap 5): token (0, 0) masked (w 1.5, Â > 0); w = 0.5 with Â > 0 kept
    "cispo_mask": -(0.5 * LN(0.3) - 1.1 * LN(0.55)) / 3,
    # SAPO (no ε): g(w) = σ(τ(w − 1)) 4/τ; response 0 (τ = 1): (4σ(0.5) + 4σ(−0.5)) / 2 = 2; response 1 (τ = 1.05)
    "sapo": -(2.0 - 4 / (1 + math.exp(-1.05 * 0.1)) / 1.05) / 3,
    # VESPO (no ε): W_0 = 0.75 (k, λ = 2, 3), W_1 = 1.1 (k, λ = 3, 2); φ = W^k e^{λ(1 − W)}; J = Σ φ Â log π / 3
    "vespo": -(0.75**2 * math.exp(0.75) * (LN(0.45) + LN(0.3)) - 1.1**3 * math.exp(-0.2) * LN(0.55)) / 3,
    # GMPO at EPS (log band ±0.2): response 0 (Â > 0) keeps min(log w, clamp): (0.2, ln 0.5); response 1 ln 1.1
    "gmpo": -(math.exp((0.2 + LN(0.5)) / 2) - 1.1) / 3,
}


def eps_for(name):
    """EPS for objectives with a clip range; nothing for those without one (sapo, vespo)."""
    return EPS if get_objective(name).clip is not None else {}


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_hand_computed_loss(name):
    logp, old, adv, mask = example()
    loss, stats = get_objective(name)(logp, old, adv, mask, **eps_for(name))
    assert loss.item() == pytest.approx(EXPECTED_LOSS[name], abs=1e-12)
    assert (stats.n_seqs, stats.n_tokens, stats.n_empty_seqs) == (3, 3, 1)


def test_grpo_hand_computed_gradient_and_stats():
    logp, old, adv, mask = example()
    loss, stats = get_objective("grpo")(logp, old, adv, mask, **EPS)
    loss.backward()
    # d(−J)/d log w = −w Â / (|y_i| B) where unclipped; 0 where clipped or padded
    expected = torch.tensor([[0.0, -0.5 / 6], [1.1 / 3, 0.0], [0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(logp.grad, expected, rtol=0, atol=1e-12)
    assert stats.clip_token_frac == pytest.approx(1 / 3)
    assert (stats.clip_token_frac_low, stats.clip_token_frac_high) == (0.0, pytest.approx(1 / 3))
    assert stats.clip_token_frac_outside == pytest.approx(2 / 3)  # w = 0.5 is outside but Â > 0: not active
    assert stats.clip_seq_frac == pytest.approx(1 / 3) and stats.clip_seq_frac_high == pytest.approx(1 / 3)
    assert stats.clip_seq_frac_low == 0.0 and stats.clip_seq_frac_outside == pytest.approx(1 / 3)


def test_dual_clip_bounds_negative_advantage_tokens_hand_computed():
    """One response, Â = −1, w = (5, 2), band [0.8, 1.2]: GRPO's tokens weigh −5 and −2 (Eq. 2 leaves w > 1 + ε
    unbounded when Â < 0); dual-clip at c = 3 caps the first at −3 and takes its gradient away."""
    old = torch.zeros(1, 2, dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    adv = torch.tensor([-1.0], dtype=torch.float64)
    grads = {}
    for name, expected in (("grpo", -(-5.0 - 2.0) / 2), ("grpo_dual_clip", -(-3.0 - 2.0) / 2)):
        logp = torch.log(torch.tensor([[5.0, 2.0]], dtype=torch.float64)).requires_grad_()
        loss, _ = get_objective(name)(logp, old, adv, mask, **EPS)
        assert loss.item() == pytest.approx(expected, abs=1e-12), name
        (grads[name],) = torch.autograd.grad(loss, logp)
    # d(−J)/d log w = −w Â / |y| where the token's term is w Â; 0 where it is the constant c Â
    torch.testing.assert_close(grads["grpo"], torch.tensor([[2.5, 1.0]], dtype=torch.float64))
    torch.testing.assert_close(grads["grpo_dual_clip"], torch.tensor([[0.0, 1.0]], dtype=torch.float64))


@pytest.mark.parametrize("clip_c", [1.2, 0.5, True, "3"])
def test_dual_clip_rejects_a_bound_inside_the_band(clip_c):
    logp, old, adv, mask = example()
    with pytest.raises(ValueError, match="clip_c must be a number > 1 \\+ eps_high = 1.2"):
        get_objective("grpo_dual_clip")(logp, old, adv, mask, clip_c=clip_c, **EPS)


def test_ratio_and_kl_stats_hand_computed():
    logp, old, adv, mask = example()
    _, st = get_objective("grpo")(logp, old, adv, mask, **EPS)
    lw = [LN(1.5), LN(0.5), LN(1.1)]
    mean = sum(lw) / 3
    assert st.tok_log_ratio_mean == pytest.approx(mean)
    assert st.tok_log_ratio_std == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in lw) / 3))
    assert st.tok_log_ratio_absmax == pytest.approx(LN(2.0))
    ls = [LN(0.75) / 2, LN(1.1)]  # log s_i of the two non-empty responses
    assert st.seq_log_ratio_mean == pytest.approx(sum(ls) / 2)
    assert st.seq_log_ratio_std == pytest.approx(abs(ls[0] - ls[1]) / 2)
    assert st.seq_log_ratio_absmax == pytest.approx(abs(ls[0]))
    assert st.kl_k1 == pytest.approx(-mean)
    assert st.kl_k3 == pytest.approx(sum(math.exp(x) - 1 - x for x in lw) / 3)


def test_gspo_clips_whole_responses_hand_computed():
    """GSPO band [0.9997, 1.0004]: s_0 = √1.35 > band with Â > 0, s_1 = 0.5 < band with Â < 0: both clipped."""
    old = torch.zeros(2, 2, dtype=torch.float64)
    logp = torch.tensor([[LN(1.5), LN(0.9)], [LN(0.5), 0.0]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, True], [True, False]])
    loss, st = get_objective("gspo")(logp, old, torch.tensor([1.0, -1.0], dtype=torch.float64), mask)
    assert loss.item() == pytest.approx(-(1.0004 - 0.9997) / 2, abs=1e-15)
    loss.backward()
    assert torch.count_nonzero(logp.grad) == 0  # clipped responses carry no gradient
    assert st.clip_token_frac == 1.0 and st.clip_seq_frac == 1.0  # response 0 counts both its tokens
    assert st.clip_token_frac_high == pytest.approx(2 / 3) and st.clip_token_frac_low == pytest.approx(1 / 3)
    assert st.clip_seq_frac_high == 0.5 and st.clip_seq_frac_low == 0.5


def test_clip_defaults_are_per_objective_and_cited():
    assert (GSPO_CLIP.low, GSPO_CLIP.high) == (3e-4, 4e-4)
    assert (GRPO_CLIP.low, GRPO_CLIP.high) == (0.2, 0.27)
    assert (DAPO_CLIP.high, PPO_CLIP.high) == (0.28, 0.2)

    for spec in OBJECTIVES.values():
        params = inspect.signature(spec.fn).parameters
        if spec.clip is None:  # no ε: its own parameters carry the defaults (SAPO's τ, VESPO's shape)
            assert (params["eps_low"].default, params["eps_high"].default) == (None, None), spec.name
            assert "TRL 1.16" in spec.fn.__doc__ and "arXiv" in spec.fn.__doc__, spec.name
        else:
            assert (params["eps_low"].default, params["eps_high"].default) == (spec.clip.low, spec.clip.high)
            assert "arXiv" in spec.clip.source or "GSPO paper" in spec.clip.source
        assert {"sampler_ratio", "seq_keep"} <= set(params), spec.name  # the one signature, corrections included
        doc = spec.fn.__doc__
        # cites where it comes from: the paper's equation or section, or for a successor whose paper body was not
        # read here, its paper and the TRL 1.16 lines that compute it
        cited = "Eq" in doc or "§" in doc or ("arXiv" in doc and "_trainer.py:" in doc)
        assert "Normalisation" in doc and cited, spec.name


# --- the paper's identities on parameter gradients -------------------------------------------------------------


def _param_grad(name, policy, tokens, old_logp, adv, mask, **kw):
    policy.zero_grad()
    loss, stats = get_objective(name)(policy(tokens), old_logp, adv, mask, **kw)
    loss.backward()
    return loss.detach(), policy.W.grad.clone(), stats


def test_gspo_token_equals_gspo_with_sequence_advantages(policy_batch):
    policy, tokens, old_logp, mask = policy_batch
    adv, _ = group_advantages(torch.tensor([1.0, 0, 0, 1, 0, 0, 1, 1], dtype=torch.float64), 4)
    for eps in (dict(), dict(eps_low=0.05, eps_high=0.05)):  # paper band (all clipped) and a band that mixes
        l1, g1, s1 = _param_grad("gspo", policy, tokens, old_logp, adv, mask, **eps)
        l2, g2, s2 = _param_grad("gspo_token", policy, tokens, old_logp, adv, mask, **eps)
        torch.testing.assert_close(l1, l2, rtol=0, atol=1e-14)
        torch.testing.assert_close(g1, g2, rtol=0, atol=1e-14)
        assert s1 == s2
    assert 0 < s1.clip_seq_frac < 1  # the second band really mixes clipped and unclipped responses


def test_gspo_token_differs_with_per_token_advantages(policy_batch):
    policy, tokens, old_logp, mask = policy_batch
    g = torch.Generator().manual_seed(3)
    adv_tok = torch.randn(mask.shape, generator=g, dtype=torch.float64)
    adv_seq = (adv_tok * mask).sum(-1) / mask.sum(-1)  # same per-response mean: only the token split differs
    eps = dict(eps_low=0.05, eps_high=0.05)
    _, g_tok, _ = _param_grad("gspo_token", policy, tokens, old_logp, adv_tok, mask, **eps)
    _, g_seq, _ = _param_grad("gspo", policy, tokens, old_logp, adv_seq, mask, **eps)
    assert (g_tok - g_seq).abs().max() > 1e-3


def test_grpo_and_gspo_gradients_identical_on_policy(policy_batch):
    policy, tokens, _, mask = policy_batch
    with torch.no_grad():
        on_policy = policy(tokens)  # π_old = π_θ: every ratio is exactly 1
    adv, _ = group_advantages(torch.tensor([1.0, 0, 0, 1, 0, 0.5, 1, 1], dtype=torch.float64), 4)
    l_grpo, g_grpo, s_grpo = _param_grad("grpo", policy, tokens, on_policy, adv, mask)
    l_gspo, g_gspo, s_gspo = _param_grad("gspo", policy, tokens, on_policy, adv, mask)
    torch.testing.assert_close(l_grpo, l_gspo, rtol=0, atol=1e-14)
    torch.testing.assert_close(g_grpo, g_gspo, rtol=0, atol=1e-14)
    assert s_grpo.clip_token_frac == s_gspo.clip_token_frac == 0.0


def test_zero_variance_group_gives_zero_gradient(policy_batch):
    policy, tokens, old_logp, mask = policy_batch
    rewards = torch.tensor([0.1 + 0.2, 0.3, 0.3, 0.3, 0, 1, 0, 1], dtype=torch.float64)  # group 0: residue only
    adv, stats = group_advantages(rewards, 4)
    assert stats.zero_std_frac == 0.5
    for name in OBJECTIVES:
        logp = policy(tokens).detach().requires_grad_()
        loss, _ = get_objective(name)(logp, old_logp, adv, mask)
        loss.backward()
        assert torch.count_nonzero(logp.grad[:4]) == 0, name
        assert torch.count_nonzero(logp.grad[4:]) > 0, name


# --- band edges ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["grpo", "gspo", "gspo_token", "cispo_mask"])
@pytest.mark.parametrize(
    "side, sign, offset, clipped",
    [
        ("high", +1, -1e-9, False),  # just inside the band: never clipped
        ("high", +1, +1e-9, True),  # just outside, Â > 0: clipped
        ("high", -1, +1e-9, False),  # just outside on the high side but Â < 0: the clip does not bind
        ("low", -1, +1e-9, False),
        ("low", -1, -1e-9, True),
        ("low", +1, -1e-9, False),
    ],
)
def test_band_edges(name, side, sign, offset, clipped):
    spec = get_objective(name)
    edge = math.log1p(spec.clip.high) if side == "high" else math.log1p(-spec.clip.low)
    logp = torch.full((1, 3), edge + offset, dtype=torch.float64, requires_grad=True)
    old = torch.zeros(1, 3, dtype=torch.float64)
    loss, st = spec(logp, old, torch.tensor([float(sign)], dtype=torch.float64), torch.ones(1, 3))
    loss.backward()
    assert st.clip_token_frac == (1.0 if clipped else 0.0)
    assert st.clip_token_frac_outside == (1.0 if offset * (1 if side == "high" else -1) > 0 else 0.0)
    assert bool((logp.grad == 0).all()) == clipped


# --- numerics -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_long_responses_and_extreme_log_ratios_stay_finite(name, dtype):
    T = 65_536
    g = torch.Generator().manual_seed(0)
    old = -torch.rand(2, T, generator=g, dtype=dtype) * 5
    sign = torch.where(torch.rand(2, T, generator=g) < 0.5, -1.0, 1.0).to(dtype)
    logp = (old + 50.0 * sign).requires_grad_()  # token log-ratios of ±50: Σ_t would overflow any float
    adv = torch.tensor([1.0, -1.0], dtype=dtype)
    loss, st = get_objective(name)(logp, old, adv, torch.ones(2, T))
    loss.backward()
    assert torch.isfinite(loss) and bool(torch.isfinite(logp.grad).all())
    assert math.isfinite(st.kl_k3) and st.tok_log_ratio_absmax == pytest.approx(50.0)


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_half_precision_inputs_are_computed_in_float32(name, low):
    logp, old, adv, mask = example()
    half = [t.detach().to(low) for t in (logp, old, adv)]
    loss, st = get_objective(name)(*half, mask, **eps_for(name))
    ref, st_ref = get_objective(name)(*(t.float() for t in half), mask, **eps_for(name))
    assert loss.dtype == torch.float32
    assert loss.item() == ref.item() and st == st_ref
