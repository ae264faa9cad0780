"""The book's short forms of the findings: the story page's headline results and the findings page's "At a glance"
table — each a selection from the sections' own contexts, never a typed number or verdict.

:func:`story` and :func:`glance` read the context :func:`gspo_record.page.compute` built (``f1``, ``f2``, …) and
pick what a reader needs first; the words of every verdict are its rule's, its "how sure" the verdict's own
(:attr:`~gspo_record.rules.Verdict.sure`: declared / post hoc) or the section's robustness check (fragile).
"""

from __future__ import annotations

import gspo_record.f12.lag_page as f12_lag
import gspo_record.written as written
from gspo_record.fmt import by, num

__all__ = ["story", "glance", "successor_groups"]

_NAMES = {"cispo": "CISPO", "sapo": "SAPO", "luspo": "LUSPO", "vespo": "VESPO", "gmpo": "GMPO"}


def _late_diff(ctx: dict, model: str, arm: str) -> str:
    """finding 2's paired GSPO − GRPO late held-out accuracy for ``model`` at ``arm`` ("no grad clip" / …)."""
    for row in ctx["f2late"]["rows"]:
        if row[0] == model and row[1] == f"GSPO, {arm}":
            return row[3].replace(" (n = 5)", "")
    return "pending"


def successor_groups(verdicts: list[dict]) -> list[dict]:
    """Finding 11's verdicts grouped by outcome: [{"label", "objectives", "fragile"}], outcomes in order of first
    appearance. An objective with one outcome on every model is named once; else once per model ("VESPO (MoE)")."""
    per_objective: dict[str, list[dict]] = {}
    for v in verdicts:
        per_objective.setdefault(v["objective"], []).append(v)
    entries = []
    for objective, vs in per_objective.items():
        name = _NAMES.get(objective, objective)
        same = len({v["verdict"].outcome for v in vs}) == 1
        for v in vs[:1] if same else vs:
            label = name if same else f"{name} ({v['model']})"
            fragile = any(w["fragile"] for w in vs) if same else v["fragile"]
            entries.append((v["verdict"], label, fragile))
    groups: dict[str, dict] = {}
    for verdict, label, fragile in entries:
        g = groups.setdefault(verdict.outcome, {"label": verdict.label.split(" (")[0], "objectives": [],
                                                "fragile": []})  # fmt: skip
        g["objectives"].append(label)
        g["fragile"] += [label] if fragile else []
    return list(groups.values())


def _short(x: float) -> str:
    """A configured constant as a person writes it: 5e-5, 1e-4, 3e-4, 0.2, 1."""
    return f"{x:.0e}".replace("e-0", "e-") if abs(x) < 0.01 else f"{x:g}"


def _setting(name: str) -> dict:
    """A spec's regime as the story states it: M, lr, grad-norm cap and seeds per arm, read from the spec itself."""
    from gspo_record.fmt import clip_label
    from gspo_record.tables import spec

    s = spec(name)
    return {"m": s.base["minibatches"], "lr": _short(s.base["lr"]), "clip": clip_label(s.base.get("grad_clip")),
            "seeds": len(s.confirm_seeds)}  # fmt: skip


def story(ctx: dict) -> dict:
    """The story page's headline results, each with the numbers and verdict its section computed."""
    from gspo_lab.objectives import GRPO_CLIP, GSPO_CLIP
    from gspo_record.prose import fragile_brief
    from gspo_record.tables import F2

    f2 = by(ctx["f2"]["verdicts"], "clip")
    collapse = {f"{c['model']} {c['objective']}": f"{c['k']}/{c['n']}" for c in ctx["f8"]["collapse"]}
    dose = [
        {"model": d["model"], "first": d["points"][0], "last": d["points"][-1], "trend": d["trend"]}
        for d in ctx["f10"]["dose"]
        if d["points"]
    ]
    f4 = by(ctx["f4"]["verdicts"], "clip")
    return {
        "fragile": fragile_brief,  # the templates' "fragile: … changes it" (gspo_record/prose.py)
        "regime": _setting(F2["moe"]),
        "production_regime": _setting(F2["candidate"]),
        "gspo_band": {"low": _short(GSPO_CLIP.low), "high": _short(GSPO_CLIP.high)},
        "grpo_band": {"low": _short(GRPO_CLIP.low), "high": _short(GRPO_CLIP.high)},
        "collapse": {
            "verdict": by(ctx["f2t"]["verdicts"], "model")["MoE"]["verdict"],  # ten seeds: supersedes f2's five
            "counts": collapse,
            "late_moe": _late_diff(ctx, "MoE", "no grad clip"),
            "capped": f2["1"]["verdict"],
            "capped_late": ctx["f2late"]["capped"],  # GSPO − GRPO under a cap of 1 in this regime, per model
            "ten": ctx["f2t"]["verdicts"],
            "ten_by": by(ctx["f2t"]["verdicts"], "model"),
        },
        "map_by": by(ctx["f2_map"]["summary"], "clip"),
        "dose": dose,
        "size": {
            "accounts": ctx["f10"]["accounts"],
            "ten": ctx["f10"]["ten"]["verdicts"],
            "ten_by": by(ctx["f10"]["ten"]["verdicts"], "model"),
            "skip_ten": ctx["f10"]["skip_ten"]["verdicts"],
        },
        "clipping": {
            "grpo": ctx["f1"]["absolute"]["grpo"],
            "gspo": ctx["f1"]["absolute"]["gspo"],
            "ratio": num(ctx["f1"]["headline"]["mean"]),
            "by_responses": num(ctx["f1"]["by_responses"]["mean"]),
            "verdict": ctx["f1"]["verdict"],
            "accuracy": ctx["f1"]["accuracy"],
        },
        "not_reproduced": [
            {"what": "Routing Replay (R2) rescuing GRPO on the MoE", "verdict": f4["off"]["verdict"]},
            {"what": "the collapse being MoE-specific", "verdict": ctx["f2_dense"]["verdict"]},
            {"what": "GSPO tolerating the inference engine's log-probs (§5.4)", "verdict": ctx["f5_confirm"]["pooled"]},
            {"what": "a collapse regime with a grad-norm cap of 1.0", "verdict": ctx["f2_confirm"]["verdict"]},
        ],
        "successors": successor_groups(ctx["f11"]["verdicts"]),
        "production": successor_groups(ctx["f11"]["production"]["verdicts"]),
        "confirm": [
            dict(objective=_NAMES[v["objective"]], sure=v["sure"], label=v["verdict"].label.split(" (")[0])
            for v in ctx["f11"]["confirm"]["verdicts"]
        ],
    }


