"""The notebooks as regression tests: each runs headless (smoke tier) under papermill and its claims hold.

Every notebook records claims computed *live* in this run from a shipped checkpoint (gspo_lab.nb.results); the
assertions below read that JSON back. One run of all notebooks per test session (the ``smoke`` fixture of
conftest.py, which the browser test of the book shares).
"""

from __future__ import annotations

import json
import shutil

import pytest

from gspo_lab.nb.params import NOTEBOOKS
from gspo_lab.nb.run import execute
from gspo_lab.paths import repo_root

SMOKE_CELL_TIMEOUT_S = 240  # as conftest.py's ``smoke`` fixture

#: the first test that asks for ``smoke`` carries the whole smoke run (every notebook, ~4.5 min on a loaded 2-core
#: machine, longer beside a second pytest-xdist worker), past pytest-timeout's 300 s default
pytestmark = pytest.mark.timeout(900)


def _results(smoke, name):
    run = smoke[name]
    assert run["ok"], f"{name} failed: {run['error']}"
    return json.loads(open(run["results"]).read())


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_runs_and_every_claim_holds(smoke, name):
    results = _results(smoke, name)
    assert results["notebook"] == name and results["claims"]
    failed = [c for c in results["claims"] if not c["passed"]]
    assert not failed, failed


def _claim(results, name):
    return next(c for c in results["claims"] if c["name"] == name)


def test_03_gspo_clips_at_least_ten_times_more_tokens_and_grpo_clips_at_all(smoke):
    r = _results(smoke, "03_clipping")
    c = _claim(r, "gspo_clips_10x")
    assert c["value"] >= 10.0 and c["threshold"] == 10.0
    assert _claim(r, "grpo_clips")["value"] > 0.0  # the ratio means nothing when GRPO clips nothing


def test_02_gspo_token_matches_gspo_gradient(smoke):
    assert _claim(_results(smoke, "02_gradients"), "gspo_token_identity")["value"] <= 1e-6


def test_02_staleness_noise_is_recorded_with_its_interval(smoke):
    stale = _results(smoke, "02_gradients")["numbers"]["staleness_noise"]
    assert stale["noise_ratio_lo"] <= stale["noise_ratio"] <= stale["noise_ratio_hi"]


def test_01_summed_variance_grows(smoke):
    assert _claim(_results(smoke, "01_ratio_variance"), "sum_grows")["value"] >= 3.0


def test_00_objectives_gradients_agree_on_policy(smoke):
    assert _claim(_results(smoke, "00_tour"), "on_policy_gradients_equal")["value"] <= 1e-4


def test_notebook_runs_from_a_temporary_copy(tmp_path):
    """Data and checkpoints are found by the package, not by the working directory."""
    copy = tmp_path / "elsewhere" / "00_tour.ipynb"
    copy.parent.mkdir()
    shutil.copy(repo_root() / "notebooks" / "00_tour.ipynb", copy)
    params = {"prompts": 4, "group_size": 4, "minibatches": 2, "results_path": str(tmp_path / "r.json")}
    execute(copy, tmp_path / "out.ipynb", params, cell_timeout=SMOKE_CELL_TIMEOUT_S, cwd=copy.parent)
    assert json.loads((tmp_path / "r.json").read_text())["notebook"] == "00_tour"


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_figures_are_stored_as_images(smoke, name):
    """display(fig) must render PNG (not the '<Figure size …>' text): the report and the browser need images."""
    executed = json.loads(open(smoke[name]["executed"]).read())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    figures = [
        o["data"] for o in outputs if "".join(o.get("data", {}).get("text/plain", "")).startswith("<Figure size")
    ]
    assert figures and all("image/png" in data for data in figures)


def seed_check(tier: str, seeds=range(5), out_dir=None, notebooks=None) -> dict:
    """Run every notebook at ``tier`` once per seed; per claim (and the recorded staleness noise) the values by seed.

    ``python tests/test_notebooks.py --seeds smoke|full`` prints them with min/max: a claim must hold on every seed
    at the tier it is asserted in; what holds only over many seeds is recorded, not asserted.
    """
    import tempfile
    from pathlib import Path

    from gspo_lab.nb.params import parameters_for

    out_dir = Path(out_dir or tempfile.mkdtemp(prefix=f"seeds-{tier}-"))
    values: dict[str, dict[int, float]] = {}
    for seed in seeds:
        for name in sorted(notebooks or NOTEBOOKS):
            path = out_dir / f"{name}-{seed}.json"
            params = {**parameters_for(name, tier), "seed": seed, "results_path": str(path)}
            execute(repo_root() / "notebooks" / f"{name}.ipynb", out_dir / f"{name}-{seed}.ipynb", params)
            results = json.loads(path.read_text())
            for c in results["claims"]:
                values.setdefault(f"{name[:2]}:{c['name']} {c['op']} {c['threshold']:g}", {})[seed] = c["value"]
            for key, v in results["numbers"].get("staleness_noise", {}).items():
                if key.startswith("noise_ratio"):
                    values.setdefault(f"{name[:2]}:staleness {key} (recorded)", {})[seed] = v
    return values


if __name__ == "__main__":
    import sys

    if len(sys.argv) < 3 or sys.argv[1] != "--seeds":
        raise SystemExit("usage: python tests/test_notebooks.py --seeds smoke|full [NOTEBOOK ...]")
    table = seed_check(sys.argv[2], notebooks=sys.argv[3:])
    print(f"| claim ({sys.argv[2]} tier) | " + " | ".join(f"seed {s}" for s in range(5)) + " | min | max |")
    print("| --- |" + " --- |" * 7)
    for key, by_seed in table.items():
        vals = [by_seed[s] for s in sorted(by_seed)]
        print(f"| {key} | " + " | ".join(f"{v:.4g}" for v in vals) + f" | {min(vals):.4g} | {max(vals):.4g} |")
