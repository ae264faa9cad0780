"""The book's short forms of the findings: the story page's headline results and the findings page's "At a glance"
table — each a selection from the sections' own contexts, never a typed number or verdict.

:func:`story` and :func:`glance` read the context :func:`gspo_record.page.compute` built (``f1``, ``f2``, …) and
pick what a reader needs first; the words of every verdict are its rule's, its "how sure" the verdict's own
(:attr:`~gspo_record.rules.Verdict.sure`: declared / post hoc) or the section's robustness check (fragile).
"""

from __future__ import annotations

import gspo_record.f12.lag_page as f12_lag
import gspo_record.written as written
from gspo_record.fmt import num

__all__ = ["story", "glance", "successor_groups"]

_NAMES = {"cispo": "CISPO", "sapo": "SAPO", "luspo": "LUSPO", "vespo": "VESPO", "gmpo": "GMPO"}


def _by(rows: list[dict], key: str) -> dict:
    return {r[key]: r for r in rows}


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
    from gspo_record.tables import F2

    f2 = _by(ctx["f2"]["verdicts"], "clip")
    collapse = {f"{c['model']} {c['objective']}": f"{c['k']}/{c['n']}" for c in ctx["f8"]["collapse"]}
    dose = [
        {"model": d["model"], "first": d["points"][0], "last": d["points"][-1], "trend": d["trend"]}
        for d in ctx["f10"]["dose"]
        if d["points"]
    ]
    f4 = _by(ctx["f4"]["verdicts"], "clip")
    return {
        "regime": _setting(F2["moe"]),
        "production_regime": _setting(F2["candidate"]),
        "gspo_band": {"low": _short(GSPO_CLIP.low), "high": _short(GSPO_CLIP.high)},
        "grpo_band": {"low": _short(GRPO_CLIP.low), "high": _short(GRPO_CLIP.high)},
        "collapse": {
            "verdict": f2["off"]["verdict"],
            "counts": collapse,
            "late_moe": _late_diff(ctx, "MoE", "no grad clip"),
            "capped": f2["1"]["verdict"],
            "ten": ctx["f2t"]["verdicts"],
            "ten_by": _by(ctx["f2t"]["verdicts"], "model"),
        },
        "map_by": _by(ctx["f2_map"]["summary"], "clip"),
        "dose": dose,
        "size": {
            "accounts": ctx["f10"]["accounts"],
            "ten": ctx["f10"]["ten"]["verdicts"],
            "ten_by": _by(ctx["f10"]["ten"]["verdicts"], "model"),
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
        how += "; fragile" + ("" if len(fragile) == len(verdicts) else f" ({len(fragile)} of {len(verdicts)} verdicts)")
    rules = ", ".join(dict.fromkeys(f"`{v.rule}`" for v in verdicts))
    return {"n": n, "title": title, "claim": claim, "number": number, "verdict": str(verdict), "sure": how,
            "rules": rules}  # fmt: skip


def glance(ctx: dict) -> list[dict]:
    """One row per finding for the findings page's "At a glance" table: the paper's claim, the toy's number, the
    verdict and how sure, at most ~40 words a row; rule ids go to the table's last column."""
    f1, f10, ten = ctx["f1"], ctx["f10"], ctx["f2t"]["verdicts"]
    fragile_ten = [v["model"] for v in ten if v["sure"] == "fragile"]
    ten_note = [f"count fragile at 10 seeds ({', '.join(fragile_ten)})"] if fragile_ten else []
    c = {f"{x['model']} {x['objective']}": f"{x['k']}/{x['n']}" for x in ctx["f8"]["collapse"]}
    dose = "; ".join(f"{d['model']} {d['points'][0]['late']} → {d['points'][-1]['late']}" for d in f10["dose"])
    f6 = _by(ctx["f6"]["per_length"], "L")
    longest = max(f6)
    f7 = _by(ctx["f7"]["confirm"], "lam")
    lam = max(f7, key=float)
    f6b = ctx["f6b"]["per_length"]
    f6b_long = f6b[-1] if f6b else None
    f6b_span = f"{f6b[0]['tokens']}–{f6b[-1]['tokens']}" if f6b else "pending"
    f9 = ctx["f9"]
    v2 = f9["v2"]
    succ = successor_groups(ctx["f11"]["verdicts"])
    fragile = [o for g in succ for o in g["fragile"]]
    return [
        _row(
            "1",
            "Clipping fractions",
            "GSPO clips ~100× more tokens than GRPO yet learns better (§5.2)",
            f"8-expert `sweep` MoE: GSPO ÷ GRPO clipped tokens {num(f1['headline']['mean'])}× (by responses "
            f"{num(f1['by_responses']['mean'])}×); accuracy GSPO − GRPO {f1['accuracy']['diff']}",
            f"{f1['verdict'].label}; {f1['accuracy']['verdict'].label}",
            f1["verdict"],
            f1["accuracy"]["verdict"],
        ),
        written.row2(ctx, _row, sure="; ".join(["declared (the map: post hoc)", *ten_note])),
        _row(
            "2b",
            "The grad-norm cap (beyond the paper)",
            "—",
            f"GRPO's late held-out accuracy, no cap → cap 1: {dose}",
            "; ".join(f"{d['model']} {d['trend'].label}" for d in f10["dose"]),
            *(d["trend"] for d in f10["dose"]),
        ),
        _row(
            "3",
            "Expert volatility",
            "~10 % of activated experts change after one update (§5.3)",
            f"`moe-sort`: {ctx['f3']['moe']['min']}–{ctx['f3']['moe']['max']} of top-k sets change, lr "
            f"{ctx['f3']['moe']['lr_min']}–{ctx['f3']['moe']['lr_max']}",
            ctx["f3"]["verdict"],
        ),
        _row(
            "4",
            "Routing Replay",
            "GRPO on an MoE needs Routing Replay to converge (§5.3)",
            f"no cap: GRPO collapsed {ctx['f4']['rows'][-1][1]} without R2, {ctx['f4']['rows'][-1][2]} with it",
            _by(ctx["f4"]["verdicts"], "clip")["off"]["verdict"],
        ),
        _row(
            "5",
            "Precision",
            "GSPO tolerates the inference engine's log-probs (§5.4, untested there)",
            "final accuracy, bf16 sampler's log-probs − recomputed π_old, 10 seeds: GRPO "
            f"{ctx['f5_confirm']['pooled_diff']['grpo']}; GSPO {ctx['f5_confirm']['pooled_diff']['gspo']}",
            ctx["f5_confirm"]["pooled"],
        ),
        _row(
            "6",
            "Gradient variance (beyond the paper)",
            "token ratios add noise that grows with length (§3)",
            f"noise ratio GRPO ÷ GSPO at L = {longest}: {f6[longest]['ratio']}; slope per doubling of L "
            f"{ctx['f6']['slope']}; longer responses at equal difficulty (addition, {f6b_span} tokens): at "
            f"{f6b_long['tokens'] if f6b_long else '—'} tokens {f6b_long['ratio'] if f6b_long else 'pending'}, slope "
            f"per doubling {ctx['f6b']['slope']}",
            f"{f6[longest]['verdict'].label} at L = {longest}; {ctx['f6']['grows'].label}; on addition it "
            f"{ctx['f6b']['grows'].label}; trained there, GSPO − GRPO: {ctx['f6c_confirm']['grows'].label}"
            f"{ctx['f6c_confirm']['grows'].note}",
            f6[longest]["verdict"],
            ctx["f6"]["grows"],
            ctx["f6b"]["grows"],
            ctx["f6c_confirm"]["grows"],
        ),
        _row(
            "7",
            "GSPO-token, per-token advantages",
            "introduced, not evaluated (§4.3)",
            f"λ = {lam} on fresh seeds: {f7[lam]['diff']}",
            f7[lam]["verdict"],
        ),
        _row(
            "8",
            "Dense vs MoE",
            "only an MoE shown",
            f"no cap: dense GRPO {c.get('dense GRPO')} collapsed, GSPO {c.get('dense GSPO')}",
            ctx["f2_dense"]["verdict"],
        ),  # fmt: skip
        _row(
            "9",
            "What comes before a collapse (beyond)",
            "—",
            f"{len(f9['later_verdicts'])} alarm signals, rules fixed beforehand, scored on {f9['later']} later runs "
            f"and {v2['fresh']['runs']} runs on fresh seeds; {len(v2['fresh']['verdicts'])} more signals (version 2, "
            "Bonferroni) on both",
            f"later runs: {_warns(f9['later_warns'], f9['later_verdicts'])}; fresh seeds: "
            f"{_warns(**v2['v1_fresh'])}; version 2: later {_warns(**v2['later'])}, fresh {_warns(**v2['fresh'])}",
            *(v["verdict"] for v in f9["later_verdicts"][:1] + v2["fresh"]["verdicts"][:1]),
        ),
        written.row10(ctx, _row),
        written.row11(ctx, _row, sure="; ".join(["declared", *(["fragile: " + ", ".join(fragile)] * bool(fragile))])),
        f12_lag.glance_row(ctx, _row),
    ]
