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
gradient differs from this term's even on-policy, where the ratio is 1; this term is TRL's with
``use_bias_correction_kl=False`` (issue 51 adds the other as an option).
"""

from __future__ import annotations

import torch
from torch import Tensor

from gspo_lab.reductions import seq_mean_token_mean
from gspo_lab.validate import check_float_tensor, check_mask, check_same_shape

__all__ = ["kl_penalty"]


def kl_penalty(logp: Tensor, ref_logp: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """KL(π_θ‖π_ref) estimate k3 as a loss term. (B, T) x3 -> (scalar, (B, T) per-token k3, 0 at padding).

    Gradients flow through ``logp`` only (``ref_logp`` is a fixed reference: detached here).
    """
    check_float_tensor("logp", logp, 2)
    check_float_tensor("ref_logp", ref_logp, 2)
    check_same_shape("ref_logp", ref_logp, "logp", logp)
    mask = check_mask(mask, logp.shape)
    dtype = torch.float64 if logp.dtype == torch.float64 else torch.float32
    log_ref_ratio = (ref_logp.detach().to(dtype) - logp.to(dtype)).where(mask, 0.0)
    k3 = torch.expm1(log_ref_ratio) - log_ref_ratio  # e^x − 1 − x, exact near x = 0
    return seq_mean_token_mean(k3, mask), k3.where(mask, 0.0)
