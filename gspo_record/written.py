"""At a glance rows written as prose (issue 48, item 3), the verdicts each renders named for the row's "how sure" and
footnote: rows 2, 10 and 11 from their findings' ``prose.md``, the others from ``gspo_record/glance_prose.md``
(:mod:`gspo_record.prose`). Row 12's is :func:`gspo_record.f12.lag_page.glance_row`."""

from __future__ import annotations

from gspo_record.fmt import by, num
from gspo_record.prose import render

__all__ = [
    "seeds_note",
    "row1",
    "row2",
    "row2b",
    "row3",
    "row4",
    "row5",
    "row6",
    "row7",
    "row8",
    "row9",
    "row10",
    "row11",
]


def _cells(path: str, book, **context) -> tuple[str, str]:
    return render(path, "number", book, **context), render(path, "verdict", book, **context)


def row2(ctx: dict, _row, sure: str) -> dict:
    """Finding 2's row: collapse without a cap (ten seeds), at a cap of 1, and on the map."""
    f2 = by(ctx["f2"]["verdicts"], "clip")
    ten, cap_map = by(ctx["f2t"]["verdicts"], "model"), by(ctx["f2_map"]["summary"], "clip")["1"]
    number, verdict = _cells("f2/prose.md", ctx["book"], ten=ten, capped=f2["1"], map=cap_map)
    return _row("2", "Collapse", "GRPO can collapse irreversibly; GSPO trains stably", number, verdict,
                f2["1"]["verdict"], *(v["verdict"] for v in ten.values()), cap_map["verdict"],
                sure=sure)  # fmt: skip


def row10(ctx: dict, _row) -> dict:
    """Finding 10's row: size or content, by model, with the tests it weighs."""
    f10 = ctx["f10"]
    branch, revert = f10["branch"]["verdicts"], f10["revert"]["verdicts"]
    context = {"ten": by(f10["ten"]["verdicts"], "model"), "adam": by(f10["adam"]["accounts"], "model"),
               "sgd": by(f10["sgd_two"]["verdicts"], "model"), "accounts": by(f10["accounts"], "model"),
               "branch": branch, "revert": revert,
               "protect": sum(b["verdict"].rule_outcome == "higher" for b in branch)}  # fmt: skip
    number, verdict = _cells("f10/prose.md", ctx["book"], **context)
    weighed = [v for a in f10["accounts"] for v in (a["verdict"], *a["parts"])]  # f10t.account and what it reads
    others = [a["verdict"] for a in f10["adam"]["accounts"] + branch + revert + f10["sgd_two"]["verdicts"]]
    return _row("10", "Why: size or content (beyond)", "the noise of token weights destabilises GRPO (§3)", number,
                verdict, *weighed, *others)  # fmt: skip


def row11(ctx: dict, _row, sure: str) -> dict:
    """Finding 11's row: each successor's position without a cap, the collapses at a cap of 1, the mask."""
    verdicts = ctx["f11"]["verdicts"]
    context = {"position": {f"{v['objective']} {v['model']}": v["verdict"] for v in verdicts},
               "fragile": sum(bool(v["fragile"]) for v in verdicts), "read": len(verdicts),
               "cap1": ctx["f11"]["production"]["contrasts"], "mask": ctx["f11f"]}  # fmt: skip
    number, verdict = _cells("f11/prose.md", ctx["book"], **context)
    return _row("11", "After GSPO (beyond)", "—", number, verdict, *(v["verdict"] for v in verdicts[:1]),
                ctx["f11f"]["mask"], sure=sure)  # fmt: skip


_GLANCE = "glance_prose.md"


def _glance(ctx: dict, _row, n: str, title: str, claim: str, verdicts, sure: str = "", **context) -> dict:
    """Row ``n`` from glance_prose.md's macros ``r{n}_number`` and ``r{n}_verdict``, made by the overview's row maker
    ``_row`` (:func:`gspo_record.headline._row`, passed in: no import cycle)."""
    number = render(_GLANCE, f"r{n}_number", ctx["book"], **context)
    verdict = render(_GLANCE, f"r{n}_verdict", ctx["book"], **context)
    return _row(n, title, claim, number, verdict, *verdicts, sure=sure)


def row1(ctx: dict, _row) -> dict:
    f1 = ctx["f1"]
    return _glance(ctx, _row, "1", "Clipping fractions",
                   "GSPO clips ~100× more tokens than GRPO yet learns better (§5.2)",
                   (f1["verdict"], f1["accuracy"]["verdict"]), f1=f1, ratio=num(f1["headline"]["mean"]),
                   by_responses=num(f1["by_responses"]["mean"]))  # fmt: skip


