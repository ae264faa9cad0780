"""Reading stored results as curves: any per-rollout metric or held-out evaluation of any stored arm, no training,
so the findings page and the notebooks open in seconds."""

from __future__ import annotations

import math

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.spec import Spec, cells, spec_named
from gspo_lab.experiments.store import load_result, result_path

__all__ = [
    "curves",
    "stored_curves",
    "stored_arms",
    "cold_starts",
    "cold_start_key",
    "COLD_START_SPEC",
    "COLD_START_SPECS",
]

#: the spec whose probe cells measure the pooled cold starts of endpoint v2 (sort)
COLD_START_SPEC = "p0_cold_start"
#: every spec measuring pooled cold starts: sort's, then the addition cold starts of finding 6's length study
COLD_START_SPECS = (COLD_START_SPEC, "p0b_cold_start_add")


def cold_start_key(cfg) -> tuple[str, int, float, str]:
    """A run's key into :func:`cold_starts`: (checkpoint, length, temperature, task) — the task too, since one
    cold start serves tasks that reward the same problems differently (add, add_format)."""
    return cfg.checkpoint, cfg.length, cfg.temperature, cfg.task


def curves(spec: Spec, metric: str, seeds: str = "all") -> pd.DataFrame:
    """Long table of one per-rollout metric (e.g. ``"clip/token_frac:mean"``, ``"eval/accuracy_sampled"``) for every
    finished cell: columns = grid fields, seed, rollout, value."""
    rows = []
    for cell in cells(spec, seeds):
        path = result_path(cell)
        if not path.exists():
            continue
        result = load_result(path)
        source = result["eval"] if metric.startswith("eval/") else result["per_rollout"]
        for r, v in zip(source.get("rollout", []), source.get(metric, []), strict=False):
            rows.append({**cell.point, "seed": cell.seed, "rollout": r, "value": v})
    return pd.DataFrame(rows)


def stored_curves(spec_name: str, metric: str, seeds: str = "confirm", **where) -> pd.DataFrame:
    """Per-rollout curves of one arm of a committed spec (``data/specs/<spec_name>.toml``) from its stored results —
    no training, so it opens in seconds. ``where`` picks grid values, e.g.
    ``stored_curves("f1_clip_fractions", "clip/token_frac:mean", lr=3e-5, minibatches=4)``; fields not named vary
    (here: the objective). Returns the long table of :func:`curves`; errors name an unknown field or value."""
    spec = spec_named(spec_name)
    values = spec.grid_values()
    table = curves(spec, metric, seeds)
    for name, value in where.items():
        if name not in values:
            raise ValueError(f"{name} is not a grid field of {spec_name} (its fields: {sorted(values)})")
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        match = [v for v in values[name] if v == value or (numeric and isinstance(v, float) and math.isclose(v, value))]
        if not match:
            raise ValueError(f"{name} must be one of {values[name]} in {spec_name}, got {value!r}")
        if not table.empty:
            table = table[table[name] == match[0]]
    if table.empty:
        raise ValueError(f"no stored results for {spec_name} at {where} with metric {metric!r} (run gspo-lab sweep)")
    return table.reset_index(drop=True)


def stored_arms(spec_names: list[str], seeds: str = "confirm") -> list[dict]:
    """Every arm (grid point) of the named specs with stored results for ``seeds``: ``{"label", "spec", "where",
    "seeds"}``, ``where`` the grid values :func:`stored_curves` takes, ``label`` the spec's fixed and varied settings
    in words (for a selector)."""
    out = []
    for name in spec_names:
        spec = spec_named(name)
        fixed = {
            k: spec.base[k] for k in ("checkpoint", "lr", "minibatches", "grad_clip", "objective") if k in spec.base
        }
        points: dict[tuple, list[int]] = {}
        for cell in cells(spec, seeds):
            if result_path(cell).exists():
                points.setdefault(tuple(sorted(cell.point.items())), []).append(cell.seed)
        for point, seed_list in points.items():
            where = dict(point)
            words = ", ".join(f"{k} {v}" for k, v in {**fixed, **where}.items())
            out.append(
                {"label": f"{name}: {words} ({len(seed_list)} seeds)", "spec": name, "where": where, "seeds": seed_list}
            )
    return out


@reading.remember()
def cold_starts(spec_name: str | tuple[str, ...] = COLD_START_SPECS) -> dict[tuple[str, int, float, str], dict]:
    """The pooled cold starts: per :func:`cold_start_key` (checkpoint, length, temperature, task), the mean sampled
    accuracy over the specs' stored ``cold_start`` probe cells (``accuracy``), the samples pooled, the seeds, the
    greedy accuracy, and the mean sampled response length in tokens (``length``)."""
    from gspo_lab.experiments.store import finished

    names = (spec_name,) if isinstance(spec_name, str) else spec_name
    rows = {}
    for name in names:
        for cell in cells(spec_named(name), "all"):
            path = result_path(cell)
            if path.exists():
                r = load_result(path)["summary"]
                rows.setdefault(cold_start_key(cell.cfg), []).append(r)
    if not rows:
        raise ValueError(
            f"no stored cold starts: run gspo-lab sweep data/specs/{names[0]}.toml "
            f"({len(finished(spec_named(names[0])))} cells)"
        )
    return {
        key: {
            "accuracy": sum(r["accuracy_sampled"] * r["samples"] for r in rs) / sum(r["samples"] for r in rs),
            "samples": sum(r["samples"] for r in rs),
            "seeds": len(rs),
            "greedy": sum(r["accuracy_greedy"] for r in rs) / len(rs),
            "length": sum(r.get("length_sampled", math.nan) * r["samples"] for r in rs) / sum(r["samples"] for r in rs),
        }
        for key, rs in rows.items()
    }
