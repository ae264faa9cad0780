"""Finding 9 (beyond the paper): what comes before a collapse? The alarm rules of :mod:`gspo_lab.precursors`,
chosen on the first measurement's runs (exploratory) and frozen in ``data/precursors/rules_v1.toml``, scored on the
held-out runs the file names.

Rule ``f9.skill`` (:func:`skill_verdict`), committed with this module after one partial score of the held-out runs
(60 of them) had been printed, so post hoc on the page (issue 22): a frozen
alarm rule *warns ahead* on the held-out runs when the 95 % Wilson interval of its warned share of collapsing runs
lies above that of its false-alarm share of stable runs; it *fires more in stable runs* in the mirror case;
otherwise it is *no better than chance shown*.

A second held-out set, :data:`LATER`, declared before its scores were read (issue 17's session): every training run of
the finding-10 specs, all written after the rules file's commit (61b5086) — runs under interventions (a norm taken
from the other objective, caps, skips, dual-clip), read for finding 10's tables but never for their precursors. The
same rule reads them, apart from the first held-out set.
"""

from __future__ import annotations

import pandas as pd

import gspo_lab.experiments.reading as reading
import gspo_record.figures as figures
import gspo_record.kinds as kinds
from gspo_lab.experiments.spec import cells
from gspo_lab.experiments.store import load_result, result_path
from gspo_lab.paths import data_dir
from gspo_lab.precursors import LEAD, LEVEL_V2, load_frozen, score, with_derived
from gspo_record.fmt import num
from gspo_record.prose import fragile_note
from gspo_record.rules import PENDING, Rule, register
from gspo_record.tables import spec

__all__ = ["SKILL", "SKILL_V2", "LATER", "V2", "skill_verdict", "stored_runs", "section"]

#: version 2's frozen rules (issue 22, item 7): rule f9v2.skill, its two held-out sets and predictions
V2 = data_dir() / "precursors" / "rules_v2.toml"

#: the second held-out set: specs whose runs came after the rules were frozen (declared before their scores were read)
LATER = ("f10_direction_norm", "f10_shrink_skip", "f10_onset_dual", "f10c_relative_confirm")

SKILL = register(
    Rule(
        "f9.skill",
        "9",
        {"warns": "warns ahead", "inverse": "fires more in stable runs", "chance": "no better than chance shown"},
        {"LEVEL": 0.95, "LEAD": LEAD},
        declared=(
            "gspo_record/f9/precursors.py, while the held-out runs ran, after one partial score (60 runs)"
            " had been printed"
        ),
        marker="alarm rule *warns ahead* on the held-out runs",
        specs=(
            "f2r_collapse_moe",
            "f2r_collapse_dense",
            "f2r_mechanism",
            "f2r_clip_dose",
            "f2r_clip_dose_confirm",
            "f2r_confirm_clip",
            "f2c_reward_confirm",
        )
        + LATER,
        post_hoc=True,  # committed after a partial score on 60 held-out runs was printed (issue 22)
    )
)


SKILL_V2 = register(
    Rule(
        "f9v2.skill",
        "9",
        dict(SKILL.outcomes),
        {"LEVEL": LEVEL_V2, "LEAD": LEAD},
        declared="data/precursors/rules_v2.toml, before any version-2 score (Bonferroni over its 4 signals)",
        marker="Rule f9v2.skill, declared here",
        specs=(
            "f10_direction_norm",
            "f10_shrink_skip",
            "f10_onset_dual",
            "f10c_relative_confirm",
            "f2t_collapse_ten",
            "f10t_two_by_two_ten",
            "f10u_shrink_skip_ten",
            "f10v_dual_cap_ten",
        ),  # fmt: skip
    )
)


#: a statement's outcome (the two rates' intervals) -> the rule's
SKILL_READS = {"above": "warns", "below": "inverse", "overlap": "chance"}
#: its words: the rule's labels, but "chance" ("no better than chance shown") in words a null outcome may print (a
#: comparative word, "better", may only name an outcome whose intervals are apart)
SKILL_WORDS = {"above": "warns ahead", "below": "fires more in stable runs", "overlap": "not distinguished from chance"}
QUESTION = "does the frozen alarm rule warn ahead of a collapse more often than it fires in stable runs?"


