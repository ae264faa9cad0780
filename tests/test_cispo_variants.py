"""CISPO's two variants (issue 37): ``cispo_clip`` (verl's and MiniMax-M1's two-sided clipped weight) and
``cispo_mask`` (cispo's weight times MiniMax-M1's token mask M): each against a per-token reference of its formula
written in Python floats, their identities with cispo on-policy and with grpo_token_mean (cispo_mask, no cap), the
tokens whose gradient each keeps or zeroes, bad arguments, and a short training run.

The references are the formulas of gspo_lab/objectives/soft.py, one token at a time:
    cispo_clip: c = clip(exp(clamp(log w, ±20)), 1 − ε_low, 1 + ε_high)
    cispo_mask: c = min(w, cap) · M,  M = 0 if (Â > 0 and w > 1 + ε_high) or (Â < 0 and w < 1 − ε_low), else 1
    loss = −Σ c Â ρ log π / N,  ∂loss/∂log π = −c Â ρ / N  (N valid tokens, ρ the sampler correction × seq_keep).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from gspo_lab.config import SMOKE
from gspo_lab.gradients import trust_region_weights
from gspo_lab.objectives import CISPO_CAP, CISPO_CLIP, GRPO_CLIP, OBJECTIVES, get_objective
from gspo_lab.plots import color, label, plot_trust_regions
from gspo_lab.step import init_state, train_step

LOG_CLAMP = 20.0


def _c_clip(log_w: float, adv: float, eps_low: float, eps_high: float, cap: float) -> float:
    return min(max(math.exp(min(max(log_w, -LOG_CLAMP), LOG_CLAMP)), 1 - eps_low), 1 + eps_high)


def _c_mask(log_w: float, adv: float, eps_low: float, eps_high: float, cap: float) -> float:
    w = math.exp(log_w)
    masked = (adv > 0 and w > 1 + eps_high) or (adv < 0 and w < 1 - eps_low)
    return 0.0 if masked else min(w, cap)


WEIGHTS = {"cispo_clip": _c_clip, "cispo_mask": _c_mask}


def reference(name, logp, old, adv, mask, *, eps_low, eps_high, cap=CISPO_CAP.high, rho=None, keep=None):
    """(loss, ∂loss/∂logp as a (B, T) float64 tensor) of ``name``'s formula, token by token in Python floats."""
    B, T = logp.shape
    valid = [[bool(mask[i, t]) for t in range(T)] for i in range(B)]
    n = max(sum(map(sum, valid)), 1)
    loss, grad = 0.0, [[0.0] * T for _ in range(B)]
    for i in range(B):
        for t in range(T):
            if not valid[i][t]:
                continue
            a = float(adv[i] if adv.dim() == 1 else adv[i, t])
            x, x_old = float(logp[i, t]), float(old[i, t])
            c = WEIGHTS[name](x - x_old, a, eps_low, eps_high, cap)
            r = 1.0 if rho is None else float(rho.reshape(B, -1)[i, t if rho.numel() == B * T else 0])
            r *= 1.0 if keep is None else float(keep[i])
            loss -= c * a * r * x / n
            grad[i][t] = -c * a * r / n
    return loss, torch.tensor(grad, dtype=torch.float64)


def batch(seed: int, *, per_token_adv: bool = False, scale: float = 0.5, B: int = 6, T: int = 7):
    """Random float64 log-probs, a ragged mask with an empty and a full row, junk at padding, Â of either shape."""
    g = torch.Generator().manual_seed(seed)
    old = -3 * torch.rand(B, T, generator=g, dtype=torch.float64) - 0.05
    logp = old + scale * torch.randn(B, T, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0], lengths[1] = 0, T
    mask = torch.arange(T)[None, :] < lengths[:, None]
    junk = 40 * torch.randn(B, T, generator=g, dtype=torch.float64)  # wildly off-policy padding: must not leak
    adv = torch.randn((B, T) if per_token_adv else (B,), generator=g, dtype=torch.float64)
    return logp.where(mask, junk), old.where(mask, -junk), adv, mask


def _ours(name, logp, old, adv, mask, **kw):
    x = logp.clone().requires_grad_()
    loss, stats = get_objective(name)(x, old, adv, mask, **kw)
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad, stats


