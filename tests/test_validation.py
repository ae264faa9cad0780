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
    if get_objective(name).clip is None and any(k.startswith("eps") for k in override):
        exc, match = ValueError, r"has no clip range .* eps_low and eps_high must be None"  # sapo, vespo: no ε at all
    with pytest.raises(exc, match=match):
        call(name, **dict(override))


SUCCESSOR_CASES = [
    ("sapo", dict(tau_pos=0.0), r"tau_pos must be a finite number > 0"),
    ("sapo", dict(tau_neg=float("inf")), r"tau_neg must be a finite number > 0"),
    ("vespo", dict(shape=(2.0, 3.0, 3.0)), r"shape must be \(k_pos, lambda_pos, k_neg, lambda_neg\)"),
    ("vespo", dict(shape=(2.0, -3.0, 3.0, 2.0)), r"lambda_pos must be a finite number > 0"),
    ("vespo", dict(sampler_ratio=torch.ones(4, 1)), r"vespo folds a per-token sampler_ratio \(B, T\)"),
    ("grpo", dict(sampler_ratio=torch.ones(4, 6)), r"sampler_ratio must have shape \(B, T\), \(B, 1\) or \(B,\)"),
    ("gspo", dict(sampler_ratio=-torch.ones(4, 5)), r"sampler_ratio must be >= 0"),
    ("cispo", dict(sampler_ratio=torch.full((4, 5), float("inf"))), r"sampler_ratio must be finite"),
    ("sapo", dict(seq_keep=torch.ones(3)), r"seq_keep must have shape \(B,\) = \(4,\)"),
]


@pytest.mark.parametrize("name, kw, match", SUCCESSOR_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SUCCESSOR_CASES)])
def test_bad_successor_and_correction_arguments(name, kw, match):
    args = good()
    with pytest.raises(ValueError, match=match):
        get_objective(name)(args["logp"], args["old_logp"], args["adv"], args["mask"], **kw)


@pytest.mark.parametrize(
    "mode, lo, hi, match",
    [("token", None, 3.0, r"mode must be one of"),
     ("token_mask", None, None, r"clip_max must be a finite number > 0"),
     ("token_mask", None, float("inf"), r"clip_max must be a finite"),
     ("sequence_mask", 3.0, 2.0, r"clip_min must be")],
)  # fmt: skip
def test_bad_correction_settings(mode, lo, hi, match):
    from gspo_lab.corrections import sampler_ratio

    args = good()
    with pytest.raises(ValueError, match=match):
        sampler_ratio(args["old_logp"], args["logp"], args["mask"], mode, lo, hi)


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


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(objective="sapo", eps_low=0.1), r"objective 'sapo' has no clip range"),
        (dict(sampler_correction="token_mask", old_logp="sampler"), r"sampler_correction needs old_logp='recompute'"),
        (dict(objective="vespo", sampler_correction="sequence_mask"), r"vespo folds a per-token ρ"),
        (dict(sampler_correction="token_trunc"), r"mode must be one of"),
        (dict(sampler_clip_max=2.0), r"bounds of sampler_correction, which is off"),
        (dict(sampler_correction="token_mask", sampler_clip_min=2.0, sampler_clip_max=1.5), r"clip_min must be"),
        (dict(sampler_precision="fp16"), r"sampler_precision must be one of"),
        (dict(opsm_threshold=float("nan")), r"opsm_threshold must be a finite number"),
    ],
)
def test_train_config_refuses_bad_successor_settings(kw, match):
    from gspo_lab.config import TrainConfig

    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


def test_new_config_fields_leave_every_stored_key_unchanged():
    """The correction fields enter a cell's key only when set (the stored results stay addressable)."""
    from dataclasses import replace

    from gspo_lab.config import TrainConfig
    from gspo_lab.experiments.spec import cell_key

    cfg = TrainConfig()
    assert cell_key(cfg) == cell_key(replace(cfg, sampler_precision="fp32", sampler_correction=None))
    assert cell_key(cfg) != cell_key(replace(cfg, sampler_precision="bf16"))
    assert cell_key(cfg) != cell_key(replace(cfg, opsm_threshold=0.5))
