"""gspo_lab: GSPO (arXiv 2507.18071) and GRPO, exact to the paper's equations, small enough to read.

The file list reads like the pipeline (see README.md for the annotated tree):
    tasks -> rollout (model, routing, policy) -> advantages -> ratios -> objectives (+ reductions) -> metrics
"""

from gspo_lab.advantages import AdvantageStats, group_advantages
from gspo_lab.metrics import ObjectiveStats, catalogue
from gspo_lab.model import PRESETS, ModelPreset, build_model, count_params
from gspo_lab.objectives import (
    DAPO_CLIP,
    GRPO_CLIP,
    GSPO_CLIP,
    OBJECTIVES,
    PPO_CLIP,
    ClipRange,
    ObjectiveSpec,
    cispo,
    cispo_clip,
    cispo_mask,
    get_objective,
    gmpo,
    grpo,
    grpo_const_norm,
    grpo_dual_clip,
    grpo_token_mean,
    gspo,
    gspo_token,
    gspo_token_mean,
    luspo,
    sapo,
    vespo,
)
from gspo_lab.ratios import gspo_token_log_ratio, seq_log_ratio, seq_log_ratio_sum, tok_log_ratio
from gspo_lab.reductions import masked_mean, masked_sum
from gspo_lab.routing import (
    expert_change_frac,
    expert_change_frac_per_layer,
    expert_swap_frac,
    record_routing,
    replay_routing,
)

__version__ = "0.1.0"

__all__ = [
    "AdvantageStats",
    "ClipRange",
    "DAPO_CLIP",
    "GRPO_CLIP",
    "GSPO_CLIP",
    "OBJECTIVES",
    "ModelPreset",
    "ObjectiveSpec",
    "ObjectiveStats",
    "PPO_CLIP",
    "PRESETS",
    "build_model",
    "count_params",
    "expert_change_frac",
    "expert_change_frac_per_layer",
    "expert_swap_frac",
    "record_routing",
    "replay_routing",
    "sapo",
    "vespo",
    "catalogue",
    "cispo",
    "cispo_clip",
    "cispo_mask",
    "get_objective",
    "gmpo",
    "group_advantages",
    "grpo",
    "grpo_const_norm",
    "grpo_dual_clip",
    "grpo_token_mean",
    "gspo",
    "gspo_token",
    "gspo_token_log_ratio",
    "gspo_token_mean",
    "luspo",
    "masked_mean",
    "masked_sum",
    "seq_log_ratio",
    "seq_log_ratio_sum",
    "tok_log_ratio",
]
