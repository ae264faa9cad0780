"""Issue 50, item 3: the geometric sequence corrections (gspo_lab/corrections.py GEO_MODES): SkyRL's geometric mask
reproduced from its formula, the truncate twin, the length bias a product mask has and a geometric one does not, and
clear errors. SkyRL is not installed here: its ``compute_sequence_mask`` (commit a956457) is re-written below from
its source, line for line in meaning."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.corrections import GEO_MODES, SKYRL_GEO_BOUNDS, masked_by_length, sampler_ratio


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


def test_a_bad_geometric_setting_gets_a_clear_error():
    old, sampler, mask = _batch()
    with pytest.raises(ValueError, match="clip_min must be None or a number in"):
        sampler_ratio(old, sampler, mask, "sequence_geo_mask", 1.2, 1.01)
    with pytest.raises(ValueError, match="mode must be one of"):
        sampler_ratio(old, sampler, mask, "sequence_geometric", 0.99, 1.01)
    cfg = TrainConfig(sampler_correction="sequence_geo_mask", sampler_clip_min=0.99, sampler_clip_max=1.01)
    assert cfg.sampler_correction in GEO_MODES and math.isclose(cfg.sampler_clip_max, 1.01)
