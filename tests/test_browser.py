"""The notebooks in a real browser: JupyterLab under headless Chromium (Playwright), sliders moved from the keyboard.

papermill (test_notebooks.py) runs the notebooks' code; this module checks what a reader gets in JupyterLab: the
notebook opens, "Run All" runs every cell without an error output, the widgets render, and moving a slider makes
the kernel redraw a readout equal to the panel's plain-function twin computed here, in the test process.

Flow:
    1. A module fixture starts ``python -m jupyterlab`` on a free port with a random token, fresh config / runtime /
       settings / workspaces / IPython folders, update checks and news off, and the notebook setting
       ``windowingMode: "none"`` (every cell stays in the DOM, so every prompt and output can be read). It serves a
       temporary copy of ``notebooks/*.ipynb`` (the notebooks find their data through the package) with a fresh
       ``GSPO_LAB_RUNS`` folder (notebook 04's live runs train as in a fresh clone, never read back). Ready when
       ``GET /api/status?token=…`` answers 200. Teardown: ``POST /api/shutdown``, then SIGKILL by PID as a
       fallback, and an assertion that no process of the server (kernels included) or of the browser outlives it.
    2. Per notebook, one page: open ``/lab/tree/<name>.ipynb``, wait until the kernel is connected and idle, menu
       Run → Run All Cells, wait until the kernel is idle and every code cell has an execution count (or an error
       stopped the run), then look for error outputs and unrendered widgets.
    3. Sliders are moved from the keyboard (focus the noUiSlider handle, press arrows); the readout text is set
       last by the kernel's callback, so it is the value waited on; it must equal ``ratio_view`` / ``clip_view``
       of the slider's final value, recomputed here from the notebook's own parameters cell. Notebook 04's live
       control is ticked and run: both objectives train side by side, the plot follows both (a readout before the
       end shows both unfinished), and the click-to-"finished" seconds are printed.
    4. Fault injection (``GSPO_LAB_FAULT=widget-callback``): the same Run All check on a server started with it
       fails; and with it switched on in a live kernel (through the kernel's connection file, no cell), the
       slider check fails.
    5. The main job's book (gspo_lab.nb.book), built from the session's smoke-tier execution of every notebook
       (conftest.py's ``smoke``, shared with test_notebooks.py) and served by ``http.server`` on 127.0.0.1 from a
       thread: from index.html every internal link of every page is followed (pages opened, other files fetched),
       and nothing may answer >= 400, fail, or be requested from another host; every ``<img>`` loaded
       (``naturalWidth > 0``), every math element was rendered by the bundled MathJax, each widget panel shows
       its stored frame's note, and every figure of a notebook page is followed by its caption ("Figure N." or
       "Figures N and N+1.", a markdown cell right after the figure's cell; :data:`CAPTIONS_JS`).

Pitfalls handled (JupyterLab 4.6, ipywidgets 8.1, Chromium 156):
    * "Run All" sent before the kernel is connected is silently dropped. The notebook toolbar's execution
      indicator reads ``data-status="idle"`` *before* any kernel exists ("No Kernel | Initializing"), so it cannot
      be the signal: wait for the status bar's "| Idle" and for the server to report a connection to the kernel.
    * The menu item is ``runmenu:run-all`` in 4.6 (not ``notebook:run-all-cells``); a run stopped by an error
      leaves later cells without a count, so "every cell has a count" alone would wait forever.
    * Widget views are the only cell outputs without a ``data-mime-type`` attribute in 4.6 (text, HTML, stderr
      have one), so that is how they are found; a rendered one contains ``.jupyter-widgets``.
    * ``/lab/tree/…?reset``: a page never restores a workspace saved by an earlier page (4.6 already moves a second
      concurrent window to a fresh ``auto-*`` workspace, which is the URL the page ends up at).
    * A FloatLogSlider's handle has ``aria-valuenow`` = the *exponent* rounded to one decimal (noUiSlider's
      ``toFixed(1)``); ``aria-valuetext`` holds the exponent in full, and the kernel receives
      ``Math.pow(10, exponent)`` computed by the browser, so the value is computed there too (not ``10 ** x`` in
      Python, which may differ in the last bit). Rendering a log slider already snaps the kernel's value to the
      step (3e-4 becomes 10^-3.5) and redraws the panel once.
    * Each arrow press is one kernel round trip: wait for the readout to equal the expected text, then for the
      kernel to be idle, and check it stayed equal.
    * An exception in a widget callback never reaches a cell's output: ipywidgets shows its traceback in the
      kernel's comm context, which JupyterLab routes to the Log Console (a status-bar item, hidden while empty,
      titled "N new messages, M log entries for <notebook>"). Every check counts those entries: a page must have
      none after Run All, and a slider move that adds one fails at once, with the Log Console's text.
    * A fault in a panel's constructor (its first ``redraw``) is an ordinary cell error: a traceback output, and
      Run All stops there.

Figures: ``gspo_lab.plots`` draws on bare ``matplotlib.figure.Figure``s outside pyplot and loads pyplot's backend
at import, because ipykernel's inline backend registers its ``image/png`` formatter only when that backend loads;
``test_no_figure_is_rendered_as_text`` fails if a ``display(fig)`` ever renders as ``<Figure size …>`` text again.

Without Chromium (``/usr/bin/chromium``, or the path in ``GSPO_LAB_CHROMIUM``) or Playwright the module is skipped
with the reason, unless ``GSPO_LAB_REQUIRE_BROWSER=1`` (CI, ``.ci/run``), which turns that into a failure. Never
``playwright install``: the system Chromium is used. Screenshots of failing pages go to ``runs/browser-artifacts/``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from gspo_lab.nb.pages import finding_pages
from gspo_lab.nb.params import NOTEBOOKS
from gspo_lab.paths import repo_root, runs_dir

CHROMIUM = Path(os.environ.get("GSPO_LAB_CHROMIUM", "/usr/bin/chromium"))  # Debian's; never a downloaded one
REQUIRE_VAR = "GSPO_LAB_REQUIRE_BROWSER"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_S = 60
KERNEL_READY_S = 60
# the interactive tier runs each notebook in 8-40 s here when idle; the suite's other worker slows a lab run about 3.5x
# (05, the longest, 37 s alone and 129 s in one full run after issue 50 added its section 8)
RUN_ALL_S = 240
READOUT_S = 20  # one slider move: a handful of kernel round trips
LIVE_RUN_S = 300  # notebook 04's live control trains both objectives at the interactive tier: ~1 min idle, CI shares
PANELS = {
    "00_tour": (),
    "01_ratio_variance": ("ratio",),
    "02_gradients": ("grad",),
    "03_clipping": ("clip-gspo", "clip-grpo", "trust"),
    "04_collapse": ("live", "arm"),
    "05_precision": ("precision", "lag"),
    "06_successors": ("design",),
}
"""The widget panels (``gspo-<panel>-…`` classes of gspo_lab.widgets) each notebook displays."""

STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
# a widget view is a cell's top-level output without a data-mime-type (JupyterLab 4.6 sets it on the others only)
WIDGET_VIEW = ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output:not([data-mime-type])"


def _why_no_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (it is in the `test` extra: `source scripts/env.sh test`)"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (Debian: `apt-get install -y chromium`; CI installs it in .ci/run)"
    return None


NO_BROWSER = _why_no_browser()

REQUIRED = os.environ.get(REQUIRE_VAR, "") not in ("", "0")
if NO_BROWSER and not REQUIRED:
    pytest.skip(
        f"BROWSER TESTS SKIPPED: {NO_BROWSER}. Set {REQUIRE_VAR}=1 to make this a failure.", allow_module_level=True
    )


# ---------------------------------------------------------------- processes


def _ppid_map() -> dict[int, int]:
    """pid -> parent pid of every live (non-zombie) process, from /proc (empty where there is no /proc)."""
    parents = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents[int(proc.name)] = int(fields[1])
    return parents


def descendants(pid: int) -> set[int]:
    """Live processes below ``pid`` (kernels run in sessions of their own: a process group does not catch them)."""
    parents, found, todo = _ppid_map(), set(), [pid]
    while todo:
        parent = todo.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` is alive (zombies count as gone); the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        alive = pids & set(_ppid_map())
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def kill_pids(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- the Jupyter server


@dataclass
class Lab:
    """A running JupyterLab server: base ``url``, ``token``, the process, the folder it serves."""

    url: str
    token: str
    proc: subprocess.Popen
    root: Path
    runtime: Path  # JUPYTER_RUNTIME_DIR: the kernels' connection files
    log: Path

    def api(self, method: str, path: str) -> tuple[int, bytes]:
        req = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def kernel_of(self, notebook: str) -> dict | None:
        """The server's record of the kernel of ``notebook``'s session (``connections``, ``execution_state``)."""
        status, body = self.api("GET", "/api/sessions")
        sessions = [s for s in json.loads(body) if s["path"] == f"{notebook}.ipynb"] if status == 200 else []
        if not sessions:
            return None
        status, body = self.api("GET", f"/api/kernels/{sessions[0]['kernel']['id']}")
        return json.loads(body) if status == 200 else None

    def log_tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(settings_dir: Path) -> None:
    """User settings in the fresh settings folder: every cell in the DOM; no update check, no news prompt."""
    settings = {
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification": {"checkForUpdates": False, "fetchNews": "false"},
    }
    for plugin, values in settings.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def lab_env(root: Path, extra: dict[str, str]) -> dict[str, str]:
    """The server's (and so the kernels') environment: fresh Jupyter/IPython folders, no inherited plot backend."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JUPYTER_PATH", "GSPO_LAB_FAULT")}
    folders = {
        "JUPYTER_CONFIG_DIR": "config",
        "JUPYTER_RUNTIME_DIR": "runtime",
        "JUPYTERLAB_SETTINGS_DIR": "settings",
        "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
        "IPYTHONDIR": "ipython",  # a user's startup files (e.g. `%matplotlib inline`) must not change what we see
    }
    for var, name in folders.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / name)
    write_settings(root / "settings")
    return {**env, **extra}


