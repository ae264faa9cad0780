"""The drift metrics against GRPO's band (``drift/outside_grpo_band_*``, gspo_lab/metrics.py; issue 37, A.2):
hand-computed on a tiny batch for GRPO, CISPO, GSPO and SAPO; equal to autograd's nonzero gradients for every
objective; never NaN; and logging them changes no other metric and no parameter, bit for bit (reference and fast
paths)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

import gspo_lab.metrics as metrics
from gspo_lab.config import SMOKE
from gspo_lab.objectives import GRPO_CLIP, OBJECTIVES, get_objective
from gspo_lab.objectives.core import GRPO_BAND
from gspo_lab.step import init_state, train_step

KEYS = ("drift/outside_grpo_band_frac", "drift/outside_grpo_band_grad_frac")


def _batch():
    """4 responses × 3 tokens, token ratios w chosen against GRPO's band [0.8, 1.27]:
    Â = +1: w = 1, 1.5 (above: GRPO's clip binds), 0.5 (below: it does not, Â > 0);
    Â = −1: w = 1, 1.5 (above: it does not, Â < 0), 0.5 (below: it binds);
    Â = 0:  w = 1.5, 0.5, 1 (outside, but no gradient under any objective: not counted);
    Â = +1: w = 1.1, 0.9, 1 (inside)."""
    w = torch.tensor([[1.0, 1.5, 0.5], [1.0, 1.5, 0.5], [1.5, 0.5, 1.0], [1.1, 0.9, 1.0]], dtype=torch.float64)
    old = torch.full((4, 3), -1.0, dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, 0.0, 1.0], dtype=torch.float64)
    return old + w.log(), old, adv, torch.ones(4, 3, dtype=torch.bool)


def _run(name, logp, old, adv, mask):
    logp = logp.clone().requires_grad_()
    loss, stats = get_objective(name)(logp, old, adv, mask)
    loss.backward()
    return logp.grad, stats.as_dict()


def test_the_band_is_grpos_registry_entry():
    assert GRPO_BAND == (OBJECTIVES["grpo"].clip.low, OBJECTIVES["grpo"].clip.high) == (GRPO_CLIP.low, GRPO_CLIP.high)
    assert set(KEYS) <= set(metrics.CATALOGUE)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("grpo", 2),  # (0, 2) and (1, 1) keep theirs; (0, 1) and (1, 2), where the clip binds for Â's sign, do not
        ("cispo", 4),  # every token keeps its gradient (the cap 5.0 only scales it)
        ("cispo_clip", 4),  # the weight is clipped to [0.8, 1.2], never to 0
        ("cispo_mask", 2),  # cispo's weight, but the mask zeroes GRPO's two clip-active tokens
        ("sapo", 4),  # a soft gate: smaller, never 0
        ("gspo", 2),  # per response: s_0 = s_1 = 0.908 < 1 − 3e-4; for Â = −1 the clip binds on all of response 1
    ],
)
def test_hand_computed_shares(name, kept):
    grad, stats = _run(name, *_batch())
    assert stats["drift/outside_grpo_band_frac"] == 4 / 12  # the four outside tokens with Â ≠ 0, whatever the objective
    assert stats["drift/outside_grpo_band_grad_frac"] == kept / 12
    assert int((grad[:2, 1:] != 0).sum()) == kept  # autograd agrees: the outside tokens are [0:2, 1:3]


def test_cispo_keeps_every_out_of_band_gradient_grpo_zeroes_the_clipped_ones():
    grad, _ = _run("grpo", *_batch())
    assert grad[0, 1] == 0 and grad[1, 2] == 0 and grad[0, 2] != 0 and grad[1, 1] != 0
    assert grad[2].abs().sum() == 0  # Â = 0: no gradient anywhere


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize(("seed", "scale"), [(0, 0.3), (1, 1.0), (2, 3.0), (3, 12.0)])
def test_the_share_is_autograds_nonzero_gradients(name, seed, scale):
    g = torch.Generator().manual_seed(seed)
    B, T = 8, 6
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 8
    logp = old + scale * torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = torch.arange(T)[None, :] < torch.randint(0, T + 1, (B,), generator=g)[:, None]
    adv = torch.randn(B, generator=g, dtype=torch.float64).where(torch.arange(B) % 3 != 0, torch.zeros(()))
    grad, stats = _run(name, logp, old, adv, mask)
    w = (logp - old).exp()
    outside = mask & (adv[:, None] != 0) & ((w < 1 - GRPO_CLIP.low) | (w > 1 + GRPO_CLIP.high))
    n = int(mask.sum())
    assert stats["drift/outside_grpo_band_frac"] == pytest.approx(int(outside.sum()) / max(n, 1), abs=1e-15)
    assert stats["drift/outside_grpo_band_grad_frac"] == pytest.approx(int((outside & (grad != 0)).sum()) / max(n, 1),
                                                                 abs=1e-15)  # fmt: skip


def test_sapo_past_its_clamp_carries_no_gradient():
    logp, old, adv, mask = _batch()
    logp = logp.clone()
    logp[0, 2] = old[0, 2] - 25.0  # log w = −25: SAPO clamps at −20, so no gradient (its gate weight is not 0)
    grad, stats = _run("sapo", logp, old, adv, mask)
    assert grad[0, 2] == 0 and stats["drift/outside_grpo_band_grad_frac"] == 3 / 12


def test_never_nan():
    logp, old, adv, mask = _batch()
    for name in sorted(OBJECTIVES):
        _, on_policy = _run(name, old, old, adv, mask)  # every w = 1: no token outside
        assert (on_policy[KEYS[0]], on_policy[KEYS[1]]) == (0.0, 0.0), name
        _, empty = _run(name, logp, old, adv, torch.zeros_like(mask))  # no valid token
        assert (empty[KEYS[0]], empty[KEYS[1]]) == (0.0, 0.0), name


def _zeros(tok_log_ratio, *args):
    return tok_log_ratio.new_zeros(()), tok_log_ratio.new_zeros(())


@pytest.mark.parametrize("objective", ["grpo", "cispo"])
@pytest.mark.parametrize("fast", [False, True])
def test_logging_it_changes_no_other_metric_and_no_update(monkeypatch, objective, fast):
    """One rollout (M = 2 updates, lr high enough that tokens leave the band) with the shares computed and with them
    replaced by constants: every other value of every row and every parameter after the last update the same, bit
    for bit; on the reference path and on the fast one (π_old from the sampler, its forward skipped)."""
    cfg = replace(SMOKE, checkpoint="sweep-sort", objective=objective, rollouts=1, lr=1e-2)
    if fast:
        cfg = replace(cfg, old_logp="sampler", old_forward=False)
    with_it = init_state(cfg)
    rows = train_step(with_it)
    monkeypatch.setattr(metrics, "grpo_band_shares", _zeros)
    without = init_state(cfg)
    rows_without = train_step(without)
    assert len(rows) == len(rows_without) >= 2
    for a, b in zip(rows, rows_without, strict=True):
        assert {k: v for k, v in a.items() if k not in KEYS and not k.startswith("time/")} == {
            k: v for k, v in b.items() if k not in KEYS and not k.startswith("time/")
        }
        assert 0.0 <= a[KEYS[1]] <= a[KEYS[0]] <= 1.0 and all(math.isfinite(a[k]) for k in KEYS)
    for p, q in zip(with_it.model.parameters(), without.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert any(r[KEYS[0]] > 0 for r in rows[1:])  # the shares were measured (off-policy updates leave the band)
    if not fast:
        assert rows[0][KEYS[0]] == 0.0  # the first update is on-policy: every w = 1
