"""Experiment specs: a committed grid of runs, its seeds declared before the runs, and the cells it expands to.

A spec (TOML, ``data/specs/<name>.toml``) declares, before any run: ``name``, ``description``, ``core`` (part of
the core set the findings page regenerates: ``true`` for every grid point, or a table of grid keys to the values
that are core, e.g. ``[core]`` ``lr = [3e-5]``; the other points are the extended set), ``seeds`` (``search``
and ``confirm`` lists: a regime found on search seeds is confirmed on fresh ones), ``[base]`` (TrainConfig fields
shared by every cell) and ``[grid]`` (lists of values; the cells are their Cartesian product × seeds; the objective
is usually the only other difference between arms).
A grid key naming several fields, ``"objective,routing_replay" = [["grpo", false], ["gspo", false]]``, varies them
together (arms, or ε pairs). The string ``"off"`` stands for None (e.g. ``grad_clip = "off"``; TOML has no null).
A cell with ``branch_at`` > 0 is a branch: its trunk is the same cell with the base's values of the fields a branch
may change (:meth:`~gspo_lab.config.TrainConfig.with_trunk`). A zipped grid key may name ``seed``: such a point runs
on that seed alone (when the seed set read holds it), e.g. a branch point chosen per seed. A spec with ``probe =
"<name>"`` runs a measurement of :mod:`gspo_lab.experiments.probes` instead of training; its ``[base]``/``[grid]`` may
also set the probe's own arguments. ``paths = "fast" | "compiled" | "reference"`` (gspo_lab/fast_paths.py; a new
spec must set it, one without it reads as reference) names the loop's paths; a fast path's field the spec names is
kept.

A cell's key hashes its full config, :data:`CODE_VERSION` and any probe's arguments: its stored result's address.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import gspo_lab.experiments.reading as reading
from gspo_lab.config import TrainConfig
from gspo_lab.fast_paths import PATHS, with_paths
from gspo_lab.paths import data_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["CODE_VERSION", "KEY_IF_NOT_DEFAULT", "SEED_SETS", "Spec", "Cell", "load_spec", "spec_named",
           "cells", "cell_key", "core_specs"]  # fmt: skip

#: bumped whenever the loop's numbers for a given config change (then every stored key changes with it)
CODE_VERSION = "2026-12-02.1"
SEED_SETS = ("search", "confirm", "all")
#: TrainConfig fields added after CODE_VERSION was set, whose default reproduces the earlier loop exactly: they enter
#: a cell's key only when set away from that default, so the stored results stay addressable
KEY_IF_NOT_DEFAULT = {
    "token_advantage": 0.0, "eval_samples": 1, "grad_clip_rel": None, "grad_skip": None, "norm_of": None,
    "sampler_precision": "fp32", "sampler_correction": None, "sampler_clip_min": None, "sampler_clip_max": 3.0,
    "opsm_threshold": None, "spike": None, "optimizer": "adamw", "branch_at": 0, "trunk": "", "old_forward": True,
    "group_stats": True, "fused_adam": False, "compile_update": False, "rollout_lag": 0, "top_k": 0, "top_p": 1.0,
    "sampling_replay": False, "kl_bias_correction": False, "sampler_routing_replay": False, "compile_sampler": False,
}  # fmt: skip


@dataclass(frozen=True)
class Spec:
    """A committed experiment: the grid, the seeds declared before the runs, whether it is part of the core set."""

    name: str
    description: str
    core: bool
    search_seeds: tuple[int, ...]
    confirm_seeds: tuple[int, ...]
    base: dict
    grid: dict
    path: Path
    probe: str | None = None  # a probe of gspo_lab.experiments.probes instead of a training run
    core_grid: dict | None = None  # the core subset of the grid ({grid key: values}); None = all of it (if core)
    paths: str = "reference"  # gspo_lab/fast_paths.py: "fast" turns on the fast paths (compiled) where they apply

    def seeds(self, which: str) -> tuple[int, ...]:
        if which not in SEED_SETS:
            raise ValueError(f"seeds must be one of {SEED_SETS}, got {which!r}")
        all_seeds = self.search_seeds + self.confirm_seeds
        return {"search": self.search_seeds, "confirm": self.confirm_seeds}.get(which, all_seeds)

    def in_core(self, point: dict) -> bool:
        """Whether a grid point (``{field: value}``) belongs to the core set."""
        if not self.core:
            return False
        for key, allowed in (self.core_grid or {}).items():
            names = key.split(",")
            value = [point[n] for n in names] if len(names) > 1 else point[names[0]]
            if value not in allowed:
                return False
        return True

    def core_label(self) -> str:
        """``core set``, ``extended set``, or for a subset ``core set at lr 3e-05; the other points extended``."""
        if not self.core:
            return "extended set"
        return f"core set at {self.core_where()}; the other points extended" if self.core_grid else "core set"

    def core_where(self) -> str:
        """The grid points of the core subset, e.g. ``lr 3e-05``; empty when the whole spec (or none of it) is core."""
        return "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in self.core_grid.items())

    def grid_values(self) -> dict[str, list]:
        """Each grid field's values, zipped keys split (``{"objective": [...], "routing_replay": [...]}``)."""
        values: dict[str, list] = {}
        for key, options in self.grid.items():
            for i, name in enumerate(names := key.split(",")):
                values[name] = [o[i] for o in options] if len(names) > 1 else list(options)
        return values


