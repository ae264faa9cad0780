"""Masked reductions and the loss aggregations built from them.

Length normalisation is the subject of this kit, so every masked reduction in gspo_lab goes through
:func:`masked_sum` / :func:`masked_mean`, and each way of turning per-token losses into one number is its own named
function (the names follow verl's ``loss_agg_mode``):

=========================== ======================================================= ===============================
aggregation                 formula (``L`` = per-token loss, ``m`` = mask)           used by
=========================== ======================================================= ===============================
``seq_mean_token_mean``     ``1/B Σ_i (Σ_t m L / max(|y_i|, 1))``                   GRPO Eq. 2, GSPO-token Eq. 14,
                                                                                    TRL ``grpo``
``token_mean``              ``Σ_i Σ_t m L / max(Σ_i |y_i|, 1)``                     DAPO, TRL ``bnpo``
``seq_mean_token_sum_norm`` ``1/B Σ_i Σ_t m L / L_norm`` (a constant length)        Dr. GRPO, TRL ``dr_grpo``
=========================== ======================================================= ===============================

Padding never leaks: masked positions are replaced by 0 with ``torch.where`` (not multiplied by 0), so padding that
holds NaN/inf, as some pipelines produce, changes neither values nor gradients.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "masked_sum",
    "masked_mean",
    "seq_lengths",
    "seq_mean_token_mean",
    "token_mean",
    "seq_mean_token_sum_norm",
]


def masked_sum(x: Tensor, mask: Tensor, dim: int | None = -1) -> Tensor:
    """Σ of ``x`` over positions where ``mask`` is True (``dim=None``: over everything).

    x: (B, T) floating; mask: (B, T) bool. Returns (B,) for ``dim=-1``, a scalar for ``dim=None``.
    """
    kept = torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device))
    return kept.sum() if dim is None else kept.sum(dim)


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = -1) -> Tensor:
    """Mean of ``x`` over masked-in positions; the count is clamped to >= 1, so an empty row gives 0, not NaN.

    x: (B, T) floating; mask: (B, T) bool. Returns (B,) for ``dim=-1``, a scalar for ``dim=None``.
    """
    count = mask.sum() if dim is None else mask.sum(dim)
    return masked_sum(x, mask, dim) / count.clamp(min=1).to(x.dtype)


def seq_lengths(mask: Tensor) -> Tensor:
    """|y_i|: the number of valid tokens of each response. mask: (B, T) bool -> (B,) int64."""
    return mask.sum(-1)


def seq_mean_token_mean(per_token: Tensor, mask: Tensor) -> Tensor:
    """Mean over responses of each response's token mean. (B, T) -> scalar.

    Every response weighs 1/B whatever its length; a response with no valid token contributes 0 and still counts
    in the 1/B (TRL's convention; verl's ``seq-mean-token-mean`` drops it from the denominator instead).
    """
    return masked_mean(per_token, mask, dim=-1).mean()


def token_mean(per_token: Tensor, mask: Tensor) -> Tensor:
    """Mean over all valid tokens of the batch (DAPO). (B, T) -> scalar.

    A response of |y_i| tokens weighs |y_i| / Σ_j |y_j|: long responses count more. Applied to a per-sequence loss
    (GSPO's), this silently weights each response by its length — the pitfall ``gspo_token_mean`` demonstrates.
    """
    return masked_mean(per_token, mask, dim=None)


def seq_mean_token_sum_norm(per_token: Tensor, mask: Tensor, norm_len: int) -> Tensor:
    """Σ over valid tokens divided by B · ``norm_len``, a constant (Dr. GRPO's generation budget). (B, T) -> scalar.

    A response's weight grows linearly with its length, and the scale does not depend on the batch's lengths.
    """
    return masked_sum(per_token, mask, dim=None) / (per_token.shape[0] * norm_len)
