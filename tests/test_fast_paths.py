"""The rig's paths (issue 34; gspo_lab/fast_paths.py): the fast paths are on where they apply and nowhere else, a
spec names its paths, ``gspo-lab train`` runs fast by default, and every stored cell keeps its key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import gspo_lab.policy as policy
from gspo_lab.cli import _train_config, build_parser
from gspo_lab.config import TrainConfig
from gspo_lab.experiments.spec import cells, load_spec
from gspo_lab.experiments.store import SUFFIX, stored_files
from gspo_lab.fast_paths import FAST_FIELDS, fast_fields, with_paths
from gspo_lab.paths import data_dir

#: the specs written before issue 34 named a spec's paths: they read as reference (their cells keep their keys);
#: every other spec must set ``paths``
BEFORE_PATHS = frozenset(
    "f10_direction_norm f10_onset_dual f10_shrink_skip f10c_relative_confirm f10t_two_by_two_ten "
    "f10u_shrink_skip_ten f10v_dual_cap_ten f10w_adam_state f10x_sgd_lr_search f10y_sgd_two_by_two f10z_branch "
    "f10z_onset_branch f11_successors_collapse f11b_production_dense f11b_successors_production "
    "f11c_corrections_dense f11c_corrections_precision f11d_production_confirm f1_clip_fractions f1_eps_sweep "
    "f2_clip_dose f2_clip_dose_confirm f2_collapse_dense f2_collapse_moe f2_confirm_clip f2_map_noclip f2_mechanism "
    "f2_search_add f2_search_clip f2_search_clip2 f2_search_clip3 f2c_reward_confirm f2r_clip_dose "
    "f2r_clip_dose_confirm f2r_collapse_dense f2r_collapse_moe f2r_confirm_clip f2r_mechanism f2t_collapse_ten "
    "f5_precision_confirm f5_precision_train f7_token_advantages f7c_token_confirm p0_cold_start "
    "p3_expert_volatility p5_precision p6_gradient_noise".split()
)

SPECS = sorted((data_dir() / "specs").glob("*.toml"))


def _fast(cfg: TrainConfig, **kw) -> tuple:
    out = with_paths(cfg, "fast", **kw)
    return tuple(getattr(out, f) for f in FAST_FIELDS[:4])  # group_stats, fused_adam, old_forward, compile_update


def test_each_fast_path_only_where_it_applies():
    cfg = TrainConfig(objective="grpo")
    assert with_paths(cfg, "reference") is cfg
    assert _fast(cfg) == (False, True, True, False)  # π_old recomputed (old_logp's default): its forward stays
    assert _fast(cfg, compile=True) == (False, True, True, False)  # no compile without the fast π_old
    sampler = replace(cfg, old_logp="sampler")
    assert _fast(sampler) == (False, True, False, False)
    assert _fast(sampler, compile=True) == (False, True, False, True)
    assert _fast(replace(sampler, routing_replay=True), compile=True) == (False, True, True, False)
    assert _fast(replace(cfg, optimizer="sgd")) == (False, False, True, False)
    assert _fast(sampler, compile=True, keep={"group_stats", "old_forward"}) == (True, True, True, False)
    assert with_paths(sampler, "fast").old_logp == "sampler" and with_paths(cfg, "fast").old_logp == "recompute"
    assert fast_fields(cfg) == {"group_stats": False, "fused_adam": True, "old_forward": True, "compile_update": False,
                                "compile_sampler": False}  # fmt: skip
    assert not with_paths(sampler, "fast", compile=True).compile_sampler  # fast never compiles the sampler
    with pytest.raises(ValueError, match="paths must be one of"):
        with_paths(cfg, "quick")


def test_the_compiled_paths_compile_everywhere_and_keep_the_fast_ones():
    """``compiled`` (issue 52): the fast paths, and both compiled levers in every configuration, π_old recomputed
    included; a field the user set is kept. ``fast`` with ``compile=True`` still compiles only where π_old's forward is
    skipped (the specs written before issue 52 ran so; their keys hold it)."""
    cfg = TrainConfig(objective="grpo")
    got = with_paths(cfg, "compiled")
    assert tuple(getattr(got, f) for f in FAST_FIELDS) == (False, True, True, True, True)
    assert with_paths(replace(cfg, routing_replay=True), "compiled").compile_update  # the hooks are traced (R2)
    r3 = replace(cfg, old_logp="sampler_bf16", sampler_routing_replay=True)
    assert with_paths(r3, "compiled").compile_update and with_paths(r3, "compiled").old_forward
    sampler = with_paths(replace(cfg, old_logp="sampler"), "compiled")
    assert (sampler.old_forward, sampler.compile_update, sampler.compile_sampler) == (False, True, True)
    kept = with_paths(cfg, "compiled", keep={"compile_sampler"})
    assert kept.compile_update and not kept.compile_sampler
    assert with_paths(cfg, "fast", compile=True).compile_update is False


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_stored_cell_keeps_its_key(path: Path):
    """Each stored result of a committed spec sits under the key one of the spec's cells computes today."""
    spec = load_spec(path)
    keys = {c.key for c in cells(spec, "all")}
    files = stored_files(data_dir() / "results" / spec.name)
    stored = {p.name.removesuffix(SUFFIX).removesuffix(".json.gz") for p in files}
    assert stored <= keys, f"{spec.name}: stored results no cell addresses: {sorted(stored - keys)[:5]}"
    if spec.name in BEFORE_PATHS:
        assert spec.paths == "reference"
    else:
        assert "paths" in path.read_text(), (
            f'spec {spec.name} must name its paths (paths = "fast" | "compiled" | "reference")'
        )


