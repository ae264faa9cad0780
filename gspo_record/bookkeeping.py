"""The page's last section: every spec with its set, cells and time; the core set, as stored and as timed."""

from __future__ import annotations

import json
from collections import Counter

from gspo_lab.experiments.spec import cells, core_specs, load_spec
from gspo_lab.experiments.store import finished, results_root, stored_files
from gspo_lab.paths import data_dir
from gspo_record.fmt import num

__all__ = ["section"]


def _timing() -> dict:
    """The stored timing of the core set (``scripts/time_core_set.sh`` writes it, with the comparison)."""
    t = json.loads((results_root() / "core_timing.json").read_text())
    c = t["compared_with_stored"]
    what = (
        "a regeneration from empty result and run folders"
        if t["cells_skipped"] == 0
        else f"a partial run ({t['cells_skipped']} of its cells were already stored)"
    )
    return {
        "what": what,
        "command": t["command"] or "gspo-lab sweep --core",
        "workers": t["workers"],
        "date": t["date"],
        "cpus": t["machine"]["cpus"],
        "commit": t["git_commit"][:7],
        "cells": t["cells_run"],
        "minutes": f"{t['wall_s'] / 60:.0f}",
        "compared": {**c, "max_abs_diff": num(c["max_abs_diff"])},
        "differing": ", ".join(
            f"`{name}` {k}" for name, k in sorted(Counter(d.split("/")[0] for d in c.get("differing", [])).items())
        )
        or "none",
        "commit_full": t["git_commit"],
        "note": t.get("note", ""),
    }


def provenance_section() -> tuple[dict, dict]:
    """The committed provenance table (``python -m gspo_record provenance``), by spec and by rule, with its totals."""
    table = _provenance()
    specs = {r["spec"]: r for r in table["specs"]}
    keys = ("cells", "after_spec", "before_spec", "before_spec_dirty", "unknown_commit")
    totals = {k: sum(r[k] for r in table["specs"]) for k in keys}
    before = [r for r in table["specs"] if r["before_spec"]]
    # a superseded result was re-run only when a result of the same spec and key is stored now; the others were
    # withdrawn (issue 22: 30 f10c cells ran a wrong config and were superseded, not re-run)
    rerun = [e for e in table["superseded"] if stored_files(results_root() / e["spec"], e["key"])]
    withdrawn = [e for e in table["superseded"] if e not in rerun]
    ctx = {
        "specs": specs,
        "rules": {r["rule"]: r for r in table["rules"]},
        "totals": totals,
        "before": before,
        "superseded": table["superseded"],
        "rerun": len(rerun),
        "withdrawn": len(withdrawn),
        "withdrawn_specs": sorted({e["spec"] for e in withdrawn}),
    }
    return ctx, {}


def _provenance() -> dict:
    return json.loads((results_root() / "provenance.json").read_text())


def rules_rows() -> list[list]:
    """One row per registered rule: name, finding, declaration, the commit that introduced it (provenance table) and
    how many of its specs' stored cells ran before that commit."""
    from gspo_record.rules import RULES

    prov = {r["rule"]: r for r in _provenance()["rules"]}
    rows = []
    for name, rule in sorted(RULES.items(), key=lambda kv: (kv[1].finding, kv[0])):
        p = prov.get(name, {})
        before = f"{p.get('cells_before_rule', '—')} of {p.get('cells_before_rule', 0) + p.get('cells_after_rule', 0)}"
        rows.append(
            [
                f"`{name}`",
                rule.finding,
                rule.declared,
                f"{p.get('commit', '—')} ({(p.get('date') or '—')[:10]})",
                before,
                "yes" if rule.post_hoc else "no",
                " / ".join(rule.outcomes.values()),
            ]
        )
    return rows


def section() -> tuple[dict, dict]:
    prov = {r["spec"]: r for r in _provenance()["specs"]}
    rows, core_total = [], 0.0
    for path in sorted((data_dir() / "specs").glob("*.toml")):
        s = load_spec(path)
        table = finished(s, "all")
        n_cells = len(cells(s, "all"))
        wall = float(table["wall_s"].sum()) if not table.empty else 0.0
        if s.core and not table.empty:
            core_keys = {c.key for c in cells(s, "confirm", core=True)}
            core_total += float(table.loc[table.key.isin(core_keys), "wall_s"].sum())
        label = s.core_label().removesuffix(" set").replace(" set at ", " at ")
        rows.append(
            [
                f"`{s.name}`",
                label,
                "probe" if s.probe else "training",
                n_cells // max(1, len(s.seeds("all"))),
                f"{len(s.search_seeds)} / {len(s.confirm_seeds)}",
                f"{len(table)}/{n_cells}",
                f"{wall / 60:.0f} min",
                f"{(prov[s.name]['spec_commit'] or '—')[:7]} ({(prov[s.name]['spec_date'] or '—')[:10]})",
                f"{prov[s.name]['after_spec']} / {prov[s.name]['before_spec']} / {prov[s.name]['unknown_commit']}",
            ]
        )
    core = [{"name": s.name, "where": f" (at {s.core_where()})" if s.core_grid else ""} for s in core_specs()]
    ctx = {
        "rows": rows,
        "core_minutes": f"{core_total / 60:.0f}",
        "core_workers2": f"{core_total / 120:.0f}",
        "timing": _timing(),
        "core": core,
        "rules": rules_rows(),
    }
    return ctx, {}