def start_lab(root: Path, extra_env: dict[str, str] | None = None) -> Lab:
    """Start JupyterLab on a copy of notebooks/*.ipynb under ``root``; returns once /api/status answers 200."""
    from gspo_lab.nb.run import ensure_kernel

    ensure_kernel()
    served = root / "notebooks"
    served.mkdir(parents=True)
    for nb in sorted((repo_root() / "notebooks").glob("*.ipynb")):
        shutil.copy(nb, served / nb.name)
    port, token = free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",  # a taken port must fail, not silently move elsewhere
        f"--IdentityProvider.token={token}",
        "--allow-root",
        f"--ServerApp.root_dir={served}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
    ]
    log = root / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=lab_env(root, extra_env or {}), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = Lab(f"http://127.0.0.1:{port}", token, proc, served, root / "runtime", log)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyterlab exited with {proc.returncode}:\n{lab.log_tail()}")
        with contextlib.suppress(OSError):
            if lab.api("GET", "/api/status")[0] == 200:
                return lab
        time.sleep(0.2)
    stop_lab(lab)
    raise RuntimeError(f"jupyterlab did not answer /api/status within {SERVER_START_S} s:\n{lab.log_tail()}")


def stop_lab(lab: Lab) -> set[int]:
    """POST /api/shutdown (kernels included), then SIGKILL whatever is left by PID; the processes that survived."""
    pids = descendants(lab.proc.pid) | {lab.proc.pid}
    with contextlib.suppress(OSError):
        lab.api("POST", "/api/shutdown")
    try:
        lab.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(lab.proc.pid, signal.SIGKILL)
        lab.proc.wait(timeout=10)
    left = wait_gone(pids, timeout=10)
    kill_pids(left)
    return wait_gone(left, timeout=5) if left else set()


@contextlib.contextmanager
def running_lab(root: Path, extra_env: dict[str, str] | None = None):
    lab = start_lab(root, extra_env)
    try:
        yield lab
    finally:
        survivors = stop_lab(lab)
    assert not survivors, f"processes outlived the Jupyter server even after SIGKILL: {sorted(survivors)}"


# ---------------------------------------------------------------- the browser


@contextlib.contextmanager
def screenshot_on_failure(page, tag: str):
    """Save a screenshot of ``page`` to runs/browser-artifacts/ when the body raises; print its path."""
    try:
        yield
    except BaseException:
        folder = runs_dir() / "browser-artifacts"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{tag}-{time.strftime('%Y%m%d-%H%M%S')}.png"
        with contextlib.suppress(Exception):
            page.screenshot(path=str(path))
            print(f"[browser] screenshot of the failing page: {path}")
        raise


def wait_kernel_ready(page, lab: Lab, notebook: str) -> None:
    """The status bar reads "| Idle" and the server counts a connection to this notebook's kernel."""
    page.wait_for_function(
        "() => /\\| Idle\\b/.test(document.querySelector('#jp-main-statusbar')?.innerText ?? '')",
        timeout=KERNEL_READY_S * 1000,
    )
    deadline = time.monotonic() + KERNEL_READY_S
    while (kernel := lab.kernel_of(notebook)) is None or kernel.get("connections", 0) < 1:
        if time.monotonic() > deadline:
            raise AssertionError(f"{notebook}: no connected kernel after {KERNEL_READY_S} s: {kernel}")
        time.sleep(0.2)
    from gspo_lab.nb.run import KERNEL_NAME

    assert kernel["name"] == KERNEL_NAME, f"{notebook} runs kernel {kernel['name']!r}, not {KERNEL_NAME!r}"


