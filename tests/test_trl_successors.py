"""GSPO's successors and the sampler–trainer corrections agree with TRL 1.16's own ``_compute_loss``.

The TRL side is the real ``GRPOTrainer._compute_loss`` of the real trainer that tests/test_trl_agreement.py builds
(tiny float64 Qwen3, word-level tokenizer, no hub), with only ``_get_per_token_logps_and_entropies`` replaced by our
float64 leaf ``logp``; GMPO's is the real ``trl.experimental.gmpo.GMPOTrainer._compute_loss`` on a bare object (no
model: TRL's experimental trainer reads only the attributes set below). Compared, within 1e-6 in float64 on several
seeds, with an empty row, length-1 rows, junk at padding, an exactly-zero advantage and a zero-std group of
advantages: the loss, its gradient w.r.t. ``logp`` (padding included) and the metric TRL logs.

Kit ↔ TRL, with what the kit sets so that TRL's normaliser is the kit's:
    cispo ↔ loss_type="cispo" (epsilon_high = ε_max), num_items_in_batch = Σ mask, GA = steps_per_generation = 1;
    sapo ↔ "sapo"; luspo ↔ "luspo" + "sequence"; vespo ↔ "vespo" (num_items as cispo); gmpo ↔ GMPOTrainer.
Corrections: ρ from :func:`gspo_lab.corrections.sampler_ratio` goes in as ``inputs["importance_sampling_ratio"]``
with ``use_vllm = vllm_importance_sampling_correction = True`` (TRL computes ρ only with vLLM; the multiplication,
and VESPO's folding of ρ into W, are TRL's); OPSM ↔ ``off_policy_mask_threshold`` with
``inputs["sampling_per_token_logps"]``. ``pytest -s`` prints the differences.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from test_trl_agreement import LENGTHS, SEEDS, TOL, B, T, _fake_logps, _inputs, trainer  # noqa: F401 (fixture)

from gspo_lab.corrections import MODES, off_policy_keep, sampler_ratio
from gspo_lab.objectives import cispo, gamma_weights, gmpo, grpo, gspo, luspo, sapo, vespo
from gspo_lab.ratios import tok_log_ratio


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    level: str
    loss_type: str
    ours: object
    eps: tuple[float, float] | None  # (TRL epsilon_low, epsilon_high) = ours; None: the objective has no ε
    args: tuple = ()  # extra GRPOConfig fields, (name, value) pairs
    metric: str = ""  # the TRL metric compared, "" = none


CASES = (
    Case("cispo-cap1.2", "token", "cispo", cispo, (0.2, 1.2), metric="cispo_clip_ratio"),
    Case("cispo-trl-fallback-0.2", "token", "cispo", cispo, (0.2, 0.2), metric="cispo_clip_ratio"),
    Case("sapo-default", "token", "sapo", sapo, None),
    Case("sapo-tau0.5-2", "token", "sapo", functools.partial(sapo, tau_pos=0.5, tau_neg=2.0), None,
         (("sapo_temperature_pos", 0.5), ("sapo_temperature_neg", 2.0))),
    Case("luspo-sequence", "sequence", "luspo", luspo, (2e-3, 2.5e-3), metric="clip_ratio"),
    Case("vespo-default", "token", "vespo", vespo, None, metric="vespo/phi_seq_mean"),
    Case("vespo-shape", "token", "vespo", functools.partial(vespo, shape=(1.5, 4.0, 2.5, 0.5)), None,
         (("vespo_k_pos", 1.5), ("vespo_lambda_pos", 4.0), ("vespo_k_neg", 2.5), ("vespo_lambda_neg", 0.5)),
         metric="vespo/phi_seq_mean"),
)  # fmt: skip


def _data(seed: int) -> dict:
    """tests/test_trl_agreement.py's inputs plus an exactly-zero advantage, a zero-std group and the sampler."""
    data = _inputs(seed)
    adv = data["advantages"].clone()
    adv[6:8] = 0.0  # a zero-std group's rows: Â exactly 0 (VESPO's ≥ 0 and SAPO's > 0 sign rules meet here)
    data["advantages"] = adv
    g = torch.Generator().manual_seed(100 + seed)
    noise = 0.05 * torch.randn(B, T, generator=g, dtype=torch.float64)
    data["sampling_per_token_logps"] = data["old_per_token_logps"] + noise
    data["num_items_in_batch"] = data["completion_mask"].sum()
    return data


