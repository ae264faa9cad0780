"""Property-based tests over random shapes, lengths, masks and log-prob scales (hypothesis)."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_lab import OBJECTIVES, get_objective, group_advantages, seq_log_ratio

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def batches(draw, per_token_adv=False):
    """A random off-policy batch: logp, old_logp (float64), adv, bool mask with ragged (possibly empty) rows."""
    B = draw(st.integers(1, 6))
    T = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.sampled_from([1e-4, 1e-2, 0.3, 3.0]))  # off-policy-ness of the log-ratios
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 8
    logp = old + scale * torch.randn(B, T, generator=g, dtype=torch.float64)
    lengths = torch.randint(0, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    shape = (B, T) if per_token_adv else (B,)
    adv = torch.randn(shape, generator=g, dtype=torch.float64)
    eps = draw(st.sampled_from([(3e-4, 4e-4), (0.2, 0.27), (0.05, 0.1)]))
    return logp, old, adv, mask, dict(eps_low=eps[0], eps_high=eps[1])


def _loss_and_grad(name, logp, old, adv, mask, eps):
    logp = logp.clone().requires_grad_()
    if get_objective(name).clip is None:  # sapo, vespo: no ε
        eps = {k: v for k, v in eps.items() if k not in ("eps_low", "eps_high")}
    loss, stats = get_objective(name)(logp, old, adv, mask, **eps)
    loss.backward()
    return loss.detach(), logp.grad, stats


@SETTINGS
@given(batches(), st.integers(1, 5), st.sampled_from(sorted(OBJECTIVES)))
def test_padding_never_changes_loss_ratio_or_gradient(batch, extra, name):
    logp, old, adv, mask, eps = batch
    B, T = logp.shape
    garbage = torch.full((B, extra), 123.0, dtype=torch.float64)  # wildly off-policy values nobody may read
    logp_p, old_p = torch.cat([logp, garbage], 1), torch.cat([old, -garbage], 1)
    mask_p = torch.cat([mask, torch.zeros(B, extra, dtype=torch.bool)], 1)
    kw = dict(eps, norm_len=T) if name == "grpo_const_norm" else eps
    loss, grad, stats = _loss_and_grad(name, logp, old, adv, mask, kw)
    loss_p, grad_p, stats_p = _loss_and_grad(name, logp_p, old_p, adv, mask_p, kw)
    torch.testing.assert_close(loss_p, loss, rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(grad_p[:, :T], grad, rtol=1e-12, atol=1e-15)
    assert torch.count_nonzero(grad_p[:, T:]) == 0
    torch.testing.assert_close(seq_log_ratio(logp_p, old_p, mask_p), seq_log_ratio(logp, old, mask))
    assert stats_p.clip_token_frac == stats.clip_token_frac and stats_p.n_tokens == stats.n_tokens


@SETTINGS
@given(batches(), st.sampled_from(sorted(OBJECTIVES)))
def test_stats_are_consistent_fractions(batch, name):
    logp, old, adv, mask, eps = batch
    _, grad, s = _loss_and_grad(name, logp, old, adv, mask, eps)
    for key, value in s.as_dict().items():
        assert math.isfinite(value), key
        if key.startswith("clip/"):
            assert 0.0 <= value <= 1.0, key
    assert math.isclose(s.clip_token_frac, s.clip_token_frac_low + s.clip_token_frac_high, abs_tol=1e-12)
    assert s.clip_token_frac <= s.clip_token_frac_outside + 1e-12  # active ⊂ outside the band
    assert s.clip_seq_frac <= s.clip_seq_frac_outside + 1e-12
    assert s.kl_k3 >= 0.0
    assert s.n_tokens == int(mask.sum()) and s.n_empty_seqs == int((mask.sum(-1) == 0).sum())
    assert bool(torch.isfinite(grad).all())


@SETTINGS
@given(batches())
def test_gspo_token_matches_gspo_for_sequence_advantages(batch):
    logp, old, adv, mask, eps = batch
    l1, g1, s1 = _loss_and_grad("gspo", logp, old, adv, mask, eps)
    l2, g2, s2 = _loss_and_grad("gspo_token", logp, old, adv, mask, eps)
    torch.testing.assert_close(l1, l2, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(g1, g2, rtol=1e-12, atol=1e-14)
    assert s1 == s2


@SETTINGS
@given(batches())
def test_on_policy_all_objectives_with_same_aggregation_coincide(batch):
    logp, _, adv, mask, eps = batch
    old = logp.clone()  # exactly on-policy: every ratio is 1, nothing is clipped
    results = {n: _loss_and_grad(n, logp, old, adv, mask, eps) for n in ("grpo", "gspo", "gspo_token")}
    expected = -(adv * mask.any(-1)).sum() / len(adv)
    for loss, grad, stats in results.values():
        torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(grad, results["grpo"][1], rtol=1e-12, atol=1e-14)
        assert stats.clip_token_frac_outside == 0.0 and stats.kl_k1 == 0.0


@SETTINGS
@given(batches())
def test_sequence_ratio_ignores_token_order(batch):
    logp, old, _, mask, _ = batch
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(logp.shape[1], generator=g)
    full = torch.ones_like(mask)  # permute over complete rows so the mask stays aligned
    torch.testing.assert_close(
        seq_log_ratio(logp[:, perm], old[:, perm], full), seq_log_ratio(logp, old, full), rtol=1e-12, atol=1e-14
    )


@SETTINGS
@given(st.integers(2, 6), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_advantages_are_centred_and_scaled_per_group(G, n_groups, seed):
    g = torch.Generator().manual_seed(seed)
    r = torch.randint(0, 3, (n_groups * G,), generator=g).to(torch.float64) / 2
    adv, stats = group_advantages(r, G)
    groups = adv.view(n_groups, G)
    assert torch.allclose(groups.sum(-1), torch.zeros(n_groups, dtype=torch.float64), atol=1e-12)
    live = r.view(n_groups, G).std(-1) > 0
    if live.any():
        assert torch.allclose(groups[live].std(-1), torch.ones(int(live.sum()), dtype=torch.float64))
    assert torch.count_nonzero(groups[~live]) == 0
    assert stats.zero_std_frac == (~live).double().mean().item()


@SETTINGS
@given(
    st.integers(1, 6),
    st.integers(1, 16),
    st.integers(0, 2**31 - 1),
    st.sampled_from(sorted(OBJECTIVES)),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_no_objective_returns_inf_or_nan_for_log_ratios_up_to_50(B, T, seed, name, dtype):
    """Every objective, GSPO's successors included, stays finite in loss, gradient and stats for token log-ratios
    anywhere in [−50, 50] (TRL's float32 delta and sapo give NaN gradients at +100: tests/test_trl_successors.py)."""
    g = torch.Generator().manual_seed(seed)
    old = -8 * torch.rand(B, T, generator=g, dtype=torch.float64)
    logp = old + (100 * torch.rand(B, T, generator=g, dtype=torch.float64) - 50)
    mask = torch.arange(T)[None, :] < torch.randint(0, T + 1, (B,), generator=g)[:, None]
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    x = logp.to(dtype).requires_grad_()
    loss, stats = get_objective(name)(x, old.to(dtype), adv.to(dtype), mask)
    loss.backward()
    assert torch.isfinite(loss) and bool(torch.isfinite(x.grad).all()), name
    assert all(math.isfinite(v) for v in stats.as_dict().values()), name
