"""Masked reductions and the loss aggregations built from them.

Length normalisation is the subject of this kit, so every masked reduction in gspo_lab goes through
:func:`masked_sum` / :func:`masked_mean`, and each way of turning per-token losses into one number is its own named
function (the names follow verl's ``loss_agg_mode``):

=========================== ======================================================= ===============================
aggregation                 formula (``L`` = per-token loss, ``m`` = mask)           used by
=========================== ======================================================= ===============================
``seq_mean``                ``1/B Σ_i ℓ_i`` over a per-response term ``ℓ`` (B,)     GSPO Eq. 5
``seq_mean_token_mean``     ``1/B Σ_i (Σ_t m L / max(|y_i|, 1))``                   GRPO Eq. 2, GSPO-token Eq. 14,
                                                                                    TRL ``grpo``
``token_mean``              ``Σ_i Σ_t m L / max(Σ_i |y_i|, 1)``                     DAPO, TRL ``bnpo``
``seq_mean_token_sum_norm`` ``1/B Σ_i Σ_t m L / L_norm`` (a constant length)        Dr. GRPO, TRL ``dr_grpo``
``seq_mean_token_sum``      ``1/B Σ_i Σ_t m L``                                     LUSPO, TRL ``luspo``
=========================== ======================================================= ===============================

Masks are checked like the objectives' (:func:`gspo_lab.validate.check_mask`): bool, or 0/1 in an integer or float
dtype (TRL's ``completion_mask`` is an int tensor) of the shape of ``x``; anything else is a clear error.

Padding never leaks: masked positions are replaced by 0 with ``torch.where`` (not multiplied by 0), so padding that
holds NaN/inf, as some pipelines produce, changes neither values nor gradients.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gspo_lab.validate import check_mask

__all__ = [
    "masked_sum",
    "masked_mean",
    "seq_lengths",
    "seq_mean",
    "seq_mean_token_mean",
    "token_mean",
    "seq_mean_token_sum_norm",
    "seq_mean_token_sum",
]


def masked_sum(x: Tensor, mask: Tensor, dim: int | None = -1) -> Tensor:
    """Σ of ``x`` over positions where ``mask`` is True (``dim=None``: over everything).

    x: (B, T) floating; mask: (B, T) bool. Returns (B,) for ``dim=-1``, a scalar for ``dim=None``.
    """
    mask = check_mask(mask, x.shape)
    kept = torch.where(mask, x, torch.zeros((), dtype=x.dtype, device=x.device))
    return kept.sum() if dim is None else kept.sum(dim)


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = -1) -> Tensor:
    """Mean of ``x`` over masked-in positions; the count is clamped to >= 1, so an empty row gives 0, not NaN.

    x: (B, T) floating; mask: (B, T) bool. Returns (B,) for ``dim=-1``, a scalar for ``dim=None``.
    """
    mask = check_mask(mask, x.shape)
    count = mask.sum() if dim is None else mask.sum(dim)
    return masked_sum(x, mask, dim) / count.clamp(min=1).to(x.dtype)


def seq_lengths(mask: Tensor) -> Tensor:
    """|y_i|: the number of valid tokens of each response. mask: (B, T) bool or 0/1 -> (B,) int64."""
    if isinstance(mask, Tensor) and mask.dim() != 2:
        raise ValueError(f"mask must be 2-D (B, T), got shape {tuple(mask.shape)}")
    return check_mask(mask, mask.shape if isinstance(mask, Tensor) else torch.Size()).sum(-1)


def seq_mean(per_seq: Tensor, mask: Tensor) -> Tensor:
    """Mean over responses of a per-response term (GSPO's Eq. 5). (B,), (B, T) -> scalar.

    Every response weighs 1/B whatever its length; a response with no valid token contributes 0 and still counts
    in the 1/B (the convention of :func:`seq_mean_token_mean`).
    """
    T = mask.shape[-1] if isinstance(mask, Tensor) and mask.dim() == 2 else -1  # any T; B must match
    mask = check_mask(mask, torch.Size((per_seq.shape[0], T)))
    return per_seq.where(mask.any(-1), per_seq.new_zeros(())).mean()


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
    if isinstance(norm_len, bool) or not isinstance(norm_len, int) or norm_len < 1:
        raise ValueError(f"norm_len must be a positive int (the constant length normaliser), got {norm_len!r}")
    return masked_sum(per_token, mask, dim=None) / (per_token.shape[0] * norm_len)


def seq_mean_token_sum(per_token: Tensor, mask: Tensor) -> Tensor:
    """Mean over responses of each response's token *sum* (verl ``seq-mean-token-sum``, TRL ``luspo``). (B, T) -> ().

    A response of |y_i| tokens weighs |y_i| / B: applied to a per-response loss broadcast over its tokens, each
    response counts |y_i| times (LUSPO's length weighting), and the scale grows with the lengths.
    """
    return masked_sum(per_token, mask, dim=-1).mean()
