"""The notebooks and their parameter tiers, in one place (the test suite and the main job both read it).

Each notebook's ``parameters`` cell holds the *interactive* tier (opens and runs in seconds in JupyterLab). The
*smoke* tier (CI) is as small as still shows the claim; the *full* tier is the main job's. Only overrides of the
interactive values are listed here.
"""

from __future__ import annotations

__all__ = ["NOTEBOOKS", "TIERS", "parameters_for"]

TIERS = ("interactive", "smoke", "full")

NOTEBOOKS: dict[str, dict[str, dict]] = {
    "00_tour": {"smoke": {"prompts": 8}, "full": {"prompts": 32}},
    "01_ratio_variance": {"smoke": {"prompts": 8, "probe_lengths": [4, 12, 20]}, "full": {"prompts": 32}},
    "02_gradients": {
        "smoke": {"prompts": 8, "draws": 4, "minibatch": 16, "probe_lengths": [16]},
        "full": {"prompts": 32, "draws": 32, "probe_lengths": [8, 12, 16, 20]},
    },
    "03_clipping": {"smoke": {"prompts": 8, "rollouts": 3}, "full": {"rollouts": 30}},
    "04_collapse": {
        "smoke": {"prompts": 8, "live_rollouts": 2, "live_eval_every": 1, "live_eval_prompts": 8},
        "full": {"live_rollouts": 80},
    },
    "05_precision": {"smoke": {"prompts": 8, "checkpoints": ["moe-sort"]}, "full": {"prompts": 32}},
    "06_successors": {"smoke": {"prompts": 8, "draws": 4, "minibatch": 16}, "full": {"prompts": 32, "draws": 16}},
}


def parameters_for(notebook: str, tier: str) -> dict:
    """The papermill parameters of ``notebook`` at ``tier`` (interactive: none, the notebook's own defaults)."""
    if notebook not in NOTEBOOKS:
        raise ValueError(f"notebook must be one of {sorted(NOTEBOOKS)}, got {notebook!r}")
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    return dict(NOTEBOOKS[notebook].get(tier, {}))