# --- the formulas, token by token -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(WEIGHTS))
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("per_token_adv", [False, True])
@pytest.mark.parametrize("eps", [None, (0.1, 0.35)])
def test_matches_the_per_token_reference(name, seed, per_token_adv, eps):
    logp, old, adv, mask = batch(seed, per_token_adv=per_token_adv, scale=0.2 + 0.4 * seed)
    spec = get_objective(name)
    eps_low, eps_high = (spec.clip.low, spec.clip.high) if eps is None else eps
    kw = {} if eps is None else dict(eps_low=eps_low, eps_high=eps_high)
    loss, grad, stats = _ours(name, logp, old, adv, mask, **kw)
    ref_loss, ref_grad = reference(name, logp, old, adv, mask, eps_low=eps_low, eps_high=eps_high)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-15)
    assert stats.n_tokens == int(mask.sum()) and stats.n_empty_seqs == 1


@pytest.mark.parametrize("name", sorted(WEIGHTS))
@pytest.mark.parametrize("rho_shape", ["token", "sequence", "flat"])
def test_sampler_ratio_and_seq_keep_multiply_each_tokens_term(name, rho_shape):
    logp, old, adv, mask = batch(3, per_token_adv=True, scale=0.8)
    B, T = logp.shape
    g = torch.Generator().manual_seed(7)
    shape = {"token": (B, T), "sequence": (B, 1), "flat": (B,)}[rho_shape]
    rho = 2 * torch.rand(shape, generator=g, dtype=torch.float64)
    keep = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    spec = get_objective(name)
    eps = dict(eps_low=spec.clip.low, eps_high=spec.clip.high)
    loss, grad, stats = _ours(name, logp, old, adv, mask, sampler_ratio=rho, seq_keep=keep)
    ref_loss, ref_grad = reference(name, logp, old, adv, mask, **eps, rho=rho, keep=keep)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-15)
    _, _, plain = _ours(name, logp, old, adv, mask)
    assert stats.clip_token_frac == plain.clip_token_frac  # the correction scales terms; it clips nothing
    assert stats.weight_token_mean != plain.weight_token_mean  # … and shows in the weight


def test_cispo_mask_cap_is_a_keyword():
    logp, old, adv, mask = batch(4, scale=2.0)
    for cap in (1.5, math.inf):
        loss, grad, _ = _ours("cispo_mask", logp, old, adv, mask, cap=cap)
        ref_loss, ref_grad = reference("cispo_mask", logp, old, adv, mask, eps_low=0.2, eps_high=0.27, cap=cap)
        assert loss.item() == pytest.approx(ref_loss, rel=1e-12, abs=1e-15)
        torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-15)


# --- identities ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("per_token_adv", [False, True])
def test_on_policy_both_variants_are_cispo(per_token_adv):
    """w = 1 everywhere: every weight is 1, nothing is masked or clipped; loss and gradient are cispo's, exactly."""
    logp, _, adv, mask = batch(5, per_token_adv=per_token_adv)
    old = logp.clone()
    base_loss, base_grad, _ = _ours("cispo", logp, old, adv, mask)
    adv_tokens = adv if per_token_adv else adv[:, None].expand_as(mask)
    assert bool((base_grad != 0)[mask & (adv_tokens != 0)].all())
    for name in WEIGHTS:
        loss, grad, stats = _ours(name, logp, old, adv, mask)
        assert torch.equal(loss, base_loss) and torch.equal(grad, base_grad), name
        assert stats.clip_token_frac == stats.clip_token_frac_outside == 0.0 and stats.weight_token_mean == 1.0


def test_on_policy_parameter_gradients_are_cispos(policy_batch):
    policy, tokens, _, mask = policy_batch
    with torch.no_grad():
        on_policy = policy(tokens)
    adv = torch.tensor([1.0, -0.5, 0.3, -0.8, 0.0, 1.2, -1.0, 0.7], dtype=torch.float64)
    grads = {}
    for name in ("cispo", *WEIGHTS):
        policy.zero_grad()
        loss, _ = get_objective(name)(policy(tokens), on_policy, adv, mask)
        loss.backward()
        grads[name] = policy.W.grad.clone()
    assert grads["cispo"].abs().max() > 0
    for name in WEIGHTS:
        assert torch.equal(grads[name], grads["cispo"]), name


@pytest.mark.parametrize("per_token_adv", [False, True])
def test_cispo_mask_without_a_cap_has_grpo_token_means_gradient(per_token_adv):
    """With cap = ∞ the weight is w where GRPO's clip does not bind and 0 where it does: DAPO's token-mean GRPO."""
    logp, old, adv, mask = batch(6, per_token_adv=per_token_adv, scale=0.6)
    eps = dict(eps_low=0.2, eps_high=0.27)
    _, grad_mask, s_mask = _ours("cispo_mask", logp, old, adv, mask, cap=math.inf, **eps)
    _, grad_grpo, s_grpo = _ours("grpo_token_mean", logp, old, adv, mask, **eps)
    torch.testing.assert_close(grad_mask, grad_grpo, rtol=1e-12, atol=1e-15)
    assert s_mask == s_grpo and 0 < s_mask.clip_token_frac < s_mask.clip_token_frac_outside


