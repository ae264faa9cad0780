"""Finding 10's "why" inside AdamW (issue 22, item 4 b and c): ``data/specs/f10w_adam_state.toml``. GRPO without a
cap, with a spike threshold of 10, where a spike (an update whose pre-clip norm exceeds 10) moves only AdamW's
moments (STATE), only the parameters (STEP), steps and then resets the moments (RESET), or steps along a random
direction of equal norm (RANDOM) — on seeds 60-64, paired by seed with the stored plain GRPO (A, ``f10t``) and SKIP
(``f10u``: the spike skipped, Adam untouched).

Rule ``f10w.arm`` per model and arm (declared in the spec, before its runs), on late held-out accuracy with 95 %
Student-t intervals over the five paired seeds: *protects like skipping* when arm − A lies above 0 and arm − SKIP
does not lie below 0; *harms like no protection* when arm − A does not lie above 0 and arm − SKIP lies below 0;
*between* otherwise. Rule ``f10w.account`` per model on the four arm verdicts: MOMENT when STATE harms and STEP and
RESET protect; CONTENT when STEP and RESET harm and RANDOM protects; *neither account fits* otherwise. The page
prints what was shown (issue 35): *protects* / *no protection shown* / *between*, each with what its two comparisons
showed, and an account's *pattern*; the mechanism is a separate reading with its confounds (STATE still delivers most
of a spike's displacement through m, :func:`displacement_share`; RANDOM's smaller steps, :func:`step_sizes`). Each read
again with each seed left out, on training-reward AUC and on the final evaluation alone (fragile when any changes it).
"""

from __future__ import annotations

import pandas as pd

from gspo_lab.experiments.endpoint_range import DIFFERENCE
from gspo_lab.experiments.stats import declared_t_interval, paired_diff
from gspo_record.f10.ten import paired_flips
from gspo_record.f10.why import SPECS
from gspo_record.fmt import diff_cell, num, robustness
from gspo_record.joint import Joint, combination
from gspo_record.rules import PENDING, Rule, Verdict, register
from gspo_record.statements import Interval
from gspo_record.tables import progress, spec

__all__ = ["SPEC", "ARMS", "ARM", "ACCOUNT", "arm_verdict", "account_verdict", "pool", "arm_diffs", "read_arm",
           "account_diffs", "judge_account", "read_account", "section"]  # fmt: skip

SPEC = SPECS["adam"]
#: TrainConfig.spike -> the spec's arm name
ARMS = {"state_only": "STATE", "step_only": "STEP", "reset": "RESET", "random": "RANDOM"}
_DECLARED = f"data/specs/{SPEC}.toml, before its runs (Student-t intervals, five paired seeds)"
#: each account's prediction per arm, as the spec wrote them before its runs (f10w.arm outcomes)
PREDICTIONS = {
    "MOMENT": {"STATE": "harms", "STEP": "protects", "RESET": "protects", "RANDOM": "harms"},
    "CONTENT": {"STATE": "between", "STEP": "harms", "RESET": "harms", "RANDOM": "protects"},
}

ARM = register(
    Rule(
        "f10w.arm",
        "10",
        {
            "protects": "protects: above plain GRPO, not below SKIP",
            "harms": "no protection shown: below SKIP, not above plain GRPO",
            "between": "between",
        },
        {"LEVEL": 0.95},
        _DECLARED,
        "Rule f10w.arm per model and arm, declared here",
        specs=(SPEC,),
    )
)
ACCOUNT = register(
    Rule(
        "f10w.account",
        "10",
        {
            "moment": "MOMENT's pattern: STATE shows no protection, STEP and RESET protect",
            "content": "CONTENT's pattern: STEP and RESET show no protection, RANDOM protects",
            "neither": "neither account's pattern",
        },
        {},
        _DECLARED,
        "Rule f10w.account per model, declared here",
        specs=(SPEC,),
    )
)


def arm_outcome(plain: str, skip: str) -> str:
    """``f10w.arm`` from its two intervals' outcomes (arm − A, arm − SKIP): *protects* above plain GRPO and not below
    SKIP; *harms* below SKIP and not above plain GRPO; else *between*."""
    if plain == "above" and skip != "below":
        return "protects"
    return "harms" if skip == "below" and plain != "above" else "between"


def account_outcome(o: dict) -> str:
    """``f10w.account`` from the four arms' outcomes (by arm name)."""
    if o["STATE"] == "harms" and o["STEP"] == o["RESET"] == "protects":
        return "moment"
    return "content" if o["STEP"] == o["RESET"] == "harms" and o["RANDOM"] == "protects" else "neither"


