"""The main job's report: one HTML page over a run folder written by ``gspo_lab.nb.run.run_all``.

``build_report(out_dir, runs)`` writes ``out_dir/report.html``: a summary (notebooks that ran, claims that held),
then per notebook its execution time, its claims with verdicts, its headline numbers and its figures. Figures are
the ``image/png`` outputs of the executed notebook — cell outputs, and the stored frames of Output widgets those
cells display; an image identical to an earlier one of the same notebook (a widget's first frame is its static
twin's figure) is shown once — written to ``out_dir/figures/<notebook>-<n>.png`` and linked relatively, so the
folder can be moved or archived as a whole. Plain HTML and inline CSS; no JavaScript.
"""

from __future__ import annotations

import base64
import html
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["build_report", "summarize", "extract_figures", "Figure"]

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 70em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #fff; background: #2e7d32; } .fail { color: #fff; background: #c62828; }
.badge { display: inline-block; padding: 0.1em 0.5em; border-radius: 0.3em; font-weight: 600; font-size: 0.85em; }
.summary { font-size: 1.1em; padding: 0.6em 1em; border-radius: 0.4em; display: inline-block; }
pre.error { background: #fdecea; border-left: 4px solid #c62828; padding: 0.6em; white-space: pre-wrap; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.88em; }
"""


@dataclass(frozen=True)
class Figure:
    """One extracted PNG: its path relative to the run folder and its alt text."""

    src: str
    alt: str


def _load_results(run: dict) -> dict | None:
    path = run.get("results")
    if not path or not Path(path).is_file():
        return None
    return json.loads(Path(path).read_text())


def summarize(runs: list[dict]) -> dict:
    """Counts over a run: ``notebooks``, ``notebooks_ok``, ``claims``, ``claims_passed`` (from the results JSONs)."""
    claims = [c for run in runs for c in ((_load_results(run) or {}).get("claims") or [])]
    return {
        "notebooks": len(runs),
        "notebooks_ok": sum(bool(run.get("ok")) for run in runs),
        "claims": len(claims),
        "claims_passed": sum(bool(c.get("passed")) for c in claims),
    }


def _widget_pngs(model_id: str, state: dict, seen: set) -> list[str]:
    """Base64 PNGs stored in an Output widget's state, following Box children (nbclient stores both)."""
    if model_id in seen or model_id not in state:
        return []
    seen.add(model_id)
    model = state[model_id].get("state", {})
    pngs = [o["data"]["image/png"] for o in model.get("outputs", []) if "image/png" in o.get("data", {})]
    for child in model.get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            pngs += _widget_pngs(child.removeprefix("IPY_MODEL_"), state, seen)
    return pngs


def extract_figures(executed: Path, fig_dir: Path, name: str) -> list[Figure]:
    """Write each distinct ``image/png`` of an executed notebook to ``fig_dir/<name>-<n>.png`` (n from 1), in order."""
    nb = json.loads(Path(executed).read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})
    fig_dir.mkdir(parents=True, exist_ok=True)
    for old in fig_dir.glob(f"{name}-*.png"):
        old.unlink()
    figures, heading, seen, written = [], "", set(), set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            lines = [ln for ln in "".join(cell.get("source", "")).splitlines() if ln.startswith("#")]
            heading = lines[-1].lstrip("#").strip() if lines else heading
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            found = [(data["image/png"], "")] if "image/png" in data else []
            if _WIDGET_VIEW in data:
                model_id = data[_WIDGET_VIEW].get("model_id", "")
                found += [(png, ", a widget's stored frame") for png in _widget_pngs(model_id, state, seen)]
            for png, kind in found:
                png = base64.b64decode("".join(png) if isinstance(png, list) else png)
                if png in written:
                    continue
                written.add(png)
                n = len(figures) + 1
                (fig_dir / f"{name}-{n}.png").write_bytes(png)
                where = f" — {heading}" if heading else ""
                figures.append(Figure(f"{fig_dir.name}/{name}-{n}.png", f"{name}, figure {n}{where}{kind}"))
    return figures


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, list):
        shown = ", ".join(_fmt(v) for v in value[:12])
        return f"[{shown}{', …' if len(value) > 12 else ''}]"
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:120] + " …"


