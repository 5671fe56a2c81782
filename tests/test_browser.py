"""The course in a real browser: JupyterLab in Debian's chromium, driven by Playwright.

As a student, on a freshly built student edition (`make student-edition`): the start page, a
lesson's stored figure and widget before it runs, Run All, a slider that redraws its figure, a
released lab's Validate, no solutions reachable and no notebook changed on disk. As an
instructor, on the repository as `make lab` serves it: the formgrader and the assignment list,
without an error on the page or in the console.

Playwright never downloads a browser here: it drives /usr/bin/chromium (apt-get install
chromium; .ci/run does). Screenshots go to build/screenshots/, or to $LM10_SCREENSHOTS:
`LM10_SCREENSHOTS=docs/screenshots python -m pytest tests/test_browser.py` refreshes the README's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import formgrader_pages
from browsing import ROOT, RUN_S, SHOTS, START_S, STEP_S, Lab, jupyterlab
from conftest import make_gradebook

from tools import student_edition

LESSON = "lessons/LM10-T2-rotary-positions.ipynb"  # figures and a widget of three sliders
WIDGET_CALL = "rope_score_widget"
LAB = "labs/LM10-L1/LM10-L1.ipynb"
INSTRUCTOR_COMMANDS = [
    "nbgrader:open-formgrader",
    "nbgrader:open-create-assignment",
    "nbgrader:open-course-list",
    "nbgrader:open-assignment-list",
]
ERROR_TEXT = ("does not exist", "Error fetching", "could not be created", "Traceback", "Unwritable")


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.ipynb"))
        if ".ipynb_checkpoints" not in p.parts
    }


def shoot(page, name: str, locator=None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    (locator or page).screenshot(path=str(SHOTS / f"{name}.png"))


# JavaScript on the exposed app: the notebook in the main area.
PANEL = "window.jupyterapp.shell.currentWidget"
READY = f"""() => {{ const p = window.jupyterapp && {PANEL};
    return p && p.context && p.context.isReady && p.sessionContext.isReady
        && p.sessionContext.session && p.sessionContext.session.kernel
        && p.sessionContext.session.kernel.status === 'idle'; }}"""
DIRTY = f"() => {PANEL}.context.model.dirty"
DONE = f"""() => {{ const p = {PANEL};
    const code = p.content.widgets.filter(c => c.model.type === 'code');
    return p.sessionContext.session.kernel.status === 'idle'
        && code.every(c => c.model.executionCount !== null); }}"""
BAD_OUTPUTS = f"""() => {PANEL}.content.widgets.filter(c => c.model.type === 'code')
    .flatMap(c => c.model.outputs.toJSON())
    .filter(o => o.output_type === 'error' || (o.output_type === 'stream' && o.name === 'stderr'))
    .map(o => o.ename ? o.ename + ': ' + o.evalue : o.text)"""


FIGURE_SRC = """cell => {
    const c = [...document.querySelectorAll('.jp-CodeCell')]
        .find(e => e.textContent.includes(cell));
    const img = c && c.querySelector('.widget-output img');
    return img ? img.getAttribute('src') : null; }"""


def drag_redraws_figure(page, widget_cell, track_width: float) -> None:
    """Drag the first slider's handle and wait for the widget's figure to be redrawn by the kernel.

    Right after Run All the re-executed cell swaps its stored view for a live one, and on a
    loaded machine a drag can land on the view being replaced: then the readout does not move,
    or it moves on a view whose kernel comm is gone. So each try takes the handle afresh, drags it
    (left, then right on the next try), and waits for a new figure; the test fails only if no
    drag within STEP_S redraws the figure, reporting what each try saw."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    readout = widget_cell.locator(".widget-readout").first
    page.wait_for_function(
        f"cell => ({FIGURE_SRC})(cell) !== null", arg=WIDGET_CALL, timeout=STEP_S * 1000
    )
    deadline = time.monotonic() + STEP_S
    tries: list[str] = []
    direction = -1
    while time.monotonic() < deadline:
        old_value, old_src = readout.inner_text(), page.evaluate(f"({FIGURE_SRC})", WIDGET_CALL)
        handle = widget_cell.locator(".noUi-handle").first
        handle.scroll_into_view_if_needed()
        box = handle.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + direction * track_width / 3, y, steps=10)
        page.mouse.up()
        direction = -direction
        value = readout.inner_text()
        if value == old_value:
            tries.append(f"readout stayed at {value}")
            page.wait_for_timeout(1000)
            continue
        try:
            page.wait_for_function(
                f"([cell, old]) => ({FIGURE_SRC})(cell) !== old",
                arg=[WIDGET_CALL, old_src],
                timeout=max(1000, min(60, deadline - time.monotonic()) * 1000),
                polling=500,
            )
            return
        except PlaywrightTimeout:
            tries.append(f"readout {old_value} -> {value}, figure unchanged after 60 s")
    raise AssertionError("no drag redrew the widget's figure: " + "; ".join(tries))


