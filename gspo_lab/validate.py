"""Input checks for the public math functions: one clear error per bad argument.

Every error names the argument and says what was expected (shape, dtype or range), so a notebook user sees
``ValueError: mask must hold only 0/1 values ...`` instead of a NaN three cells later. The checks run once per call at
the public boundary (objectives, advantages); the math below them trusts its inputs.
"""

from __future__ import annotations

import math
from numbers import Real

import torch
from torch import Tensor

__all__ = [
    "check_float_tensor",
    "check_mask",
    "check_same_shape",
    "check_finite",
    "check_clip_range",
    "check_sampling",
    "check_group_size",
    "compute_dtype",
]


def check_float_tensor(name: str, x: object, ndim: int | tuple[int, ...]) -> Tensor:
    """``x`` must be a floating-point tensor with ``ndim`` dimensions (one of them, if a tuple)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype (float16/bfloat16/float32/float64), got {x.dtype}")
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if x.dim() not in allowed:
        want = " or ".join(f"{d}-D" for d in allowed)
        raise ValueError(f"{name} must be {want}, got shape {tuple(x.shape)}")
    return x


def check_same_shape(name: str, x: Tensor, ref_name: str, ref: Tensor) -> None:
    if x.shape != ref.shape:
        raise ValueError(f"{name} must have the shape of {ref_name} {tuple(ref.shape)}, got {tuple(x.shape)}")


def check_mask(mask: object, shape: torch.Size, name: str = "mask") -> Tensor:
    """A (B, T) mask of 0/1 (bool, integer or floating dtype) -> bool tensor."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of 0/1 values, got {type(mask).__name__}")
    if mask.shape != shape:
        raise ValueError(f"{name} must have shape (B, T) = {tuple(shape)}, got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex():
        raise TypeError(f"{name} must be bool, integer or floating, got {mask.dtype}")
    if not bool(((mask == 0) | (mask == 1)).all()):
        bad = mask[(mask != 0) & (mask != 1)].flatten()[:3].tolist()
        raise ValueError(f"{name} must hold only 0/1 values, found e.g. {bad}")
    return mask != 0


def check_finite(name: str, x: Tensor, where: Tensor | None = None) -> None:
    """No NaN/inf in ``x`` (only at positions where ``where`` is True, if given: padding may hold anything)."""
    vals = x if where is None else x[where]
    bad = ~torch.isfinite(vals)
    if bool(bad.any()):
        n = int(bad.sum())
        example = vals[bad][:3].tolist()
        scope = "" if where is None else " at valid (mask = 1) positions"
        raise ValueError(f"{name} must be finite{scope}; found {n} NaN/inf value(s), e.g. {example}")


def check_sampling(top_k: object, top_p: object) -> None:
    """A top-k / top-p sampler's settings: ``top_k`` an int >= 0 (0: off), ``top_p`` in (0, 1] (1: off)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0 (0: off), got {top_k!r}")
    if isinstance(top_p, bool) or not isinstance(top_p, Real) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must be a number in (0, 1] (1: off), got {top_p!r}")


def check_clip_range(eps_low: object, eps_high: object) -> tuple[float, float]:
    """Clip band [1 - eps_low, 1 + eps_high] with eps_low in (0, 1) and eps_high > 0 (both finite)."""
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if isinstance(eps, bool) or not isinstance(eps, Real):
            raise TypeError(f"{name} must be a real number, got {type(eps).__name__}")
        if not math.isfinite(float(eps)):
            raise ValueError(f"{name} must be finite, got {eps}")
    if not 0.0 < float(eps_low) < 1.0:
        raise ValueError(f"eps_low must lie in (0, 1) so that 1 - eps_low > 0, got {eps_low}")
    if not float(eps_high) > 0.0:
        raise ValueError(f"eps_high must be > 0, got {eps_high}")
    return float(eps_low), float(eps_high)


def check_group_size(group_size: object, n: int, name: str = "rewards") -> int:
    """``group_size`` G >= 2 must divide the batch size ``n``."""
    if isinstance(group_size, bool) or not isinstance(group_size, int):
        raise TypeError(f"group_size must be an int, got {type(group_size).__name__}")
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 (a group needs a baseline), got {group_size}")
    if n % group_size != 0:
        raise ValueError(f"{name} has {n} entries, not divisible by group_size={group_size}; expected B = n_groups * G")
    return group_size


def compute_dtype(*xs: Tensor) -> torch.dtype:
    """The dtype the math runs in: float64 if any input is float64, else float32 (bf16/fp16 are upcast)."""
    return torch.float64 if any(x.dtype == torch.float64 for x in xs) else torch.float32