# --- which tokens keep their gradient -----------------------------------------------------------------------------

#: one response per sign of Â, token ratios w against GRPO's band [0.8, 1.27] and the cap 5
W_HAND = torch.tensor([[1.5, 0.5, 6.0, 1.0], [1.5, 7.0, 0.5, 1.0]], dtype=torch.float64)
ADV_HAND = torch.tensor([1.0, -1.0], dtype=torch.float64)


def _hand(name):
    old = torch.full((2, 4), -2.0, dtype=torch.float64)
    return _ours(name, old + W_HAND.log(), old, ADV_HAND, torch.ones(2, 4, dtype=torch.bool))


def test_cispo_mask_zeroes_exactly_the_tokens_ppos_clip_would():
    """Â > 0: w = 1.5 and 6 lie above the band: gradient 0; w = 0.5 (below, Â > 0) keeps its weight 0.5.
    Â < 0: w = 1.5 keeps weight 1.5 and w = 7 the cap 5 (above the band, Â < 0); w = 0.5 (below) is zeroed.
    cispo keeps all six; ∂loss/∂log π = −c Â / 8 (8 valid tokens)."""
    _, grad, stats = _hand("cispo_mask")
    c = torch.tensor([[0.0, 0.5, 0.0, 1.0], [1.5, 5.0, 0.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(grad, -c * ADV_HAND[:, None] / 8, rtol=0, atol=1e-15)
    assert grad[0, 0] == 0 and grad[0, 2] == 0 and grad[1, 2] == 0
    assert (stats.clip_token_frac, stats.clip_token_frac_high, stats.clip_token_frac_low) == (3 / 8, 2 / 8, 1 / 8)
    assert stats.clip_token_frac_outside == 6 / 8 and stats.clip_seq_frac == 1.0
    assert stats.weight_token_mean == pytest.approx(c.mean().item(), abs=1e-15)
    # drift against GRPO's band: six tokens outside, three of them still carry gradient (w 0.5 Â>0; 1.5, 7 Â<0)
    assert (stats.grpo_band_outside_frac, stats.grpo_band_outside_grad_frac) == (6 / 8, 3 / 8)

    _, grad_cispo, st_cispo = _hand("cispo")
    c_cispo = torch.tensor([[1.5, 0.5, 5.0, 1.0], [1.5, 5.0, 0.5, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(grad_cispo, -c_cispo * ADV_HAND[:, None] / 8, rtol=0, atol=1e-15)
    assert bool((grad_cispo != 0).all()) and st_cispo.grpo_band_outside_grad_frac == 6 / 8


def test_cispo_clip_bounds_the_weight_and_keeps_every_gradient():
    """Hand: Â > 0 weights (1.2, 0.8, 1.2, 1); Â < 0 (1.2, 1.2, 0.8, 1): both bounds bind, no gradient is 0."""
    _, grad, stats = _hand("cispo_clip")
    c = torch.tensor([[1.2, 0.8, 1.2, 1.0], [1.2, 1.2, 0.8, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(grad, -c * ADV_HAND[:, None] / 8, rtol=0, atol=1e-15)
    assert (stats.clip_token_frac_high, stats.clip_token_frac_low) == (2 / 8, 1 / 8)  # binding for Â's sign
    assert stats.clip_token_frac_outside == 6 / 8  # every clipped weight, both signs: verl's pg_clipfrac
    assert (stats.grpo_band_outside_frac, stats.grpo_band_outside_grad_frac) == (6 / 8, 6 / 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cispo_clip_weight_stays_in_its_band_at_extreme_ratios(dtype):
    """Log-ratios up to ±50 (past verl's ±20 clamp): every weight −∂loss/∂log π · N / Â lies in [0.8, 1.2], both
    bounds are reached, and every valid token with Â ≠ 0 has a nonzero gradient."""
    logp, old, adv, mask = batch(8, per_token_adv=True, scale=25.0, B=8, T=16)
    adv = adv.where(torch.rand(adv.shape, generator=torch.Generator().manual_seed(0)) > 0.1, torch.zeros(()))
    x = logp.to(dtype).requires_grad_()
    loss, stats = get_objective("cispo_clip")(x, old.to(dtype), adv.to(dtype), mask)
    loss.backward()
    live = mask & (adv != 0)
    c = (-x.grad.double() * mask.sum() / adv)[live]
    assert torch.isfinite(loss) and bool(torch.isfinite(x.grad).all())
    assert bool((x.grad[live] != 0).all()) and bool((x.grad[~live] == 0).all())
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    assert c.min().item() == pytest.approx(0.8, abs=tol) and c.max().item() == pytest.approx(1.2, abs=tol)
    assert stats.grpo_band_outside_grad_frac == stats.grpo_band_outside_frac > 0


# --- the registry, bad input, plots, training ---------------------------------------------------------------------


def test_registry_entries_and_their_sources():
    for name, clip, region in (("cispo_clip", CISPO_CLIP, "two-sided cap"), ("cispo_mask", GRPO_CLIP, "cap + mask")):
        spec = OBJECTIVES[name]
        assert (spec.clip, spec.ratio, spec.aggregation, spec.trust_region) == (clip, "token", "token_mean", region)
        assert spec.per_token_adv and spec.trl == "" and "not in TRL 1.16" in spec.reference
        assert "2506.13585" in spec.fn.__doc__
    assert (CISPO_CLIP.low, CISPO_CLIP.high) == (0.2, 0.2) and "clip_ratio" in CISPO_CLIP.source
    assert (
        "verl" in get_objective("cispo_clip").fn.__doc__ and "core_algos.py" in get_objective("cispo_clip").fn.__doc__
    )


@pytest.mark.parametrize(
    "name, kw, match",
    [
        ("cispo_clip", dict(eps_low=1.0), r"eps_low must lie in \(0, 1\)"),
        ("cispo_clip", dict(eps_high=0.0), r"eps_high must be > 0"),
        ("cispo_mask", dict(eps_low=-0.2), r"eps_low must lie in \(0, 1\)"),
        ("cispo_mask", dict(eps_high=float("inf")), r"eps_high must be finite"),
        ("cispo_mask", dict(cap=0.0), r"cap must be a number > 0"),
        ("cispo_mask", dict(cap=-1.0), r"cap must be a number > 0"),
        ("cispo_mask", dict(cap=float("nan")), r"cap must be a number > 0"),
        ("cispo_mask", dict(cap=True), r"cap must be a number > 0"),
        ("cispo_mask", dict(cap="5"), r"cap must be a number > 0"),
    ],
)
def test_bad_arguments_name_themselves(name, kw, match):
    logp, old, adv, mask = batch(0)
    with pytest.raises(ValueError, match=match):
        get_objective(name)(logp, old, adv, mask, **kw)


def test_plots_know_both_variants():
    table = trust_region_weights([-1.0, 0.0, 0.2, 1.0], names=("cispo", *WEIGHTS))
    assert set(table["objective"]) == {"cispo", *WEIGHTS}
    mask_pos = table.query("objective == 'cispo_mask' and advantage == 'Â > 0'").set_index("log_ratio")["weight"]
    assert mask_pos[1.0] == 0.0 and mask_pos[0.0] == pytest.approx(1.0)  # masked past the band, 1 on-policy
    fig = plot_trust_regions(table)
    assert len(fig.axes[0].lines) >= 3
    assert len({color(n) for n in ("cispo", *WEIGHTS)}) == 3 and label("cispo_mask") != "cispo_mask"


@pytest.mark.parametrize("objective", sorted(WEIGHTS))
def test_one_rollout_trains_without_nan(objective):
    """One rollout of the smoke preset on the sweep checkpoint (M = 2 updates), lr high enough to leave the band."""
    state = init_state(replace(SMOKE, checkpoint="sweep-sort", objective=objective, rollouts=1, lr=1e-2))
    before = [p.detach().clone() for p in state.model.parameters()]
    rows = train_step(state)
    assert len(rows) == SMOKE.minibatches
    for row in rows:
        assert all(math.isfinite(v) for k, v in row.items() if isinstance(v, float)), row
    assert rows[0]["clip/token_frac_outside"] == 0.0 and rows[0]["weight/token_mean"] == 1.0  # on-policy
    assert rows[-1]["ratio/tok_log_absmax"] > 0.0
    assert any(not torch.equal(p, q) for p, q in zip(state.model.parameters(), before, strict=True))
    assert all(bool(torch.isfinite(p).all()) for p in state.model.parameters())
