"""The rig's two paths: ``reference`` (TrainConfig's defaults, the ones every stored cell ran) and ``fast``.

The fast paths are four TrainConfig levers measured in issue 25 (README, "Speed"): each reproduces the reference path
bit for bit or up to float rounding (tests/test_train.py), and :func:`with_paths` turns on each one only where it
applies, so a config's numbers never change meaning:

1. ``group_stats=False``: no per-group gradient norms or AdamW peaks (``grad/norm_<group>``, ``adam/peak_<group>``);
   the same rows otherwise, bit for bit. A spec whose rules read those series sets ``group_stats = true``.
2. ``fused_adam=True``: AdamW's fused CPU kernel, where the optimizer is AdamW (float rounding, ≤ 1.2e-7 after 40
   steps).
3. ``old_forward=False``: π_old's no-grad forward skipped, only where π_old already *is* the sampler's own
   (``old_logp`` sampler or sampler_bf16, no Routing Replay, no sampler correction): the same rows bit for bit less
   the expert-change metrics. ``old_logp``'s default (recompute, as TRL and verl do) is never changed here.
4. ``compile_update=True``: the update's forward under ``torch.compile`` (float rounding), only when asked
   (``compile=True``: sweep workers, where one compilation of 29-42 s serves every later cell of the process) and
   only on top of 3.

Who uses which (issue 34): ``gspo-lab train`` runs ``fast`` without compiling (``--paths reference`` for the
reference paths); a spec names its paths (``paths = "fast" | "reference"``; a spec without the key, the ones written
before it, reads as reference) and a fast spec's cells compile; :class:`~gspo_lab.config.TrainConfig` itself keeps
the reference defaults, so every stored cell's key and result stays valid.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gspo_lab.config import TrainConfig

__all__ = ["PATHS", "FAST_FIELDS", "fast_fields", "with_paths"]

PATHS = ("fast", "reference")
#: the TrainConfig fields the fast paths set (their TrainConfig defaults are the reference paths)
FAST_FIELDS = ("group_stats", "fused_adam", "old_forward", "compile_update")


def fast_fields(cfg: TrainConfig, *, compile: bool = False) -> dict:
    """The fast paths' values of :data:`FAST_FIELDS` for ``cfg``: each lever only where it applies (module
    docstring); a lever that does not apply keeps ``cfg``'s own value."""
    old_is_sampler = (cfg.old_logp != "recompute" and not cfg.routing_replay and cfg.sampler_correction is None
                      and not cfg.sampler_routing_replay)  # fmt: skip
    fields = {"group_stats": False, "fused_adam": cfg.optimizer == "adamw" or cfg.fused_adam}
    fields["old_forward"] = cfg.old_forward and not old_is_sampler
    fields["compile_update"] = cfg.compile_update or (compile and not fields["old_forward"])
    return fields


def with_paths(cfg: TrainConfig, paths: str, *, compile: bool = False, keep: Iterable[str] = ()) -> TrainConfig:
    """``cfg`` on ``paths`` (:data:`PATHS`): ``reference`` returns it unchanged; ``fast`` sets :func:`fast_fields`,
    except the fields named in ``keep`` (those the user set: a spec's ``group_stats = true``, a CLI flag)."""
    if paths not in PATHS:
        raise ValueError(f"paths must be one of {PATHS}, got {paths!r}")
    if paths == "reference":
        return cfg
    keep = set(keep)
    fields = {k: v for k, v in fast_fields(cfg, compile=compile).items() if k not in keep}
    if fields.get("old_forward", cfg.old_forward) and "compile_update" in fields:
        fields["compile_update"] = cfg.compile_update  # a kept old_forward=True rules the compiled update out
    return replace(cfg, **fields)