def open_notebook(context, lab: Lab, notebook: str):
    """A new page with ``notebook`` open and its kernel connected and idle."""
    page = context.new_page()
    with screenshot_on_failure(page, f"{notebook}-open"):
        page.goto(f"{lab.url}/lab/tree/{notebook}.ipynb?reset&token={lab.token}")  # reset: no restored tabs
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        wait_kernel_ready(page, lab, notebook)
    return page


# a code cell ran when its prompt reads [n]:; a cell whose source is hidden (the "Record results" cell,
# jupyter.source_hidden) shows a placeholder instead of its prompt: it ran when it holds an output
CELL_RAN_JS = """cell => {
    const prompt = cell.querySelector('.jp-InputPrompt')?.textContent.trim() ?? '';
    if (/^\\[\\d+\\]:$/.test(prompt)) return true;
    return !!cell.querySelector('.jp-InputPlaceholder') && !!cell.querySelector('.jp-OutputArea-output');
}"""
RUN_FINISHED_JS = f"""([stderr]) => {{
    const bar = document.querySelector('#jp-main-statusbar')?.innerText ?? '';
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
    const prompts = cells.map(c => c.querySelector('.jp-InputPrompt')?.textContent.trim() ?? '');
    if (!/\\| Idle\\b/.test(bar) || cells.length === 0 || prompts.some(p => p.includes('*'))) return false;
    const failed = [...document.querySelectorAll(stderr)].some(e => e.textContent.includes('Traceback'));
    return failed || cells.every({CELL_RAN_JS});
}}"""


def run_all(page) -> float:
    """Run → Run All Cells; wait until the kernel is idle and every cell ran (or a traceback stopped it); seconds."""
    start = time.perf_counter()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(RUN_FINISHED_JS, arg=[STDERR], timeout=RUN_ALL_S * 1000, polling=250)
    return time.perf_counter() - start


LOG_ENTRIES_JS = """() => {
    const item = document.querySelector('.jp-LogConsoleStatusItem');
    if (!item || item.classList.contains('lm-mod-hidden')) return 0;
    const title = item.querySelector('[title]')?.title ?? '';
    return Number((title.match(/(\\d+) log entries/) ?? [0, 1])[1]);
}"""


def log_entries(page) -> int:
    """Entries in JupyterLab's Log Console for the current notebook (where widget callback tracebacks go)."""
    return page.evaluate(LOG_ENTRIES_JS)


def log_console_text(page) -> str:
    """Open the Log Console and return the end of its text (for failure messages)."""
    try:
        page.locator(".jp-LogConsoleStatusItem .jp-StatusBar-GroupItem").click(timeout=5000)
        return page.locator(".jp-LogConsolePanel").text_content(timeout=5000)[-2000:]
    except Exception as exc:
        return f"(could not open the Log Console: {exc})"


PROBLEMS_JS = """([stderr, widgetView]) => {
    const problems = [];
    for (const e of document.querySelectorAll(stderr))
        if (e.textContent.includes('Traceback')) problems.push('traceback: ' + e.textContent.slice(-600));
    for (const e of document.querySelectorAll('.jp-OutputArea-output.jp-RenderedText'))
        if (/\\b\\w*Error\\b/.test(e.textContent)) problems.push('error text: ' + e.textContent.slice(-600));
    document.querySelectorAll('.jp-Notebook .jp-CodeCell').forEach((cell, i) => {
        const prompt = cell.querySelector('.jp-InputPrompt')?.textContent.trim() ?? '';
        if (!(CELL_RAN)(cell)) problems.push(`code cell ${i} not executed (prompt ${prompt})`);
    });
    for (const e of document.querySelectorAll(widgetView))
        if (!e.querySelector('.jupyter-widgets') || /Error displaying widget|Loading widget/.test(e.textContent))
            problems.push('widget not rendered: ' + e.textContent.slice(0, 300));
    return problems;
}"""


def notebook_problems(page, notebook: str) -> list[str]:
    """Error outputs, cells without an execution count, unrendered widgets, missing or empty panels."""
    problems = page.evaluate(PROBLEMS_JS.replace("(CELL_RAN)", f"({CELL_RAN_JS})"), [STDERR, WIDGET_VIEW])
    if log_entries(page):
        problems.append(f"Log Console entries: {log_console_text(page)}")
    for panel in PANELS[notebook]:
        readout = page.locator(f".gspo-{panel}-readout .widget-html-content")
        if readout.count() != 1 or not readout.text_content().strip():
            problems.append(f"panel {panel}: no readout (.gspo-{panel}-readout)")
        if page.locator(f".gspo-{panel}-plot .jp-OutputArea-output").count() < 1:
            problems.append(f"panel {panel}: nothing drawn in .gspo-{panel}-plot")
    return problems


def run_and_check(context, lab: Lab, notebook: str):
    """Open ``notebook``, Run All, and raise AssertionError (with a screenshot) on any problem; the page."""
    page = open_notebook(context, lab, notebook)
    with screenshot_on_failure(page, f"{notebook}-run-all"):
        seconds = run_all(page)
        problems = notebook_problems(page, notebook)
        assert not problems, f"{notebook} in JupyterLab:\n" + "\n".join(problems)
    print(f"[browser] {notebook}: Run All {seconds:.1f} s")
    return page


# ---------------------------------------------------------------- sliders


def handle(page, css_class: str):
    return page.locator(f".{css_class} .noUi-handle[role=slider]")


def readout_text(page, panel: str) -> str:
    return page.locator(f".gspo-{panel}-readout .widget-html-content").text_content()


def slider_readout(page, css_class: str) -> str:
    """The slider's own readout (a SelectionSlider's label, an IntSlider's value)."""
    return page.locator(f".{css_class} .widget-readout").text_content().strip()


def log_slider_value(page, css_class: str) -> float:
    """The exact float the browser sends the kernel for a FloatLogSlider: Math.pow(10, exponent)."""
    exponent = float(handle(page, css_class).get_attribute("aria-valuetext"))
    return page.evaluate("x => Math.pow(10, x)", exponent)