def test_a_fast_spec_turns_the_paths_on_and_keeps_what_it_names(tmp_path):
    text = """
name = "fast_smoke"
description = "a fast spec"
core = false
paths = "fast"
[seeds]
search = [0]
[base]
checkpoint = "sweep-sort"
old_logp = "sampler"
rollouts = 3
[grid]
"objective,group_stats" = [["grpo", true], ["gspo", false]]
"""
    path = tmp_path / "fast_smoke.toml"
    path.write_text(text)
    grpo, gspo = (c.cfg for c in cells(load_spec(path)))
    assert (grpo.group_stats, grpo.fused_adam, grpo.old_forward, grpo.compile_update) == (True, True, False, True)
    assert (gspo.group_stats, gspo.old_forward, gspo.compile_update) == (False, False, True)
    reference = load_spec(_write(tmp_path, text.replace('paths = "fast"', "")))
    assert [tuple(getattr(c.cfg, f) for f in FAST_FIELDS) for c in cells(reference)] == [
        (True, False, True, False, False),
        (False, False, True, False, False),  # the grid's own value; nothing else moves
    ]
    compiled = cells(load_spec(_write(tmp_path, text.replace('paths = "fast"', 'paths = "compiled"'))))
    assert [(c.cfg.group_stats, c.cfg.compile_update, c.cfg.compile_sampler) for c in compiled] == [
        (True, True, True),
        (False, True, True),
    ]
    with pytest.raises(ValueError, match="paths must be one of"):
        load_spec(_write(tmp_path, text.replace('paths = "fast"', 'paths = "quick"')))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "variant.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "argv, want",
    [
        ([], (False, True, True, False, False)),
        (["--paths", "reference"], (True, False, True, False, False)),
        (["--old-logp", "sampler"], (False, True, False, False, False)),  # no compile on a one-off run
        (["--old-logp", "sampler", "--group-stats"], (True, True, False, False, False)),  # a given flag wins
        (["--paths", "reference", "--fused-adam"], (True, True, True, False, False)),
        (["--paths", "compiled"], (False, True, True, True, True)),  # a long run
        (["--paths", "compiled", "--no-compile-sampler"], (False, True, True, True, False)),
    ],
)
def test_gspo_lab_train_runs_fast_by_default(argv, want):
    cfg = _train_config(build_parser().parse_args(["train", *argv]))
    assert tuple(getattr(cfg, f) for f in FAST_FIELDS) == want


def test_no_cpp_compiler_falls_back_to_eager(monkeypatch, capsys):
    from torch._inductor import config as inductor

    with inductor.patch({"cpp.cxx": ("/nonexistent/c++",)}):  # torch's own patch: a monkeypatched config breaks it
        assert not policy._has_cpp_compiler()
    assert policy._has_cpp_compiler()  # g++ is on this machine (CI's too: the compiled-update test needs it)
    monkeypatch.setattr(policy, "_has_cpp_compiler", lambda: False)
    policy._compiled_logits.cache_clear()
    try:
        assert policy._compiled_logits() is policy._logits
        assert "no C++ compiler found" in capsys.readouterr().out
    finally:
        policy._compiled_logits.cache_clear()
