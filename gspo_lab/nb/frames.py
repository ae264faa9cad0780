"""Widget views of an executed notebook as static outputs, for pages read without a kernel (the main job's book).

A widget view output (``application/vnd.jupyter.widget-view+json``) only shows with a live kernel or a widget manager
(which myst-nb would load from a CDN). nbclient stores every widget's last state in the notebook's metadata, the
outputs of Output widgets included, so the figure a panel drew when the run executed it is there:

    a view whose widgets hold PNG frames    -> those frames (image/png outputs) that the page has not already shown,
                                               then a note that the control needs a live kernel (JupyterLab:
                                               ``bash scripts/lab.sh``); a frame equal to a figure above — its
                                               plain-function twin's, drawn at the same settings — is not repeated
    a tqdm progress bar (a *ProgressModel)  -> its final text, as tqdm prints it in a terminal
    any other view                          -> the note alone

``static_notebook(nb)`` applies that to every code cell, collapses every code cell's source (myst-nb's
``hide-input``: the page reads as narrative and figures, the code one click away; a cell without output — imports,
parameters — is left out of the page, ``remove-cell``) and drops the widget state.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator

__all__ = ["WIDGET_VIEW", "WIDGET_STATE", "widget_frames", "static_outputs", "static_notebook"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_NOTE = (
    '<p class="gspo-widget-note">An interactive control{frame}: moving it needs a live kernel — open the notebook in '
    "JupyterLab (<code>bash scripts/lab.sh</code>).</p>"
)


def _widget_models(model_id: str, state: dict, seen: set | None = None) -> Iterator[dict]:
    """The state of widget ``model_id`` and of every widget below it (Box children), depth first, each once."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return
    seen.add(model_id)
    model = state[model_id]
    yield model
    for child in model.get("state", {}).get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            yield from _widget_models(child.removeprefix("IPY_MODEL_"), state, seen)


def widget_frames(model_id: str, state: dict) -> list[str]:
    """Base64 PNGs stored in the Output widgets under widget ``model_id`` (nbclient stores their outputs), in order.

    ``state``: the notebook's ``metadata.widgets[WIDGET_STATE]["state"]``, model id -> {"model_name", "state"}.
    """
    pngs = []
    for model in _widget_models(model_id, state):
        for output in model.get("state", {}).get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                pngs.append("".join(png) if isinstance(png, list) else png)
    return pngs


def _progress_text(models: list[dict]) -> str:
    """A tqdm widget bar as the text bar tqdm prints: '<left> |█████     | <right>', at its final state."""
    texts = [html.unescape(m["state"].get("value", "")) for m in models if m.get("model_name") == "HTMLModel"]
    bar = next(m["state"] for m in models if m.get("model_name", "").endswith("ProgressModel"))
    filled = round(10 * (bar.get("value") or 0) / bar["max"]) if bar.get("max") else 0
    left, right = (t.replace("\u2007", " ").strip() for t in (texts + ["", ""])[:2])
    return f"{left} |{'█' * filled}{' ' * (10 - filled)}| {right}".strip()


def static_outputs(output: dict, state: dict, shown: set[str] | None = None) -> list[dict]:
    """What the book shows for one cell ``output``: itself, or for a widget view its frames and a note (or text).

    ``shown``: the PNGs (base64) the page already shows; a frame among them is left out and the note points up to
    it. Every PNG this output adds to the page is added to ``shown``.
    """
    shown = set() if shown is None else shown
    view = output.get("data", {}).get(WIDGET_VIEW)
    if view is None:
        png = output.get("data", {}).get("image/png")
        if png:
            shown.add("".join(png) if isinstance(png, list) else png)
        return [output]
    models = list(_widget_models(view.get("model_id", ""), state))
    if any(m.get("model_name", "").endswith("ProgressModel") for m in models):
        return [{"output_type": "stream", "name": "stdout", "text": _progress_text(models) + "\n"}]
    frames = widget_frames(view.get("model_id", ""), state)
    new = [png for png in dict.fromkeys(frames) if png not in shown]
    shown.update(new)
    images = [{"output_type": "display_data", "data": {"image/png": png}, "metadata": {}} for png in new]
    frame = (" (above, the frame this run stored)" if new else
             " (its figure is the one above, drawn by its plain-function twin at the same settings)" if frames
             else "")  # fmt: skip
    note = {"output_type": "display_data", "data": {"text/html": WIDGET_NOTE.format(frame=frame)}, "metadata": {}}
    return images + [note]


def static_notebook(nb: dict) -> dict:
    """The executed notebook ``nb`` (nbformat 4 JSON) with every widget view replaced, each figure shown once, every
    code cell's source collapsed (myst-nb's ``hide-input`` tag; ``remove-cell`` when it has no output) and the widget
    state dropped."""
    nb = json.loads(json.dumps(nb))  # a deep copy
    state = nb.get("metadata", {}).pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    shown: set[str] = set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        cell["outputs"] = [new for out in cell.get("outputs", []) for new in static_outputs(out, state, shown)]
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        tag = "hide-input" if cell["outputs"] else "remove-cell"  # a cell that shows nothing leaves no empty toggle
        if tag not in tags:
            tags.append(tag)
    return nb