def panel_inputs(page, panel: str) -> tuple:
    """The panel's slider values as the kernel sees them: (length, k) for ratio, (ε_low, ε_high) for clip-*,
    (sampler precision, τ) for precision."""
    if panel == "precision":
        chosen = page.locator(".gspo-precision-sampler .mod-active").text_content().strip()
        return chosen, float(slider_readout(page, "gspo-precision-temperature"))
    if panel == "ratio":
        return int(slider_readout(page, "gspo-ratio-length")), int(slider_readout(page, "gspo-ratio-k"))
    if panel == "lag":  # a SelectionSlider over the stored lags: its readout is the lag's label
        return (int(slider_readout(page, "gspo-lag-lag")),)
    if panel == "design":  # three SelectionSliders (labels), the aggregation menu, the dual-clip toggle
        sliders = tuple(slider_readout(page, f"gspo-design-{c}") for c in ("combine", "bound", "param"))
        aggregation = page.locator(".gspo-design-aggregation select").input_value()
        return (*sliders, aggregation, page.locator(".gspo-design-floor input[type=checkbox]").is_checked())
    if panel == "trust":  # GRPO ε, CISPO ε_max (FloatSliders on a 0.05 / 0.5 grid), SAPO τ (log slider)
        eps, eps_max = (round(float(slider_readout(page, f"gspo-trust-{c}")), 2) for c in ("eps", "eps-max"))
        return eps, eps_max, log_slider_value(page, "gspo-trust-tau")
    return log_slider_value(page, f"gspo-{panel}-eps-low"), log_slider_value(page, f"gspo-{panel}-eps-high")


def drag(page, css_class: str, fraction: float) -> None:
    """Move a slider with the mouse: press its handle, drag it to ``fraction`` of the track's width, release (the
    slider scrolled into view first: the mouse reaches only what the viewport shows)."""
    handle(page, css_class).scroll_into_view_if_needed()
    knob = handle(page, css_class).bounding_box()
    track = page.locator(f".{css_class} .noUi-base").bounding_box()
    page.mouse.move(knob["x"] + knob["width"] / 2, knob["y"] + knob["height"] / 2)
    page.mouse.down()
    page.mouse.move(track["x"] + fraction * track["width"], knob["y"] + knob["height"] / 2, steps=8)
    page.mouse.up()


def press(page, css_class: str, key: str, times: int) -> None:
    """Move a slider from the keyboard: focus its handle, press ``key`` ``times`` times."""
    knob = handle(page, css_class)
    knob.focus()
    for _ in range(times):
        page.keyboard.press(key)


READOUT_OR_LOG_JS = f"""([sel, text, baseline]) => {{
    if (({LOG_ENTRIES_JS})() > baseline) return 'log';
    return document.querySelector(sel)?.textContent === text ? 'readout' : false;
}}"""


def wait_readout(page, panel: str, expected: str, log_baseline: int, timeout_s: float = READOUT_S) -> None:
    """Wait until the panel's readout reads ``expected`` and the kernel is idle, then check it still does; fail at
    once when the Log Console gains an entry (a callback raised)."""
    selector = f".gspo-{panel}-readout .widget-html-content"
    try:
        outcome = page.wait_for_function(
            READOUT_OR_LOG_JS, arg=[selector, expected, log_baseline], timeout=timeout_s * 1000, polling=100
        ).json_value()
    except Exception as exc:
        raise AssertionError(f"readout of {panel} is {readout_text(page, panel)!r}, expected {expected!r}") from exc
    assert outcome == "readout", f"a widget callback of {panel} failed; Log Console:\n{log_console_text(page)}"
    page.wait_for_function("() => /\\| Idle\\b/.test(document.querySelector('#jp-main-statusbar').innerText)")
    assert readout_text(page, panel) == expected, f"readout of {panel} changed after the kernel went idle"
    assert log_entries(page) == log_baseline, f"Log Console after the move:\n{log_console_text(page)}"


def settle(page, panel: str, before: str) -> None:
    """Wait until the panel's readout left ``before`` and the kernel is idle: a callback that sets other controls
    (notebook 06's bound resets its parameter) has then set them all, since the readout is set last."""
    page.wait_for_function(
        "([sel, text]) => document.querySelector(sel)?.textContent !== text",
        arg=[f".gspo-{panel}-readout .widget-html-content", before],
        timeout=READOUT_S * 1000,
    )
    page.wait_for_function("() => /\\| Idle\\b/.test(document.querySelector('#jp-main-statusbar').innerText)")


def plot_sources(page, panel: str) -> list[str]:
    """``src`` of the images drawn in the panel's Output widget."""
    images = page.locator(f".gspo-{panel}-plot .jp-OutputArea-output img")
    return [images.nth(i).get_attribute("src") for i in range(images.count())]


# ---------------------------------------------------------------- the plain-function twins


