"""Two failure modes of a stored training cell told apart, with the onset rollout of each (issue 37, A.1), and the
per-rollout share of the tokens outside GRPO's band that keep their gradient (A.2), read from stored series.

*Collapsed* is endpoint v2's flag (:func:`gspo_lab.experiments.summary.endpoint_v2`: the last two held-out
evaluations below ``COLLAPSE_FRACTION`` × the pooled cold start); its onset (:func:`collapse_onset`) is the rollout of
the first evaluation from which every later one stays below that threshold.

*Frozen* (:func:`frozen_onset`) is the absorbing state of group-normalised exact-match rewards: from some rollout r to
the end of the run, every rollout batch

1. scores 0 on every sample (``reward/mean:mean`` == 0 — not 1: a batch where every sample scores 1 has zero spread
   too, but that is success, and a batch mixing all-0 and all-1 groups still holds a policy that solves prompts);
2. has zero advantage spread in every group (``adv/zero_std_frac:mean`` == 1), so every Â_i = 0 *exactly*: Eq. 6 of
   the GSPO paper (§4.1) with gspo_lab's deviation 2 (gspo_lab/advantages.py: a group whose reward std is at most
   ``ZERO_STD_RTOL`` gets Â = 0 exactly, no +ε residue);
3. has a zero gradient on every update (``grad/norm:max`` == 0: the largest pre-clip gradient norm of the rollout's
   updates). Read from the stored norm, not inferred from 1-2: every objective's loss is linear in Â, so Â = 0
   gives a zero policy gradient, but a KL penalty (β > 0) or per-token advantages (``token_advantage`` > 0) would
   not — and then the state is not absorbing, which the stored norm shows.

and at least :data:`FROZEN_MIN_TAIL` rollouts lie in [r, end]. The three series are per-rollout aggregates of values
that are constant within a rollout (the batch's reward and spread) or exactly 0 (the norm), so the equalities are
exact; a missing value (``None``: non-finite, a diverged run) never counts as frozen.

"Absorbing" is how the run ends, not a law: the policy's chance of a success is small, not 0, and a zero gradient
does not stop AdamW at once (its first moment keeps moving the parameters). In the stored f11 runs, stretches of
frozen rollouts ended with one success of 128 after up to 72 rollouts (f11b's SAPO seed 10, MoE: rollouts 6-77, then
1/128 at rollout 78, then 0 again), so a run that is 0.000 at its end but had one lucky sample in its last rollouts
is *not* frozen here: the strict reading of "to the end".

Stored vs read: every series read here is in ``summary.READ_SERIES`` (kept by the thinning); nothing new is stored
for (1). For (2), ``drift/outside_grpo_band_frac`` and ``drift/outside_grpo_band_grad_frac`` are logged per update
(gspo_lab/metrics.py) and exist only in results run after they were added (the stored, thinned ones lack them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "FROZEN_MIN_TAIL",
    "FROZEN_SERIES",
    "GRAD_SHARE_SERIES",
    "frozen_onset",
    "collapse_onset",
    "kept_grad_share",
]

#: the fewest rollouts from the onset to the end of a run for "to the end" to count. 5 rollout batches of 128
#: samples = 640 samples without one success: a policy still at >= 1 % per-sample accuracy does that with
#: probability 0.99^640 < 0.002. It cannot tell an absorbed policy from one at ~1e-4 per sample (module docstring:
#: stretches of up to 72 frozen rollouts ended with one success); no finite tail can.
FROZEN_MIN_TAIL = 5
#: the per-rollout series :func:`frozen_onset` reads (each in summary.READ_SERIES)
FROZEN_SERIES = ("rollout", "reward/mean:mean", "adv/zero_std_frac:mean", "grad/norm:max")
#: the per-rollout series :func:`kept_grad_share` reads (logged since issue 37; absent from older stored results)
GRAD_SHARE_SERIES = ("drift/outside_grpo_band_frac:mean", "drift/outside_grpo_band_grad_frac:mean")


def _series(per_rollout: dict, keys: Sequence[str]) -> list[list]:
    """The named series of ``per_rollout``, checked present and of one length (ValueError naming what is wrong)."""
    if not isinstance(per_rollout, dict):
        raise ValueError(f"per_rollout must be a stored result's per-rollout dict, got {type(per_rollout).__name__}")
    missing = [k for k in keys if k not in per_rollout]
    if missing:
        raise ValueError(f"per_rollout lacks the series {missing} (a thinned or older result?); it holds "
                         f"{sorted(per_rollout)[:8]}...")  # fmt: skip
    series = [list(per_rollout[k]) for k in keys]
    lengths = {k: len(s) for k, s in zip(keys, series, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"per_rollout's series must have one length (one value per rollout), got {lengths}")
    return series


def frozen_onset(per_rollout: dict, *, min_tail: int = FROZEN_MIN_TAIL) -> tuple[bool, int | None]:
    """Whether a stored run froze (module docstring) and the rollout from which it stayed frozen.

    Args:
        per_rollout: a stored result's ``per_rollout`` dict (R values per series) holding :data:`FROZEN_SERIES`.
        min_tail: the fewest frozen rollouts, onset to end, that count (:data:`FROZEN_MIN_TAIL`).

    Returns:
        (frozen, onset): onset is the ``rollout`` value of the first rollout of the frozen tail; (False, None) when
        the last rollout is not frozen or the tail is shorter than ``min_tail`` (an empty run included).
    """
    if isinstance(min_tail, bool) or not isinstance(min_tail, int) or min_tail < 1:
        raise ValueError(f"min_tail must be an int >= 1, got {min_tail!r}")
    rollouts, reward, zero_std, grad_max = _series(per_rollout, FROZEN_SERIES)
    tail = 0
    for r, s, g in zip(reversed(reward), reversed(zero_std), reversed(grad_max), strict=True):
        if not (r == 0.0 and s == 1.0 and g == 0.0):  # None (non-finite) fails every equality
            break
        tail += 1
    if tail < min_tail:
        return False, None
    return True, int(rollouts[len(rollouts) - tail])


def collapse_onset(accuracy: Sequence[float], rollouts: Sequence[int], threshold: float) -> int | None:
    """The rollout of the first evaluation from which every later one lies below ``threshold`` (endpoint v2's
    ``COLLAPSE_FRACTION`` × the pooled cold start); None when the last evaluation is not below it.

    Args:
        accuracy: (E,) held-out sampled accuracies, in evaluation order; rollouts: (E,) the rollout of each.
        threshold: the collapse threshold, a finite number.
    """
    if len(accuracy) != len(rollouts):
        raise ValueError(f"accuracy and rollouts must have one length, got {len(accuracy)} and {len(rollouts)}")
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    first = None
    for i in range(len(accuracy) - 1, -1, -1):
        if not accuracy[i] < threshold:
            break
        first = i
    return None if first is None else int(rollouts[first])


def kept_grad_share(per_rollout: dict) -> list[float | None]:
    """Per rollout, the share of the valid tokens with Â ≠ 0 outside GRPO's band whose policy-loss gradient is
    nonzero: ``drift/outside_grpo_band_grad_frac:mean`` / ``drift/outside_grpo_band_frac:mean`` (each a share of the
    valid tokens, averaged over the rollout's updates, so the ratio pools the updates, each weighted by its outside
    share). None for a rollout with no such token on any update (0/0: no share to report) or a missing value.
    ValueError when the series are absent (results logged before issue 37)."""
    outside, kept = _series(per_rollout, GRAD_SHARE_SERIES)
    return [None if o is None or k is None or o == 0 else k / o for o, k in zip(outside, kept, strict=True)]