def _configure(trl, monkeypatch, *, level, loss_type, eps, args=(), use_vllm=False, opsm=None, logp=None):
    eps_low, eps_high = eps if eps is not None else (0.2, 0.2)  # unused by TRL's sapo / vespo
    attrs = dict(importance_sampling_level=level, loss_type=loss_type, epsilon_low=eps_low, epsilon_high=eps_high,
                 current_gradient_accumulation_steps=1, use_vllm=use_vllm,
                 vllm_importance_sampling_correction=use_vllm, off_policy_mask_threshold=opsm)  # fmt: skip
    for name, value in attrs.items():
        monkeypatch.setattr(trl, name, value, raising=False)
    for name, value in (("delta", None), ("steps_per_generation", 1), *args):
        monkeypatch.setattr(trl.args, name, value)
    monkeypatch.setattr(trl, "_get_per_token_logps_and_entropies", _fake_logps(logp))
    trl._metrics["train"].clear()


def _trl(trl, monkeypatch, data, inputs_extra=None, **cfg):
    logp = data["logp"].clone().requires_grad_(True)
    _configure(trl, monkeypatch, logp=logp, **cfg)
    inputs = {k: v for k, v in data.items() if k not in ("logp", "sampling_per_token_logps")}
    inputs.update(inputs_extra or {})
    loss = trl._compute_loss(trl.model, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    metrics = {k: v[-1] for k, v in trl._metrics["train"].items()}
    return loss.detach(), grad, metrics


def _ours(fn, data, eps, **kw):
    logp = data["logp"].clone().requires_grad_(True)
    eps_kw = dict(eps_low=eps[0], eps_high=eps[1]) if eps is not None else {}
    loss, stats = fn(logp, data["old_per_token_logps"], data["advantages"], data["completion_mask"], **eps_kw, **kw)
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, stats


def _close(name, ours, theirs):
    (l1, g1), (l2, g2) = ours, theirs
    print(f"\n[trl-successors] {name}: loss={l1.item():+.6f} |dloss|={(l1 - l2).abs().item():.2e} "
          f"max|dgrad|={(g1 - g2).abs().max().item():.2e}")  # fmt: skip
    torch.testing.assert_close(l1, l2, rtol=TOL, atol=TOL)
    torch.testing.assert_close(g1, g2, rtol=TOL, atol=TOL)


def _our_metric(case: Case, stats, data) -> float:
    if case.metric == "cispo_clip_ratio":
        return stats.clip_token_frac_high
    if case.metric == "clip_ratio":
        return stats.clip_seq_frac
    log_w = tok_log_ratio(data["logp"], data["old_per_token_logps"], data["completion_mask"].bool())
    shape = case.ours.keywords["shape"] if isinstance(case.ours, functools.partial) else (2.0, 3.0, 3.0, 2.0)
    return gamma_weights(log_w, data["advantages"], data["completion_mask"].bool(), shape=shape).mean().item()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_successor_matches_trl(trainer, monkeypatch, case, seed):  # noqa: F811
    data = _data(seed)
    theirs = _trl(trainer, monkeypatch, data, level=case.level, loss_type=case.loss_type, eps=case.eps,
                  args=case.args)  # fmt: skip
    ours = _ours(case.ours, data, case.eps)
    _close(f"{case.id} seed={seed}", ours[:2], theirs[:2])
    assert bool((ours[1][~data["completion_mask"].bool()] == 0).all())  # padding junk never gets a gradient
    if case.metric:
        key = "clip_ratio/region_mean" if case.metric == "clip_ratio" else case.metric
        assert _our_metric(case, ours[2], data) == pytest.approx(theirs[2][key], rel=1e-6, abs=1e-7), key
    if case.metric in ("cispo_clip_ratio", "clip_ratio"):  # the case exercises the cap / clip
        assert 0.0 < theirs[2][key] < 1.0


# --- sampler–trainer corrections: ρ multiplied inside TRL's _compute_loss ------------------------------------------

BOUNDS = {"token": (0.96, 1.04), "sequence": (0.85, 1.15)}  # narrow enough that every mode masks or truncates
CORRECTED = (("grpo", "token", "grpo", grpo, (0.2, 0.27)),
             ("gspo", "sequence", "grpo", gspo, (3e-4, 4e-4)),
             ("cispo", "token", "cispo", cispo, (0.2, 5.0)), ("sapo", "token", "sapo", sapo, None),
             ("luspo", "sequence", "luspo", luspo, (2e-3, 2.5e-3)),
             ("vespo", "token", "vespo", vespo, None))  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("objective", CORRECTED, ids=lambda c: c[0])
def test_sampler_correction_matches_trl(trainer, monkeypatch, objective, mode, seed):  # noqa: F811
    name, level, loss_type, fn, eps = objective
    if name == "vespo" and mode.startswith("sequence"):
        pytest.skip("TRL raises for vespo with a sequence mode (grpo_trainer.py:936-941); so does TrainConfig")
    data = _data(seed)
    lo, hi = BOUNDS[mode.split("_")[0]]
    rho = sampler_ratio(data["old_per_token_logps"], data["sampling_per_token_logps"], data["completion_mask"],
                        mode, lo, hi)  # fmt: skip
    valid = data["completion_mask"].bool() if mode.startswith("token") else data["completion_mask"].bool().any(-1)
    units = rho.squeeze(-1)[valid]
    at_bound = torch.isclose(units, torch.tensor(lo, dtype=units.dtype)) | torch.isclose(
        units, torch.tensor(hi).double()
    )
    changed = (units == 0) if mode.endswith("mask") else at_bound
    assert changed.any() and not changed.all(), "the bounds must act on some units and not on others"
    theirs = _trl(trainer, monkeypatch, data, {"importance_sampling_ratio": rho}, level=level, loss_type=loss_type,
                  eps=eps, use_vllm=True)  # fmt: skip
    ours = _ours(fn, data, eps, sampler_ratio=rho)
    _close(f"{name} {mode} seed={seed}", ours[:2], theirs[:2])
    plain = _ours(fn, data, eps)
    assert (plain[0] - ours[0]).abs() > 1e-6, "the correction must change the loss for the case to test it"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", CORRECTED, ids=lambda c: c[0])
def test_opsm_matches_trl(trainer, monkeypatch, objective, seed):  # noqa: F811
    name, level, loss_type, fn, eps = objective
    data = _data(seed)
    delta = 0.0
    keep = off_policy_keep(data["advantages"], data["logp"], data["sampling_per_token_logps"],
                           data["completion_mask"], delta)  # fmt: skip
    assert 0 < int((keep == 0).sum()) < B, "OPSM must drop some responses and keep others"
    extra = {"sampling_per_token_logps": data["sampling_per_token_logps"]}
    theirs = _trl(trainer, monkeypatch, data, extra, level=level, loss_type=loss_type, eps=eps, opsm=delta)
    ours = _ours(fn, data, eps, seq_keep=keep)
    _close(f"{name} opsm seed={seed}", ours[:2], theirs[:2])


# --- GMPO: TRL's experimental trainer ------------------------------------------------------------------------------


class _OneProcess:
    """accelerate.Accelerator's collectives as the identity (one process)."""

    num_processes, sync_gradients = 1, True
    reduce = staticmethod(lambda t, reduction="sum": t)
    gather = gather_for_metrics = staticmethod(lambda t: t)


def _gmpo_trl(data, eps):
    from trl.experimental.gmpo import GMPOTrainer

    tr = object.__new__(GMPOTrainer)  # no __init__: no model, tokenizer or dataset
    tr.accelerator, tr.model = _OneProcess(), SimpleNamespace(training=True)
    tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    tr.top_entropy_quantile, tr.beta, tr.current_gradient_accumulation_steps = 1.0, 0.0, 1
    tr.epsilon_low, tr.epsilon_high = eps
    logp = data["logp"].clone().requires_grad_(True)
    tr._get_per_token_logps_and_entropies = _fake_logps(logp)
    inputs = {k: v for k, v in data.items() if k not in ("logp", "sampling_per_token_logps")}
    loss = tr._compute_loss(tr.model, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, {k: v[-1] for k, v in tr._metrics["train"].items()}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("eps", [(0.4, 0.4), (0.1, 0.2)])
def test_gmpo_matches_trl_experimental(seed, eps):
    data = _data(seed)
    empty = data["completion_mask"].sum(-1) == 0
    data["advantages"] = data["advantages"].where(~empty, torch.zeros((), dtype=torch.float64))  # see below
    theirs = _gmpo_trl(data, eps)
    ours = _ours(gmpo, data, eps)
    _close(f"gmpo eps={eps} seed={seed}", ours[:2], theirs[:2])
    for ours_key, trl_key in (("clip_token_frac", "region"), ("clip_token_frac_low", "low"),
                              ("clip_token_frac_high", "high")):  # fmt: skip
        assert getattr(ours[2], ours_key) == pytest.approx(theirs[2][f"clip_ratio/{trl_key}_mean"], abs=1e-7)
    assert 0 < theirs[2]["clip_ratio/region_mean"] < 1


def test_gmpo_differs_from_trl_on_an_empty_response_only():
    """TRL's GMPO counts an empty response as −Â_i (its weight exp(0) = 1); the kit, as every objective here, as 0."""
    data = _data(0)
    empty = data["completion_mask"].sum(-1) == 0
    assert int(empty.sum()) == 1 and data["advantages"][empty].abs().item() > 0.1
    (l_trl, g_trl, _), (l_ours, g_ours, _) = _gmpo_trl(data, (0.4, 0.4)), _ours(gmpo, data, (0.4, 0.4))
    torch.testing.assert_close(l_trl - l_ours, -data["advantages"][empty].sum() / B, rtol=0, atol=1e-12)
    torch.testing.assert_close(g_trl, g_ours, rtol=0, atol=1e-12)  # the empty row has no gradient on either side


# --- extreme ratios: where TRL returns NaN or inf in float32 --------------------------------------------------------


@pytest.mark.parametrize(
    "loss_type, delta, ours, trl_gives",
    [
        ("grpo", 3.0, functools.partial(__import__("gspo_lab.objectives", fromlist=["x"]).grpo_dual_clip, clip_c=3.0),
         "nan-grad"),
        ("sapo", None, sapo, "nan-grad"),
    ],
    ids=["delta~grpo_dual_clip", "sapo"],
)  # fmt: skip
def test_extreme_ratio_float32_trl_nan_ours_finite(trainer, monkeypatch, loss_type, delta, ours, trl_gives):  # noqa: F811
    """One token at log w = +100 with Â = −1 in float32: TRL's gradient is NaN (it clamps no log-ratio: clamp's
    backward passes 0 · exp′ = 0 · inf); ours is finite, with the same value as float64 TRL where that is finite."""
    data = _data(0)
    data = {k: (v.float() if v.dtype == torch.float64 else v) for k, v in data.items()}
    neg = int(torch.nonzero((data["advantages"] < 0) & (data["completion_mask"].sum(-1) > 0))[0])
    data["logp"][neg, 0] = data["old_per_token_logps"][neg, 0] + 100.0
    eps = (0.2, 0.27) if loss_type == "grpo" else None
    theirs = _trl(trainer, monkeypatch, data, level="token", loss_type=loss_type, eps=eps, args=(("delta", delta),))
    assert trl_gives == "nan-grad" and torch.isnan(theirs[1]).any()
    mine = _ours(ours, data, eps)
    assert torch.isfinite(mine[0]) and bool(torch.isfinite(mine[1]).all())
    as64 = {k: (v.double() if v.dtype == torch.float32 else v) for k, v in data.items()}
    ref = _trl(trainer, monkeypatch, as64, level="token", loss_type=loss_type, eps=eps, args=(("delta", delta),))
    assert torch.isfinite(ref[0]) and torch.isfinite(ref[1]).all()  # float64 TRL is finite here: our reference
    torch.testing.assert_close(mine[0].double(), ref[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mine[1].double(), ref[1], rtol=1e-5, atol=1e-6)


def test_lengths_cover_the_edge_cases():
    assert 0 in LENGTHS and 1 in LENGTHS and T in LENGTHS