_ARM_PARTS = ("− plain GRPO", "− SKIP")
combination("f10w.arm", tuple(ARM.outcomes), _ARM_PARTS, shown=("protects", "harms"))(
    lambda o: arm_outcome(o[_ARM_PARTS[0]], o[_ARM_PARTS[1]])  # looked up when called: a mutant of it is read
)
combination("f10w.account", tuple(ACCOUNT.outcomes), tuple(ARMS.values()), shown=("moment", "content"))(
    lambda o: account_outcome(o)  # noqa: PLW0108 - looked up when called
)


def arm_verdict(vs_plain: pd.Series, vs_skip: pd.Series, id: str = ""):
    """``f10w.arm`` on per-seed differences arm − A and arm − SKIP (pending below two paired seeds of either): a joint
    statement of the two declared Student-t intervals."""
    if min(len(vs_plain), len(vs_skip)) < 2:
        return ARM.verdict(PENDING)
    parts = tuple((name, Interval.of(d, lambda x: declared_t_interval(x, DIFFERENCE), bounds=DIFFERENCE))
                  for name, d in zip(_ARM_PARTS, (vs_plain, vs_skip), strict=True))  # fmt: skip
    return ARM.state(id or ARM.name, "does the arm protect GRPO's updates?", Joint("f10w.arm", parts))


def account_verdict(arms: dict, id: str = ""):
    """``f10w.account`` on one model's arm statements (``{"STATE": statement, ...}``; pending while any is missing or
    pending): a joint statement of the four arms' numbers."""
    if any(arms.get(a) is None or arms[a].outcome == PENDING for a in ARMS.values()):
        return ACCOUNT.verdict(PENDING)
    number = Joint("f10w.account", tuple((a, arms[a].number) for a in ARMS.values()))
    return ACCOUNT.state(id or ACCOUNT.name, "which account's pattern do the four arms show?", number)


