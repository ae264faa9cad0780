"""Group advantages (Eq. 6): hand-computed values, the zero-variance guard, Dr. GRPO's variant, bad input."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab import group_advantages
from gspo_lab.advantages import ZERO_STD_RTOL


def test_eq6_hand_computed_with_sample_std():
    adv, st = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0]), 3)
    # group 0: mean 1/3, sample std sqrt(((2/3)^2 + 2 (1/3)^2) / 2) = 1/sqrt(3)
    s0 = 1 / math.sqrt(3)
    # group 1: mean 2, sample std 2
    expected = [(2 / 3) / s0, (-1 / 3) / s0, (-1 / 3) / s0, -1.0, 0.0, 1.0]
    assert adv.tolist() == pytest.approx(expected, abs=1e-6)
    assert adv.dtype == torch.float32
    assert st.reward_mean == pytest.approx(7 / 6) and st.zero_std_frac == 0.0
    assert st.adv_absmax == pytest.approx((2 / 3) / s0)


def test_dr_grpo_scale_none_only_centres():
    adv, _ = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 4.0], dtype=torch.float64), 3, scale="none")
    assert adv.tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3, -2.0, 0.0, 2.0])


@pytest.mark.parametrize(
    "rewards",
    [
        [0.1 + 0.2, 0.3, 0.3, 0.3],  # float64 residue: 5.6e-17 apart
        [1.0, 1.0, 1.0, 1.0],
        [0.0, 0.0, 0.0, 0.0],
        [7.0, 7.0, 7.0, 7.0],
    ],
)
@pytest.mark.parametrize("scale", ["std", "none"])
def test_identical_rewards_give_exactly_zero_advantage(rewards, scale):
    adv, st = group_advantages(torch.tensor(rewards, dtype=torch.float64), 4, scale=scale)
    assert torch.count_nonzero(adv) == 0 and st.zero_std_frac == 1.0


@pytest.mark.parametrize("base", [0.3, 1.0, 3.0, 10.0])
def test_float32_one_ulp_apart_gives_zero(base):
    """TRL's +1e-4 and verl's +1e-6 guards would give |Â| up to ~0.2 here (see gspo_lab.advantages)."""
    r = torch.full((8,), base, dtype=torch.float32)
    r[0] = torch.nextafter(r[0], torch.tensor(100.0))
    r[3] = torch.nextafter(r[3], torch.tensor(-100.0))
    adv, st = group_advantages(r, 8)
    assert torch.count_nonzero(adv) == 0 and st.zero_std_frac == 1.0


def test_real_small_differences_are_kept():
    """A reward difference well above the tolerance (1e-4 on rewards in [0, 1]) is a real signal: Eq. 6 applies."""
    adv, st = group_advantages(torch.tensor([0.5, 0.5001], dtype=torch.float64), 2)
    assert adv.tolist() == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)])
    assert st.zero_std_frac == 0.0 and ZERO_STD_RTOL < 1e-4


def test_mixed_batch_counts_zero_groups_and_accepts_int_rewards():
    adv, st = group_advantages(torch.tensor([1, 1, 0, 1, 0, 0]), 2)
    assert adv.dtype == torch.float32
    assert adv[:2].tolist() == [0.0, 0.0] and adv[4:].tolist() == [0.0, 0.0]
    assert adv[2:4].tolist() == pytest.approx([-1 / math.sqrt(2), 1 / math.sqrt(2)])
    assert st.zero_std_frac == pytest.approx(2 / 3)
    assert set(st.as_dict()) == {"reward/mean", "reward/std", "adv/zero_std_frac", "adv/absmax"}


@pytest.mark.parametrize(
    "rewards, group_size, kw, exc, match",
    [
        ([1.0, float("nan"), 0.0, 1.0], 2, {}, ValueError, r"rewards must be finite.*NaN/inf"),
        ([1.0, float("inf"), 0.0, 1.0], 2, {}, ValueError, r"rewards must be finite"),
        ([1.0, 0.0, 1.0], 2, {}, ValueError, r"3 entries, not divisible by group_size=2"),
        ([1.0, 0.0], 1, {}, ValueError, r"group_size must be >= 2"),
        ([1.0, 0.0], 2.0, {}, TypeError, r"group_size must be an int"),
        ([[1.0, 0.0]], 2, {}, ValueError, r"rewards must be 1-D"),
        ([1.0, 0.0], 2, {"scale": "mad"}, ValueError, r"scale must be one of"),
        ([1.0, 0.0], 2, {"std_rtol": -1.0}, ValueError, r"std_rtol must be"),
    ],
)
def test_bad_input_names_the_argument(rewards, group_size, kw, exc, match):
    with pytest.raises(exc, match=match):
        group_advantages(torch.tensor(rewards), group_size, **kw)


def test_non_tensor_rewards_rejected():
    with pytest.raises(TypeError, match="rewards must be a torch.Tensor"):
        group_advantages([1.0, 0.0], 2)


def test_token_advantages_redistribute_credit_within_a_response():
    from gspo_lab.advantages import token_advantages

    adv = torch.tensor([1.0, -1.0])
    credit = torch.tensor([[1.0, 0.0, 1.0, 9.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    out = token_advantages(adv, credit, mask, 0.5)
    third = 1 / 3
    want = torch.tensor([[1 + 0.5 * third, 1 - 0.5 * 2 * third, 1 + 0.5 * third, 0.0], [-1.0, -1.0, 0.0, 0.0]])
    assert torch.allclose(out, want.double())
    assert torch.equal(token_advantages(adv, credit, mask, 0.0), adv.double()[:, None].expand(2, 4).where(mask, 0.0))
    with pytest.raises(ValueError, match="weight must be a finite number >= 0"):
        token_advantages(adv, credit, mask, float("nan"))
    with pytest.raises(ValueError, match=r"credit must be a \(B, T\) tensor with B = 2"):
        token_advantages(adv, credit[:1], mask, 1.0)
    with pytest.raises(ValueError, match="credit must be finite"):
        token_advantages(
            adv,
            credit.masked_fill(~mask, 0).index_put_((torch.tensor(0), torch.tensor(0)), torch.tensor(float("inf"))),
            mask,
            1.0,
        )