def notebook_parameters(notebook: str) -> dict:
    """The literal assignments of the notebook's ``parameters`` cell (its interactive tier)."""
    nb = json.loads((repo_root() / "notebooks" / f"{notebook}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }


@dataclass
class Twins:
    """The panels' plain-function twins, on data rebuilt here exactly as the notebooks build it (lazily)."""

    cache: dict = field(default_factory=dict)

    def trace(self):
        if "trace" not in self.cache:
            from gspo_lab.analysis import offpolicy_trace
            from gspo_lab.config import TrainConfig

            p = notebook_parameters("01_ratio_variance")
            cfg = replace(
                TrainConfig(checkpoint=p["checkpoint"], objective=p["update_objective"], lr=p["lr"], seed=p["seed"]),
                length=p["train_length"],
                prompts_per_rollout=p["prompts"],
                group_size=p["group_size"],
            )
            self.cache["trace"] = offpolicy_trace(cfg, p["updates"], probe_lengths=tuple(p["probe_lengths"]))
        return self.cache["trace"]

    def clip_runs(self):
        if "runs" not in self.cache:
            from gspo_lab.clipping import clip_runs
            from gspo_lab.config import TrainConfig

            p = notebook_parameters("03_clipping")
            names = ("checkpoint", "length", "group_size", "minibatches", "rollouts", "lr", "seed")
            cfg = TrainConfig(prompts_per_rollout=p["prompts"], **{n: p[n] for n in names})
            self.cache["runs"] = clip_runs(cfg, ("grpo", "gspo"), progress=False)
        return self.cache["runs"]

    def precision_cfg(self):
        from gspo_lab.config import TrainConfig

        p = notebook_parameters("05_precision")
        return TrainConfig(
            checkpoint=p["checkpoints"][0],
            length=p["length"],
            prompts_per_rollout=p["prompts"],
            group_size=p["group_size"],
            seed=p["seed"],
            temperature=p["temperature"],
        )

    def lag_table(self):
        if "lag" not in self.cache:
            from gspo_record.f12.curves import lag_curves

            self.cache["lag"] = lag_curves(seeds=notebook_parameters("05_precision")["lag_seeds"])
        return self.cache["lag"]

    def arms(self):
        from gspo_lab.experiments.read import stored_arms
        from gspo_record.tables import F2

        return stored_arms([F2["moe"], F2["dense"], F2["mechanism"], F2["dose"], F2["candidate"]])

    def live_cfgs(self, clip: bool):
        from gspo_lab.config import TrainConfig

        p = notebook_parameters("04_collapse")
        return {
            name: TrainConfig(
                checkpoint=p["checkpoint"],
                length=p["length"],
                prompts_per_rollout=p["prompts"],
                group_size=p["group_size"],
                minibatches=16,
                lr=5e-5,
                grad_clip=1.0 if clip else None,
                objective=name.lower(),
                seed=p["seed"],
                rollouts=p["live_rollouts"],
                eval_every=p["live_eval_every"],
                eval_prompts=p["live_eval_prompts"],
            )
            for name in ("GRPO", "GSPO")
        }

    def design(self):
        """Notebook 06's batch: the trace and its gradient-variance settings, from its parameters cell."""
        if "design" not in self.cache:
            from gspo_lab.analysis import offpolicy_trace
            from gspo_lab.config import TrainConfig
            from gspo_lab.widgets import design_batch

            p = notebook_parameters("06_successors")
            cfg = TrainConfig(
                checkpoint=p["checkpoint"],
                length=p["length"],
                prompts_per_rollout=p["prompts"],
                group_size=p["group_size"],
                objective=p["update_objective"],
                lr=p["lr"],
                seed=p["seed"],
            )
            trace = offpolicy_trace(cfg, p["updates"])
            self.cache["design"] = design_batch(trace, draws=p["draws"], minibatch=p["minibatch"], seed=p["seed"])
        return self.cache["design"]

    def readout(self, panel: str, inputs: tuple) -> str:
        from gspo_lab.widgets import clip_view, design_view, precision_view, ratio_view, trust_region_view
        from gspo_record.f12.widget import lag_view

        if panel == "design":
            return design_view(self.design(), *inputs)[1]
        if panel == "trust":
            return trust_region_view(*inputs)[1]
        if panel == "precision":
            return precision_view(self.precision_cfg(), *inputs)[1]
        if panel == "lag":
            return lag_view(self.lag_table(), *inputs)[1]
        if panel == "ratio":
            return ratio_view(self.trace(), *inputs)[1]
        objective = panel.removeprefix("clip-")
        return clip_view(self.clip_runs()[objective], objective, *inputs)[1]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def browser():
    if NO_BROWSER:
        pytest.fail(f"{REQUIRE_VAR} is set but the browser tests cannot run: {NO_BROWSER}")
    from playwright.sync_api import sync_playwright

    before = descendants(os.getpid())
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        launched = descendants(os.getpid()) - before
        yield chromium
        chromium.close()
    left = wait_gone(launched, timeout=10)
    kill_pids(left)
    assert not left, f"browser processes outlived the tests: {sorted(left)}"


def lab_runs(lab: Lab) -> Path:
    """The runs folder of the lab's kernels (``GSPO_LAB_RUNS``): fresh per server, as in a fresh clone."""
    return lab.root.parent / "runs"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    with running_lab(root, {"GSPO_LAB_RUNS": str(root / "runs")}) as server:
        yield server


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def pages(context, lab):
    """Notebook -> its page after Run All passed the checks; each notebook is opened and run once per module
    (a failure too: later tests of that notebook fail at once instead of running it again)."""
    opened, failed = {}, {}

    def get(notebook: str):
        if notebook in failed:
            pytest.fail(f"{notebook} failed to open or run earlier in this module: {failed[notebook]}")
        if notebook not in opened:
            try:
                opened[notebook] = run_and_check(context, lab, notebook)
            except Exception as exc:
                failed[notebook] = f"{type(exc).__name__}: {str(exc)[:300]}"
                raise
        return opened[notebook]

    return get


@pytest.fixture(scope="module")
def twins():
    return Twins()


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_notebook_runs_all_cells_in_lab_without_errors(pages, notebook):
    page = pages(notebook)
    assert page.locator(".jp-Notebook .jp-CodeCell").count() >= 3
    if PANELS[notebook]:
        assert page.locator(f"{WIDGET_VIEW} .jupyter-widgets").count() >= len(PANELS[notebook])


@dataclass(frozen=True)
class Move:
    notebook: str
    panel: str
    control: str  # the slider's class suffix: gspo-<panel>-<control>
    key: str
    presses: int

    def __str__(self) -> str:
        return f"{self.panel}-{self.control}-{self.key}x{self.presses}"


MOVES = [
    Move("01_ratio_variance", "ratio", "length", "ArrowLeft", 2),  # L 20 -> 12
    Move("01_ratio_variance", "ratio", "k", "ArrowLeft", 2),  # k 3 -> 1
    Move("03_clipping", "clip-gspo", "eps-low", "ArrowRight", 3),  # 10^-3.5 -> 10^-3.35
    Move("03_clipping", "clip-gspo", "eps-high", "ArrowLeft", 2),  # 10^-3.4 -> 10^-3.5
    Move("03_clipping", "clip-grpo", "eps-low", "ArrowLeft", 3),  # 10^-0.7 -> 10^-0.85
    Move("03_clipping", "clip-grpo", "eps-high", "ArrowRight", 2),  # 10^-0.55 -> 10^-0.45
    Move("05_precision", "precision", "temperature", "ArrowLeft", 2),  # τ 1.0 -> 0.8
    Move("05_precision", "lag", "lag", "ArrowLeft", 2),  # lag 16 -> 4 rollout batches
    Move("03_clipping", "trust", "tau", "ArrowRight", 2),  # SAPO τ 10^0 -> 10^0.1
    Move("03_clipping", "trust", "eps-max", "ArrowLeft", 6),  # CISPO ε_max 5.0 -> 2.0
    Move("06_successors", "design", "param", "ArrowRight", 1),  # GSPO's ε 3e-4/4e-4 -> 2e-3/2.5e-3
    Move("06_successors", "design", "bound", "ArrowRight", 1),  # clip -> clip first (its parameter opens at 0.4/0.4)
]


@pytest.mark.parametrize("move", MOVES, ids=str)
def test_keyboard_slider_move_redraws_the_plain_function_twin(pages, twins, move):
    page = pages(move.notebook)
    with screenshot_on_failure(page, f"{move.notebook}-{move}"):
        before_inputs, before_text = panel_inputs(page, move.panel), readout_text(page, move.panel)
        assert before_text == twins.readout(move.panel, before_inputs), "the readout before the move is not the twin's"
        logs = log_entries(page)
        press(page, f"gspo-{move.panel}-{move.control}", move.key, move.presses)
        if move.panel == "design":  # a move of the bound resets the parameter slider: read the controls once set
            settle(page, move.panel, before_text)
        inputs = panel_inputs(page, move.panel)
        assert inputs != before_inputs, f"{move}: the slider did not move ({inputs})"
        wait_readout(page, move.panel, twins.readout(move.panel, inputs), logs)


@pytest.mark.parametrize("panel", ["ratio", "clip-gspo", "clip-grpo", "precision", "trust", "lag", "design"])
def test_panel_plot_is_an_image_that_a_slider_move_redraws(pages, panel):
    move = next(m for m in MOVES if m.panel == panel)
    page = pages(move.notebook)
    before, text = plot_sources(page, panel), readout_text(page, panel)
    press(page, f"gspo-{panel}-{move.control}", move.key, 1)  # the direction MOVES has room for, also after them
    page.wait_for_function(
        "([sel, text]) => document.querySelector(sel)?.textContent !== text",
        arg=[f".gspo-{panel}-readout .widget-html-content", text],
        timeout=READOUT_S * 1000,
    )
    after = plot_sources(page, panel)
    assert before and after, f"no image in .gspo-{panel}-plot: {page.locator(f'.gspo-{panel}-plot').inner_text()!r}"
    assert before != after, "the plot image did not change"


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS))
def test_no_figure_is_rendered_as_text(pages, notebook):
    texts = pages(notebook).locator(".jp-OutputArea-output.jp-RenderedText").all_text_contents()
    as_text = [t.strip() for t in texts if t.strip().startswith("<Figure size")]
    assert not as_text, f"{notebook}: figures rendered as text: {as_text}"


