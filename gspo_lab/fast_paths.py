"""The rig's paths: ``reference`` (TrainConfig's defaults, the ones every stored cell ran), ``fast`` and ``compiled``.

The fast paths are TrainConfig levers measured in issues 25 and 52 (README, "Speed"): each reproduces the reference
path bit for bit or up to float rounding (tests/test_train.py, tests/test_rollout.py), and :func:`with_paths` turns
on each one only where it applies, so a config's numbers never change meaning:

1. ``group_stats=False``: no per-group gradient norms or AdamW peaks (``grad/norm_<group>``, ``adam/peak_<group>``);
   the same rows otherwise, bit for bit. A spec whose rules read those series sets ``group_stats = true``.
2. ``fused_adam=True``: AdamW's fused CPU kernel, where the optimizer is AdamW (float rounding, ≤ 1.2e-7 after 40
   steps).
3. ``old_forward=False``: π_old's no-grad forward skipped, only where π_old already *is* the sampler's own
   (``old_logp`` sampler or sampler_bf16, no Routing Replay, no sampler correction): the same rows bit for bit less
   the expert-change metrics. ``old_logp``'s default (recompute, as TRL and verl do) is never changed here.
4. ``compile_update=True``: the trainer's forwards under ``torch.compile`` (float rounding). On ``fast`` only when
   asked (``compile=True``, what a ``fast`` spec's sweep workers pass) and only on top of 3, as the specs written
   before issue 52 ran (their cells' keys hold it); on ``compiled`` everywhere, π_old's recomputed forward included.
5. ``compile_sampler=True``: the sampler's decode compiled on a static KV cache (the same draws, float rounding in
   the log-probs): on ``compiled`` only.

``compiled`` is for a long-lived process, where one compilation (29-42 s for the update's graphs, ~25 s for the
decode's, less from inductor's on-disk cache) serves every later step and cell: a ``compiled`` spec's sweep workers,
the benchmark's fifth column. A one-off run of a few steps does not win the compile back.

Who uses which (issue 34): ``gspo-lab train`` runs ``fast`` without compiling (``--paths reference`` for the
reference paths, ``--paths compiled`` for a long run); a spec names its paths (``paths = "fast" | "compiled" |
"reference"``; a spec without the key, the ones written before it, reads as reference) and a fast spec's cells compile
as point 4 says; :class:`~gspo_lab.config.TrainConfig` itself keeps the reference defaults, so every stored cell's key
and result stays valid.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gspo_lab.config import TrainConfig

__all__ = ["PATHS", "FAST_FIELDS", "fast_fields", "with_paths"]

PATHS = ("fast", "compiled", "reference")
#: the TrainConfig fields the fast paths set (their TrainConfig defaults are the reference paths)
FAST_FIELDS = ("group_stats", "fused_adam", "old_forward", "compile_update", "compile_sampler")


def fast_fields(cfg: TrainConfig, *, compile: bool = False, everywhere: bool = False) -> dict:
    """The fast paths' values of :data:`FAST_FIELDS` for ``cfg``: each lever only where it applies (module
    docstring); a lever that does not apply keeps ``cfg``'s own value. ``everywhere``: the ``compiled`` paths."""
    old_is_sampler = (cfg.old_logp != "recompute" and not cfg.routing_replay and cfg.sampler_correction is None
                      and not cfg.sampler_routing_replay)  # fmt: skip
    fields = {"group_stats": False, "fused_adam": cfg.optimizer == "adamw" or cfg.fused_adam}
    fields["old_forward"] = cfg.old_forward and not old_is_sampler
    fields["compile_update"] = cfg.compile_update or everywhere or (compile and not fields["old_forward"])
    fields["compile_sampler"] = cfg.compile_sampler or everywhere
    return fields


def with_paths(cfg: TrainConfig, paths: str, *, compile: bool = False, keep: Iterable[str] = ()) -> TrainConfig:
    """``cfg`` on ``paths`` (:data:`PATHS`): ``reference`` returns it unchanged; ``fast`` and ``compiled`` set
    :func:`fast_fields`, except the fields named in ``keep`` (those the user set: a spec's ``group_stats = true``, a
    CLI flag)."""
    if paths not in PATHS:
        raise ValueError(f"paths must be one of {PATHS}, got {paths!r}")
    if paths == "reference":
        return cfg
    keep = set(keep)
    everywhere = paths == "compiled"
    fields = {k: v for k, v in fast_fields(cfg, compile=compile, everywhere=everywhere).items() if k not in keep}
    if not everywhere and fields.get("old_forward", cfg.old_forward) and "compile_update" in fields:
        fields["compile_update"] = cfg.compile_update  # fast: a kept old_forward=True rules the compiled update out
    return replace(cfg, **fields)