@dataclass(frozen=True)
class Cell:
    """One run of a spec: its grid point, its seed and the full config."""

    spec: str
    point: dict
    seed: int
    cfg: TrainConfig
    probe: str | None = None
    probe_kw: dict = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def key(self) -> str:
        return cell_key(self.cfg, self.probe, self.probe_kw)


def _check_grid(path: Path, raw: dict) -> None:
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    probe = raw.get("probe")
    if probe is not None:
        from gspo_lab.experiments.probes import probe_params

        try:
            names |= probe_params(probe)
        except ValueError as err:
            raise ValueError(f"spec {path}: {err}") from None
    for section in ("base", "grid"):
        unknown = {name for key in raw[section] for name in key.split(",")} - names
        if unknown:
            what = "TrainConfig" + (f" and probe {probe!r}" if probe else "")
            raise ValueError(f"spec {path}: [{section}] has fields {what} does not: {sorted(unknown)}")
    if "seed" in raw["base"] or "seed" in raw["grid"]:
        raise ValueError(f"spec {path}: seeds go in [seeds] (search/confirm), not in [base] or [grid] (beside other "
                         "fields in a zipped grid key, a point on one seed)")  # fmt: skip
    declared = set(raw["seeds"].get("search", ())) | set(raw["seeds"].get("confirm", ()))
    for k, v in raw["grid"].items():
        if not isinstance(v, list) or not v:
            raise ValueError(f"spec {path}: [grid] {k} must be a non-empty list")
        width = len(parts := k.split(","))
        if width > 1 and not all(isinstance(x, list) and len(x) == width for x in v):
            raise ValueError(f"spec {path}: [grid] {k!r} must list {width}-element lists")
        if "seed" in parts and (stray := sorted({x[parts.index("seed")] for x in v} - declared)):
            raise ValueError(f"spec {path}: [grid] {k!r} names seeds {stray} that [seeds] does not declare")