def test_fault_injection_makes_the_browser_check_fail(browser, tmp_path):
    """With every widget callback raising (GSPO_LAB_FAULT in the server's, so the kernel's, environment), the same
    check must fail on the panel's traceback, and leave a screenshot."""
    notebook = "03_clipping"
    folder = runs_dir() / "browser-artifacts"
    shots_before = set(folder.glob(f"{notebook}-run-all-*.png"))
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        with running_lab(tmp_path, {"GSPO_LAB_FAULT": "widget-callback"}) as lab:
            with pytest.raises(AssertionError) as failure:
                run_and_check(context, lab, notebook)
    finally:
        context.close()
    message = str(failure.value)
    assert "fault injected by GSPO_LAB_FAULT=widget-callback" in message, message
    assert "not executed" in message, "a failing cell must stop Run All"
    shots = set(folder.glob(f"{notebook}-run-all-*.png")) - shots_before
    assert shots, "no screenshot saved"
    for shot in shots:  # an expected failure: do not leave it among the artefacts of real ones
        shot.unlink()


@contextlib.contextmanager
def kernel_client(lab: Lab, notebook: str):
    """A second client of ``notebook``'s kernel, from its connection file (to change kernel state without a cell)."""
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(connection_file=str(lab.runtime / f"kernel-{lab.kernel_of(notebook)['id']}.json"))
    client.load_connection_file()
    client.start_channels()
    try:
        yield client
    finally:
        client.stop_channels()


def set_fault(client, on: bool) -> None:
    """Switch GSPO_LAB_FAULT=widget-callback on or off in a live kernel (silent: no output, no execution count)."""
    code = "os.environ['GSPO_LAB_FAULT'] = 'widget-callback'" if on else "os.environ.pop('GSPO_LAB_FAULT', None)"
    reply = client.execute_interactive(f"import os; {code}", silent=True, store_history=False, timeout=10)
    assert reply["content"]["status"] == "ok", reply["content"]


def test_fault_in_a_slider_callback_makes_the_slider_check_fail(pages, lab, twins):
    """A slider callback raising during a move (the fault switched on in the live kernel) fails the move's check
    through the Log Console, without waiting for the readout timeout; the panel is left in sync afterwards."""
    notebook, panel, control = "03_clipping", "clip-gspo", "eps-high"
    page = pages(notebook)
    inputs, text, logs = panel_inputs(page, panel), readout_text(page, panel), log_entries(page)
    with kernel_client(lab, notebook) as client:
        set_fault(client, True)
        try:
            press(page, f"gspo-{panel}-{control}", "ArrowLeft", 1)
            start = time.perf_counter()
            with pytest.raises(AssertionError, match="fault injected by GSPO_LAB_FAULT=widget-callback"):
                wait_readout(page, panel, twins.readout(panel, panel_inputs(page, panel)), logs)
            assert time.perf_counter() - start < READOUT_S / 2, "the failure should come from the Log Console"
        finally:
            set_fault(client, False)
            press(page, f"gspo-{panel}-{control}", "ArrowRight", 1)  # back: the callback redraws what it showed
    assert panel_inputs(page, panel) == inputs
    wait_readout(page, panel, text, log_entries(page))


def test_06_dragging_the_combination_redraws_the_plain_function_twin(pages, twins):
    """Issue 49: a mouse drag of the combination slider (the SelectionSlider a reader drags) redraws the panel, and
    its readout equals the twin's at the values the controls then show; a preset from the menu sets every control."""
    page = pages("06_successors")
    panel = "design"
    with screenshot_on_failure(page, "06-design-drag"):
        page.locator(".gspo-design-preset select").select_option("GRPO")
        wait_readout(page, panel, twins.readout(panel, ("token", "clip", "0.2/0.27", "seq_mean_token_mean", False)),
                     log_entries(page))  # fmt: skip
        before, logs, plot = panel_inputs(page, panel), log_entries(page), plot_sources(page, panel)
        drag(page, "gspo-design-combine", 0.7)  # token -> geometric (4 stops: 0, 1/3, 2/3, 1)
        page.wait_for_function(
            "([sel, old]) => document.querySelector(sel)?.textContent.trim() !== old",
            arg=[".gspo-design-combine .widget-readout", before[0]],
            timeout=READOUT_S * 1000,
        )
        inputs = panel_inputs(page, panel)
        assert inputs[0] == "geometric" and inputs[1:] == before[1:], inputs
        wait_readout(page, panel, twins.readout(panel, inputs), logs)
        assert plot_sources(page, panel) != plot, "the plot did not change"


def test_04_arm_selector_redraws_the_plain_function_twin(pages, twins):
    from gspo_lab.widgets import arm_view

    page = pages("04_collapse")
    with screenshot_on_failure(page, "04-arm-selector"):
        arms = twins.arms()
        assert readout_text(page, "arm") == arm_view(arms[0], "eval/accuracy_sampled")[1]
        logs, before = log_entries(page), plot_sources(page, "arm")
        page.locator(".gspo-arm-arm select").select_option(index=1)
        wait_readout(page, "arm", arm_view(arms[1], "eval/accuracy_sampled")[1], logs)
        assert plot_sources(page, "arm") != before, "the arm's plot did not change"