def _flatten(numbers: dict, prefix: str = "") -> dict:
    """Nested dicts of headline numbers as one level with dotted keys: {"loss": {"grpo": 1}} -> {"loss.grpo": 1}."""
    flat = {}
    for key, value in numbers.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _badge(passed: bool, yes: str = "PASS", no: str = "FAIL") -> str:
    return f'<span class="badge {"pass" if passed else "fail"}">{yes if passed else no}</span>'


def _claims_table(claims: list[dict]) -> str:
    if not claims:
        return "<p>No claims recorded.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(str(c.get('statement', c.get('name', ''))))}</td>"
        f'<td class="num">{_fmt(c.get("value"))}</td><td>{html.escape(str(c.get("op", "")))}</td>'
        f'<td class="num">{_fmt(c.get("threshold"))}</td><td>{_badge(bool(c.get("passed")))}</td></tr>'
        for c in claims
    )
    return f"<table><tr><th>claim</th><th>value</th><th>op</th><th>threshold</th><th>verdict</th></tr>{rows}</table>"


def _numbers_table(numbers: dict) -> str:
    if not numbers:
        return ""
    rows = "".join(
        f'<tr><td>{html.escape(str(k))}</td><td class="num">{html.escape(_fmt(v))}</td></tr>'
        for k, v in _flatten(numbers).items()
    )
    return f"<h3>Headline numbers</h3><table><tr><th>name</th><th>value</th></tr>{rows}</table>"


def _section(out_dir: Path, run: dict) -> str:
    name = run["name"]
    results = _load_results(run) or {}
    claims = results.get("claims") or []
    passed = sum(bool(c.get("passed")) for c in claims)
    parts = [
        f'<h2 id="{html.escape(name)}">{html.escape(name)} {_badge(bool(run.get("ok")), "ran", "failed")}</h2>',
        f'<p class="meta">executed in {float(run.get("seconds", 0.0)):.1f} s · '
        f"tier {html.escape(str(run.get('tier', '?')))} · claims passed {passed}/{len(claims)}</p>",
    ]
    if run.get("error"):
        parts.append(f'<pre class="error">{html.escape(str(run["error"]))}</pre>')
    parts += ["<h3>Claims</h3>", _claims_table(claims), _numbers_table(results.get("numbers") or {})]
    executed = run.get("executed") or (out_dir / f"{name}.ipynb")
    figures = extract_figures(Path(executed), out_dir / "figures", name) if Path(executed).is_file() else []
    if figures:
        parts.append("<h3>Figures</h3>")
        parts += [
            f'<figure><img src="{html.escape(f.src)}" alt="{html.escape(f.alt)}">'
            f"<figcaption>{html.escape(f.alt)}</figcaption></figure>"
            for f in figures
        ]
    return "<section>" + "\n".join(parts) + "</section>"


def build_report(out_dir: Path, runs: list[dict]) -> Path:
    """Write ``out_dir/report.html`` (and ``out_dir/figures/``) for ``runs`` from ``run_all``; returns its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    s = summarize(runs)
    all_ok = s["notebooks_ok"] == s["notebooks"] and s["claims_passed"] == s["claims"]
    contents = "".join(
        f'<li><a href="#{html.escape(r["name"])}">{html.escape(r["name"])}</a> '
        f"{_badge(bool(r.get('ok')), 'ran', 'failed')} {float(r.get('seconds', 0.0)):.1f} s</li>"
        for r in runs
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gspo_lab notebook report</title>
<style>{_CSS}</style></head><body>
<h1>gspo_lab notebook report</h1>
<p class="meta">{html.escape(str(out_dir.resolve()))} · built {time.strftime("%Y-%m-%d %H:%M:%S")}</p>
<p class="summary {"pass" if all_ok else "fail"}">notebooks ok {s["notebooks_ok"]}/{s["notebooks"]} ·
claims passed {s["claims_passed"]}/{s["claims"]}</p>
<ul>{contents}</ul>
{"".join(_section(out_dir, run) for run in runs)}
</body></html>
"""
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
