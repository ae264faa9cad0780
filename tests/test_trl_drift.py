"""gspo_lab.trl_drift: TRL 1.16's GRPOTrainer logs the kit's drift from π_old, and trains exactly as before.

(a) the formula: ``drift_metrics`` equals the kit's ``kl/k3``, ``kl/k1`` and ``clip/token_frac_outside`` (GRPO at
    GRPO's band: the token ratio is the one it clips) on tests/test_trl_agreement.py's float64 inputs (junk at
    padding, an empty response), and ±inf / NaN at padding change nothing;
(b) the hook: TRL's real ``_compute_loss`` (log-probs replaced on the *class* by our float64 leaf) returns the same
    loss and gradient, bit for bit, with the mixin as without, logs the same TRL metrics, and the drift it logs is
    (a)'s; on-policy (no ``old_per_token_logps``) it logs exactly 0. Then a real ``train()`` of the tiny Qwen3 from
    tests/test_trl_agreement.py (no hub), 4 optimizer steps, ``steps_per_generation=2`` so π_old is recomputed:
    same losses, grad norms, TRL metrics and final weights as the plain trainer on the same seed; drift exactly 0
    where a generation opens, > 0 after an update;
(c) mutants of (a): k1 logged as k3, padding counted.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch
import trl
from datasets import Dataset
from test_trl_agreement import SEEDS, _fake_logps, _inputs, _model, _tokenizer, _zero_reward, trainer  # noqa: F401

import gspo_lab.trl_drift as trl_drift
from gspo_lab.objectives import GRPO_CLIP, grpo
from gspo_lab.trl_drift import DRIFT_KEYS, drift_metrics, resolve_band

BAND = (GRPO_CLIP.low, GRPO_CLIP.high)
PROMPTS = ["a b c", "d e f"]
TIMING = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")


# --- (a) the formula, and (c) its mutants -------------------------------------------------------------------------


def _kit(data: dict) -> dict[str, float]:
    """The kit's own numbers for the same tensors (gspo_lab.metrics through the grpo objective)."""
    _, stats = grpo(data["logp"], data["old_per_token_logps"], data["advantages"], data["completion_mask"],
                    eps_low=BAND[0], eps_high=BAND[1])  # fmt: skip
    return dict(zip(DRIFT_KEYS, (stats.kl_k3, stats.kl_k1, stats.clip_token_frac_outside), strict=True))


def _disagreement(data: dict) -> dict[str, float]:
    ours = drift_metrics(data["logp"], data["old_per_token_logps"], data["completion_mask"], BAND)
    return {k: abs(ours[k] - v) for k, v in _kit(data).items() if not ours[k] == pytest.approx(v, rel=1e-12, abs=1e-15)}


@pytest.mark.parametrize("seed", SEEDS)
def test_drift_metrics_are_the_kits(seed):
    data = _inputs(seed)
    assert _disagreement(data) == {}
    kit = _kit(data)
    assert kit["drift/kl_k3"] > 0 and 0 < kit["drift/outside_band_frac"] < 1  # the inputs exercise both
    pad = ~data["completion_mask"].bool()
    worse = dict(data, logp=data["logp"].masked_fill(pad, math.nan),
                 old_per_token_logps=data["old_per_token_logps"].masked_fill(pad, -math.inf))  # fmt: skip
    assert drift_metrics(worse["logp"], worse["old_per_token_logps"], worse["completion_mask"], BAND) == pytest.approx(
        kit, rel=1e-12
    )


MUTANTS = {
    "k1 logged as k3": ("k3_per_token", lambda log_w: -log_w),
    "padding counted": ("check_mask", lambda mask, shape, name="mask": torch.ones(shape, dtype=torch.bool)),
}


@pytest.mark.parametrize("mutant", MUTANTS)
def test_a_mutant_fails_the_agreement(monkeypatch, mutant):
    data = _inputs(0)
    assert _disagreement(data) == {}
    monkeypatch.setattr(trl_drift, *MUTANTS[mutant])
    assert _disagreement(data) != {}


def test_band_is_the_trainers_only_where_it_bands_the_token_ratio():
    assert resolve_band(None, "grpo", "token", 0.2, 0.27) == (0.2, 0.27)
    assert resolve_band(BAND, "cispo", "token", 0.2, 5.0) == BAND
    for loss_type, level in (("cispo", "token"), ("sapo", "token"), ("grpo", "sequence")):
        with pytest.raises(ValueError, match="pass drift_band"):
            resolve_band(None, loss_type, level, 0.2, 0.27)
    with pytest.raises(ValueError, match="eps_low"):
        resolve_band((1.5, 0.27), "grpo", "token", 0.2, 0.27)


def test_importing_the_module_does_not_import_trl():
    code = "import sys, gspo_lab, gspo_lab.trl_drift; assert 'trl' not in sys.modules, 'trl imported'"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# --- (b) the hook in TRL's real _compute_loss -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def drift_trainer(trainer):  # noqa: F811 (tests/test_trl_agreement.py's plain trainer: its args)
    tr = trl_drift.DriftLoggingGRPOTrainer(model=_model(), reward_funcs=_zero_reward, args=trainer.args,
                                           train_dataset=Dataset.from_dict({"prompt": PROMPTS}),
                                           processing_class=_tokenizer())  # fmt: skip
    tr.model.train()
    return tr


