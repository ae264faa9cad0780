"""`gspo-lab sweep SPEC --ray`: a spec's cells as Ray tasks on a local Ray head (127.0.0.1, 2 CPUs) give the same
stored results as the local runner; a killed worker's cell is re-run; finished cells are skipped; no cluster is a
clear error."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from test_experiments import SPEC as LOCAL_SPEC  # the local runner's tiny spec: four cells

from gspo_lab.cli import build_parser
from gspo_lab.experiments import cluster
from gspo_lab.experiments.runner import run_sweep
from gspo_lab.experiments.spec import cells, load_spec
from gspo_lab.experiments.store import load_result, result_path

SPEC = LOCAL_SPEC.replace('name = "smoke_test"', 'name = "ray_test"')

LOCAL_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
"""Ray on Linux swaps 127.0.0.1 for the node's network address unless told the first; so every server binds to the
loopback. A head started by ``ray.init`` turns on token authentication (and writes ~/.ray/auth_token) unless told the
last: a loopback-only test cluster needs none."""

HEAD = """
import sys, ray
ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


@pytest.fixture(scope="module")
def head():
    """A Ray head of 2 CPUs on 127.0.0.1 owned by a child process: closing its stdin stops that cluster alone."""
    import os

    env = {**os.environ, **LOCAL_ONLY}
    proc = subprocess.Popen([sys.executable, "-c", HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    address = proc.stdout.readline().strip()
    assert address.startswith("127.0.0.1:"), address
    yield address
    proc.stdin.close()
    proc.wait(timeout=60)


@pytest.fixture
def spec(tmp_path, monkeypatch):
    for name, value in LOCAL_ONLY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "runs"))
    path = tmp_path / "ray_test.toml"
    path.write_text(SPEC)
    return load_spec(path)


def _comparable(result: dict) -> dict:
    """A stored result without what differs between two runs of the same cell: wall times and timers."""
    out = {k: v for k, v in result.items() if k not in {"wall_s", "wall_segments_s"}}
    out["per_rollout"] = {k: v for k, v in result["per_rollout"].items() if not k.startswith("time/")}
    return out


def test_ray_sweep_stores_what_the_local_runner_stores(head, spec, tmp_path, monkeypatch):
    fault = tmp_path / "fault"
    fault.mkdir()
    doomed = cells(spec)[1].key
    (fault / f"{doomed}.die").touch()
    monkeypatch.setenv(cluster.FAULT_ENV, str(fault))  # that cell's first attempt kills its worker
    t0 = time.perf_counter()
    table = cluster.run_sweep_ray(spec, address=head, command="ray test", progress=False)
    ray_s = time.perf_counter() - t0
    assert len(table) == 4
    assert (fault / doomed).exists(), "the doomed cell's first worker died, and the cell was re-run"
    ray_results = {c.key: load_result(result_path(c)) for c in cells(spec)}
    assert all(r["command"] == "ray test" for r in ray_results.values())

    monkeypatch.delenv(cluster.FAULT_ENV)
    monkeypatch.setenv("GSPO_LAB_RESULTS", str(tmp_path / "local"))
    monkeypatch.setenv("GSPO_LAB_RUNS", str(tmp_path / "local-runs"))
    run_sweep(spec, workers=1, command="ray test", progress=False)
    for c in cells(spec):
        assert _comparable(ray_results[c.key]) == _comparable(load_result(result_path(c))), c.key
    print(f"ray sweep of 4 cells, one worker killed: {ray_s:.1f} s")


def test_finished_cells_are_skipped_without_a_cluster(spec, monkeypatch):
    run_sweep(spec, workers=1, progress=False)

    def boom(address="auto"):
        raise AssertionError("connected although every cell is stored")

    monkeypatch.setattr(cluster, "connect", boom)
    assert len(cluster.run_sweep_ray(spec, address="127.0.0.1:1", progress=False)) == 4


def test_no_cluster_is_an_error_naming_the_address(monkeypatch):
    for name, value in LOCAL_ONLY.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConnectionError, match="no Ray cluster answered at address '127.0.0.1:9'"):
        cluster.connect("127.0.0.1:9")
    with pytest.raises(ValueError, match="HOST:PORT"):
        cluster.connect("nohost")


def test_cli_flag():
    args = build_parser().parse_args(["sweep", "f2r_collapse_moe", "--ray"])
    assert args.ray == "auto" and args.specs == ["f2r_collapse_moe"]
    args = build_parser().parse_args(["sweep", "f2r_collapse_moe", "--ray", "10.0.0.5:6379"])
    assert args.ray == "10.0.0.5:6379"
    assert build_parser().parse_args(["sweep", "x"]).ray is None