LIVE_READOUTS_JS = """sel => { const el = document.querySelector(sel); window.gspoLiveReadouts = [];
    new MutationObserver(() => window.gspoLiveReadouts.push(el.textContent))
        .observe(el, {childList: true, characterData: true, subtree: true}); }"""


def test_04_live_control_trains_side_by_side_redraws_and_shows_its_twin(pages, twins, lab):
    """Tick grad-norm clipping, press run: the panel trains both objectives side by side with the cap (a fresh runs
    folder: nothing to read back), its plot following both while they train, and ends showing what the plain
    functions read back from the same saved runs; the seconds from click to "finished" are printed."""
    from gspo_lab.live import live_runs
    from gspo_lab.widgets import live_view

    page = pages("04_collapse")
    cfgs = twins.live_cfgs(clip=True)
    rollouts = cfgs["GRPO"].rollouts
    with screenshot_on_failure(page, "04-live-run"):
        logs, before = log_entries(page), plot_sources(page, "live")
        assert before, "no live plot before the click (the notebook's own pair)"
        page.evaluate(LIVE_READOUTS_JS, ".gspo-live-readout .widget-html-content")
        page.locator(".gspo-live-clip input").check()
        start = time.monotonic()
        page.locator(".gspo-live-run").click()
        # the panel's status line reads "finished run 1" once the button's run has trained both objectives and
        # drawn them; only then does this process read the same saved runs (never train beside it)
        page.wait_for_function(
            "sel => (document.querySelector(sel)?.textContent || '').includes('finished run 1')",
            arg=".gspo-live-status .widget-html-content",
            timeout=LIVE_RUN_S * 1000,
            polling=250,
        )
        seconds = time.monotonic() - start
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"[browser] 04 live toggle (grad clip, {rollouts} rollouts each): {seconds:.1f} s, load {load:.2f}")
        expected = live_view(live_runs(cfgs, lab_runs(lab) / "04_live", progress=False))[1]
        wait_readout(page, "live", expected, logs)
        assert plot_sources(page, "live") not in ([], before), "the live plot did not change"
        # side by side: some redraw before the end showed both runs, neither of them finished yet
        counts = [re.findall(r"(GRPO|GSPO): (\d+) rollouts", text) for text in page.evaluate("window.gspoLiveReadouts")]
        both_running = [c for c in counts if len(c) == 2 and max(int(n) for _, n in c) < rollouts]
        assert both_running, f"no redraw showed both runs while they trained: {counts}"
        assert seconds < LIVE_RUN_S


# ---------------------------------------------------------------- the book

BOOK_PAGE_S = 30  # one page of the book: load, its images, MathJax's fonts
IMAGES_NOT_LOADED_JS = "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
MATH_RENDERED_JS = """() => [...document.querySelectorAll('.math.notranslate')]
    .every(e => e.querySelector('.MathJax, .MathJax_Display'))"""


@contextlib.contextmanager
def serving(folder: Path):
    """``folder`` over HTTP on 127.0.0.1 from a thread: (base URL, the (path, status) of every answer)."""
    answers: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code="-", size="-"):  # every answer, errors included, without printing
            answers.append((self.path, int(code)))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", answers
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# a link to the glossary inside the page's own content (the sidebar's table of contents does not count)
GLOSSARY_IN_ARTICLE_JS = (
    "() => [...document.querySelectorAll('article a[href]')].some(a => a.href.split('#')[0].endsWith('glossary.html'))"
)
# the images of the page's content, each as a hash of its pixels' source bytes (data URL or fetched file)
IMAGE_DIGESTS_JS = """async () => {
  const digests = [];
  for (const img of document.querySelectorAll('article img')) {
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const hash = await crypto.subtle.digest('SHA-256', bytes);
    digests.push([img.src.slice(-40), [...new Uint8Array(hash)].map(b => b.toString(16).padStart(2, '0')).join('')]);
  }
  return digests;
}"""


def crawl(page, base: str) -> tuple[list[str], set[str], list[str]]:
    """Open ``base``index.html and every page an internal link reaches; (pages, other internal files, problems)."""
    todo, pages, files, problems = [base + "index.html"], [], set(), []
    while todo:
        url = todo.pop(0)
        if url in pages:
            continue
        pages.append(url)
        response = page.goto(url, wait_until="load", timeout=BOOK_PAGE_S * 1000)
        if response is None or not response.ok:
            problems.append(f"{url}: {response.status if response else 'no response'}")
            continue
        page.wait_for_load_state("networkidle", timeout=BOOK_PAGE_S * 1000)
        page.wait_for_function(MATH_RENDERED_JS, timeout=BOOK_PAGE_S * 1000)
        problems += [f"{url}: image not loaded: {src}" for src in page.evaluate(IMAGES_NOT_LOADED_JS)]
        if not page.evaluate(GLOSSARY_IN_ARTICLE_JS) and not url.endswith("glossary.html"):
            problems.append(f"{url}: no link to the glossary in the page itself")
        for link in page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)"):
            link = link.split("#")[0]
            if not link.startswith(base) or link in pages:
                continue
            if link.endswith((".html", "/")):
                todo.append(link)
            else:
                files.add(link)
    return pages, files, problems