def row2b(ctx: dict, _row) -> dict:
    dose = [d for d in ctx["f10"]["dose"] if d["points"]]
    return _glance(ctx, _row, "2b", "The grad-norm cap (beyond the paper)", "—", [d["trend"] for d in dose], dose=dose,
                   dose_by=by(dose, "model"))  # fmt: skip


def row3(ctx: dict, _row) -> dict:
    return _glance(ctx, _row, "3", "Expert volatility", "~10 % of activated experts change after one update (§5.3)",
                   (ctx["f3"]["verdict"],), f3=ctx["f3"])  # fmt: skip


def row4(ctx: dict, _row) -> dict:
    replay = by(ctx["f4"]["verdicts"], "clip")["off"]["verdict"]
    return _glance(ctx, _row, "4", "Routing Replay", "GRPO on an MoE needs Routing Replay to converge (§5.3)",
                   (replay,),
                   f4=ctx["f4"], replay=replay)  # fmt: skip


def row5(ctx: dict, _row) -> dict:
    f5 = ctx["f5_confirm"]
    return _glance(ctx, _row, "5", "Precision",
                   "GSPO tolerates the inference engine's log-probs (§5.4, untested there)",
                   (f5["pooled"],), f5=f5)  # fmt: skip


def row6(ctx: dict, _row) -> dict:
    f6 = by(ctx["f6"]["per_length"], "L")
    f6_long, f6b_long = f6[max(f6)], ctx["f6b"]["per_length"][-1]
    verdicts = (f6_long["verdict"], ctx["f6"]["grows"], ctx["f6b"]["grows"], ctx["f6c_confirm"]["grows"])
    return _glance(ctx, _row, "6", "Gradient variance (beyond the paper)",
                   "token ratios add noise that grows with length (§3)",
                   verdicts, f6=ctx["f6"], f6b=ctx["f6b"], f6_long=f6_long, f6b_long=f6b_long,
                   f6c_confirm=ctx["f6c_confirm"])  # fmt: skip


def row7(ctx: dict, _row) -> dict:
    f7 = by(ctx["f7"]["confirm"], "lam")
    top = f7[max(f7, key=float)]
    return _glance(ctx, _row, "7", "GSPO-token, per-token advantages", "introduced, not evaluated (§4.3)",
                   (top["verdict"],),
                   f7_top=top)  # fmt: skip


def row8(ctx: dict, _row) -> dict:
    """Finding 8's row: the ten-seed counts without a cap (which pool the five seeds ``f2.dense`` read), per model."""
    ten = by(ctx["f2t"]["verdicts"], "model")
    dense = ctx["f2_dense"]["verdict"]
    return _glance(ctx, _row, "8", "Dense vs MoE", "only an MoE shown", (dense, *(v["verdict"] for v in ten.values())),
                   ten=ten, dense=dense)  # fmt: skip


def row9(ctx: dict, _row) -> dict:
    f9 = ctx["f9"]
    verdicts = [v["verdict"] for v in f9["later_verdicts"][:1] + f9["v2"]["fresh"]["verdicts"][:1]]
    return _glance(ctx, _row, "9", "What comes before a collapse (beyond)", "—", verdicts, f9=f9)


def seeds_note(rows: list[dict], ctx: dict) -> list[dict]:
    """At a glance's rows, each whose number cell rests on 5 seeds (its smallest printed n, of an interval or a count
    k/n) saying so in its "how sure" cell, with the coverage the methods page's per-comparison study measured for
    the page's interval at 5 seeds and at 10 (issue 48, item 5)."""
    import re

    from gspo_lab.experiments.stats import PAGE_INTERVAL

    cover = {int(r[1]): r[3] for r in ctx["stats"]["per_comparison"] if r[0] == PAGE_INTERVAL.replace("_", " ")}
    out = []
    for row in rows:
        seeds = [int(a or b) for a, b in re.findall(r"\(n = (\d+)|\b\d+/(\d+)\b", row["number"])]
        if seeds and min(seeds) <= 5 and 5 in cover and " seeds" not in row["sure"]:  # not where it says its own
            more = f", {cover[10]} at 10" if 10 in cover else ""
            row = {**row, "sure": f"{row['sure']}; rests on 5 seeds (interval coverage {cover[5]}{more})"}
        out.append(row)
    return out
