"""Between backward and the optimizer step (gspo_lab/grad_shaping.py and its use in step.update): parameter groups,
the relative cap, the direction × norm mix, skipped updates, AdamW's per-coordinate peak — on hand-built tensors and
on short runs of the shipped checkpoints."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from gspo_lab.checkpoints import load_checkpoint
from gspo_lab.config import SMOKE, TrainConfig
from gspo_lab.grad_shaping import (
    GROUPS,
    RELATIVE_CAP_MIN,
    RELATIVE_CAP_WINDOW,
    adam_peaks,
    group_norms,
    mix_direction_norm,
    param_groups,
    relative_cap,
)
from gspo_lab.step import init_state, train_step

MOE = replace(SMOKE, checkpoint="moe-sort", minibatches=4, prompts_per_rollout=4, group_size=4)


@pytest.mark.parametrize("checkpoint, has_router", [("moe-sort", True), ("dense-sort", False)])
def test_every_parameter_in_exactly_one_group(checkpoint, has_router):
    model, _, _ = load_checkpoint(checkpoint)
    groups = param_groups(model)
    assert set(groups) <= set(GROUPS) and ("router" in groups) == has_router
    ids = [id(p) for ps in groups.values() for p in ps]
    assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(set(ids)) == len(ids)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(".mlp." in names[id(p)] and ".mlp.gate." not in names[id(p)] for p in groups["mlp"])
    assert all(names[id(p)].endswith("mlp.gate.weight") for p in groups.get("router", []))


def test_group_norms_compose_the_total_norm():
    model, _, _ = load_checkpoint("moe-sort")
    for i, p in enumerate(model.parameters()):
        p.grad = torch.full_like(p, 0.01 * (i % 5))
    norms = group_norms(param_groups(model))
    total = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in model.parameters()))
    assert math.isclose(math.sqrt(sum(v * v for v in norms.values())), total, rel_tol=1e-9)


def test_relative_cap_is_factor_times_the_recent_median():
    assert relative_cap([1.0] * (RELATIVE_CAP_MIN - 1), 3.0) == math.inf  # too few updates seen: no cap yet
    norms = [100.0] * 10 + [1.0, 2.0, 3.0] * RELATIVE_CAP_WINDOW  # the old spikes left the window
    assert relative_cap(norms, 3.0) == 3.0 * 2.0
    assert relative_cap([4.0] * RELATIVE_CAP_MIN + [math.nan], 2.0) == 8.0  # a non-finite norm is not in the window
    with pytest.raises(ValueError, match="factor must be > 0"):
        relative_cap([1.0] * 20, 0.0)


def test_mix_keeps_the_direction_and_takes_the_other_norm():
    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    a.grad, b.grad = torch.tensor([3.0, 0.0, 0.0]), torch.tensor([0.0, 4.0])  # norm 5
    other = [torch.tensor([0.0, 0.0, 10.0]), torch.tensor([0.0, 0.0])]  # norm 10, orthogonal
    own, norm, cos = mix_direction_norm([a, b], other)
    assert (own, norm, cos) == (5.0, 10.0, 0.0)
    assert torch.equal(a.grad, torch.tensor([6.0, 0.0, 0.0])) and torch.equal(b.grad, torch.tensor([0.0, 8.0]))
    a.grad.zero_(), b.grad.zero_()
    own, norm, cos = mix_direction_norm([a, b], other)
    assert own == 0.0 and math.isnan(cos) and not a.grad.any()  # a zero gradient stays zero
    with pytest.raises(ValueError, match="other_grads must hold one entry per parameter"):
        mix_direction_norm([a, b], other[:1])


def test_adam_peak_is_one_at_the_first_step_and_bounded_later():
    p = torch.nn.Parameter(torch.zeros(4))
    opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.0)
    p.grad = torch.tensor([1.0, -2.0, 0.5, 3.0])
    opt.step()
    assert adam_peaks(opt, {"all": [p]})["all"] == pytest.approx(1.0, rel=1e-6)
    for _ in range(99):
        p.grad = torch.full((4,), 1e-3)
        opt.step()
    p.grad = torch.tensor([1e3, 0.0, 0.0, 0.0])  # a spike at step 101 dominates v
    opt.step()
    bound = math.sqrt((1 - 0.999**101) / (1 - 0.999))
    assert bound * 0.99 < adam_peaks(opt, {"all": [p]})["all"] <= bound


def test_each_update_logs_group_norms_and_adam_peaks():
    rows = train_step(init_state(MOE))
    for row in rows:
        assert set(f"grad/norm_{g}" for g in GROUPS) <= set(row) and set(f"adam/peak_{g}" for g in GROUPS) <= set(row)
        assert math.isclose(math.sqrt(sum(row[f"grad/norm_{g}"] ** 2 for g in GROUPS)), row["grad/norm"], rel_tol=1e-5)
        assert row["grad/skipped"] == 0.0 and row["grad/clipped"] == float(row["grad/norm"] > 1.0)
    assert rows[0]["adam/peak_mlp"] == pytest.approx(1.0, rel=1e-4)  # the first step of a fresh AdamW


def test_direction_norm_mix_in_the_loop():
    """GRPO's direction at GSPO's norm: on-policy (k = 0) the two gradients coincide (paper §4.2's corollary), so the
    mix is the identity; off-policy the applied norm is GSPO's and the cosine below 1."""
    rows = train_step(init_state(replace(MOE, objective="grpo", norm_of="gspo", grad_clip=None)))
    first, later = rows[0], rows[1:]
    assert first["grad/cos_other"] == pytest.approx(1.0, abs=1e-6)
    assert first["grad/norm_own"] == pytest.approx(first["grad/norm_other"], rel=1e-5)
    for row in later:
        assert row["grad/norm"] == pytest.approx(row["grad/norm_other"], rel=1e-5)
    assert any(row["grad/norm_own"] != pytest.approx(row["grad/norm_other"], rel=1e-3) for row in later)


def test_a_skipped_update_leaves_parameters_and_adam_untouched():
    state = init_state(replace(MOE, grad_skip=1e-12, grad_clip=None))
    before = {k: v.clone() for k, v in state.model.state_dict().items()}
    rows = train_step(state)
    assert all(r["grad/skipped"] == 1.0 and "adam/peak_mlp" not in r for r in rows)
    assert all(torch.equal(v, before[k]) for k, v in state.model.state_dict().items())
    assert not state.optimizer.state  # no moments were ever written
    assert state.scheduler.last_epoch == len(rows)  # the schedule still advanced


def test_relative_cap_binds_in_the_loop():
    cfg = replace(MOE, grad_clip=None, grad_clip_rel=0.05, rollouts=6)  # a twentieth of the median: binds most updates
    state = init_state(cfg)
    for _ in range(cfg.rollouts):
        train_step(state)
    norms = [r["grad/norm"] for r in state.history]
    for i, row in enumerate(state.history):
        cap = relative_cap(norms[:i], 0.05)
        assert row["grad/clipped"] == float(row["grad/norm"] > cap)
    assert all(r["grad/clipped"] == 0.0 for r in state.history[:RELATIVE_CAP_MIN])
    assert sum(r["grad/clipped"] for r in state.history[RELATIVE_CAP_MIN:]) > 0


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("norm_of", "grpo", "norm_of must name another objective"),
        ("norm_of", "gspo_token", "norm_of must name another objective"),
        ("norm_of", "nope", "objective must be one of"),
        ("grad_skip", 0.0, "grad_skip must be a finite number > 0"),
        ("grad_clip_rel", math.inf, "grad_clip_rel must be a finite number > 0"),
    ],
)
def test_bad_shaping_config(field, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(objective="grpo", **{field: value})
    with pytest.raises(ValueError, match="norm_of needs beta = 0"):
        TrainConfig(objective="grpo", norm_of="gspo", beta=0.1)


# --- issue 22, item 4: what a spike does instead of being skipped, and plain SGD --------------------------------


def _adam_after_one_step(mode: str | None):
    """A 2-parameter AdamW after a first ordinary step, then a spike under ``mode`` (None: an ordinary step)."""
    from gspo_lab.grad_shaping import spike_step

    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = torch.optim.AdamW([w], lr=0.1, weight_decay=0.0)
    w.grad = torch.tensor([0.1, 0.2])
    opt.step()
    before = {k: v.clone() for k, v in opt.state[w].items()}
    w0 = w.detach().clone()
    w.grad = torch.tensor([30.0, -40.0])  # the spike: norm 50
    if mode is None:
        opt.step()
    else:
        spike_step(opt, [w], mode, seed=7)
    return w0, w.detach().clone(), before, {k: v.clone() for k, v in opt.state[w].items()}, w.grad


def test_state_only_moves_adams_moments_not_the_parameters():
    w0, w1, before, after, _ = _adam_after_one_step("state_only")
    assert torch.equal(w0, w1)
    assert not torch.equal(before["exp_avg"], after["exp_avg"]) and float(after["step"]) == 2.0
    _, _, _, plain, _ = _adam_after_one_step(None)
    assert torch.equal(plain["exp_avg"], after["exp_avg"]) and torch.equal(plain["exp_avg_sq"], after["exp_avg_sq"])


def test_step_only_moves_the_parameters_as_adam_would_and_leaves_no_trace_in_its_state():
    w0, w1, before, after, _ = _adam_after_one_step("step_only")
    _, w_plain, _, _, _ = _adam_after_one_step(None)
    assert torch.equal(w1, w_plain) and not torch.equal(w0, w1)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_reset_takes_adams_step_then_zeroes_its_moments():
    _, w1, _, after, _ = _adam_after_one_step("reset")
    _, w_plain, _, _, _ = _adam_after_one_step(None)
    assert torch.equal(w1, w_plain)  # the spike's step as AdamW takes it
    assert float(after["step"]) == 0.0 and not after["exp_avg"].any() and not after["exp_avg_sq"].any()


def test_random_keeps_the_norm_and_draws_the_same_direction_for_the_same_seed():
    _, w1, _, _, grad = _adam_after_one_step("random")
    assert float(grad.norm()) == pytest.approx(50.0, rel=1e-6)
    assert not torch.allclose(grad / 50, torch.tensor([0.6, -0.8]), atol=1e-3)
    _, w2, _, _, _ = _adam_after_one_step("random")
    assert torch.equal(w1, w2)
    with pytest.raises(ValueError, match="mode must be one of"):
        from gspo_lab.grad_shaping import spike_step

        spike_step(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1), [], "skip", 0)