@pytest.mark.timeout(900)  # may be the first test to ask for ``smoke``, then it carries the smoke run
def test_book_of_the_smoke_run_has_no_broken_link_image_or_external_request(browser, smoke, tmp_path):
    from gspo_lab.nb.book import build_book

    start = time.perf_counter()
    book = build_book(tmp_path, list(smoke.values()))
    assert book.warnings == (), "Sphinx warnings:\n" + "\n".join(book.warnings)
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    try:
        with serving(book.index.parent) as (base, answers):
            page = context.new_page()
            failed, outside = [], []  # about:blank is MathJax's font probe, never a request to a host
            # ERR_ABORTED: the test navigated on while MathJax still fetched a font (the story page has math); a file
            # that is really missing shows as a 404 in the server's answers below
            page.on("requestfailed", lambda r: r.url.startswith(base) and "ERR_ABORTED" not in str(r.failure)
                    and failed.append(f"{r.url}: {r.failure}"))  # fmt: skip
            page.on("request", lambda r: r.url.startswith((base, "about:", "data:")) or outside.append(r.url))
            with screenshot_on_failure(page, "book"):
                pages, files, problems = crawl(page, base)
                statuses = {f: context.request.get(f).status for f in sorted(files)}
                problems += [f"{f}: {status}" for f, status in statuses.items() if status >= 400]
                for name in sorted(NOTEBOOKS):  # each panel: its figure once, then the live-kernel note
                    page.goto(f"{base}notebooks/{name}.html")
                    noted = page.locator(".gspo-widget-note", has_text="live kernel").count()
                    if noted < len(PANELS[name]):
                        problems.append(f"{name}: {noted} live-kernel notes for {len(PANELS[name])} panels")
                    digests = [d for _, d in page.evaluate(IMAGE_DIGESTS_JS)]
                    if len(set(digests)) < len(digests):
                        problems.append(f"{name}: {len(digests) - len(set(digests))} figure(s) shown twice")
                    captions = page.evaluate(CAPTIONS_JS)  # issue 36: every figure, notebook pages included
                    problems += [f"{name}.html: {src} has no caption (next: {after!r})" for src, after in captions
                                 if not after.startswith("Figure")]  # fmt: skip
                    if not captions:
                        problems.append(f"{name}.html: no figure found (the caption check read nothing)")
                page.goto(f"{base}index.html")  # the book opens with the story, its figures and its links
                story = page.locator("article").inner_text()
                for text in ("the story in five minutes", "Does GRPO collapse where GSPO does not?", "glossary"):
                    if text.lower() not in story.lower():
                        problems.append(f"index.html: the story lacks {text!r}")
                if page.locator("article img").count() < 3:  # issue 48: the 5-seed 2×2 left the 10-seed story
                    problems.append("index.html: the story shows fewer than its three figures")
                page.goto(f"{base}recipe.html")
                recipe = page.locator("article").inner_text()
                for text in ("importance_sampling_level", "max_grad_norm", "epsilon_high", "clip_ratio"):
                    if text not in recipe:
                        problems.append(f"recipe.html: no {text!r}")
    finally:
        context.close()
    errors = [f"{path}: {status}" for path, status in answers if status >= 400]
    found = {"problems": problems, "failed requests": failed, "other hosts": outside, "server errors": errors}
    assert not any(found.values()), found
    expected = (
        {f"{base}notebooks/{name}.html" for name in NOTEBOOKS}
        | {f"{base}{page}.html" for page in ("findings", "methods", "numbers", "report", "glossary", "recipe")}
        | {f"{base}{name.removesuffix('.md')}.html" for name in finding_pages(repo_root() / "docs")}
    )
    assert expected <= set(pages), sorted(expected - set(pages))
    print(
        f"[browser] book: built in {book.seconds:.1f} s, {len(pages)} pages and {len(files)} files checked, "
        f"{time.perf_counter() - start:.1f} s in all"
    )


#: per ``article img`` of a page: its src, and the text of the element after the one that holds it (a caption is a
#: paragraph starting "Figure" right after its image). On a Markdown page the holder is the paragraph (or figure) of
#: the image; on a notebook page (myst-nb) an output image sits in ``div.cell > div.cell_output``, next to the cell's
#: other outputs (a widget panel's live-kernel note is one of them, inside the same ``div.cell_output``), and the
#: caption is the markdown cell after it: the holder is the image's ``div.cell``, whose next sibling is that paragraph
CAPTIONS_JS = """() => [...document.querySelectorAll('article img')].map(img => {
  const holder = img.closest('div.cell') || img.closest('p, figure, div.cell_output, div.output') || img;
  const next = holder.nextElementSibling;
  return [img.getAttribute('src'), next ? next.innerText.trim().slice(0, 40) : ''];
})"""
#: the At a glance table (the overview's first table): its width and the width the article gives it
GLANCE_FIT_JS = """() => {
  const table = document.querySelector('article table');
  const box = table.parentElement;
  return {table: Math.ceil(table.getBoundingClientRect().width), room: Math.floor(box.clientWidth),
          scroll: box.scrollWidth, client: box.clientWidth};
}"""


#: every table column narrower than 8 characters (of its cells' font) and than its longest word: a word wraps letter
#: by letter there (issue 48, item 7: finding 11's table printed "lat/e/hel/d")
NARROW_JS = """() => {
  const out = [];
  document.querySelectorAll('article table').forEach((t, ti) => {
    const heads = [...t.querySelectorAll('thead th')];
    const cell = t.querySelector('td') || heads[0];
    if (!cell) return;
    const cs = getComputedStyle(cell), canvas = document.createElement('canvas').getContext('2d');
    canvas.font = cs.fontSize + ' ' + cs.fontFamily;
    const ch = canvas.measureText('0').width, rows = [...t.querySelectorAll('tr')];
    heads.forEach((h, i) => {
      let longest = 0;
      rows.forEach(r => (r.children[i] ? r.children[i].innerText : '').split(/[\\s\\/]+/)
        .forEach(w => { longest = Math.max(longest, w.length); }));
      const pad = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight);
      const width = (h.getBoundingClientRect().width - pad) / ch;
      if (width < Math.min(8, longest) - 0.3) out.push(`table ${ti + 1}, "${h.innerText.trim().slice(0, 30)}": ` +
                                                       `${width.toFixed(1)} characters`);
    });
  });
  return out;
}"""


def test_book_pages_caption_every_figure_fit_at_a_glance_and_resolve_every_link(browser, tmp_path):
    """Issue 36: the book's story, overview, finding pages and methods page, opened at 1300 px: every figure has a
    caption, At a glance fits without scrolling sideways, every internal link resolves (the notebook pages are the
    smoke book's test); issue 48: no table column squeezed narrower than 8 characters and its longest word."""
    from gspo_lab.nb.book import build_book

    book = build_book(tmp_path, [])
    assert book.warnings == (), "Sphinx warnings:\n" + "\n".join(book.warnings)
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    try:
        with serving(book.index.parent) as (base, answers):
            page = context.new_page()
            with screenshot_on_failure(page, "book-pages"):
                pages, files, problems = crawl(page, base)
                problems += [f"{f}: {context.request.get(f).status}" for f in sorted(files)
                             if context.request.get(f).status >= 400]  # fmt: skip
                docs = [
                    "index",
                    "findings",
                    "methods",
                    "recipe",
                    *(n.removesuffix(".md") for n in finding_pages(repo_root() / "docs")),
                ]
                figures = 0
                for name in docs:
                    page.goto(f"{base}{name}.html")
                    problems += [f"{name}.html: {n}" for n in page.evaluate(NARROW_JS)]
                    for src, after in page.evaluate(CAPTIONS_JS):
                        figures += 1
                        if not after.startswith("Figure"):
                            problems.append(f"{name}.html: {src} has no caption (next: {after!r})")
                page.goto(f"{base}findings.html")
                fit = page.evaluate(GLANCE_FIT_JS)
                if fit["scroll"] > fit["client"] + 1 or fit["table"] > fit["room"] + 1:
                    problems.append(f"findings.html: At a glance does not fit at 1300 px: {fit}")
    finally:
        context.close()
    assert figures >= 13, figures
    assert {f"{base}{name}.html" for name in docs} <= set(pages), sorted({f"{base}{n}.html" for n in docs} - set(pages))
    assert not problems, problems
