"""What bench/bench_step.py's processes share: the compared configuration, the FLOP formula, timers, RSS, and the
JSON-lines pipe between the parent and each worker process (see bench_step.py's docstring for the methodology)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("bench_step.py")  # the entry point; workers are `bench_step.py --worker KIND`
PROMPTS, GROUP, MINIBATCHES = 16, 8, 4
LENGTH = 20  # sort digits: <bos> + "S:" + 20 digits + ">" = 24 prompt tokens
RESPONSE_TOKENS = 24
FLOP_ROWS = 64  # the FLOP/s minibatch: 64 rows × (24 + 24) tokens
GSPO_EPS = (3e-4, 4e-4)
MIB = 1024.0  # ru_maxrss is in KiB on Linux


def update_flop(active_params: int, tokens: int) -> int:
    """FLOPs of one forward + backward over ``tokens`` tokens: 6 · N_active · T (2 forward, 4 backward per weight).

    Attention scores, the log-softmax and the optimizer are not counted; the embedding table and norm gains are
    (they do no matmul). tests/test_bench_smoke.py checks this against torch's FlopCounterMode.
    """
    return 6 * active_params * tokens


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / MIB


def load_policy(preset: str):
    """(model, tokenizer, source): the shipped ``<preset>-sort`` checkpoint, else a fresh seed-0 build."""
    from gspo_lab.checkpoints import load_checkpoint
    from gspo_lab.model import build_model
    from gspo_lab.tokenizer import build_tokenizer

    try:
        model, tokenizer, _ = load_checkpoint(f"{preset}-sort")
        return model, tokenizer, f"data/checkpoints/{preset}-sort"
    except FileNotFoundError:
        tokenizer = build_tokenizer()
        return build_model(preset, len(tokenizer), seed=0), tokenizer, f'build_model("{preset}", seed=0)'


def compiled_graphs() -> int:
    """Graphs ``torch.compile`` has compiled so far in this process (0 where dynamo never ran): a worker reports the
    increase over each RL step, so a compile in a timed step shows up (bench_step.py's point 7)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return int(utils.counters["stats"]["unique_graphs"]) if utils is not None else 0


def timed(fn, timers: dict, key, after=None):
    """``fn`` wrapped to add its wall time to ``timers[key(...)]`` (key: a name, or a function of nothing)."""

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        name = key() if callable(key) else key
        timers[name] = timers.get(name, 0.0) + time.perf_counter() - t0
        if after is not None:
            after(out)
        return out

    return wrapper


class Channel:
    """Worker side: JSON lines over the process's original stdout; anything else printed goes to stderr."""

    def __init__(self):
        self._out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)

    def send(self, msg: dict) -> None:
        self._out.write(json.dumps(msg) + "\n")

    def recv(self) -> str:
        line = sys.stdin.readline()
        if not line:
            raise SystemExit("bench worker: parent went away")
        return line.strip()


class Worker:
    """Parent side: a worker subprocess, one JSON line per request; its stderr goes to a log shown on failure."""

    def __init__(self, kind: str, opts, warmup: int):
        self.kind = kind
        self.log = tempfile.TemporaryFile(mode="w+")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
               "TORCHINDUCTOR_COMPILE_THREADS": "1"}  # fmt: skip
        env["HF_HUB_OFFLINE"] = env["TRANSFORMERS_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
        cmd = [sys.executable, str(SCRIPT), "--worker", kind, "--preset", opts.preset]
        cmd += ["--repeats", str(opts.repeats), "--warmup", str(warmup), "--compile-backend", opts.compile_backend]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=ROOT, env=env
        )

    def ask(self, command: str | None = None) -> dict:
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.log.seek(0)
            raise RuntimeError(f"{self.kind} worker died (rc {self.proc.returncode}):\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
