"""§5.4's measurement (gspo_lab.precision) on the shipped sweep-sort cold start: the fp32 floor, the bf16 mismatch,
the statistics against hand computations, the clipping before any update, bad input."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab.config import TrainConfig
from gspo_lab.precision import SAMPLERS, first_update_clip, mismatch_samples, mismatch_stats, sampler_mismatch

CFG = TrainConfig(checkpoint="sweep-sort", length=8, prompts_per_rollout=4, group_size=4, seed=3)


@pytest.fixture(scope="module")
def both():
    torch.set_num_threads(1)
    return {p: sampler_mismatch(CFG, p) for p in SAMPLERS}


def test_fp32_floor_and_bf16_mismatch(both):
    fp32, bf16 = mismatch_stats(both["fp32"]), mismatch_stats(both["bf16"])
    assert fp32["tok_max"] < 1e-4 and bf16["tok_mean"] > 100 * fp32["tok_mean"]
    assert both["fp32"].delta[~both["fp32"].mask].abs().max() == 0  # padding carries no mismatch


def test_statistics_are_the_hand_computed_ones(both):
    m = both["bf16"]
    stats = mismatch_stats(m)
    seq = torch.stack([m.delta[i][m.mask[i]].mean() for i in range(len(m.mask)) if m.mask[i].any()])
    assert stats["seq_mean"] == pytest.approx(seq.abs().mean().item(), rel=1e-12)
    assert stats["seqsum_mean"] == pytest.approx(m.delta.sum(-1)[m.mask.any(-1)].abs().mean().item(), rel=1e-12)
    outside = ((-seq < math.log1p(-3e-4)) | (-seq > math.log1p(4e-4))).double().mean().item()
    assert stats["seq_outside_gspo"] == pytest.approx(outside)
    samples = mismatch_samples(m)
    assert len(samples["token"]) == int(m.mask.sum()) and len(samples["sequence"]) == len(seq)


def test_first_update_clips_only_the_engines_disagreement(both):
    fp32, bf16 = first_update_clip(both["fp32"]), first_update_clip(both["bf16"])
    assert fp32["gspo"]["clip/token_frac"] == 0 and fp32["grpo"]["clip/token_frac"] == 0  # the floor is inside ε
    assert bf16["gspo"]["clip/token_frac"] > 0.05 and bf16["grpo"]["clip/token_frac"] <= 0.01


def test_bad_precision_names_the_argument():
    with pytest.raises(ValueError, match="precision must be one of"):
        sampler_mismatch(CFG, "fp16")
