"""Bad input to the objectives raises ValueError/TypeError naming the argument and what was expected."""

from __future__ import annotations

import pytest
import torch

from gspo_lab import OBJECTIVES, get_objective


def good(B=4, T=5):
    g = torch.Generator().manual_seed(0)
    logp = -torch.rand(B, T, generator=g)
    return dict(logp=logp, old_logp=logp + 0.01, adv=torch.tensor([1.0, -1.0, 0.5, -0.5]), mask=torch.ones(B, T))


def call(name, **override):
    args = good()
    kw = {k: override.pop(k) for k in list(override) if k.startswith("eps") or k == "norm_len"}
    args.update(override)
    return get_objective(name)(args["logp"], args["old_logp"], args["adv"], args["mask"], **kw)


NAN_LOGP = good()["logp"].clone()
NAN_LOGP[1, 2] = float("nan")
INF_OLD = good()["old_logp"].clone()
INF_OLD[0, 0] = float("-inf")

CASES = [
    # (override, exception, message pattern)
    (dict(old_logp=torch.zeros(4, 6)), ValueError, r"old_logp must have the shape of logp \(4, 5\), got \(4, 6\)"),
    (dict(mask=torch.ones(4, 4)), ValueError, r"mask must have shape \(B, T\) = \(4, 5\), got \(4, 4\)"),
    (dict(mask=torch.full((4, 5), 0.5)), ValueError, r"mask must hold only 0/1 values"),
    (dict(mask=torch.full((4, 5), 2)), ValueError, r"mask must hold only 0/1 values, found e.g. \[2, 2, 2\]"),
    (dict(mask=[[1] * 5] * 4), TypeError, r"mask must be a torch.Tensor"),
    (dict(adv=torch.ones(3)), ValueError, r"adv must have shape .*\(B, T\) = \(4, 5\), got \(3,\)"),
    (dict(adv=torch.ones(4, 1, 1)), ValueError, r"adv must be 1-D or 2-D"),
    (dict(eps_low=0.0), ValueError, r"eps_low must lie in \(0, 1\)"),
    (dict(eps_low=1.0), ValueError, r"eps_low must lie in \(0, 1\)"),
    (dict(eps_low=-0.1), ValueError, r"eps_low must lie in \(0, 1\)"),
    (dict(eps_high=0.0), ValueError, r"eps_high must be > 0"),
    (dict(eps_high=float("nan")), ValueError, r"eps_high must be finite"),
    (dict(eps_low="0.2"), TypeError, r"eps_low must be a real number"),
    (dict(logp=NAN_LOGP), ValueError, r"logp must be finite at valid \(mask = 1\) positions; found 1 NaN/inf"),
    (dict(old_logp=INF_OLD), ValueError, r"old_logp must be finite at valid"),
    (dict(adv=torch.tensor([1.0, float("nan"), 0.0, 0.0])), ValueError, r"adv must be finite"),
    (dict(logp=torch.zeros(4, 5, dtype=torch.int64)), TypeError, r"logp must have a floating dtype"),
    (dict(adv=torch.tensor([1, -1, 0, 0])), TypeError, r"adv must have a floating dtype"),
    (dict(mask=torch.ones(4, 5, dtype=torch.complex64)), TypeError, r"mask must be bool, integer or floating"),
    (dict(logp=torch.zeros(20)), ValueError, r"logp must be 2-D, got shape \(20,\)"),
    (dict(logp=[[0.0]]), TypeError, r"logp must be a torch.Tensor"),
    (
        dict(logp=torch.zeros(0, 5), old_logp=torch.zeros(0, 5), mask=torch.ones(0, 5), adv=torch.ones(0)),
        ValueError,
        r"at least one response",
    ),
]


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize("override, exc, match", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(name, override, exc, match):
    with pytest.raises(exc, match=match):
        call(name, **dict(override))


@pytest.mark.parametrize("name", ["gspo", "gspo_token_mean"])
def test_sequence_objectives_refuse_per_token_advantages(name):
    with pytest.raises(ValueError, match=r"one Â_i per response; per-token Â needs gspo_token"):
        call(name, adv=torch.ones(4, 5))


def test_const_norm_length_checked():
    with pytest.raises(ValueError, match="norm_len must be a positive int"):
        call("grpo_const_norm", norm_len=0)


def test_unknown_objective_lists_the_names():
    with pytest.raises(ValueError, match=r"objective must be one of \[.*'gspo'.*\], got 'gpso'"):
        get_objective("gpso")


def test_padding_may_hold_nan_and_inf():
    """Padded positions are never read: NaN there is fine (and changes nothing)."""
    args = good()
    mask = torch.ones(4, 5)
    mask[:, 3:] = 0
    clean = get_objective("gspo")(args["logp"], args["old_logp"], args["adv"], mask)[0]
    dirty_logp = args["logp"].clone()
    dirty_logp[:, 3:] = float("nan")
    dirty_old = args["old_logp"].clone()
    dirty_old[:, 4] = float("inf")
    dirty = get_objective("gspo")(dirty_logp, dirty_old, args["adv"], mask)[0]
    assert torch.equal(clean, dirty)
