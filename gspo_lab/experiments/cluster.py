"""Running a spec's cells as Ray tasks on an existing Ray cluster: ``gspo-lab sweep SPEC --ray [ADDRESS]``.

    ray start --head --num-cpus 8                     # on the head node, from the project's environment
    ray start --address HEAD_IP:6379                  # on every other node, from the same environment
    gspo-lab sweep f2r_collapse_moe --ray HEAD_IP:6379

The same cells, keys and stored results as the local runner (:func:`gspo_lab.experiments.runner.run_sweep`); only
where a cell trains changes. Numbered:
    1. The driver (the machine that runs ``gspo-lab sweep``) lists the unfinished cells (a cell with a stored result
       is skipped), seed-major, and submits each as one task needing one CPU; the task trains the cell with one
       torch thread, as a local worker does.
    2. The code travels with the job: Ray uploads the driver's repository (``runtime_env`` ``working_dir``, without
       :data:`EXCLUDES` and what ``.gitignore`` names) and every task imports ``gspo_lab`` from that copy, so every
       cell runs the driver's code and cold starts. Each node needs the project's dependencies installed (the lock:
       ``source scripts/env.sh cluster``) and ``ray start`` run from that environment.
    3. A task returns the cell's result; the driver writes it into its own ``data/results/`` (or
       ``$GSPO_LAB_RESULTS``) as it arrives, with the driver's commit as ``git_commit`` (the worker's copy has no
       git) and the worker's ``machine``. Nothing is lost when the driver is stopped: the cells stored so far stay,
       and the next call skips them.
    4. A cell's partial run folder lives on the worker that trains it: ``$GSPO_LAB_RUNS`` when the driver has one
       set (it is passed on), else ``~/.cache/gspo-lab/ray-runs`` on that worker. A task whose worker dies (killed,
       out of memory, node lost) is re-run by Ray up to :data:`RETRIES` times; on the same node it resumes from that
       folder, elsewhere it starts over. Both give the same result on the same machine type (the loop is seeded).
    5. No cluster answering at ``address`` is a ``ConnectionError`` naming it; ``address="auto"`` means the cluster
       ``ray start`` left on this machine (or ``$RAY_ADDRESS``).
"""

from __future__ import annotations

import os
from pathlib import Path

from gspo_lab.experiments.runner import cell_result, git_commit, pending
from gspo_lab.experiments.spec import Cell, Spec
from gspo_lab.experiments.store import base_of, merge, result_path, write_result
from gspo_lab.paths import repo_root

__all__ = ["EXCLUDES", "RETRIES", "connect", "run_sweep_ray"]

EXCLUDES = [".git", ".venv", "runs", "data/results", "docs", "notebooks", "tests", "bench"]
"""Repository paths not uploaded with a job: the workers need the package, ``data/`` (cold starts, task splits) and
``pyproject.toml``; stored results stay with the driver."""
RETRIES = 2
"""Re-runs of a task whose worker died (Ray's ``max_retries``; an exception raised by the cell is not retried)."""
FAULT_ENV = "GSPO_LAB_RAY_FAULT"
"""Tests only: a folder; a cell whose key names a file ``<key>.die`` there has its first attempt exit its worker (a
killed worker); the attempt leaves ``<key>`` beside it."""
INSTALL_HINT = "install the cluster extra: `source scripts/env.sh cluster` (or pip install -e '.[cluster]')"


def connect(address: str = "auto"):
    """Join the Ray cluster at ``address`` with this repository as the job's code; returns the ``ray`` module."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(f"gspo-lab sweep --ray needs Ray: {INSTALL_HINT}") from err
    if not isinstance(address, str) or not address:
        raise ValueError(f"address must be 'auto' or HOST:PORT of a Ray head, got {address!r}")
    env_vars = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for name in ("GSPO_LAB_RUNS", FAULT_ENV):
        if os.environ.get(name):
            env_vars[name] = os.environ[name]
    runtime_env = {"working_dir": str(repo_root()), "excludes": EXCLUDES, "env_vars": env_vars}
    if ray.is_initialized():
        ray.shutdown()
    host, _, port = address.rpartition(":")
    if address != "auto" and not _answers(host, port):  # ray.init itself waits minutes for a head that is not there
        raise ConnectionError(
            f"no Ray cluster answered at address {address!r} (nothing accepts connections on that port): start one "
            f"with `ray start --head`, then pass the address it prints (HOST:PORT), or `--ray` alone on the head"
        )
    try:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, logging_level="WARNING")
    except (ConnectionError, RuntimeError, TimeoutError) as err:
        raise ConnectionError(
            f"no Ray cluster answered at address {address!r}: start one with `ray start --head` (then pass the "
            f"address it prints, HOST:PORT), or check the head is up with `ray status --address {address}` ({err})"
        ) from err
    return ray


def _answers(host: str, port: str, timeout: float = 5.0) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` (a Ray head's GCS port does)."""
    import socket

    if not host or not port.isdigit():
        raise ValueError(f"address must be 'auto' or HOST:PORT of a Ray head, got {host + ':' + port!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def _train_cell(cell: Cell, command: str) -> dict:
    """The task body, on a worker: the cell's result (notes 1, 4), written nowhere."""
    import torch

    os.environ.setdefault("GSPO_LAB_RUNS", str(Path.home() / ".cache" / "gspo-lab" / "ray-runs"))
    fault = os.environ.get(FAULT_ENV)
    if fault and (Path(fault) / f"{cell.key}.die").exists():
        marker = Path(fault) / cell.key
        if not marker.exists():
            marker.touch()
            os._exit(1)  # the worker dies mid-task, as an OOM kill would
    torch.set_num_threads(1)
    return cell_result(cell, command=command)


def run_sweep_ray(
    spec: Spec,
    *,
    address: str = "auto",
    seeds: str = "all",
    command: str = "",
    progress: bool = True,
    core: bool = False,
):
    """Run every unfinished cell of ``spec`` (``core``: of its core set) as Ray tasks on the cluster at ``address``;
    results are written here as they arrive (module notes). Returns the merge, as the local runner does."""
    from tqdm.auto import tqdm

    todo, total = pending(spec, seeds, core=core)
    bar = tqdm(total=total, initial=total - len(todo), desc=f"sweep {spec.name} (ray)", unit="cell",
               disable=not progress)  # fmt: skip
    if todo:
        ray = connect(address)
        commit = git_commit()
        task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(_train_cell)
        running = {task.remote(cell, command): cell for cell in todo}
        try:
            while running:
                (ref,), _ = ray.wait(list(running), num_returns=1)
                cell = running.pop(ref)
                result = ray.get(ref)
                write_result(result_path(cell), {**result, "git_commit": commit}, base_of(cell))
                bar.update(1)
        finally:
            for ref in running:  # the driver stopped early: stop the cells still queued or running
                ray.cancel(ref, force=True)
            ray.shutdown()
    bar.close()
    return merge(spec)
