"""bench/bench_step.py runs end to end on the small preset and compares like with like; no timing assertions.

One quick run (1 warm-up + 1 timed RL step per stack, ``sweep`` preset, ~10-15 s on 2 cores): the script prints
its table, writes every figure to JSON, and both stacks did the same work (same rows, prompt and response columns,
sampled-token counts; π_old's log-probs recomputed in both, which the script itself checks every step).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "bench_step.py"

pytest.importorskip("trl")


def _finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.mark.slow
def test_bench_quick_run_writes_every_figure(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--repeats", "1", "--warmup", "1", "--preset", "sweep"]
    proc = subprocess.run([*cmd, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for heading in ("RL step (median ms)", "peak RSS", "fp32 matmul 2048x2048x2048", "rollout sampling", "targets"):
        assert heading in proc.stdout, heading

    res = json.loads(out.read_text())
    assert set(res) == {"config", "step", "rss_mib", "flops", "rollout", "targets"}
    assert res["config"]["preset"] == "sweep" and res["config"]["threads"] == {"ours": 1, "trl": 1, "micro": 1}

    step = res["step"]
    # the same work: 16 prompts × G = 8 rows, 24 prompt + 24 response columns, every response 24 tokens
    expected = {"rows": 128, "prompt_cols": 24, "response_cols": 24, "response_tokens": 128 * 24}
    assert step["shape"]["ours"] == step["shape"]["trl"] == expected
    for stack in ("ours", "trl"):
        for part in ("total", "gen", "old_logp", "collect", "update"):
            assert len(step[stack][part]) == 1 and _finite_positive(step[stack]["median"][part]), (stack, part)
        assert _finite_positive(step["update_gflops"][stack])
    assert all(_finite_positive(v) for v in step["ratio_ours_over_trl"].values())

    assert all(_finite_positive(res["rss_mib"][k]) for k in ("ours", "trl", "micro"))
    flops = res["flops"]
    assert flops["rows"] == 64 and flops["tokens_per_row"] == 48
    assert flops["flop_per_update"] == 6 * flops["active_params"] * 64 * 48
    assert "2048x2048x2048" in flops["matmul_gflops_median"] and len(flops["matmul_gflops_median"]) == 3
    assert _finite_positive(flops["update_vs_2048_matmul"])
    roll = res["rollout"]
    assert roll["new_tokens"] == {"ours": 128 * 24, "generate": 128 * 24}
    assert _finite_positive(roll["ours_vs_generate"])
    assert set(res["targets"]) == {"step_ratio_le_0.5", "update_flops_ge_half_matmul", "ours_rss_lt_1GiB"}