def skill_verdict(row, rule: Rule = SKILL, id: str = "", level: float | None = None, question: str = QUESTION):
    """``f9.skill`` (or ``rule``: ``f9v2.skill``, whose rows are scored at its level) on one rule's score row
    (:func:`gspo_lab.precursors.score`), as statement ``id`` (default: the rule's name) about the two rates
    (:class:`~gspo_record.kinds.Rates`, intervals at ``level``, default the rule's declared LEVEL): "warns" when the
    warned share's interval lies above the false-alarm share's, "inverse" below, "chance" when they overlap; PENDING
    (a verdict) without collapsing or stable runs."""
    if not row["collapsing"] or not row["stable"]:
        return rule.verdict(PENDING)
    number = kinds.Rates(int(row["warned"]), int(row["collapsing"]), float(row["warned_lo"]), float(row["warned_hi"]),
                         int(row["false_alarms"]), int(row["stable"]), float(row["false_lo"]), float(row["false_hi"]),
                         rule.thresholds["LEVEL"] if level is None else level,
                         names=("warned ahead", "false alarms"))  # fmt: skip
    return rule.state(id or rule.name, question, number, reads=SKILL_READS, words=SKILL_WORDS)


def stored_runs(spec_names: list[str]) -> list[dict]:
    """The per-rollout tables of every stored training cell of the named specs (all seed sets); their seeds are
    noted for the page's robustness readings (each one left out in turn)."""
    runs, seeds = [], set()
    for name in spec_names:
        for cell in cells(spec(name), "all"):
            path = result_path(cell)
            if path.exists():
                runs.append(load_result(path)["per_rollout"])
                seeds.add(cell.seed)
    reading.note_seeds(seeds)
    return runs


def contributing(spec_names) -> list[str]:
    """The named specs that hold at least one stored training cell (the sources a sentence may name)."""
    return [name for name in spec_names if any(result_path(c).exists() for c in cells(spec(name), "all"))]


def _rows(table: pd.DataFrame, verdicts: list[dict] | None = None) -> list[list]:
    """The table's rows; with ``verdicts`` (:func:`_verdicts`, one per row) each ends in its words, the rates being
    printed in the columns before them."""
    rows = []
    for i, r in enumerate(table.itertuples()):
        row = [
            f"`{r.signal}`",
            num(r.factor),
            f"{r.warned}/{r.collapsing} [{num(r.warned_lo)}, {num(r.warned_hi)}]",
            f"{r.false_alarms}/{r.stable} [{num(r.false_lo)}, {num(r.false_hi)}]",
            num(r.median_lead),
        ]
        rows.append(row + ([verdicts[i]["verdict"].short] if verdicts is not None else []))
    return rows


def _verdicts(scored: pd.DataFrame, rule: Rule, level: float, where: str) -> list[dict]:
    """One statement per signal, ``<rule>.<where>.<signal>`` (``where``: the held-out set)."""
    return [{"signal": r.signal, "verdict": skill_verdict(r._asdict(), rule, f"{rule.name}.{where}.{r.signal}", level)}
            for r in scored.itertuples()]  # fmt: skip


def _scored(runs: list[dict], rules, rule: Rule, where: str, level: float = 0.95) -> dict:
    """One held-out set (``where``) under one rule file: its runs, collapsing and stable counts, table rows and
    verdicts."""
    table = score(runs, rules, level)
    verdicts = _verdicts(table, rule, level, where) if runs else []
    return {
        "runs": len(runs),
        "collapsing": int(table["collapsing"].max()) if runs else 0,
        "stable": int(table["stable"].max()) if runs else 0,
        "rows": _rows(table, verdicts) if runs else [],
        "verdicts": verdicts,
        "warns": [v["signal"] for v in verdicts if v["verdict"].rule_outcome == "warns"],
        "items": [(r.signal, r.warned, r.collapsing, r.false_alarms, r.stable) for r in table.itertuples()],
    }


