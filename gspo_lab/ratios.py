"""Importance ratios, in log space: token (GRPO), sequence (GSPO) and GSPO-token.

All three are returned as *logs*; ``exp()`` happens once, inside the objective, just before clipping. Nothing here
ever multiplies token ratios together (a product of 1,000 ratios under/overflows; a sum of logs does not).

Shapes: B sequences, T tokens. ``logp`` / ``old_logp`` are per-token log-probabilities log π(y_{i,t} | x, y_{i,<t})
of the sampled tokens, (B, T); ``mask`` is (B, T) bool with True at response tokens. Padded positions of every
returned (B, T) tensor are 0, whatever ``logp`` holds there. Arguments are checked like the objectives' (a mask may
be bool or 0/1 of any real dtype, as TRL's int ``completion_mask``); a bad one is a clear error naming it.
"""

from __future__ import annotations

from torch import Tensor

from gspo_lab.reductions import masked_mean, masked_sum
from gspo_lab.validate import check_float_tensor, check_mask, check_same_shape

__all__ = ["tok_log_ratio", "seq_log_ratio", "seq_log_ratio_sum", "gspo_token_log_ratio"]


def tok_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """log w_{i,t} = log π_θ(y_{i,t}|…) − log π_old(y_{i,t}|…), 0 at padding.

    GSPO paper (arXiv 2507.18071) §2, Eq. 3 (the token ratio of GRPO). (B, T), (B, T), (B, T) -> (B, T).
    """
    check_float_tensor("logp", logp, 2)
    check_float_tensor("old_logp", old_logp, 2)
    check_same_shape("old_logp", old_logp, "logp", logp)
    mask = check_mask(mask, logp.shape)
    diff = logp - old_logp
    return diff.where(mask, diff.new_zeros(()))


def seq_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """log s_i = 1/|y_i| Σ_t log w_{i,t}: GSPO's length-normalised sequence ratio. (B, T) x3 -> (B,).

    GSPO paper §4.1, Eq. 7: s_i = (π_θ(y_i|x) / π_old(y_i|x))^(1/|y_i|), a geometric mean of the token ratios.
    A response with no valid token gets log s_i = 0 (s_i = 1), never NaN.
    """
    return masked_mean(tok_log_ratio(logp, old_logp, mask), mask, dim=-1)


def seq_log_ratio_sum(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """Σ_t log w_{i,t} = log π_θ(y_i|x) / π_old(y_i|x): the *true* sequence importance ratio. (B, T) x3 -> (B,).

    Not what GSPO clips (that is :func:`seq_log_ratio`, the per-token mean); kept for the variance analysis of
    section 4.1, where the unnormalised ratio's variance grows with |y_i|.
    """
    return masked_sum(tok_log_ratio(logp, old_logp, mask), mask, dim=-1)


def gspo_token_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """log s_{i,t} = sg[log s_i] + log π_θ(y_{i,t}|…) − sg[log π_θ(y_{i,t}|…)]. (B, T) x3 -> (B, T).

    GSPO paper §4.3 (Eqs. 13-14, log form). Its *value* equals log s_i at every token of response i; its *gradient*
    is that of log π_θ(y_{i,t}|…) alone, so ∇ s_{i,t} = s_i · ∇ log π_θ(y_{i,t}|…) (§4.3's gradient). 0 at padding.
    """
    log_s = seq_log_ratio(logp, old_logp, mask).detach()  # sg[log s_i]
    mask = check_mask(mask, logp.shape)
    own = logp - logp.detach()  # log π_θ(y_{i,t}) − sg[log π_θ(y_{i,t})]: value 0, gradient of log π_θ
    out = log_s.unsqueeze(-1) + own
    return out.where(mask, out.new_zeros(()))
