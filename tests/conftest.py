"""Shared fixtures: small hand-built tensors, a tiny differentiable 'policy' for parameter gradients, and one smoke-tier
execution of every notebook per test session."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import torch

# the GMPO agreement tests import TRL's experimental trainer on purpose: its "unstable API" warning is known
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

if os.environ.get("PYTEST_XDIST_WORKER") is not None:
    # one worker per core (scripts/test.sh): a worker's own ops on one thread, or the workers oversubscribe the cores
    # (two threads were slower than one for this kit's small tensors on a shared 2-core machine: README, "Measured
    # here"); the training loop sets its own (TrainConfig.threads, 1 by default)
    torch.set_num_threads(1)


class BigramPolicy(torch.nn.Module):
    """A tiny autoregressive policy: log π(y_t | y_{t-1}) = log_softmax(W[y_{t-1}])[y_t], W: (V, V), float64.

    Enough to check identities on *parameter* gradients (not only on d/d logp) without a transformer.
    """

    def __init__(self, vocab: int = 7, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.W = torch.nn.Parameter(torch.randn(vocab, vocab, generator=g, dtype=torch.float64))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens: (B, T + 1) int -> (B, T) log-probs of tokens[:, 1:] given the previous token."""
        logits = self.W[tokens[:, :-1]]
        return torch.log_softmax(logits, -1).gather(-1, tokens[:, 1:, None]).squeeze(-1)


@pytest.fixture
def policy_batch():
    """(policy, tokens, old_logp, mask): an off-policy batch of 8 responses (2 groups of G = 4), ragged lengths."""
    g = torch.Generator().manual_seed(1)
    policy = BigramPolicy()
    B, T = 8, 9
    tokens = torch.randint(0, 7, (B, T + 1), generator=g)
    lengths = torch.tensor([9, 3, 5, 1, 7, 9, 2, 6])
    mask = torch.arange(T)[None, :] < lengths[:, None]
    with torch.no_grad():
        old_logp = policy(tokens) + 0.2 * torch.randn(B, T, generator=g, dtype=torch.float64)
    return policy, tokens, old_logp, mask


SMOKE_CELL_TIMEOUT_S = 240

#: the longest modules, started first under pytest-xdist (scripts/test.sh), in this order: the browser tests (one
#: JupyterLab, every notebook's Run All), the notebook tests (the smoke run, which the browser's book test reads
#: near its end), the findings page (computed once per module). --dist loadfile keeps each module on one worker, so
#: its module fixtures run once; --no-loadscope-reorder keeps this order (xdist would sort modules by test count).
LONG_MODULES_FIRST = ("test_browser.py", "test_notebooks.py", "test_findings.py")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, move LONG_MODULES_FIRST to the front (longest first); the rest keeps its order."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    rank = {name: i for i, name in enumerate(LONG_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def once_per_run(tmp_path_factory, name: str, produce):
    """``produce(folder)``'s JSON-serialisable value, computed once per test run even under pytest-xdist.

    Without xdist it simply runs in a fresh ``tmp_path_factory`` folder. Under xdist (``-n``) every worker has its own
    session fixtures, so the first worker to ask runs ``produce`` in a folder shared by the run's workers, holding a
    file lock; the others wait on that lock and read the value it wrote as JSON (paths in it stay valid: the folder
    is shared). If ``produce`` raises, nothing is written and the next worker to ask tries again (as each would
    without sharing).
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return produce(tmp_path_factory.mktemp(name))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # pytest-of-<user>/pytest-<n>: this run's, shared by its workers
    record = shared / f"{name}.json"
    with FileLock(str(record) + ".lock"):
        if record.is_file():
            return json.loads(record.read_text())
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=shared))  # fresh, even after a failed try
        value = produce(folder)
        record.write_text(json.dumps(value))
        return value


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """Every notebook executed once per test run at the smoke tier (``run_all``): name -> its run record.

    The notebook regression tests (test_notebooks.py) assert their claims; the browser test of the book
    (test_browser.py) builds the book from the same executed notebooks, so the suite runs them only once (under
    pytest-xdist too: ``once_per_run``; the records are JSON and their paths point into the shared folder).
    """
    from gspo_lab.nb.run import run_all

    def run(out):
        return run_all("smoke", out, progress=False, cell_timeout=SMOKE_CELL_TIMEOUT_S)

    return {r["name"]: r for r in once_per_run(tmp_path_factory, "smoke", run)}
