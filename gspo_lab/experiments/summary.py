"""A cell's summary: the catalogue of its keys, the per-rollout aggregates, and the collapse rule.

Collapse, declared before any run (:func:`summarize`): with held-out accuracy sampled at the training temperature,
a_0 at rollout 0 and a threshold of ``COLLAPSE_FRACTION · a_0``, a run *collapsed* when some evaluation falls below
the threshold and every later one stays below it (the first such evaluation is the collapse point). A run whose loss
or gradient became non-finite *diverged*; it counts as collapsed.

Sensitivity endpoints (:func:`endpoints`), computed from a stored cell's evaluation rows, not part of the stored
summary (so no key changes): the *two-evaluation* collapse (the last two evaluations both below the threshold: a run
that recovers is not collapsed), *late held-out accuracy* (mean of the sampled evaluations at rollouts ≥
``LATE_FROM_FRACTION`` × the run's rollouts, e.g. ≥ 40 of 80) and the *training-reward AUC* (the mean over rollouts of
each rollout's mean training reward: the area under the reward curve per rollout). Declared here before any run that
uses them as its endpoint (findings part 2); on the stored runs they are a sensitivity check, labelled so.

**Endpoint v2** (:func:`endpoint_v2`; findings part 2, declared here before any run that uses it; the specs that use
it name it): every evaluation scores ≥ ``MIN_EVAL_SAMPLES`` sampled responses (128 eval prompts × 2 at τ, plus greedy
on the 128); the cold start is measured once per (checkpoint, length, τ) on the same prompts with many samples
(probe ``cold_start``, spec ``p0_cold_start``) and pooled over its seeds; the primary endpoint is *late held-out
accuracy* (the mean of the evaluations at rollouts ≥ ``LATE_FROM_FRACTION`` × rollouts), compared between arms
paired by seed with 95 % bootstrap intervals; the secondary the training-reward AUC; a run *collapsed* when its last
two evaluations both lie below ``COLLAPSE_FRACTION`` × the pooled cold start (a run that recovers is not collapsed;
a diverged run is); and its *collapse mode* is reported as numbers, each over the first and the last
``MODE_WINDOW`` rollouts: the truncated share of responses, the mean response length, the share of zero-std groups.
Beside it (issue 37, read from stored series, not stored): the collapse's *onset* and the other failure mode, a
run *frozen* at 0 reward with zero spread and zero gradient to its end, with its onset
(:mod:`gspo_lab.experiments.failure`).
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

import pandas as pd

import gspo_lab.experiments.reading as reading
from gspo_lab.experiments.failure import FROZEN_SERIES, collapse_onset, frozen_onset

__all__ = [
    "COLLAPSE_FRACTION",
    "LATE_FROM_FRACTION",
    "MIN_EVAL_SAMPLES",
    "MODE_WINDOW",
    "ENDPOINT_VERSION",
    "SUMMARY_KEYS",
    "summarize",
    "per_rollout",
    "READ_SERIES",
    "is_read",
    "stored_rows",
    "endpoints",
    "endpoint_v2",
]

#: a run collapsed when its held-out sampled accuracy falls below this fraction of the cold start's and stays there
COLLAPSE_FRACTION = 0.5
#: late held-out accuracy averages the evaluations from this fraction of the run on (rollouts >= 40 of 80)
LATE_FROM_FRACTION = 0.5
#: endpoint v2: the fewest sampled responses an evaluation may score (128 prompts x 2)
MIN_EVAL_SAMPLES = 256
#: endpoint v2's collapse mode: rollouts at the start and at the end of a run compared
MODE_WINDOW = 10
ENDPOINT_VERSION = "v2"

#: every key of a training cell's stored summary, defined once (probe cells return their own: experiments.probes)
SUMMARY_KEYS = {
    "diverged": "the loss or gradient became non-finite (the run stopped; counts as collapsed)",
    "eval_start": "held-out accuracy sampled at τ before the first rollout (one sample per eval prompt)",
    "eval_final": "held-out sampled accuracy after the last rollout",
    "eval_best": "the largest held-out sampled accuracy of the run's evaluations",
    "eval_greedy_start": "held-out greedy accuracy before the first rollout",
    "eval_greedy_final": "held-out greedy accuracy after the last rollout",
    "collapsed": "diverged, or an evaluation below COLLAPSE_FRACTION × eval_start with every later one below too",
    "collapse_rollout": "the rollout of the first evaluation from which the run stays below the threshold",
    "rollouts_done": "rollout batches trained",
    "reward_start": "mean training reward of the first update",
    "reward_final": "mean training reward of the first update of each of the last 5 rollouts, averaged",
    "clip_token_frac": "clip/token_frac averaged over the off-policy updates (k >= 1 within a rollout)",
    "clip_seq_frac": "clip/seq_frac averaged over the off-policy updates",
    "grad_norm_max": "largest pre-clip gradient norm of any update",
    "expert_change": "moe/expert_change averaged over the off-policy updates (MoE only)",
}


def per_rollout(history: pd.DataFrame) -> dict[str, list]:
    """Per rollout, the mean and the max of every numeric metric over its updates: ``{"<key>:mean": [...], ...}``."""
    if history.empty:
        return {"rollout": []}
    numeric = history.drop(columns=["update", "update_in_rollout", "epoch"], errors="ignore")
    numeric = numeric.select_dtypes("number")
    grouped = numeric.groupby("rollout")
    out = {"rollout": [int(r) for r in grouped.groups]}
    for stat in ("mean", "max"):
        table = getattr(grouped, stat)()
        for col in table.columns:
            out[f"{col}:{stat}"] = [None if not math.isfinite(v) else float(v) for v in table[col]]
    return out


#: Every stored per-rollout series some reading uses, as ``fnmatch`` patterns (``*``: a parameter group of
#: ``grad_shaping.GROUPS``, or a norm_of arm's ``own`` / ``other``). The readers: the findings page
#: (``gspo_record``: endpoints, gradient spikes, f10's logged shares and per-group norms and AdamW peaks, f11's
#: correction shares), the notebooks (``read.stored_curves``, the arm selector's ``ARM_METRICS``), the precursor rules
#: (``precursors.SIGNALS``, ``SIGNALS_V2``, and ``ratio/tok_log_std:mean`` for ``with_derived``) and the tests (a
#: committed cell's first rollouts re-run). The stored results keep only these (:mod:`gspo_lab.experiments.thinning`,
#: ``scripts/thin_results.py``); a new result also keeps every mean (:func:`stored_rows`), so a new reading of a new
#: run finds its series. Before a reading of stored results uses another series, add it here: tests/test_store.py
#: scans the sources for the series they name and fails until then (a thinned series is in git history). The two
#: ``drift/outside_grpo_band_*`` series (``failure.kept_grad_share``) exist only in results run since issue 37.
READ_SERIES = (
    "rollout",
    "reward/mean:mean",
    "response/length:mean",
    "response/truncated_frac:mean",
    "adv/zero_std_frac:mean",
    "clip/token_frac:mean",
    "clip/token_frac:max",
    "ratio/tok_log_std:mean",
    "ratio/tok_log_absmax:max",
    "kl/k3:mean",
    "policy/entropy:mean",
    "moe/expert_change:mean",
    "loss/policy:mean",
    "grad/norm:mean",
    "grad/norm:max",
    "grad/norm_*:max",
    "adam/peak_*:max",
    "grad/clipped:mean",
    "grad/skipped:mean",
    "grad/spike:mean",
    "grad/cos_other:mean",
    "correction/rho_mean:mean",
    "correction/masked_frac:mean",
    "correction/truncated_frac:mean",
    "drift/outside_grpo_band_frac:mean",
    "drift/outside_grpo_band_grad_frac:mean",
    "stale/lag:mean",
    "stale/kl_k3:mean",
    "stale/ess_frac:mean",
)


def is_read(key: str) -> bool:
    """Whether the per-rollout series ``key`` (e.g. ``"grad/norm_attn:max"``) is one some reading uses
    (:data:`READ_SERIES`)."""
    return any(fnmatchcase(key, pattern) for pattern in READ_SERIES)


def stored_rows(rows: dict[str, list]) -> dict[str, list]:
    """The per-rollout rows a new stored result keeps: every ``:mean``, and the ``:max`` some reading uses
    (:data:`READ_SERIES`; dropping the others makes a new cell ~26 % smaller)."""
    return {k: v for k, v in rows.items() if not k.endswith(":max") or is_read(k)}


def summarize(evals: pd.DataFrame, history: pd.DataFrame, *, diverged: bool = False) -> dict:
    """The cell's summary (:data:`SUMMARY_KEYS`): cold-start and final held-out accuracy, collapse (module
    docstring), clip fractions."""
    out: dict = {"diverged": diverged}
    if not evals.empty:
        acc = evals["eval/accuracy_sampled"].tolist()
        threshold = COLLAPSE_FRACTION * acc[0]
        below = [a < threshold for a in acc]
        first = next((i for i in range(len(acc)) if all(below[i:])), None)
        out.update(
            eval_start=acc[0],
            eval_final=acc[-1],
            eval_best=max(acc),
            eval_greedy_start=float(evals["eval/accuracy_greedy"].iloc[0]),
            eval_greedy_final=float(evals["eval/accuracy_greedy"].iloc[-1]),
            collapsed=diverged or first is not None,
            collapse_rollout=int(evals["rollout"].iloc[first]) if first is not None else None,
        )
    if not history.empty:
        off = history[history["update_in_rollout"] > 0]
        out.update(
            rollouts_done=int(history["rollout"].max()) + 1,
            reward_start=float(history["reward/mean"].iloc[0]),
            reward_final=float(history.groupby("rollout")["reward/mean"].first().iloc[-5:].mean()),
            clip_token_frac=float(off["clip/token_frac"].mean()) if len(off) else 0.0,
            clip_seq_frac=float(off["clip/seq_frac"].mean()) if len(off) else 0.0,
            grad_norm_max=float(history["grad/norm"].max()),
        )
        if "moe/expert_change" in history:
            out["expert_change"] = float(off["moe/expert_change"].mean()) if len(off) else 0.0
    return out


def endpoints(result: dict, *, fraction: float = COLLAPSE_FRACTION, late_from: float = LATE_FROM_FRACTION) -> dict:
    """Sensitivity endpoints of a stored training cell (module docstring), from its evaluation rows.

    Returns ``late_acc`` (mean sampled accuracy at rollouts >= ``late_from`` × rollouts; NaN if none),
    ``collapsed_two`` (diverged, or the last two evaluations both below ``fraction`` × the first), ``margin_prompts``
    (the last evaluation minus the threshold, in prompts of the evaluation: how far the declared flag is from
    flipping), ``evals`` (how many evaluations the run holds) and ``reward_auc`` (mean training reward per rollout).
    """
    ev = result.get("eval") or {}
    acc, rollouts = ev.get("eval/accuracy_sampled", []), ev.get("rollout", [])
    diverged = bool(result.get("summary", {}).get("diverged"))
    rewards = [r for r in (result.get("per_rollout") or {}).get("reward/mean:mean", []) if r is not None]
    auc = sum(rewards) / len(rewards) if rewards else math.nan
    if not acc:
        return {
            "late_acc": math.nan,
            "collapsed_two": diverged,
            "margin_prompts": math.nan,
            "evals": 0,
            "reward_auc": auc,
        }
    threshold = fraction * acc[0]
    late = [a for a, r in zip(acc, rollouts, strict=True) if r >= late_from * result["config"]["rollouts"]]
    two = len(acc) >= 2 and acc[-1] < threshold and acc[-2] < threshold
    prompts = result["config"].get("eval_prompts", 64)
    late_acc = sum(late) / len(late) if late else math.nan
    return {
        "late_acc": reading.late_value(late_acc, auc, acc[-1]),  # the page's reading: late_acc itself
        "collapsed_two": diverged or two,
        "margin_prompts": (acc[-1] - threshold) * prompts,
        "evals": len(acc),
        "reward_auc": auc,
    }


_MODE = {
    "truncated": "response/truncated_frac:mean",
    "length": "response/length:mean",
    "zero_std": "adv/zero_std_frac:mean",
}


def endpoint_v2(result: dict, cold_start: float, *, fraction: float = COLLAPSE_FRACTION) -> dict:
    """Endpoint v2 of a stored training cell (module docstring) against the pooled ``cold_start`` accuracy of its
    (checkpoint, length, τ). Returns ``late_acc``, ``reward_auc``, ``collapsed``, ``threshold``, ``last_two`` (the
    last two sampled accuracies), ``samples`` (per evaluation), ``<truncated|length|zero_std>_<early|late>``,
    ``collapse_onset`` (:func:`~gspo_lab.experiments.failure.collapse_onset` against ``threshold``; None when not
    collapsed), ``frozen`` and ``frozen_onset`` (:func:`~gspo_lab.experiments.failure.frozen_onset`; both None when
    the result lacks its series: every stored training result holds them). ValueError when the cell's evaluations
    score fewer than :data:`MIN_EVAL_SAMPLES` samples."""
    cfg = result["config"]
    samples = cfg.get("eval_prompts", 64) * cfg.get("eval_samples", 1)
    if samples < MIN_EVAL_SAMPLES:
        raise ValueError(
            f"cell {result.get('key')}: endpoint v2 needs >= {MIN_EVAL_SAMPLES} samples per evaluation "
            f"(eval_prompts x eval_samples), this one scored {samples}"
        )
    if not 0 < cold_start <= 1:
        raise ValueError(f"cold_start must be an accuracy in (0, 1], got {cold_start!r}")
    base = endpoints(result, fraction=fraction)
    acc = (result.get("eval") or {}).get("eval/accuracy_sampled", [])
    threshold = fraction * cold_start
    two, last = len(acc) >= 2 and max(acc[-2:]) < threshold, len(acc) >= 1 and acc[-1] < threshold
    collapsed = bool(result["summary"].get("diverged")) or reading.collapsed_value(two, last)
    pr = result.get("per_rollout") or {}
    mode = {}
    for name, key in _MODE.items():
        values = [v for v in pr.get(key, []) if v is not None]
        for when, part in (("early", values[:MODE_WINDOW]), ("late", values[-MODE_WINDOW:])):
            mode[f"{name}_{when}"] = sum(part) / len(part) if part else math.nan
    frozen, frozen_at = frozen_onset(pr) if all(k in pr for k in FROZEN_SERIES) else (None, None)
    onset = collapse_onset(acc, (result.get("eval") or {}).get("rollout", []), threshold) if collapsed else None
    return {
        "late_acc": base["late_acc"],
        "reward_auc": base["reward_auc"],
        "collapsed": collapsed,
        "threshold": threshold,
        "last_two": acc[-2:],
        "samples": samples,
        **mode,
        "collapse_onset": onset,
        "frozen": frozen,
        "frozen_onset": frozen_at,
    }