def open_notebook(lab: Lab, browser, path: str, problems: list[str]):
    page = lab.page(browser, f"/lab/tree/{path}", problems)
    page.wait_for_function(READY, timeout=START_S * 1000, polling=500)
    page.wait_for_function(f"path => {PANEL}.context.path === path", arg=path)
    assert not page.evaluate(DIRTY), f"{path} is modified the moment it opens"
    return page


def student(browser, edition: Path, scratch: Path, problems: list[str]) -> None:
    with jupyterlab(edition, edition / "jupyter-config", scratch) as lab:
        # Nothing of the instructor's is served.
        for path in (
            "/api/contents/solutions",
            "/files/solutions/LM10-L1/LM10-L1.ipynb",
            "/api/contents/grading",
            "/api/contents/tests",
        ):
            assert lab.get(path) == 404, f"a student can reach {path}"

        page = open_notebook(lab, browser, "START.ipynb", problems)
        # No instructor panel, and no Assignment List without an exchange to hand in to (the
        # Validate button is pressed on a lab below).
        offered = page.evaluate(
            f"() => {json.dumps(INSTRUCTOR_COMMANDS)}"
            ".filter(c => window.jupyterapp.commands.hasCommand(c))"
        )
        assert offered == [], f"a student's JupyterLab offers {offered}"
        start = page.locator(".jp-MarkdownOutput").first
        start.wait_for()
        for link in ("lessons/LM10-T1-then-and-now.ipynb", "labs/LM10-L1/LM10-L1.ipynb"):
            href = start.get_by_role("link", name=link, exact=True).get_attribute("href")
            assert f"/files/{link}?" in href, f"the link to {link} goes to {href}"
        shoot(page, "start-page")
        # Its first link opens the first lesson in JupyterLab.
        start.get_by_role("link", name="lessons/LM10-T1-then-and-now.ipynb", exact=True).click()
        page.wait_for_function(f"() => {PANEL}.context.path.startsWith('lessons/LM10-T1')")
        page.close()

        # A lesson before it runs: its stored figures and its stored widget are drawn.
        page = open_notebook(lab, browser, LESSON, problems)
        widget_cell = page.locator(".jp-CodeCell", has_text=WIDGET_CALL)
        assert page.locator(".jp-RenderedImage img").count() >= 1, "no stored figure is drawn"
        sliders = widget_cell.locator(".widget-slider")
        sliders.first.wait_for()
        assert sliders.count() == 3, f"{sliders.count()} stored sliders drawn, 3 expected"
        assert widget_cell.locator(".widget-output img").count() == 1, "no stored widget figure"
        track = sliders.first.locator(".noUi-target").bounding_box()
        assert track["width"] >= 150, f"the first slider's track is {track['width']:.0f} px wide"
        widget_cell.scroll_into_view_if_needed()
        shoot(page, "lesson-figure-and-widget", widget_cell)

        # Run All: no error and nothing on stderr; then a drag redraws the widget's figure.
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(DONE, timeout=RUN_S * 1000, polling=1000)
        assert page.evaluate(BAD_OUTPUTS) == []
        drag_redraws_figure(page, widget_cell, track["width"])
        page.close()

        # A released lab: Validate answers with its dialog (the blank lab fails its tests).
        page = open_notebook(lab, browser, LAB, problems)
        page.locator(".validate-button").click()
        dialog = page.locator(".jp-Dialog", has_text="Validation Results")
        dialog.wait_for(timeout=STEP_S * 1000)
        assert "failed" in dialog.inner_text()
        shoot(page, "lab-after-validate")
        dialog.get_by_role("button", name="Ok").click()
        assert not page.evaluate(DIRTY)
        page.close()