def pool(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's runs on the spec's seeds, from finding 10's runs table (:func:`gspo_record.f10.runs.runs`):
    this spec's four arms, ``f10t``'s plain GRPO (``A``) and ``f10u``'s ``SKIP``."""
    seeds = spec(SPEC).seeds("confirm")
    m = table[(table["model"] == model) & table["seed"].isin(seeds)]
    keep = (
        (m["source"] == SPEC)
        | ((m["source"] == SPECS["ten"]) & (m["arm_id"] == "A"))
        | ((m["source"] == SPECS["shrink_ten"]) & (m["arm_id"] == "SKIP"))
    )
    return m[keep].reset_index(drop=True)


def arm_diffs(m: pd.DataFrame, arm: str, column: str = "late_acc") -> tuple[pd.Series, pd.Series]:
    """(arm − A, arm − SKIP): per-seed differences of ``column`` on pooled runs ``m`` (:func:`pool`)."""
    return paired_diff(m, arm, "A", column), paired_diff(m, arm, "SKIP", column)


def read_arm(m: pd.DataFrame, arm: str, column: str = "late_acc", id: str = ""):
    """``f10w.arm`` for ``arm`` on pooled runs ``m`` (:func:`pool`), reading ``column``: statement ``id``."""
    return arm_verdict(*arm_diffs(m, arm, column), id)


def account_diffs(m: pd.DataFrame, column: str = "late_acc") -> dict[str, tuple[pd.Series, pd.Series]]:
    """Every arm's :func:`arm_diffs`."""
    return {a: arm_diffs(m, a, column) for a in ARMS.values()}


def judge_account(diffs: dict[str, tuple[pd.Series, pd.Series]], id: str = ""):
    """``f10w.account`` on every arm's :func:`arm_diffs`: statement ``id``."""
    return account_verdict({arm: arm_verdict(*d) for arm, d in diffs.items()}, id)  # "arm": where each is read


def read_account(m: pd.DataFrame, column: str = "late_acc", id: str = ""):
    """``f10w.account`` on pooled runs ``m``, every arm read on ``column``: statement ``id``."""
    return judge_account(account_diffs(m, column), id)


def section(table: pd.DataFrame) -> dict:
    """Per model and arm: arm − A, arm − SKIP, ``f10w.arm``, its robustness, collapsed k/n and the share of updates
    that spiked; per model ``f10w.account`` with its robustness."""
    rows, verdicts, accounts = [], [], []
    for model in table["model"].unique():
        m = pool(table, model)
        if not (m["source"] == SPEC).any():
            continue
        for arm in ("A", "SKIP", *ARMS.values()):
            g = m[m["arm_id"] == arm]
            spiked = g["skipped"] if arm == "SKIP" else g["spiked"]
            counts = [f"{int(g['collapsed'].sum())}/{len(g)}", f"{spiked.mean():.1%}" if arm != "A" else "—"]
            if arm in ("A", "SKIP"):
                rows.append([model, arm, "—", "—", "(stored baseline)", "—", *counts])
                continue
            verdict = read_arm(m, arm, id=f"f10w.arm.{model}.{arm}")
            flips = [] if verdict.outcome == PENDING else paired_flips(lambda r, c, a=arm: arm_diffs(r, a, c),
                                                                       lambda d: arm_verdict(*d), m,
                                                                       verdict.outcome, _word)  # fmt: skip
            diffs = [diff_cell(paired_diff(m, arm, base, "late_acc")) for base in ("A", "SKIP")]
            rows.append([model, arm, *diffs, verdict.short, robustness(flips), *counts])
            verdicts.append({"model": model, "arm": arm, "verdict": verdict, "sure": "fragile" if flips else "robust"})
        account = read_account(m, id=f"f10w.account.{model}")
        flips = [] if account.outcome == PENDING else paired_flips(account_diffs, judge_account, m, account.outcome,
                                                                   _word)  # fmt: skip
        accounts.append({"model": model, "verdict": account, "sure": "fragile" if flips else "robust", "flips": flips,
                         **step_sizes(m)})  # fmt: skip
    header = ["model", "arm", "arm − A (plain GRPO), seeds 60-64", "arm − SKIP", "f10w.arm", "robustness",
              "collapsed", "updates spiked (skipped for SKIP)"]  # fmt: skip
    return {"progress": progress(spec(SPEC)), "rows": rows, "verdicts": verdicts, "accounts": accounts,
            "header": header, "predictions": predictions(verdicts),
            "share": {"m": f"{100 * (b := displacement_share()):.0f} %", "step": f"{100 * (1 - b):.0f} %"}}  # fmt: skip


def predictions(verdicts: list[dict]) -> dict:
    """Each account's declared prediction per arm beside what each model's ``f10w.arm`` read, and per account and
    model how many of the four predictions were borne out: ``{"header", "rows"}``."""
    models = list(dict.fromkeys(v["model"] for v in verdicts))
    seen = {(v["model"], v["arm"]): v["verdict"] for v in verdicts}
    rows = []
    for arm in ARMS.values():
        said = [ARM.outcomes[PREDICTIONS[a][arm]].split(":")[0] for a in PREDICTIONS]
        rows.append([arm, *said, *(_word(seen[(m, arm)]) if (m, arm) in seen else PENDING for m in models)])
    for account, arms in PREDICTIONS.items():
        hits = [sum((m, a) in seen and seen[(m, a)].outcome == o for a, o in arms.items()) for m in models]
        rows.append([f"{account} borne out", "", "", *(f"{k} of {len(arms)}" for k in hits)])
    header = ["arm", "MOMENT predicted", "CONTENT predicted", *(f"{m}: f10w.arm" for m in models)]
    return {"header": header, "rows": rows}


def _word(verdict: Verdict) -> str:
    """A verdict's outcome words, without what it shows (its label before the colon)."""
    return verdict.label.split(":")[0]


def step_sizes(m: pd.DataFrame) -> dict:
    """RANDOM against SKIP on one model's pooled runs ``m`` (:func:`pool`): ``random_skip``, RANDOM − SKIP in late
    accuracy (interval and sign count); ``kl_ratio``, the per-seed ratio of SKIP's mean KL k3 per update (``kl``:
    π_old to π_θ, a policy step's size) to RANDOM's, as median [min, max] over the paired seeds; ``peak_ratio``, the
    same for AdamW's largest |g| / √v̂ averaged over rollouts (``peak``). A ratio above 1: RANDOM's runs take
    smaller policy steps, an implicit cut of the learning rate."""

    def ratio(column: str) -> str:
        r = m[m["arm_id"] == "SKIP"].set_index("seed")[column] / m[m["arm_id"] == "RANDOM"].set_index("seed")[column]
        r = r.dropna()
        return f"{num(r.median())}× [{num(r.min())}, {num(r.max())}] (n = {len(r)})" if len(r) else "—"

    return {"random_skip": diff_cell(paired_diff(m, "RANDOM", "SKIP", "late_acc")), "kl_ratio": ratio("kl"),
            "peak_ratio": ratio("peak")}  # fmt: skip


def displacement_share() -> float:
    """The share of a spike's displacement along g_s that AdamW delivers after the spike's own step, through m:
    the page's algebra (m ≈ (1 − β1) g_s, each later step ∝ β1^k) gives Σ_{k≥1} β1^k / Σ_{k≥0} β1^k = β1, with β1
    read from the optimizer the loop builds (``torch.optim.AdamW``'s default betas)."""
    import inspect

    import torch

    return float(inspect.signature(torch.optim.AdamW).parameters["betas"].default[0])
