"""bench/bench_step.py runs end to end on the small preset and compares like with like; no timing assertions.

One quick run (2 warm-up steps for the compiled columns, 1 for the others, then 1 timed round; ``sweep`` preset,
~90 s on 2 busy cores): the script prints its five columns (the kit at its fast, compiled and reference paths, TRL's
GRPOTrainer at its default and with ``torch_compile=True``) and their ratios, writes every figure to JSON, and every
column did the same work (same rows, prompt and response columns, sampled-token counts; π_old's log-probs recomputed
in each, which the script itself checks every step). The compiled columns run with the ``aot_eager`` backend here
(TRL's torch_compile and the kit's compiled paths alike): the same tracing and autograd graphs as inductor without
its code generation, which ``bash scripts/bench.sh`` runs.

The driver's bookkeeping is checked without processes: a compiled column that dies is reported in its column while
the others finish, a column that skips π_old ends the run, and a graph compiled inside a timed step makes a column
"not comparable".

Its FLOP figure (6 · N_active · T per update) is checked against an independent count: torch's FlopCounterMode
over one forward + backward of the same model on a batch of the same shape (see ``test_flop_figure_…``).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.utils.flop_counter as fc

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "bench_step.py"
COLUMNS = ("kit_fast", "kit_compiled", "kit_ref", "trl", "trl_compile")
PARTS = ("total", "gen", "old_logp", "collect", "update")

pytest.importorskip("trl")


def _finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[str, dict]:
    """One quick run of the script on the ``sweep`` preset: (its stdout, its JSON figures)."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--repeats", "1", "--warmup", "1", "--compile-warmup", "1"]
    cmd += ["--preset", "sweep", "--compile-backend", "aot_eager"]
    proc = subprocess.run([*cmd, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout, json.loads(out.read_text())


@pytest.mark.slow
def test_bench_quick_run_writes_every_figure(bench):
    stdout, res = bench
    headings = ("RL step (median ms)", "ratio (median of per-round ratios)", "TRL compile", "peak RSS",
                "fp32 matmul 2048x2048x2048", "rollout sampling", "targets")  # fmt: skip
    for heading in headings:
        assert heading in stdout, heading

    assert set(res) == {"config", "step", "rss_mib", "flops", "rollout", "targets"}
    config = res["config"]
    assert config["preset"] == "sweep" and config["threads"] == {c: 1 for c in (*COLUMNS, "micro")}
    settings = {c: v["settings"] for c, v in config["columns"].items()}
    # the kit at gspo-lab train's default (π_old recomputed here, so its forward stays) and at TrainConfig's defaults
    assert settings["kit_fast"] == {"group_stats": False, "fused_adam": True, "old_forward": True,
                                    "compile_update": False, "compile_sampler": False}  # fmt: skip
    assert settings["kit_compiled"] == {"group_stats": False, "fused_adam": True, "old_forward": True,
                                        "compile_update": True, "compile_sampler": True}  # fmt: skip
    assert settings["kit_ref"] == {"group_stats": True, "fused_adam": False, "old_forward": True,
                                   "compile_update": False, "compile_sampler": False}  # fmt: skip
    assert settings["trl"]["torch_compile"] is False and settings["trl_compile"]["torch_compile"] is True
    assert {c: v["warmup"] for c, v in config["columns"].items()} == {"kit_fast": 1, "kit_compiled": 2, "kit_ref": 1,
                                                                      "trl": 1, "trl_compile": 2}  # fmt: skip

    step = res["step"]
    # the same work: 16 prompts × G = 8 rows, 24 prompt + 24 response columns, every response 24 tokens
    expected = {"rows": 128, "prompt_cols": 24, "response_cols": 24, "response_tokens": 128 * 24}
    assert step["shape"] == {c: expected for c in COLUMNS}
    assert step["failed"] == {} and step["status"] == {c: "comparable" for c in COLUMNS}
    for c in COLUMNS:
        for part in PARTS:
            assert len(step[c][part]) == 1 and _finite_positive(step[c]["median"][part]), (c, part)
        assert _finite_positive(step["update_gflops"][c])
    assert set(step["ratio"]) == {"kit_fast/trl", "kit_compiled/trl", "kit_ref/trl", "trl_compile/trl",
                                  "kit_fast/kit_ref", "kit_fast/trl_compile", "kit_compiled/trl_compile"}  # fmt: skip
    best, best_of = step["fastest_kit"], ("kit_fast", "kit_compiled")  # against TRL compile: issue 52's target
    assert best["column"] in best_of
    assert best["ratio_to_peer"] == min(step["ratio"][f"{c}/trl_compile"]["total"] for c in best_of)
    assert len(step["load"]) == 2 and all(x >= 0 for x in step["load"])
    assert all(_finite_positive(v) for r in step["ratio"].values() for v in r.values())
    # TRL's torch_compile really compiled its loss forward (not π_old's), all of it in its warm-up steps
    comp = step["compile"]
    assert comp["trl_compile"]["graphs_in_warmup"] > 0 and comp["trl_compile"]["graphs_in_timed"] == 0
    assert comp["trl_compile"]["compiled_forwards"] == ["fwd_grad"] and comp["trl_compile"]["warmup_steps"] == 2
    assert all(comp[c]["graphs_in_warmup"] == comp[c]["graphs_in_timed"] == 0 for c in ("kit_fast", "kit_ref", "trl"))
    # the kit compiled its forwards and its decode step in its warm-up steps, nothing in the timed ones
    assert comp["kit_compiled"]["graphs_in_warmup"] >= 3 and comp["kit_compiled"]["graphs_in_timed"] == 0

    assert all(_finite_positive(res["rss_mib"][k]) for k in (*COLUMNS, "micro"))
    flops = res["flops"]
    assert flops["rows"] == 64 and flops["tokens_per_row"] == 48
    assert "2048x2048x2048" in flops["matmul_gflops_median"] and len(flops["matmul_gflops_median"]) == 3
    assert _finite_positive(flops["update_vs_2048_matmul"])
    roll = res["rollout"]
    assert roll["new_tokens"] == {"ours": 128 * 24, "generate": 128 * 24}
    assert _finite_positive(roll["ours_vs_generate"])
    assert set(res["targets"]) == {"step_ratio_le_0.5", "fastest_kit_le_0.95_trl_compile",
                                   "update_flops_ge_half_matmul", "ours_rss_lt_1GiB"}  # fmt: skip


# --- the lockstep driver's bookkeeping, without processes ----------------------------------------------------------
@pytest.fixture(scope="module")
def driver():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_step
        import step_report
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return bench_step, step_report


class FakeWorker:
    """Replies to "step" as a worker does; ``die_at``: the step on which it dies, as Worker.ask reports a death."""

    def __init__(self, name: str, log: list, die_at: int | None = None, old: bool = True, graphs=()):
        self.name, self.log, self.die_at, self.old, self.graphs, self.n = name, log, die_at, old, list(graphs), 0

    def ask(self, command=None):
        self.log.append(self.name)
        if self.n == self.die_at:
            raise RuntimeError(f"{self.name} worker died (rc 1):\nTraceback ...\nRuntimeError: inductor failed\n")
        self.n += 1
        graphs = self.graphs[self.n - 1] if self.n <= len(self.graphs) else 0
        times = dict.fromkeys(PARTS, 0.1 * self.n)
        return {"times": times, "shape": {}, "old_logp_computed": self.old, "graphs": graphs}


def test_lockstep_reports_a_failed_compiled_column_and_runs_the_rest(driver):
    bench_step, _ = driver
    log: list = []
    workers = {c: FakeWorker(c, log, die_at=2 if c == "trl_compile" else None) for c in COLUMNS}
    warmup = {"kit_fast": 1, "kit_compiled": 1, "kit_ref": 1, "trl": 1, "trl_compile": 3}
    steps, warm, failed = bench_step.lockstep(workers, warmup, repeats=2)
    assert failed == {"trl_compile": "RuntimeError: inductor failed"}
    # its 2 extra warm-up steps alone first, then round r starts at column r mod 5; the dead column is skipped
    assert log[:7] == ["trl_compile", "trl_compile", "kit_fast", "kit_compiled", "kit_ref", "trl", "trl_compile"]
    assert log[7:] == ["kit_compiled", "kit_ref", "trl", "kit_fast", "kit_ref", "trl", "kit_fast", "kit_compiled"]
    assert all(len(steps[c]) == 2 and len(warm[c]) == 1 for c in ("kit_fast", "kit_compiled", "kit_ref", "trl"))
    assert steps["trl_compile"] == [] and len(warm["trl_compile"]) == 2

    workers = {c: FakeWorker(c, [], die_at=0 if c == "trl" else None) for c in COLUMNS}
    with pytest.raises(RuntimeError, match="trl worker died"):  # the columns compared against are not optional
        bench_step.lockstep(workers, dict.fromkeys(COLUMNS, 1), repeats=1)


def test_lockstep_ends_the_run_when_a_column_skips_old_logprobs(driver):
    bench_step, _ = driver
    workers = {c: FakeWorker(c, [], old=c != "trl_compile") for c in COLUMNS}
    with pytest.raises(RuntimeError, match="trl_compile: old log-probs were not computed; every ratio would be"):
        bench_step.lockstep(workers, dict.fromkeys(COLUMNS, 1), repeats=1)


def test_a_graph_compiled_in_a_timed_step_makes_the_column_not_comparable(driver):
    bench_step, step_report = driver
    workers = {c: FakeWorker(c, [], graphs=(3, 0, 1) if c == "trl_compile" else ()) for c in COLUMNS}
    steps, warm, failed = bench_step.lockstep(workers, dict.fromkeys(COLUMNS, 1), repeats=2)
    step = step_report.summarise_steps(steps, warm, failed)
    assert step["compile"]["trl_compile"]["graphs_in_warmup"] == 3
    assert step["compile"]["trl_compile"]["graphs_in_timed"] == 1
    assert step_report.column_status(step, "trl_compile") == "not comparable: compiled graphs in 1 of 2 timed steps"
    assert step_report.column_status(step, "trl") == "comparable"
    assert step["ratio"]["kit_fast/kit_ref"]["total"] == pytest.approx(1.0)
    step["status"] = {c: step_report.column_status(step, c) for c in COLUMNS}
    assert step_report.fastest_kit(step) == (None, None)  # no comparable TRL compile: no pair to report
    step["status"]["trl_compile"] = "comparable"
    step["ratio"]["kit_compiled/trl_compile"]["total"] = 0.9
    assert step_report.fastest_kit(step) == ("kit_compiled", 0.9)
    step["status"]["kit_compiled"] = "not comparable: compiled graphs in 1 of 2 timed steps"
    assert step_report.fastest_kit(step) == ("kit_fast", step["ratio"]["kit_fast/trl_compile"]["total"])


# --- the FLOP figure against an independent count ---------------------------------------------------------------
# torch 2.13's FlopCounterMode has no formula for two ops this model runs on CPU; without one it counts them as 0.
# These follow the ops' shapes (a matmul is 2 · m · k · n), nothing of the script's formula.
aten = torch.ops.aten


def _grouped_mm_flop(a, b, *args, out_shape=None, **kwargs) -> int:
    """MoE experts (transformers' "grouped_mm"): one (m × k) @ (k × n) per expert, groups split m or k."""
    if len(a) == 2:  # (Σm × k) @ (E × k × n) forward / grad-input, or (k × Σm) @ (Σm × n) split by offs: grad-weight
        return 2 * a[0] * a[1] * b[-1]
    return 2 * a[0] * a[1] * a[2] * b[-1]  # batched (E × m × k) @ (E × k × n)


def _cpu_sdpa_flop(q, k, v, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_flop_count(q, k, v)


def _cpu_sdpa_backward_flop(grad_out, q, k, v, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_backward_flop_count(grad_out, q, k, v)


CPU_FORMULAS = {
    aten._grouped_mm: _grouped_mm_flop,
    aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flop,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward_flop,
}


def counted_flops(model, rows: int, cols: int) -> dict[str, int]:
    """FLOPs torch counts in one forward + backward of ``model`` on a (rows × cols) batch, by operator."""
    ids = torch.randint(3, model.config.vocab_size, (rows, cols), generator=torch.Generator().manual_seed(0))
    with fc.FlopCounterMode(display=False, custom_mapping=CPU_FORMULAS) as counter:
        logits = model(input_ids=ids).logits
        logits.log_softmax(-1)[..., 0].mean().backward()
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.mark.slow
def test_flop_figure_matches_torch_flop_counter(bench):
    """6 · N_active · T is within 3 % of the matmul FLOPs torch counts (mm, grouped_mm), attention left out.

    Why not exact: N counts the embedding table (a lookup, no matmul) and the RMSNorm gains, so the formula is
    above the count by 6 · T · (V·H + norm gains) = 2.1 % on ``sweep`` (1.0 % on ``moe``). The routers' matmuls are
    in both (count_params counts routers in full). Attention (QKᵀ and AV, forward and backward) is not in
    6 · N · T by design and is compared separately: ~22 % of the counted total on ``sweep`` at 48 tokens, so the
    figure must sit below the total. A wrong formula is far outside 3 %: 2 · N · T (no backward) reads 0.34,
    total instead of active parameters 2.4, response tokens only 0.51.
    """
    from gspo_lab.checkpoints import load_checkpoint
    from gspo_lab.model import build_model, count_params
    from gspo_lab.tokenizer import build_tokenizer

    _, res = bench
    config, flops = res["config"], res["flops"]
    weights = config["weights"]
    if weights.startswith("data/checkpoints/"):
        model = load_checkpoint(weights.removeprefix("data/checkpoints/"))[0]
    else:
        model = build_model(config["preset"], len(build_tokenizer()), seed=0)
    assert count_params(model) == {"total": config["params_total"], "active": flops["active_params"]}

    by_op = counted_flops(model, flops["rows"], flops["tokens_per_row"])
    attention = sum(n for op, n in by_op.items() if "attention" in op)
    matmul = sum(by_op.values()) - attention
    assert "aten._grouped_mm" in by_op, f"the experts ran no grouped_mm; recheck what is counted: {by_op}"
    assert 1.0 <= flops["flop_per_update"] / matmul <= 1.03, (flops["flop_per_update"], by_op)
    assert flops["flop_per_update"] < matmul + attention

    # the RL-step table's GFLOP/s uses the same figure: 4 updates on 32 rows = 2 × the 64-row update's FLOPs
    step = res["step"]
    for column in COLUMNS:
        step_flop = step["update_gflops"][column] * 1e9 * step[column]["median"]["update"]
        assert step_flop == pytest.approx(2 * flops["flop_per_update"], rel=1e-9), column
