"""Our stack's worker: ``gspo_lab.step.train_step`` on the compared configuration, timed per phase, at the kit's fast
paths (``with_paths(cfg, "fast")``, what ``gspo-lab train`` runs), its compiled paths (``with_paths(cfg,
"compiled")``: the trainer's forwards and the sampler's decode under torch.compile, as a compiled spec's sweep worker
runs them) or its reference paths (TrainConfig's defaults)."""

from __future__ import annotations

import time

from step_harness import (
    GROUP,
    LENGTH,
    MINIBATCHES,
    PROMPTS,
    RESPONSE_TOKENS,
    Channel,
    compiled_graphs,
    load_policy,
    peak_rss_mib,
    timed,
)


class NoStopTokenizer:
    """The tokenizer, except that ``eos_token_id`` reads −1: the sampler never stops early (fixed lengths)."""

    eos_token_id = -1

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __call__(self, *args, **kwargs):
        return self._tokenizer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def our_state(preset: str, minibatches: int, paths: str = "reference"):
    """A TrainState on the compared configuration at ``paths`` (gspo_lab.fast_paths.with_paths; on ``fast`` nothing is
    compiled, as ``gspo-lab train`` runs it), its rollout patched to fixed-length responses, and its timers."""
    import torch

    import gspo_lab.step as loop
    from gspo_lab.config import TrainConfig
    from gspo_lab.fast_paths import with_paths

    model, tokenizer, source = load_policy(preset)
    cfg = TrainConfig(
        checkpoint=source,
        task="sort",
        length=LENGTH,
        objective="gspo",
        prompts_per_rollout=PROMPTS,
        group_size=GROUP,
        minibatches=minibatches,
        max_new_tokens=RESPONSE_TOKENS,
        reward="partial",
        threads=1,
    )
    cfg = with_paths(cfg, paths)
    state = loop.init_state(cfg, model=model, tokenizer=tokenizer)
    timers, seen = {}, {}
    real_rollout = loop.rollout
    loop.rollout = timed(
        lambda m, tok, *a, **k: real_rollout(m, NoStopTokenizer(tok), *a, **k),
        timers,
        "gen",
        after=lambda data: seen.update(data=data),
    )
    loop._forward = timed(loop._forward, timers, lambda: "fwd_grad" if torch.is_grad_enabled() else "old_logp")
    loop.collect = timed(loop.collect, timers, "collect")
    return state, source, timers, seen


def batch_shape(data) -> dict:
    return {
        "rows": int(data.response_ids.shape[0]),
        "prompt_cols": int(data.prompt_ids.shape[1]),
        "response_cols": int(data.response_ids.shape[1]),
        "response_tokens": int(data.response_mask.sum()),
    }


def worker_ours(opts, chan: Channel, paths: str) -> None:
    import torch

    import gspo_lab.step as loop
    from gspo_lab.fast_paths import FAST_FIELDS
    from gspo_lab.model import count_params

    torch.set_num_threads(1)
    if paths == "compiled":  # the backend TRL's compiled column runs (inductor, aot_eager in the smoke test)
        import gspo_lab.policy

        gspo_lab.policy.COMPILE_BACKEND = opts.compile_backend
    state, source, timers, seen = our_state(opts.preset, MINIBATCHES, paths)
    settings = {f: getattr(state.cfg, f) for f in FAST_FIELDS}
    chan.send({"ready": True, "source": source, "threads": torch.get_num_threads(), "settings": settings,
               **count_params(state.model)})  # fmt: skip
    while chan.recv() == "step":
        timers.clear()
        graphs, t0 = compiled_graphs(), time.perf_counter()
        loop.train_step(state)
        total = time.perf_counter() - t0
        split = {"total": total, "update": total - timers["collect"], **timers}
        reply = {"times": split, "shape": batch_shape(seen["data"]), "graphs": compiled_graphs() - graphs}
        chan.send({**reply, "old_logp_computed": "old_logp" in timers})  # π_old's forward ran (old_forward=True)
    chan.send({"rss_mib": peak_rss_mib(), "threads": torch.get_num_threads()})