def _warns(warns: list[str], verdicts: list, **_) -> str:
    """``k of n warn ahead (signals)`` for finding 9's At a glance row."""
    return f"{len(warns)} of {len(verdicts)} warn ahead" + (f" ({', '.join(warns)})" if warns else "")


def _row(n: str, title: str, claim: str, number: str, verdict, *by, sure: str = "") -> dict:
    """One At a glance row. ``verdict``: a Verdict, or the row's words when ``by`` names the Verdicts they come from;
    "how sure" is post hoc when any of them is, else declared (``sure`` overrides); their rule ids go to a footnote."""
    verdicts = [v for v in (verdict, *by) if hasattr(v, "rule")]
    how = sure or ("post hoc" if any(v.post_hoc for v in verdicts) else "declared")
    if fragile := [v for v in verdicts if v.fragile]:  # the page's robustness readings (gspo_record/robust.py)
        share = "" if len(fragile) == len(verdicts) else f" ({len(fragile)} of {len(verdicts)} verdicts)"
        how += "" if "fragile" in how else f"; fragile{share}"  # "fragile" once: a given ``sure`` says whose
    rules = ", ".join(dict.fromkeys(f"`{v.rule}`" for v in verdicts))
    return {"n": n, "title": title, "claim": claim, "number": number, "verdict": str(verdict), "sure": how,
            "rules": rules}  # fmt: skip


def _seeds(statement) -> int:
    """The fewest runs per arm a statement's number counts (a count's n, a joint's smallest part's)."""
    parts = [p for _, p in getattr(statement.number, "parts", ())] or [statement.number]
    return min(p.n for p in parts)


def _sure(name: str, statements: dict, seeds: bool = True) -> str:
    """One "how sure" phrase for statements read together (``statements``: {model or "": statement}): "name (the
    seeds it rests on): declared" or "post hoc", then "fragile", naming the models when not all of them are —
    "counts without a cap (10 seeds): declared, fragile"."""
    values = list(statements.values())
    how = "post hoc" if any(v.post_hoc for v in values) else "declared"
    if fragile := [k for k, v in statements.items() if v.fragile]:
        how += ", fragile" + ("" if len(fragile) == len(values) else f" ({', '.join(fragile)})")
    return f"{name} ({min(_seeds(v) for v in values)} seeds): {how}" if seeds else f"{name}: {how}"


def glance(ctx: dict) -> list[dict]:
    """One row per finding for the findings page's "At a glance" table: the paper's claim, the toy's number, the
    verdict and how sure, each row's cells written prose (:mod:`gspo_record.written`); rule ids go to a footnote."""
    ten = {v["model"]: v["verdict"] for v in ctx["f2t"]["verdicts"]}
    capped, cap_map = by(ctx["f2"]["verdicts"], "clip")["1"]["verdict"], by(ctx["f2_map"]["summary"], "clip")["1"]
    sure2 = [_sure("counts without a cap", ten), _sure("count at a cap of 1", {"": capped}),
             _sure("the map", {"": cap_map["verdict"]}, seeds=False)]  # fmt: skip
    succ = successor_groups(ctx["f11"]["verdicts"])
    fragile = [o for g in succ for o in g["fragile"]]
    return written.seeds_note(
        [
            written.row1(ctx, _row),
            written.row2(ctx, _row, sure="; ".join(sure2)),
            *(getattr(written, f"row{n}")(ctx, _row) for n in ("2b", "3", "4", "5", "6", "7", "8", "9")),
            written.row10(ctx, _row),
            written.row11(
                ctx, _row, sure="; ".join(["declared", *(["fragile: " + ", ".join(fragile)] * bool(fragile))])
            ),
            f12_lag.glance_row(ctx, _row),
        ],
        ctx,
    )
