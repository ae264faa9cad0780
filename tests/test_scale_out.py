"""The scale-out path: a gspo_lab checkpoint is a plain transformers folder that TRL's GRPOTrainer trains with GSPO.

What a user who outgrows one machine does (README, "Scaling out"): load the folder with the Auto classes (offline),
give GRPOTrainer a reward built on ``gspo_lab.tasks``, set GSPO (``importance_sampling_level="sequence"``,
``loss_type="grpo"``, ``beta=0``, ε = 3e-4 / 4e-4) and turn off TRL's defaults that are wrong for this kit
(bf16, activation checkpointing), then ``accelerate launch`` the same script. Here: 2 optimizer steps on one
rollout of 4 prompts × G = 4 on CPU. ``steps_per_generation=2`` with ``gradient_accumulation_steps=1`` makes TRL
recompute π_old's log-probs (otherwise every ratio is exactly 1 and GSPO's clip never binds).

The shipped ``sweep-sort`` checkpoint is preferred; without it, a fresh ``build_model("sweep", ...)`` and
``build_tokenizer()`` are saved to a temporary folder (the partial-credit reward still gives groups variance).
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import gspo_lab
from gspo_lab.checkpoints import checkpoint_path
from gspo_lab.model import build_model
from gspo_lab.tasks import Problem, get_task, load_split
from gspo_lab.tokenizer import build_tokenizer

trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")  # a dependency of trl

LENGTH, PROMPTS, GROUP = 4, 4, 4
TASK = get_task("sort")


def _folder(tmp_path):
    """The shipped sweep-sort checkpoint folder, else a freshly built sweep policy saved to ``tmp_path``."""
    try:
        return checkpoint_path("sweep-sort")
    except FileNotFoundError:
        tokenizer = build_tokenizer()
        build_model("sweep", len(tokenizer), seed=0).save_pretrained(tmp_path)
        tokenizer.save_pretrained(tmp_path)
        return tmp_path


def exact_reward(prompts, completions, answer, **kwargs) -> list[float]:
    """The paper's verifier: 1.0 for the exact sorted digits (gspo_lab.tasks.Task.reward)."""
    return [TASK.reward(Problem(p, a, a), c) for p, c, a in zip(prompts, completions, answer, strict=True)]


def partial_reward(prompts, completions, answer, **kwargs) -> list[float]:
    """Fraction of matching characters (gspo_lab.tasks.Task.partial_reward): gives groups variance early on."""
    return [TASK.partial_reward(Problem(p, a, a), c) for p, c, a in zip(prompts, completions, answer, strict=True)]


def test_checkpoint_trains_under_trl_gspo(tmp_path):
    folder = _folder(tmp_path / "ckpt")
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert type(model).__name__ == "Qwen3MoeForCausalLM" and gspo_lab.count_params(model)["active"] > 0

    problems = load_split(TASK, "train", LENGTH)[:PROMPTS]
    dataset = datasets.Dataset.from_dict(
        {"prompt": [tokenizer.bos_token + p.prompt for p in problems], "answer": [p.answer for p in problems]}
    )
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        importance_sampling_level="sequence",
        loss_type="grpo",
        beta=0.0,
        epsilon=gspo_lab.GSPO_CLIP.low,
        epsilon_high=gspo_lab.GSPO_CLIP.high,
        router_aux_loss_coef=0.0,
        num_generations=GROUP,
        per_device_train_batch_size=PROMPTS * GROUP // 2,
        gradient_accumulation_steps=1,
        steps_per_generation=2,
        max_completion_length=LENGTH + 2,
        reward_weights=[1.0, 0.1],
        learning_rate=1e-4,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[exact_reward, partial_reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # faster than 2 for a toy model on a shared 2-core machine (README, "Measured here")
    try:
        trainer.train()
    finally:
        torch.set_num_threads(threads)

    changed = [k for k, v in trainer.model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "no parameter changed: every group had zero reward variance?"
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 2
    assert all("clip_ratio/region_mean" in row for row in logs)
    assert logs[0]["completions/max_length"] <= LENGTH + 2  # completion metrics come with each generation
    # step 1 is on-policy (π_old's recomputed log-probs equal π_θ's); step 2 sees the update and GSPO's narrow
    # band binds on some sequences: proof that old_per_token_logps were computed and used
    assert logs[0]["clip_ratio/region_mean"] == 0.0
    assert 0.0 < logs[1]["clip_ratio/region_mean"] <= 1.0