def _core(path: Path, raw: dict) -> tuple[bool, dict | None]:
    core = raw.get("core", False)
    if isinstance(core, dict):
        for k, v in core.items():
            if k not in raw["grid"]:
                raise ValueError(f"spec {path}: [core] key {k!r} is not a [grid] key ({sorted(raw['grid'])})")
            if not isinstance(v, list) or not v or any(x not in raw["grid"][k] for x in v):
                raise ValueError(f"spec {path}: [core] {k} must be a non-empty list of [grid] {k}'s values")
        return bool(core), core
    if not isinstance(core, bool):
        raise ValueError(f"spec {path}: core must be true, false or a table of grid values, got {core!r}")
    return core, None


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec file — a path, or the name of a committed spec (``f1_clip_fractions`` for
    ``data/specs/f1_clip_fractions.toml``); errors name the field."""
    path = Path(path)
    committed = data_dir() / "specs" / f"{path.name}.toml"
    if not path.is_file() and path.suffix != ".toml" and path.parent == Path(".") and committed.is_file():
        path = committed
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (data_dir() / "specs").glob("*.toml")))
        raise FileNotFoundError(f"spec {path} not found: give a spec file or the name of one in data/specs/ ({known})")
    raw = tomllib.loads(path.read_text())
    for field in ("name", "description", "seeds", "base", "grid"):
        if field not in raw:
            raise ValueError(f"spec {path}: missing field {field!r}")
    seeds = raw["seeds"]
    search, confirm = tuple(seeds.get("search", ())), tuple(seeds.get("confirm", ()))
    if set(search) & set(confirm):
        raise ValueError(
            f"spec {path}: confirmation seeds must be fresh, {sorted(set(search) & set(confirm))} are both"
        )
    _check_grid(path, raw)
    if raw.get("paths", "reference") not in PATHS:
        raise ValueError(f"spec {path}: paths must be one of {PATHS}, got {raw['paths']!r}")
    core, core_grid = _core(path, raw)
    spec = Spec(
        raw["name"],
        raw["description"],
        core,
        search,
        confirm,
        raw["base"],
        raw["grid"],
        path,
        raw.get("probe"),
        core_grid,
        raw.get("paths", "reference"),
    )
    cells(spec, "all")  # every config must be valid now, not hours into the sweep
    return spec


def spec_named(name: str) -> Spec:
    """The committed spec ``data/specs/<name>.toml``; the error lists the specs there."""
    path = data_dir() / "specs" / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in (data_dir() / "specs").glob("*.toml"))
        raise ValueError(f"spec_name must name a spec in data/specs/ ({', '.join(known)}), got {name!r}")
    if (memo := reading.memo_store()) is None:
        return load_spec(path)
    key = ("spec", str(path), path.stat().st_mtime_ns)  # within reading.memo(): each file read once (a frozen Spec)
    return memo[key] if key in memo else memo.setdefault(key, load_spec(path))


def cells(spec: Spec, seeds: str = "all", *, core: bool = False) -> list[Cell]:
    """Every cell of the spec for a seed set, in a fixed order (grid points × seeds); ``core``: only the core set's
    grid points (:meth:`Spec.in_core`). A robustness reading's left-out seed is left out (gspo_lab/experiments/
    reading.py). Within :func:`~gspo_lab.experiments.reading.memo` (the page build asks thousands of times, once per
    robustness reading) each spec's cells are built once, with every seed, and the left-out seed filtered per call."""
    if (memo := reading.memo_store()) is None:
        out = _cells(spec, seeds, core)
    else:  # built once with every seed; the reading's left-out seed filtered here, as _cells does
        if (memo_key := ("cells", repr(spec), seeds, core)) not in memo:
            with reading.reading():
                memo[memo_key] = _cells(spec, seeds, core)
        drop = reading.left_out() if reading.replicate(spec.probe) else None
        out = [c for c in memo[memo_key] if drop is None or c.seed != drop]
    if seeds != "all" and reading.replicate(spec.probe):
        reading.note_seeds(c.seed for c in out)
    return out


def _cells(spec: Spec, seeds: str, core: bool) -> list[Cell]:
    out = []
    keys = list(spec.grid)
    config_names = {f.name for f in dataclasses.fields(TrainConfig)}
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        point = {}
        for key, value in zip(keys, values, strict=True):
            names = key.split(",")
            point.update(zip(names, value if len(names) > 1 else [value], strict=True))
        if core and not spec.in_core(point):
            continue
        fields = {k: (None if v == "off" else v) for k, v in {**spec.base, **point}.items()}
        probe_kw = {k: v for k, v in fields.items() if k not in config_names}
        fields = {k: v for k, v in fields.items() if k in config_names}
        only, point = fields.pop("seed", None), {k: v for k, v in point.items() if k != "seed"}  # a point on one seed
        for seed in spec.seeds(seeds):
            if only is not None and seed != only:
                continue
            if reading.replicate(spec.probe) and seed == reading.left_out():  # a robustness reading leaves it out
                continue
            cfg = with_paths(TrainConfig(**fields, seed=seed), spec.paths, compile=True, keep=fields)
            if cfg.branch_at and "trunk" not in fields:  # a branch: its trunk is the cell with the base's values
                cfg = cfg.with_trunk({f: (None if v == "off" else v) for f, v in spec.base.items()})
            out.append(Cell(spec.name, point, seed, cfg, spec.probe, probe_kw))
    return out


def cell_key(cfg: TrainConfig, probe: str | None = None, probe_kw: dict | None = None) -> str:
    """16 hex digits of SHA-256 over the full config and :data:`CODE_VERSION` (and the probe with its arguments)."""
    config = dataclasses.asdict(cfg)
    for name, default in KEY_IF_NOT_DEFAULT.items():
        if config.get(name) == default:
            del config[name]
    content = {"config": config, "code": CODE_VERSION}
    if probe is not None:
        content["probe"] = {"name": probe, "kw": probe_kw or {}}
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def core_specs() -> list[Spec]:
    """Every spec in ``data/specs/`` marked ``core = true``."""
    return [s for s in (load_spec(p) for p in sorted((data_dir() / "specs").glob("*.toml"))) if s.core]
