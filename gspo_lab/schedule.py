"""Learning-rate schedules: one helper for the cold start (sft) and the RL loop.

    factor(step) = (step + 1) / warmup                       while step < warmup   (linear warm-up)
                 = 1                                          "constant" after warm-up
                 = ½ (1 + cos(π · min(1, (step − warmup) / (horizon − warmup))))   "cosine", 0 from ``horizon`` on

``step`` counts optimizer steps from 0 (the step about to be taken); the learning rate is ``lr · factor(step)``.
The cosine horizon is a number of optimizer steps of its own, never derived from a run's length, so a resumed run
that asks for more rollouts keeps its schedule.
"""

from __future__ import annotations

import math

import torch

__all__ = ["SCHEDULES", "lr_factor", "check_schedule", "lr_scheduler"]

SCHEDULES = ("constant", "cosine")


def check_schedule(schedule: str, warmup_steps: int, horizon_steps: int) -> None:
    """Raise a ValueError naming the field when the schedule's settings cannot work."""
    if schedule not in SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {SCHEDULES}, got {schedule!r}")
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be an int >= 0, got {warmup_steps!r}")
    if schedule == "cosine" and not (isinstance(horizon_steps, int) and horizon_steps > warmup_steps):
        raise ValueError(
            f"lr_horizon_steps must be an int > warmup_steps = {warmup_steps} with lr_schedule='cosine' "
            f"(optimizer steps until the learning rate reaches 0), got {horizon_steps!r}"
        )


def lr_factor(step: int, *, warmup_steps: int, schedule: str = "constant", horizon_steps: int = 0) -> float:
    """Multiplier of the peak learning rate at optimizer step ``step`` (see the module docstring)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup_steps) / (horizon_steps - warmup_steps))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def lr_scheduler(
    optimizer: torch.optim.Optimizer, *, warmup_steps: int, schedule: str = "constant", horizon_steps: int = 0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR applying :func:`lr_factor`; its state (the step count) saves and restores with the run."""
    check_schedule(schedule, warmup_steps, horizon_steps)

    def factor(step: int) -> float:
        return lr_factor(step, warmup_steps=warmup_steps, schedule=schedule, horizon_steps=horizon_steps)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