def test_spike_modes_in_the_loop_log_every_spike_and_never_skip():
    for mode in ("state_only", "step_only", "reset", "random"):
        state = init_state(replace(MOE, grad_skip=1e-12, grad_clip=None, spike=mode))
        before = {k: v.clone() for k, v in state.model.state_dict().items()}
        rows = train_step(state)
        assert all(r["grad/spike"] == 1.0 and r["grad/skipped"] == 0.0 for r in rows), mode
        moved = any(not torch.equal(v, before[k]) for k, v in state.model.state_dict().items())
        assert moved == (mode != "state_only"), mode
        assert bool(state.optimizer.state) == (mode != "step_only"), mode  # step_only leaves no state behind


@pytest.mark.filterwarnings(r"ignore:Seems like `optimizer.step\(\)` has been overridden")
def test_plain_sgd_steps_by_lr_times_the_gradient():
    state = init_state(replace(MOE, optimizer="sgd", grad_clip=None, minibatches=1, lr=1e-3))
    assert isinstance(state.optimizer, torch.optim.SGD) and state.optimizer.defaults["momentum"] == 0.0
    before = {n: p.detach().clone() for n, p in state.model.named_parameters()}
    grads = {}
    original = state.optimizer.step

    def spy(*a, **k):
        grads.update({n: p.grad.clone() for n, p in state.model.named_parameters() if p.grad is not None})
        return original(*a, **k)

    state.optimizer.step = spy
    rows = train_step(state)
    assert "adam/peak_mlp" not in rows[0]
    for n, p in state.model.named_parameters():
        if n in grads:
            assert torch.allclose(p.detach(), before[n] - 1e-3 * grads[n], atol=1e-7), n


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"spike": "x", "grad_skip": 10.0}, "spike must be one of"),
        ({"spike": "reset"}, "needs grad_skip"),
        ({"spike": "reset", "grad_skip": 10.0, "optimizer": "sgd"}, "acts on AdamW's state"),
        ({"optimizer": "adam"}, "optimizer must be 'adamw' or 'sgd'"),
    ],
)
def test_bad_spike_or_optimizer_config(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(objective="grpo", **kw)


def test_the_new_fields_leave_every_stored_key_alone():
    from gspo_lab.experiments.spec import cell_key

    cfg = TrainConfig(objective="grpo")
    assert cell_key(cfg) == cell_key(replace(cfg, spike=None, optimizer="adamw"))
    assert cell_key(cfg) != cell_key(replace(cfg, optimizer="sgd"))