def _compute_loss(tr, monkeypatch, data, *, with_old=True):
    """TRL's loss, its gradient w.r.t. our leaf logp, and the metrics it logged; GRPO at GRPO's band."""
    logp = data["logp"].clone().requires_grad_(True)
    fake = _fake_logps(logp)
    monkeypatch.setattr(trl.GRPOTrainer, "_get_per_token_logps_and_entropies", lambda self, *a, **k: fake(*a, **k))
    attrs = dict(loss_type="grpo", importance_sampling_level="token", epsilon_low=BAND[0], epsilon_high=BAND[1],
                 current_gradient_accumulation_steps=1, drift_band=BAND)  # fmt: skip
    for name, value in attrs.items():
        monkeypatch.setattr(tr, name, value, raising=False)
    tr._metrics["train"].clear()
    inputs = {k: v for k, v in data.items() if k != "logp" and (with_old or k != "old_per_token_logps")}
    loss = tr._compute_loss(tr.model, inputs)
    (grad,) = torch.autograd.grad(loss, logp)
    return loss.detach(), grad, {k: v[-1] for k, v in tr._metrics["train"].items()}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_hook_logs_the_kits_drift_and_leaves_trls_loss_alone(trainer, drift_trainer, monkeypatch, seed):  # noqa: F811
    data = _inputs(seed)
    loss, grad, logged = _compute_loss(trainer, monkeypatch, data)
    d_loss, d_grad, d_logged = _compute_loss(drift_trainer, monkeypatch, data)
    assert torch.equal(d_loss, loss) and torch.equal(d_grad, grad)
    assert {k: v for k, v in d_logged.items() if k not in DRIFT_KEYS} == logged
    assert {k: d_logged[k] for k in DRIFT_KEYS} == pytest.approx(_kit(data), rel=1e-12, abs=1e-15)


def test_on_policy_drift_is_zero_by_construction(drift_trainer, monkeypatch):
    _, _, logged = _compute_loss(drift_trainer, monkeypatch, _inputs(0), with_old=False)
    assert {k: logged[k] for k in DRIFT_KEYS} == dict.fromkeys(DRIFT_KEYS, 0.0)


def test_log_probs_replaced_on_the_instance_are_refused(drift_trainer, monkeypatch):
    data = _inputs(0)
    monkeypatch.setattr(drift_trainer, "_get_per_token_logps_and_entropies", _fake_logps(data["logp"]))
    for name, value in (("loss_type", "grpo"), ("current_gradient_accumulation_steps", 1)):
        monkeypatch.setattr(drift_trainer, name, value, raising=False)
    with pytest.raises(RuntimeError, match="replaced on the instance"):
        drift_trainer._compute_loss(drift_trainer.model, {k: v for k, v in data.items() if k != "logp"})


# --- (b) a real run ------------------------------------------------------------------------------------------------


def _a_reward(completions, **kwargs) -> list[float]:
    """Share of "a" words: varies within a group, so the advantages and the update are nonzero."""
    return [c.split().count("a") / 3 for c in completions]


def _train(cls, out_dir):
    args = trl.GRPOConfig(
        output_dir=str(out_dir), use_cpu=True, bf16=False, activation_checkpointing=False, beta=0.0, report_to=[],
        loss_type="grpo", epsilon=BAND[0], epsilon_high=BAND[1], num_generations=4, per_device_train_batch_size=4,
        gradient_accumulation_steps=1, steps_per_generation=2,  # 1 % 2 != 0: TRL recomputes π_old (2642-2645)
        max_completion_length=6, learning_rate=1e-2, max_steps=4, logging_steps=1, save_strategy="no",
        disable_tqdm=True, seed=0,
    )  # fmt: skip
    tr = cls(model=_model(), reward_funcs=_a_reward, args=args, train_dataset=Dataset.from_dict({"prompt": PROMPTS}),
             processing_class=_tokenizer())  # fmt: skip
    tr.train()
    return tr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a toy model on a shared machine; and the two runs at the same thread count
    try:
        return [_train(cls, tmp_path_factory.mktemp("trl_drift")) for cls in (trl.GRPOTrainer,
                trl_drift.DriftLoggingGRPOTrainer)]  # fmt: skip
    finally:
        torch.set_num_threads(threads)


def test_a_real_run_trains_as_trl_and_logs_the_drift(runs):
    plain, drifted = runs
    assert drifted.drift_band == BAND  # the trainer's own ε: grpo at token level
    rows = [[{k: v for k, v in r.items() if k not in TIMING} for r in tr.state.log_history if "loss" in r]
            for tr in runs]  # fmt: skip
    assert len(rows[0]) == len(rows[1]) == 4
    for before, after in zip(*rows, strict=True):
        assert {k: v for k, v in after.items() if k not in DRIFT_KEYS} == before  # losses, grad norms, TRL metrics
    for (name, p0), p1 in zip(plain.model.named_parameters(), drifted.model.parameters(), strict=True):
        assert torch.equal(p0, p1), name
    drift = rows[1]
    assert all(r[k] == 0.0 for r in drift[::2] for k in DRIFT_KEYS)  # a generation opens: π_old = π_θ, computed
    for r in drift[1::2]:  # one update later
        assert math.isfinite(r["drift/kl_k3"]) and r["drift/kl_k3"] > 1e-6
        assert 0.0 <= r["clip_ratio/region_mean"] <= r["drift/outside_band_frac"] <= 1.0  # clip-active ⊆ outside
    # the point of the metric: tokens left the band that TRL's Â-signed clip_ratio does not count (seed 0)
    assert any(r["drift/outside_band_frac"] > r["clip_ratio/region_mean"] for r in drift[1::2])
