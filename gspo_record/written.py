"""At a glance rows written as prose (issue 48, item 3): rows 2, 10 and 11, each from its finding's ``prose.md``
(:mod:`gspo_record.prose`), the verdicts it renders named for the row's "how sure" and footnote. Row 12's is
:func:`gspo_record.f12.lag_page.glance_row`. The rows not yet written here keep :mod:`gspo_record.headline`'s."""

from __future__ import annotations

from gspo_record.prose import render

__all__ = ["row2", "row10", "row11"]


def _by(rows: list[dict], key: str) -> dict:
    return {r[key]: r for r in rows}


def _cells(path: str, book, **context) -> tuple[str, str]:
    return render(path, "number", book, **context), render(path, "verdict", book, **context)


def row2(ctx: dict, _row, sure: str) -> dict:
    """Finding 2's row: collapse without a cap (ten seeds), at a cap of 1, and on the map."""
    f2 = _by(ctx["f2"]["verdicts"], "clip")
    ten, cap_map = _by(ctx["f2t"]["verdicts"], "model"), _by(ctx["f2_map"]["summary"], "clip")["1"]
    number, verdict = _cells("f2/prose.md", ctx["book"], ten=ten, off=f2["off"], capped=f2["1"], map=cap_map)
    return _row("2", "Collapse", "GRPO can collapse irreversibly; GSPO trains stably", number, verdict,
                f2["off"]["verdict"], f2["1"]["verdict"], *(v["verdict"] for v in ten.values()), cap_map["verdict"],
                sure=sure)  # fmt: skip


def row10(ctx: dict, _row) -> dict:
    """Finding 10's row: size or content, by model, with the tests it weighs."""
    f10 = ctx["f10"]
    branch, revert = f10["branch"]["verdicts"], f10["revert"]["verdicts"]
    context = {"ten": _by(f10["ten"]["verdicts"], "model"), "adam": _by(f10["adam"]["accounts"], "model"),
               "sgd": _by(f10["sgd_two"]["verdicts"], "model"), "accounts": _by(f10["accounts"], "model"),
               "branch": branch, "revert": revert,
               "protect": sum(b["verdict"].outcome == "higher" for b in branch)}  # fmt: skip
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
