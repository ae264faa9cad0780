"""The successors' design space (gspo_lab/design.py, notebook 06): every preset equals its library objective, the axes
do what the docstring says, bad input gets a clear error, and the panel's twin rebuilds each preset from its labels."""

from __future__ import annotations

import math

import pytest
import torch

from gspo_lab.design import BOUNDS, COMBINATIONS, PRESETS, Design, design_objective, preset_gap, readout, token_weights
from gspo_lab.objectives import OBJECTIVES, get_objective
from gspo_lab.widgets.design import PARAMS, DesignBatch, controls_of, design_batch, design_from, design_view


def _batch(scale: float, seed: int = 0, B: int = 12, T: int = 9):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T, dtype=torch.bool)
    for i in range(B):
        mask[i, 2 + i % (T - 2) :] = False
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    logp = old + torch.randn(B, T, generator=g, dtype=torch.float64) * scale
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    return logp, old, adv, mask


@pytest.mark.parametrize("scale", [1e-4, 3e-3, 0.1, 0.5, 2.0])
def test_every_preset_equals_its_library_objective_in_loss_gradient_and_clip_statistics(scale):
    gaps = preset_gap(*_batch(scale, seed=int(scale * 1e4) % 97))
    assert set(gaps) == set(PRESETS)
    assert max(gaps.values()) <= 1e-12, gaps


def test_every_successor_in_the_registry_has_a_preset_and_each_preset_a_registry_objective():
    named = {p.objective for p in PRESETS.values()}
    assert named <= set(OBJECTIVES)
    assert {"grpo", "grpo_dual_clip", "gspo", "gspo_token", "cispo", "cispo_clip", "cispo_mask", "sapo", "gmpo",
            "vespo", "luspo"} <= named  # fmt: skip


def test_a_preset_mutated_off_its_point_is_caught():
    """preset_gap can fail: GSPO's point with GRPO's ε is not GSPO."""
    from dataclasses import replace

    logp, old, adv, mask = _batch(0.01)
    wrong = replace(PRESETS["GSPO"].design, eps_low=0.2, eps_high=0.27)
    a, _ = wrong(logp, old, adv, mask)
    b, _ = get_objective("gspo")(logp, old, adv, mask)
    assert abs(a.item() - b.item()) > 1e-6


def test_on_policy_every_point_weighs_every_token_one():
    logp, old, adv, mask = _batch(0.3)
    for combine in COMBINATIONS:
        for bound in BOUNDS:
            label = next(iter(dict(PARAMS[bound])))
            w, defined = token_weights(design_from(combine, bound, label, "seq_mean_token_mean", False), old, old,
                                       adv, mask)  # fmt: skip
            assert torch.allclose(w[defined], torch.ones_like(w[defined])), (combine, bound)


def test_a_sequence_combination_gives_every_token_of_a_response_one_weight_and_a_token_one_its_own():
    logp, old, adv, mask = _batch(0.05)
    for combine, shared in (("geometric", True), ("product", True), ("token", False)):
        w, defined = token_weights(Design(combine, "none"), logp, old, adv, mask)
        spread = max(float(w[i][defined[i]].std()) for i in range(w.shape[0]) if defined[i].sum() > 1)
        assert (spread < 1e-9) == shared, (combine, spread)


def test_each_combination_reads_the_tokens_its_docstring_names():
    """prefix: the running sum of log w up to each token; geometric: the response's mean; product: its sum; 0 at
    padding."""
    from gspo_lab.design import combined_log_ratio

    log_w = torch.tensor([[0.1, -0.2, 0.3, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False]])
    assert combined_log_ratio(log_w, mask, "prefix")[0].tolist() == pytest.approx([0.1, -0.1, 0.2, 0.0])
    assert combined_log_ratio(log_w, mask, "geometric")[0].tolist() == pytest.approx([0.2 / 3] * 3 + [0.0])
    assert combined_log_ratio(log_w, mask, "product")[0].tolist() == pytest.approx([0.2] * 3 + [0.0])


def test_hard_bounds_zero_gradients_and_soft_ones_never_do():
    logp, old, adv, mask = _batch(0.5)
    zero = {}
    for name in ("GRPO", "CISPO + mask (MiniMax-M1)", "CISPO (TRL)", "SAPO", "VESPO"):
        w, defined = token_weights(PRESETS[name].design, logp, old, adv, mask)
        zero[name] = bool((w[defined] == 0).any())
    assert zero == {"GRPO": True, "CISPO + mask (MiniMax-M1)": True, "CISPO (TRL)": False, "SAPO": False,
                    "VESPO": False}  # fmt: skip


def test_readout_counts_out_of_band_tokens_and_says_none_when_no_token_is_outside():
    logp, old, adv, mask = _batch(0.5)
    r = readout(PRESETS["CISPO (TRL)"].design, logp, old, adv, mask)
    assert r["outside"] > 0 and r["kept"] == 1.0 and r["clip_token_frac"] == 0.0
    g = readout(PRESETS["GRPO"].design, logp, old, adv, mask)
    assert 0 < g["kept"] < 1 and g["clip_token_frac"] > 0
    assert readout(PRESETS["GRPO"].design, old, old, adv, mask)["kept"] is None  # on-policy: nothing outside


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"combine": "mean"}, "combine must be one of"),
        ({"bound": "soft"}, "bound must be one of"),
        ({"aggregation": "sum"}, "aggregation must be one of"),
        ({"cap_low": 2.0, "cap_high": 1.0}, "cap_low and cap_high must satisfy"),
        ({"tau": (1.0, 0.0)}, "tau must be two numbers > 0"),
        ({"floor_c": 1.1}, "floor_c must be None or a number > 1 \\+ eps_high"),
    ],
)
def test_a_bad_design_gets_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Design(**kwargs)


def test_bad_input_to_the_objective_and_the_twin_gets_a_clear_error():
    logp, old, adv, mask = _batch(0.1)
    with pytest.raises(TypeError, match="design must be a gspo_lab.design.Design"):
        design_objective(logp, old, adv, mask, "gspo")
    with pytest.raises(ValueError, match="logp must"):
        Design()(logp[0], old, adv, mask)
    with pytest.raises(ValueError, match="param for bound 'clip' must be one of"):
        design_from("token", "clip", "0.3/0.4", "token_mean", False)
    with pytest.raises(ValueError, match="bound must be one of"):
        design_from("token", "hard", "—", "token_mean", False)
    nan = logp.clone()
    nan[0, 0] = math.nan
    with pytest.raises(ValueError, match="logp"):
        Design()(nan, old, adv, mask)


def test_every_preset_sits_on_the_panels_grid():
    for name, p in PRESETS.items():
        assert design_from(*controls_of(name)) == p.design, name


def test_the_twin_reads_out_the_point_and_names_the_presets_it_equals():
    logp, old, adv, mask = _batch(0.3)
    batch = DesignBatch(logp, old, adv, mask, k=1)
    fig, text = design_view(batch, *controls_of("GSPO"))
    assert text.startswith("geometric × clip (3e-4/4e-4), seq_mean_token_mean = GSPO, GSPO-token: ")
    assert text.endswith("minibatch gradient relative variance —")  # no trace: not measured, said so
    _, other = design_view(batch, "prefix", "clip", "0.2/0.27", "seq_mean_token_mean", False)
    assert " = " not in other.split(":")[0]


def test_design_batch_checks_its_update():
    trace = type("T", (), {"K": 3, "train": None})()
    with pytest.raises(ValueError, match="k must be an update of the trace, 1..3, got 0"):
        design_batch(trace, 0)
