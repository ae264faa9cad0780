"""Issue 50, item 3: the geometric sequence corrections (gspo_lab/corrections.py GEO_MODES): SkyRL's geometric mask
reproduced from its formula, the truncate twin, the length bias a product mask has and a geometric one does not, and
clear errors. SkyRL is not installed here: its ``compute_sequence_mask`` (commit a956457) is re-written below from
its source, line for line in meaning."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.corrections import GEO_MODES, SKYRL_GEO_BOUNDS, masked_at_length, masked_by_length, sampler_ratio


def skyrl_geometric_mask(old, rollout, loss_mask, low, high):
    """SkyRL's compute_sequence_mask(..., "geometric", ...): keep where exp(Σ_t (old − rollout)·m / max(Σ_t m, 1)) lies
    in [low, high]."""
    log_ratio = old - rollout
    n = loss_mask.sum(dim=-1, keepdim=True).clamp(min=1.0)
    geo = torch.exp(((log_ratio * loss_mask).sum(dim=-1, keepdim=True) / n).clamp(-20.0, 20.0))
    return (~(geo > high) & ~(geo < low)).float()


def _batch(seed=0, B=64, T=40, drift=0.01):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T, dtype=torch.bool)
    for i in range(B):
        mask[i, 1 + (i * 7) % T :] = False
    sampler = -torch.rand(B, T, generator=g, dtype=torch.float64)
    old = sampler + torch.randn(B, T, generator=g, dtype=torch.float64) * drift
    return old, sampler, mask


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("bounds", [SKYRL_GEO_BOUNDS, (0.9, 1.1), (0.995, 1.2)])
def test_the_geometric_mask_drops_exactly_the_responses_skyrls_drops(seed, bounds):
    old, sampler, mask = _batch(seed, B=256, drift=0.08)
    ours = sampler_ratio(old, sampler, mask, "sequence_geo_mask", *bounds)
    theirs = skyrl_geometric_mask(old, sampler, mask.double(), *bounds)
    assert torch.equal(ours, theirs.to(ours.dtype))
    assert 0 < float(ours.mean()) < 1  # the bounds bite on some responses and not on others


def test_the_truncate_twin_weighs_each_response_by_its_clamped_geometric_mean():
    old, sampler, mask = _batch(drift=0.05)
    rho = sampler_ratio(old, sampler, mask, "sequence_geo_truncate", 0.99, 1.01)
    geo = ((old - sampler) * mask).sum(-1, keepdim=True).div(mask.sum(-1, keepdim=True)).exp()
    assert torch.allclose(rho, geo.clamp(0.99, 1.01)) and rho.shape == (old.shape[0], 1)


def test_a_product_mask_drops_long_responses_first_and_a_geometric_one_does_not():
    """The same per-token drift: the product's log ρ grows with n (its spread as √n), the mean's does not."""
    old, sampler, mask = _batch(seed=3, B=400, T=80, drift=0.05)
    modes = {"product": ("sequence_mask", None, 3.0), "geometric": ("sequence_geo_mask", 0.9, 1.1)}
    rows = masked_by_length(old, sampler, mask, modes, [1, 10, 40, 81])
    rate = {(r["bin"], r["name"]): r["masked"] for r in rows}
    assert rate[("1-9", "product")] < rate[("40-80", "product")]
    assert rate[("1-9", "geometric")] >= rate[("40-80", "geometric")]


def test_at_one_drift_per_token_the_product_bites_with_length_and_the_mean_does_not():
    """masked_at_length draws n of each response's tokens: with every token drifting by the same d the geometric mean
    is d at every n (its rate flat), the product's log ρ is n·d (its rate a step at n > log 3 / d)."""
    B, T, d = 32, 80, 0.02
    sampler = torch.full((B, T), -1.0, dtype=torch.float64)
    old, mask = sampler + d, torch.ones(B, T, dtype=torch.bool)
    modes = {"product": ("sequence_mask", None, 3.0), "geometric": ("sequence_geo_mask", 0.99, 1.01)}
    rows = masked_at_length(old, sampler, mask, modes, [10, 40, 60, 80], torch.Generator().manual_seed(0))
    rate = {(r["length"], r["name"]): r["masked"] for r in rows}
    assert [rate[(n, "product")] for n in (10, 40, 60, 80)] == [0.0, 0.0, 1.0, 1.0]  # log 3 / 0.02 = 54.9 tokens
    assert {rate[(n, "geometric")] for n in (10, 40, 60, 80)} == {1.0}  # e^0.02 > 1.01 at every n
    assert {r["responses"] for r in rows} == {B}


def test_masked_at_length_reads_the_same_responses_at_every_length_and_all_of_them_at_full_length():
    old, sampler, mask = _batch(seed=1, B=200, T=40, drift=0.05)
    modes = {"product": ("sequence_mask", 1 / 3, 3.0)}
    rows = masked_at_length(old, sampler, mask, modes, [5, 40], torch.Generator().manual_seed(1))
    full = sampler_ratio(old, sampler, mask, "sequence_mask", 1 / 3, 3.0).reshape(-1) == 0
    long = mask.sum(-1) >= 40
    assert rows[0]["responses"] == rows[1]["responses"] == int(long.sum()) > 0
    assert rows[1]["masked"] == pytest.approx(float(full[long].double().mean()))
    with pytest.raises(ValueError, match="lengths must be whole numbers of tokens >= 1"):
        masked_at_length(old, sampler, mask, modes, [0, 5])


def test_a_stale_sampler_drifts_from_the_trainer_only_after_updates():
    from gspo_lab.precision import stale_mismatch

    cfg = TrainConfig(checkpoint="sweep-addfmt-L2", task="add_format", length=2, prompts_per_rollout=4, group_size=4,
                      minibatches=2, lr=3e-4, seed=0)  # fmt: skip
    ms = stale_mismatch(cfg, (0, 4))
    floor, moved = (float(ms[k].delta.abs().max()) for k in (0, 4))
    assert floor <= 1e-4 < moved  # k = 0: the fp32 sampler against the fp32 trainer, the same weights
    assert torch.equal(ms[0].sampler_logp, ms[4].sampler_logp)  # the same responses, scored later
    with pytest.raises(ValueError, match="updates must be a non-empty tuple"):
        stale_mismatch(cfg, (-1,))


def test_a_bad_geometric_setting_gets_a_clear_error():
    old, sampler, mask = _batch()
    with pytest.raises(ValueError, match="clip_min must be None or a number in"):
        sampler_ratio(old, sampler, mask, "sequence_geo_mask", 1.2, 1.01)
    with pytest.raises(ValueError, match="mode must be one of"):
        sampler_ratio(old, sampler, mask, "sequence_geometric", 0.99, 1.01)
    cfg = TrainConfig(sampler_correction="sequence_geo_mask", sampler_clip_min=0.99, sampler_clip_max=1.01)
    assert cfg.sampler_correction in GEO_MODES and math.isclose(cfg.sampler_clip_max, 1.01)
