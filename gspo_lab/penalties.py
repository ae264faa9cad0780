"""Terms added to an objective's loss by the loop: the KL penalty to a reference policy.

The objectives keep their one signature (:mod:`gspo_lab.objectives`); the loop adds ``β · kl_penalty(...)`` to the
loss when ``TrainConfig.beta > 0``. The GSPO paper leaves KL out "for brevity" and gives no β (β = 0 is the default,
as in TRL's and verl's GSPO recipes). The estimator is k3 (Schulman, "Approximating KL divergence", 2020), as in the
GRPO paper (DeepSeekMath, arXiv 2402.03300, Eq. 4), TRL and verl (``low_var_kl``), with samples from π_old:

    k3_{i,t} = π_ref(y_{i,t}|…) / π_θ(y_{i,t}|…) − log(π_ref(y_{i,t}|…) / π_θ(y_{i,t}|…)) − 1   ( >= 0 )

aggregated as GRPO's loss is (1/B Σ_i 1/|y_i| Σ_t, ``seq_mean_token_mean``). Shapes: B sequences, T tokens.

TRL 1.16 (the lock) adds β·k3 to each token's loss and aggregates with its ``loss_type`` (for ``"grpo"`` the same),
but by default first multiplies k3 by the importance ratio (``use_bias_correction_kl=True``, grpo_config.py:972;
grpo_trainer.py:3104-3105: ``per_token_kl * coef_1``, the token ratio, or under
``importance_sampling_level="sequence"`` the broadcast sequence ratio). The ratio keeps its gradient, so TRL's KL
gradient differs from this term's even on-policy, where the ratio is 1. By default this term is TRL's with
``use_bias_correction_kl=False``; with ``old_logp`` given (``TrainConfig(kl_bias_correction=True)``) it is TRL's
default: k3 times the ratio to π_old, per token (``level="token"``) or the sequence's geometric-mean ratio broadcast
over its tokens (``level="sequence"``, GSPO's), with its gradient. The factor's gradient, β·k3·∇w, is a term the
GSPO paper's objective does not have (an open TRL issue); :func:`kl_weight_gradient` separates it, and notebook 02
(section 4) measures it on the kit's rollouts.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gspo_lab.reductions import seq_mean_token_mean
from gspo_lab.validate import check_float_tensor, check_mask, check_same_shape

__all__ = ["KL_LEVELS", "kl_level", "kl_penalty", "kl_weight_gradient"]

#: the ratio that weighs k3 with ``old_logp`` given: TRL's ``importance_sampling_level`` values
KL_LEVELS = ("token", "sequence")


def kl_level(objective: str) -> str:
    """The ratio level TRL would weigh k3 with for a kit objective: "sequence" where its ratio is the sequence's
    (GSPO, GSPO-token, LUSPO, GMPO: ``importance_sampling_level="sequence"``), else "token"."""
    from gspo_lab.objectives import OBJECTIVES

    return "sequence" if OBJECTIVES[objective].ratio in ("sequence", "gspo-token") else "token"


def kl_penalty(
    logp: Tensor, ref_logp: Tensor, mask: Tensor, *, old_logp: Tensor | None = None, level: str = "token"
) -> tuple[Tensor, Tensor]:
    """KL(π_θ‖π_ref) estimate k3 as a loss term. (B, T) x3 -> (scalar, (B, T) per-token term, 0 at padding).

    Gradients flow through ``logp`` only (``ref_logp`` and ``old_logp`` are fixed: detached here). With ``old_logp``
    (B, T) each token's k3 is multiplied by the importance ratio w = π_θ / π_old with its gradient, TRL 1.16's
    ``use_bias_correction_kl=True`` (grpo_trainer.py:3086-3105): per token exp(log π_θ − log π_old) at
    ``level="token"``, the sequence's exp(mean_t (log π_θ − log π_old)) at ``level="sequence"``.
    """
    check_float_tensor("logp", logp, 2)
    check_float_tensor("ref_logp", ref_logp, 2)
    check_same_shape("ref_logp", ref_logp, "logp", logp)
    mask = check_mask(mask, logp.shape)
    if level not in KL_LEVELS:
        raise ValueError(f"level must be one of {KL_LEVELS} (TRL's importance_sampling_level), got {level!r}")
    dtype = torch.float64 if logp.dtype == torch.float64 else torch.float32
    log_ref_ratio = (ref_logp.detach().to(dtype) - logp.to(dtype)).where(mask, 0.0)
    k3 = torch.expm1(log_ref_ratio) - log_ref_ratio  # e^x − 1 − x, exact near x = 0
    if old_logp is not None:
        check_float_tensor("old_logp", old_logp, 2)
        check_same_shape("old_logp", old_logp, "logp", logp)
        log_w = (logp.to(dtype) - old_logp.detach().to(dtype)).where(mask, 0.0)
        if level == "sequence":
            log_w = log_w.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1).to(dtype)
        k3 = k3 * log_w.exp()
    return seq_mean_token_mean(k3, mask), k3.where(mask, 0.0)


def kl_weight_gradient(logp: Tensor, ref_logp: Tensor, old_logp: Tensor, mask: Tensor, level: str) -> dict[str, Tensor]:
    """The k3 term's gradient w.r.t. each token's log-prob, unweighted (``"kl"``), and what TRL's ratio weight adds
    to it (``"extra"``: weighted − unweighted, with the weight at ``level``). (B, T) each, 0 at padding; multiply by
    β for the loss's. On-policy (``logp`` = ``old_logp``) the weight is 1 and ``extra`` is k3 / (|y_i| B) per token
    at ``level="token"``, and mean_s k3_{i,s} / (|y_i| B) at ``level="sequence"``: the weight's gradient alone."""
    leaf = logp.detach().clone().requires_grad_(True)
    plain, _ = kl_penalty(leaf, ref_logp, mask)
    weighted, _ = kl_penalty(leaf, ref_logp, mask, old_logp=old_logp, level=level)
    (g_plain,) = torch.autograd.grad(plain, leaf)
    (g_weighted,) = torch.autograd.grad(weighted, leaf)
    return {"kl": g_plain, "extra": g_weighted - g_plain}