def instructor(browser, scratch: Path, problems: list[str]) -> None:
    # As `make lab` does: every lab in the gradebook and released into grading/exchange.
    make_gradebook()
    labs = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    with jupyterlab(ROOT, ROOT / "grading", scratch) as lab:
        page = lab.page(browser, "/formgrader", problems)
        for name in labs:
            page.locator("#main-table tr", has_text=name).wait_for()
        text = page.locator("body").inner_text()
        released = page.locator("#main-table tr .status", has_text="released")
        assert released.count() == len(labs), f"not every lab is released:\n{text}"
        assert not [e for e in ERROR_TEXT if e in text], text
        shoot(page, "formgrader")
        page.close()

        # The grading page's MathJax comes from this server, not a CDN: the formgrader's own
        # mathjax() macro (tests/test_formgrader_pages.py), served at a formgrader address,
        # loads it and typesets a formula offline.
        assert lab.get(formgrader_pages.LOCAL) == 200
        here = "/formgrader/manage_students"
        page = lab.page(browser, here, problems)
        address = f"{lab.url}/formgrader/submissions/mathjax-check"
        html = formgrader_pages.render("macro")
        page.route(address, lambda route: route.fulfill(content_type="text/html", body=html))
        page.goto(address)
        page.wait_for_function("() => window.MathJax && document.querySelector('#math .MathJax')")
        page.close()
        # MathJax 2's HTML-CSS output declares a "MathJax_Blank" font at about:blank to time
        # web-font loading, and Chromium logs that load's failure, with MathJax from a CDN too.
        blank_font = (
            f"{here}: Access to font at 'about:blank'",
            f"{here}: Failed to load resource: net::ERR_FAILED",
        )
        problems[:] = [p for p in problems if not p.startswith(blank_font)]

        page = lab.page(browser, "/lab", problems)
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started")
        page.evaluate("() => window.jupyterapp.commands.execute('nbgrader:open-assignment-list')")
        panel = page.locator("#released_assignments_list")
        for name in labs:
            panel.locator(".list_item", has_text=name).wait_for()
        text = page.locator("body").inner_text()
        assert not [e for e in ERROR_TEXT if e in text], text
        page.close()


def test_the_course_in_a_browser_as_a_student_and_as_an_instructor(browser, tmp_path):
    # The lesson's Run All must write nothing to stderr. On a machine whose course cache is
    # empty, its first use of SmolLM2 says on stderr that it converts the weights, once
    # (lmcourse.pretrained.convert): convert them first, so the lesson runs as it does every
    # time after that (on a fresh CI machine this test failed on that note alone).
    from lmcourse.pretrained import convert

    convert()
    student_edition.build(tmp_path / "out")
    edition = tmp_path / "out" / student_edition.NAME
    before = digests(edition)
    problems: list[str] = []
    student(browser, edition, tmp_path / "student", problems)
    assert digests(edition) == before, "a notebook was changed on disk"
    assert problems == [], "browser console, as a student:\n" + "\n".join(problems)
    instructor(browser, tmp_path / "instructor", problems)
    assert problems == [], "browser console, as an instructor:\n" + "\n".join(problems)
    shutil.rmtree(tmp_path / "out")
