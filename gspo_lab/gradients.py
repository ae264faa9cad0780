"""Gradient analysis (GSPO paper §4.2, Eqs. 10-12): how each objective weights ∇ log π_θ of each token.

Every objective's gradient is Σ_{i,t} c_{i,t} ∇_θ log π_θ(y_{i,t}|…) for some per-token coefficients c, and
c_{i,t} = −∂loss/∂logp_{i,t} exactly — so autograd on the objective itself (not a re-derivation) gives them:
    GSPO (Eq. 10):      c_{i,t} = s_i Â_i / (B |y_i|)        — one weight for every token of a response
    GRPO (Eqs. 11-12):  c_{i,t} = w_{i,t} Â_i / (B |y_i|)    — each token its own w_{i,t}
and 0 where the clip is active. :func:`token_grad_weights` divides by Â_i / (B |y_i|), leaving s_i or w_{i,t}.

The minibatch-gradient variance, the on-policy agreement of §4.2, the staleness-noise comparison and the
GSPO-token identity work on real parameter gradients of a policy state from an
:class:`~gspo_lab.analysis.OffPolicyTrace`. Shapes: B responses, T tokens, P parameters (flattened), D draws.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor

from gspo_lab.advantages import token_advantages
from gspo_lab.objectives import get_objective
from gspo_lab.policy import rollout_logprobs
from gspo_lab.reductions import masked_mean, seq_lengths

__all__ = [
    "kl_weight_report",
    "TRUST_REGIONS",
    "trust_region_weights",
    "UNCLIPPED",
    "token_grad_weights",
    "weight_profile",
    "param_gradient",
    "gradient_variance",
    "on_policy_gradient_gap",
    "staleness_noise",
    "per_token_advantages",
    "gspo_token_identity",
]

#: a band so wide nothing is ever clipped: the unclipped gradients of Eqs. 10-12
UNCLIPPED = {"eps_low": 1 - 1e-12, "eps_high": 1e12}


def token_grad_weights(
    objective: str, logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor, *, normalise: bool = True, **eps
) -> Tensor:
    """(B, T) coefficient of ∇ log π_θ(y_{i,t}) in the objective's gradient (0 at padding and where clipped).

    With ``normalise`` the coefficient is divided by Â_i / (B |y_i|): GRPO's become w_{i,t}, GSPO's s_i
    (responses with Â_i = 0 get 0). ``eps`` overrides the objective's clip range (e.g. ``**UNCLIPPED``).
    """
    leaf = logp.detach().to(torch.float64).requires_grad_()
    loss, _ = get_objective(objective)(leaf, old_logp.to(torch.float64), adv.to(torch.float64), mask, **eps)
    (grad,) = torch.autograd.grad(loss, leaf)
    coef = -grad
    if not normalise:
        return coef
    B, lengths = mask.shape[0], seq_lengths(mask).clamp(min=1)
    scale = adv.to(torch.float64) / (B * lengths)
    return torch.where(scale[:, None] != 0, coef / scale[:, None].where(scale[:, None] != 0, 1.0), 0.0)


def weight_profile(weights: Tensor, adv: Tensor, mask: Tensor) -> pd.DataFrame:
    """Normalised token weights summarised by the sign of Â: mean, zero (clipped) fraction, within-response spread.

    ``weights`` from :func:`token_grad_weights` (normalised). The spread is the mean over responses of the std of
    their tokens' weights: 0 for GSPO by construction (Eq. 10), > 0 for GRPO off-policy (Eqs. 11-12).
    """
    rows = []
    for sign, sel in (("Â > 0", adv > 0), ("Â < 0", adv < 0)):
        m = mask & sel[:, None]
        if not bool(m.any()):
            continue
        w = weights[m]
        mean_i = masked_mean(weights, m, dim=-1)
        var_i = masked_mean((weights - mean_i[:, None]) ** 2, m, dim=-1)  # population variance within response i
        spread = var_i.sqrt()[m.any(-1)].mean().item()
        rows.append(
            {
                "advantage": sign,
                "tokens": int(seq_lengths(m).sum()),
                "mean_weight": w.mean().item(),
                "zero_frac": (w == 0).double().mean().item(),
                "within_response_std": spread,
            }
        )
    return pd.DataFrame(rows).set_index("advantage")


def param_gradient(model, objective, rollout, rows: Tensor, old_logp: Tensor, adv: Tensor, **eps) -> Tensor:
    """Flattened ∇_θ loss (P,) of ``objective`` (a registry name, or any callable with the objectives' signature,
    e.g. a :class:`gspo_lab.design.Design`) on rows ``rows`` of a rollout (old_logp/adv: for all rows)."""
    model.zero_grad(set_to_none=True)
    logp, _ = rollout_logprobs(model, rollout, rows)
    mask = rollout.response_mask.index_select(0, rows)
    fn = get_objective(objective) if isinstance(objective, str) else objective
    loss, _ = fn(logp, old_logp.index_select(0, rows), adv.index_select(0, rows), mask, **eps)
    loss.backward()
    return torch.cat([p.grad.flatten() if p.grad is not None else torch.zeros(p.numel()) for p in model.parameters()])


def gradient_variance(
    trace, ks=(0,), objectives=("grpo", "gspo"), *, draws: int = 16, minibatch: int = 32, seed: int = 0, **eps
) -> pd.DataFrame:
    """Spread of the minibatch gradient at each θ_k (k in ``ks``), across ``draws`` random minibatches.

    Minibatches are drawn from the training batch; each draw uses the same rows for every objective and every k.
    Per (objective, k): relative variance E‖g − ḡ‖² / ‖ḡ‖² and the mean ‖g‖. Leaves the model at θ_K.
    ``objectives``: registry names, or {label: callable} (e.g. design points, :mod:`gspo_lab.design`).
    """
    named = list(objectives.items()) if isinstance(objectives, dict) else [(n, n) for n in objectives]
    probe, model = trace.train, trace.model
    g = torch.Generator().manual_seed(seed)
    B = probe.mask.shape[0]
    picks = [torch.randperm(B, generator=g)[:minibatch] for _ in range(draws)]
    rows = []
    try:
        for k in ks:
            model.load_state_dict(trace.states[k])
            for name, fn in named:
                grads = torch.stack(
                    [param_gradient(model, fn, probe.rollout, r, probe.logp[0], probe.adv, **eps) for r in picks]
                )
                mean = grads.mean(0)
                spread = (grads - mean).pow(2).sum(-1).mean()
                rel = (spread / mean.pow(2).sum().clamp(min=1e-30)).item()
                rows.append(
                    {"objective": name, "k": k, "rel_variance": rel, "grad_norm": grads.norm(dim=-1).mean().item()}
                )
    finally:
        model.load_state_dict(trace.states[-1])
        model.zero_grad(set_to_none=True)
    return pd.DataFrame(rows)


def _minibatch_gradients(trace, k: int, objective: str, picks: list[Tensor], **eps) -> Tensor:
    """(D, P): the parameter gradient of ``objective`` at θ_k on each minibatch of rows in ``picks``."""
    probe, model = trace.train, trace.model
    model.load_state_dict(trace.states[k])
    try:
        return torch.stack(
            [param_gradient(model, objective, probe.rollout, r, probe.logp[0], probe.adv, **eps) for r in picks]
        )
    finally:
        model.load_state_dict(trace.states[-1])
        model.zero_grad(set_to_none=True)


def on_policy_gradient_gap(trace, objectives=("grpo", "gspo", "gspo_token"), *, minibatch: int = 32) -> dict:
    """§4.2's corollary on real parameter gradients: at θ_0 (π_θ = π_old, every ratio 1) all objectives agree.

    One minibatch (the first ``minibatch`` rows of the training batch), each objective with its paper clip range.
    Returns the largest pairwise max |∇_a − ∇_b| divided by max |∇| of the first objective (``rel_gap``), and both.
    """
    rows = [torch.arange(min(minibatch, trace.train.mask.shape[0]))]
    grads = {name: _minibatch_gradients(trace, 0, name, rows)[0] for name in objectives}
    scale = grads[objectives[0]].abs().max().item()
    gap = max((grads[a] - grads[b]).abs().max().item() for a in objectives for b in objectives)
    return {"rel_gap": gap / max(scale, 1e-30), "max_abs_gap": gap, "grad_scale": scale}


def _relative_variance(gram: Tensor, w: Tensor) -> Tensor:
    """Σ_d w_d ‖g_d − ḡ‖² / ‖ḡ‖², ḡ = Σ_d w_d g_d, from the Gram matrix K_{de} = g_d·g_e; w: (..., D), rows sum to 1."""
    mean_sq = torch.einsum("...d,de,...e->...", w, gram, w)  # ‖ḡ‖²
    return ((w * gram.diagonal()).sum(-1) - mean_sq) / mean_sq.clamp(min=1e-300)


def staleness_noise(
    trace, ks=None, *, draws: int = 16, minibatch: int = 32, seed: int = 0, boot: int = 2000, **eps
) -> pd.DataFrame:
    """Does GRPO's minibatch gradient get noisier with staleness k than GSPO's? Ratios with bootstrap intervals.

    At each θ_k (``ks``, default 0 … K), ``draws`` random minibatches of the training batch, the same rows for both
    objectives and every k; the relative variance E_d ‖g_d − ḡ‖² / ‖ḡ‖² (noise over signal) of each objective
    over the draws. At k = 0 the two gradients are identical (ratio 1), so ``noise_ratio`` = RelVar_GRPO /
    RelVar_GSPO at θ_k is how much faster GRPO's noise grew with staleness. ``noise_ratio_lo`` / ``_hi``: the 5 % /
    95 % quantiles of a paired bootstrap over the draws (``boot`` resamples of the D draws, both objectives
    resampled together). ``eps`` as in :func:`token_grad_weights` (``**UNCLIPPED``: Eqs. 10-12 as written).
    One row per k: ``rel_variance_grpo``, ``rel_variance_gspo``, ``noise_ratio``, ``noise_ratio_lo``, ``_hi``.
    """
    ks = range(trace.K + 1) if ks is None else ks
    g = torch.Generator().manual_seed(seed)
    B = trace.train.mask.shape[0]
    picks = [torch.randperm(B, generator=g)[:minibatch] for _ in range(draws)]
    resampled = torch.randint(0, draws, (boot, draws), generator=g)
    w_boot = torch.zeros(boot, draws, dtype=torch.float64).scatter_add_(1, resampled, torch.ones(boot, draws).double())
    w_boot, w_all = w_boot / draws, torch.full((draws,), 1.0 / draws, dtype=torch.float64)
    rows = []
    for k in ks:
        grams = {}
        for name in ("grpo", "gspo"):
            grads = _minibatch_gradients(trace, k, name, picks, **eps).to(torch.float64)
            grams[name] = grads @ grads.T
        rel = {name: _relative_variance(gram, w_all).item() for name, gram in grams.items()}
        ratios = _relative_variance(grams["grpo"], w_boot) / _relative_variance(grams["gspo"], w_boot).clamp(min=1e-300)
        lo, hi = torch.quantile(ratios, torch.tensor([0.05, 0.95], dtype=torch.float64)).tolist()
        rows.append(
            {
                "k": k,
                "rel_variance_grpo": rel["grpo"],
                "rel_variance_gspo": rel["gspo"],
                "noise_ratio": rel["grpo"] / max(rel["gspo"], 1e-300),
                "noise_ratio_lo": lo,
                "noise_ratio_hi": hi,
            }
        )
    return pd.DataFrame(rows).set_index("k")


def per_token_advantages(probe, task, weight: float = 1.0) -> Tensor:
    """(B, T) illustrative per-token advantages of a probe batch: Â_i plus a zero-mean per-response correction from
    token credit, :func:`gspo_lab.advantages.token_advantages` with :meth:`Task.credit_matrix` (the training
    loop's ``token_advantage`` uses the same two). Not from the paper: a simple signal that varies within a
    response, so GSPO-token can be compared with GSPO where they must differ.
    """
    r = probe.rollout
    credit = task.credit_matrix(r.problems, r.completions, probe.mask)
    return token_advantages(probe.adv, credit, probe.mask, weight)


def gspo_token_identity(trace, k: int, per_token_adv: Tensor, *, minibatch: int = 32, **eps) -> dict[str, float]:
    """Max |∇θ GSPO-token − ∇θ GSPO| at θ_k on one minibatch: with per-sequence Â (must be ~0) and per-token Â.

    For per-token Â the GSPO side uses each response's mean Â_{i,t} (the best per-sequence stand-in).
    """
    probe, model = trace.train, trace.model
    rows = torch.arange(min(minibatch, probe.mask.shape[0]))
    model.load_state_dict(trace.states[k])
    try:
        old = probe.logp[0].to(torch.float64)
        g_seq = param_gradient(model, "gspo", probe.rollout, rows, old, probe.adv, **eps)
        g_tok = param_gradient(model, "gspo_token", probe.rollout, rows, old, probe.adv, **eps)
        mean_adv = masked_mean(per_token_adv, probe.mask, dim=-1)
        g_tok_pt = param_gradient(model, "gspo_token", probe.rollout, rows, old, per_token_adv, **eps)
        g_seq_pt = param_gradient(model, "gspo", probe.rollout, rows, old, mean_adv, **eps)
    finally:
        model.load_state_dict(trace.states[-1])
        model.zero_grad(set_to_none=True)
    return {
        "max_abs_diff_sequence_adv": (g_tok - g_seq).abs().max().item(),
        "max_abs_diff_token_adv": (g_tok_pt - g_seq_pt).abs().max().item(),
        "grad_scale": g_seq.abs().max().item(),
    }


#: the objectives whose weight profiles notebook 03 draws, in its legend's order
TRUST_REGIONS = ("grpo", "grpo_dual_clip", "cispo", "sapo", "vespo", "gmpo")


def trust_region_weights(log_ratios, names=TRUST_REGIONS, overrides: dict | None = None) -> pd.DataFrame:
    """Each objective's gradient weight per unit Â on a one-token response, as a function of its log-ratio.

    For a response of one token the token and sequence ratios coincide, so every objective's trust region shows as
    one curve per sign of Â: weight = −∂loss/∂logp / (Â / B), by autograd on the objective itself (B responses of one
    token, one per grid point). 1 at log w = 0 for every objective; 0 where a hard clip binds; CISPO's cap, SAPO's
    gate, VESPO's φ and GMPO's log band bend it without (or before) zeroing it.

    Args:
        log_ratios: the grid of log w (N values).
        names: registry names.
        overrides: {name: keyword arguments} (e.g. ``{"sapo": {"tau_pos": 2.0, "tau_neg": 2.0}}``).
    Returns:
        columns objective, advantage ("Â > 0" / "Â < 0"), log_ratio, ratio, weight.
    """
    grid = torch.as_tensor(log_ratios, dtype=torch.float64).reshape(-1, 1)
    n = grid.shape[0]
    old = torch.full_like(grid, -1.0)  # any log-prob: the weight depends on the log-ratio only
    mask = torch.ones_like(grid, dtype=torch.bool)
    rows = []
    for name in names:
        for sign, label in ((1.0, "Â > 0"), (-1.0, "Â < 0")):
            logp = (old + grid).requires_grad_(True)
            adv = torch.full((n,), sign, dtype=torch.float64)
            loss, _ = get_objective(name)(logp, old, adv, mask, **(overrides or {}).get(name, {}))
            (grad,) = torch.autograd.grad(loss, logp)
            weight = (-grad[:, 0] * n / sign).tolist()
            rows += [{"objective": name, "advantage": label, "log_ratio": x, "ratio": float(torch.tensor(x).exp()),
                      "weight": w} for x, w in zip(grid[:, 0].tolist(), weight, strict=True)]  # fmt: skip
    return pd.DataFrame(rows)


def kl_weight_report(cfg, rollouts: int) -> dict:
    """What TRL's KL weight (``use_bias_correction_kl``) adds to the KL term's gradient on the kit's rollouts:
    ``rollouts`` RL steps of ``cfg`` (β = ``cfg.beta`` > 0, reference = the cold start), then a fresh batch's first
    minibatch on its first update (π_θ = π_old). Returns ``{"parts": {"GRPO"|"GSPO": kl_weight_gradient(...)},
    "mask", "table": one row per weight level (the norms, added ÷ k3 term, β·added ÷ GRPO's policy-gradient norm),
    "mean_k3", "identity": the largest relative gap between the added gradient and its on-policy value k3/(|y|B)
    (token) or mean_s k3/(|y|B) (sequence)}``."""
    from gspo_lab.penalties import kl_penalty, kl_weight_gradient
    from gspo_lab.step import collect, init_state, train_step

    if not cfg.beta > 0:
        raise ValueError(f"kl_weight_report needs cfg.beta > 0 (a KL term to weigh), got beta={cfg.beta}")
    state = init_state(cfg)
    for _ in range(rollouts):
        train_step(state)
    batch = collect(state)
    rows = batch.minibatches[0]
    mask, logp, ref = batch.data.response_mask[rows], batch.old_logp[0], batch.ref_logp[0]
    n, B = mask.sum(-1, keepdim=True).clamp(min=1), len(rows)
    _, k3 = kl_penalty(logp, ref, mask)
    policy_grad = (-batch.adv[rows].unsqueeze(-1) / n / B).where(mask, 0.0)  # GRPO's at w = 1 (Eqs. 11-12)
    expected = {"token": k3 / n / B, "sequence": (k3.sum(-1, keepdim=True) / n / n / B).expand_as(k3)}
    parts, table, identity = {}, [], 0.0
    for owner, level in (("GRPO", "token"), ("GSPO", "sequence")):
        parts[owner] = g = kl_weight_gradient(logp, ref, logp, mask, level)
        want = expected[level].where(mask, 0.0)
        identity = max(identity, ((g["extra"] - want).abs().max() / want.abs().max()).item())
        table.append(
            {
                "objective (weight)": f"{owner} ({level} ratio)",
                "‖∇ k3 term‖": g["kl"].norm().item(),
                "‖added by the weight‖": g["extra"].norm().item(),
                "added ÷ k3 term": (g["extra"].norm() / g["kl"].norm()).item(),
                "β · added ÷ ‖∇ policy loss‖": (cfg.beta * g["extra"].norm() / policy_grad.norm()).item(),
            }
        )
    return {"parts": parts, "mask": mask, "table": table, "mean_k3": k3[mask].mean().item(), "identity": identity}