def _rates_words(r: kinds.Rates, full: bool) -> str:
    """A :class:`~gspo_record.kinds.Rates` in words: "it warned ahead in 3 of 21 collapsing runs against false alarms
    in 5 of 129 stable ones, intervals overlapping" (``full``), or "8 of 31 against 1 of 79, intervals apart"."""
    apart = "overlapping" if kinds.rates_outcome(r) == "overlap" else "apart"
    if full:
        return (f"it warned ahead in {r.a_k} of {r.a_n} collapsing runs against false alarms in {r.b_k} of {r.b_n} "
                f"stable ones, intervals {apart}")  # fmt: skip
    return f"{r.a_k} of {r.a_n} against {r.b_k} of {r.b_n}, intervals {apart}"


def replication(held: list[dict], **sets: list[dict]) -> str:
    """Whether the signals that warned ahead on the first held-out set (``held``: its verdicts) warned ahead again on
    each later set (``sets``: its words -> its verdicts), in words computed from those sets' statements (f9.skill.*):
    plain sentences, the counts from each statement's number, "fragile" said once with its reason."""
    warns = [v for v in held if v["verdict"].rule_outcome == "warns"]
    if not warns:
        return "no signal of version 1 warned ahead on the first held-out set"
    counted = {1: "one", 2: "two", 3: "three"}.get(len(warns), str(len(warns)))
    clauses = []
    for w in warns:
        reads = []
        for where, verdicts in sets.items():
            v = next((v["verdict"] for v in verdicts if v["signal"] == w["signal"]), None)
            if v is not None and v.rule_outcome != PENDING:
                did = "did" if v.rule_outcome == "warns" else "did not"
                said = _rates_words(v.number, not reads) if isinstance(v.number, kinds.Rates) else str(v.number)
                reads.append(f"{did} replicate {where}: {said}{fragile_note(v, ', fragile there')}")
        first = w["verdict"]
        fragile = fragile_note(first, " (its reading on that first set is fragile") + ")" if first.flips else ""
        clauses.append(f"`{w['signal']}`, " + "; it ".join(reads or ["has no later reading"]) + fragile)
    return f"version 1's {counted} *warns ahead* on the first held-out set, " + "; ".join(clauses)


def version_two(v1_rules) -> dict:
    """Version 2's four rules on its later and fresh held-out sets (rule f9v2.skill at its Bonferroni level), and
    version 1's rules on the fresh set (rule f9.skill)."""
    header, rules = load_frozen(V2)
    later, fresh = ([with_derived(r) for r in stored_runs(header[k])] for k in ("held_out_later", "held_out_fresh"))
    return {
        "level": f"{LEVEL_V2:.4f}",
        "family": header["family"],
        "later_specs": contributing(header["held_out_later"]),
        "fresh_specs": contributing(header["held_out_fresh"]),
        "later": _scored(later, rules, SKILL_V2, "later", LEVEL_V2),
        "fresh": _scored(fresh, rules, SKILL_V2, "fresh", LEVEL_V2),
        "v1_fresh": _scored(fresh, v1_rules, SKILL, "fresh"),
    }


def section() -> tuple[dict, dict]:
    header, rules = load_frozen()
    explored, held, later = (stored_runs(names) for names in (header["chosen_on"], header["held_out"], list(LATER)))
    first, second = _scored(held, rules, SKILL, "held"), _scored(later, rules, SKILL, "later")
    ctx = {
        "version": header["version"],
        "chosen_on": len(explored),
        "held_out": first["runs"],
        "held_out_specs": header["held_out"],
        "explored_rows": _rows(score(explored, rules)),
        "held_rows": first["rows"],
        "verdicts": first["verdicts"],
        "warns": first["warns"],
        "collapsing": first["collapsing"],
        "stable": first["stable"],
        "lead": LEAD,
        "later": second["runs"],
        "later_specs": contributing(LATER),  # a spec with no stored run is no source (issue 22: f10c had none)
        "later_rows": second["rows"],
        "later_verdicts": second["verdicts"],
        "later_warns": second["warns"],
        "later_collapsing": second["collapsing"],
        "later_stable": second["stable"],
        "v2": version_two(rules),
    }
    ctx["replication"] = replication(
        first["verdicts"],
        **{"on the later runs": second["verdicts"], "on the fresh seeds": ctx["v2"]["v1_fresh"]["verdicts"]},
    )
    figure = figures.rates(second.pop("items"), ("collapsing runs it warned ahead", "stable runs it fired in"),
                           f"share of runs (Wilson 95 % interval), the {second['runs']} later runs")  # fmt: skip
    return ctx, {"f9_skill": figure}
