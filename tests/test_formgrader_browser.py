"""A hostile submission's grading page in a real browser: no script of the student's runs.

A temporary course (this repository's grading tools, templates and lab sources) releases
LM10-L2 and receives one submission, `hostile`: correct code, and a written answer whose
markdown carries script in every form (an image's onerror, a script element, an SVG's onload,
an iframe's srcdoc, a details element's ontoggle, javascript: links in markdown, in HTML and in
a MathJax \\href, an object, an attached SVG, scripts loaded from the student's own .js file
beside the notebook), tests/test_formgrader_page.py's attacks as cells of the student's own,
code that prints and displays script when it runs, and stored outputs and notebook-level
widget state with script. Each payload, if it ran, would add its name to `window.__lm10_pwned`
and give the student full marks through the formgrader's API. `grading/batch/autograde.py LM10-L2`
grades it (in the bubblewrap sandbox; LM10_GRADE_WITHOUT_ISOLATION=1 where bubblewrap is
missing), and JupyterLab serves the course as `make lab` does (tests/test_browser.py's
helpers), with the course's jupyter_server_config.py and its Content-Security-Policy
(grading/instructor/formgrader_csp.py).

In Chromium, on the grading page as the formgrader serves it: the policy is on the response
(one nonce, 'strict-dynamic', no 'unsafe-inline' or 'unsafe-eval' for scripts, object-src
'none', base-uri, frame-ancestors and connections 'self'), every script on the page carries the
nonce, and the student's cells and outputs hold no live element; no payload ran (links clicked
too), no request but GETs to this server went out before the test acted, and the student's
grades are unchanged; nbgrader's own scripts ran without one violation of the policy (grades
loaded into the score boxes, MathJax typeset the formulas, the eye icon's inline handler shows
the student's name), and a manual score typed into the written answer's box is saved to the
gradebook when the box is left.

Then the policy alone: the same course served with the sanitiser taken out of the formgrader's
configuration, so that the server itself renders every payload into the page as the student
wrote it. Under the server's policy nothing runs, the browser reports the blocked scripts
(the student's .js files included), no grade changes, and the page still works. The same page
with its policy removed (by the test, on the way to the browser) runs the payloads, whose API
calls the test stops: they are live, and it is the policy that stops them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import nbformat
import pytest
from browsing import jupyterlab
from formgrader_pages import BANNER, OVERLAY, Elements, hostile_notebook, live, overlay_notebook
from lab_cases import AUTOGRADE, course_copy, fill, solution_answers
from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[1]
LAB, STUDENT, WRITTEN = "LM10-L2", "hostile", "l2_written_tradeoff"
STEP_MS = 60_000
BEGIN, END = "LM10-BEGIN-OF-ANSWER", "LM10-END-OF-ANSWER"
CELLS = '<div class="container" id="notebook-container">'
AFTER_CELLS = '<div class="help">'  # what follows the cells on the grading page
GADGET = f"grading/submitted/{STUDENT}/{LAB}/evil.js"  # the student's own file, on this server
# What live() finds on the grading page that is nbgrader's own: its score and comment boxes.
NBGRADER_OWN = {"button", "input", "input style", "textarea", "span style"}
BLANK_FONT = "the font 'about:blank'"  # MathJax's, see own_violations
# Reports of violations the browser sends to Jupyter's endpoint: a POST, but no grade.
REPORTS = "/api/security/csp-report"


def payload(tag: str, window: str = "window") -> str:
    """JavaScript (no double quote: it goes into attributes) that adds `tag` to
    `window.__lm10_pwned` and gives the student full marks on every grade of the page's
    submission, as the formgrader's own script would (the API, with the XSRF cookie)."""
    return (
        f"{window}.__lm10_pwned=({window}.__lm10_pwned||[]).concat(['{tag}']);"
        f"var%b={window}.location.pathname.split('/formgrader/')[0]+'/formgrader/api/';"
        f"var%x=({window}.document.cookie.match(/_xsrf=([^;]+)/)||[])[1];"
        f"{window}.fetch(b+'grades?submission_id='+{window}.submission_id)"
        ".then(function(r){return%r.json()}).then(function(gs){gs.forEach(function(g){"
        f"{window}.fetch(b+'grade/'+g.id,{{method:'PUT',headers:{{'X-XSRFToken':x}},"
        "body:JSON.stringify({manual_score:g.max_score,extra_credit:9})})})})"
    ).replace("%", " ")


# What runs on its own once it is on a page (a link runs when the test clicks it).
RAW = {
    "img": f'<img src="data:," onerror="{payload("img")}">',  # no request: an error at once
    "script": f"<script>{payload('script')}</script>",
    "svg": f'<svg onload="{payload("svg")}"><script>{payload("svg-script")}</script></svg>',
    "iframe": f'<iframe srcdoc="<script>{payload("iframe", "parent")}</script>"></iframe>',
    "details": f'<details open ontoggle="{payload("details")}"><summary>more</summary></details>',
    "link": f'<a href="javascript:{payload("link")}">full marks</a>',
    "object": f'<object data="javascript:{payload("object")}"></object>',
    # The student's own .js file, beside the notebook: served by Jupyter under /files/ and by
    # the formgrader from the autograded copy (a same-origin address, which 'self' would allow).
    "gadget": f'<script src="../../../files/{GADGET}"></script><script src="evil.js"></script>',
}
# Only where no policy stops them: these must run when the page is served without it.
RUNS_WITHOUT_POLICY = {"img", "script", "svg", "svg-script", "iframe", "details", "link", "gadget"}
GADGET_URLS = (f"/files/{GADGET}", "/evil.js")
SVG = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{payload("attached")}"/>'
ANSWER = "\n\n".join(
    [
        f"{BEGIN}: the cache holds one key and one value per key-value head, so GQA divides "
        "it by $h / h_{kv}$ while the parameters barely change: $$n \\cdot d^2$$",
        *RAW.values(),
        f"[a markdown link](javascript:{payload('markdown-link').replace(' ', '%20')})",
        "![chart](attachment:chart.svg)",
        "$\\href{javascript:window.__lm10_pwned=['mathjax']}{a MathJax link}$",
        *OVERLAY[:2],  # Bootstrap's fixed banner and its layer over the page, no script
        END,
    ]
)
# Printed and displayed when the student's code runs, and stored as outputs with it.
PRINTS = f"""
from IPython.display import HTML, Javascript, display
print(\"\"\"{RAW["script"]}{RAW["img"]}\"\"\")
display(HTML(\"\"\"{RAW["img"]}{RAW["svg"]}\"\"\"))
display(Javascript(\"\"\"{payload("javascript-output")}\"\"\"))
"""
WIDGET = {
    "version_major": 2,
    "version_minor": 0,
    "state": {
        "w": {
            "model_name": "HTMLModel",
            "model_module": "@jupyter-widgets/controls",
            "model_module_version": "2.0.0",
            "state": {"value": RAW["img"]},
        }
    },
}
WIDGET_MIME = "application/vnd.jupyter.widget-state+json"
# Every violation of the policy the page reports, kept where the test can read it.
WATCH = """window.__lm10_violations = [];
document.addEventListener('securitypolicyviolation', e => window.__lm10_violations.push(
    [e.effectiveDirective, e.blockedURI, (e.sample || '').slice(0, 60)].join(' ')));"""
READY = """() => window.formgrader && formgrader.loaded && formgrader.grades.loaded
    && formgrader.comments.loaded && window.MathJax && MathJax.loaded"""
PWNED = "() => [window.__lm10_pwned || [], window.lm10 === undefined ? [] : [window.lm10]]"
GRADE_BOXES = "() => formgrader.grade_uis.filter(ui => ui.$score.length === 1).length"
# Clicks every javascript: link (as a browser reads the address: "java\tscript:" is one), and
# says how many there were.
# Where the student's elements are (rendered markdown, outputs, the cells themselves, whose
# class a cell's tags could reach) and what they do to nbgrader's score and comment boxes:
# elements positioned out of the flow, elements that stay on screen when the page scrolls (a
# fixed banner), elements over a box, boxes whose centre shows something else.
LAYOUT = """() => {
    const MATHJAX = '.MathJax, .MathJax_Display, .MathJax_Preview, .MJX_Assistive_MathML, script';
    const name = e => !e ? 'nothing' : e.tagName.toLowerCase()
        + (typeof e.className === 'string' && e.className.trim()
           ? '.' + e.className.trim().split(/\\s+/).join('.') : '')
        + ' "' + (e.textContent || '').trim().slice(0, 30) + '"';
    const rect = e => e.getBoundingClientRect();
    const sized = e => rect(e).width > 0 && rect(e).height > 0;
    const boxes = [...document.querySelectorAll(
        'input.score, input.extra-credit, textarea.comment, .scoring-buttons button')]
        .filter(sized);
    // MathJax's own elements (the course loads it with its Safe extension: no style, no class
    // but its own, lengths bounded) place themselves; they are not the student's attributes
    // (TeX's \\raise and \\smash place them anywhere: the page's containment of a markdown
    // cell's text holds them, and `covered` below finds any that lies over a box).
    const student = [...document.querySelectorAll(
        '.text_cell_render, .text_cell_render *, .output_subarea, .output_subarea *')]
        .filter(e => !e.closest(MATHJAX));
    const cells = [...document.querySelectorAll('#notebook-container .cell')];
    const positioned = [...student, ...cells]
        .filter(e => !['static', 'relative'].includes(getComputedStyle(e).position)).map(name);
    const where = () => student.map(e => sized(e) ? rect(e).top + window.scrollY : null);
    window.scrollTo(0, 0);
    const top = where();
    window.scrollTo(0, document.documentElement.scrollHeight);
    const bottom = where();
    const moved = window.scrollY > 0;
    const stay = student.filter((e, i) => top[i] !== null && bottom[i] !== null
        && Math.abs(top[i] - bottom[i]) > 1).map(name);
    const over = [];
    for (const box of boxes) {
        const b = rect(box);
        for (const e of student.filter(sized)) {
            const r = rect(e);
            if (r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom)
                over.push(box.id + ' / ' + name(e));
        }
    }
    const covered = [];
    for (const box of boxes) {
        box.scrollIntoView({block: 'center'});
        const b = rect(box);
        const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
        if (!hit || !(hit === box || box.contains(hit)))
            covered.push((box.id || box.className) + ' under ' + name(hit));
    }
    return {boxes: boxes.length, scrolled: moved, positioned, stay, over, covered};
}"""
CLICK_LINKS = """root => [...root.querySelectorAll('a[href]')]
    .filter(a => /^javascript:/i.test(a.getAttribute('href').replace(/\\s/g, '')))
    .map(a => a.click()).length"""


def hostile_submission(released):
    """The released lab with correct code, the written answer above, script in outputs."""
    answers = solution_answers(LAB, ROOT)
    answers["l2_serving"] += "\n" + PRINTS
    answers[WRITTEN] = ANSWER
    nb = fill(released, answers)
    written = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN)
    written.attachments = {"chart.svg": {"image/svg+xml": SVG}}
    code = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "l2_serving"
    )
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": RAW["img"] + RAW["script"],
                "application/javascript": payload("stored-javascript"),
                "image/svg+xml": SVG,
                "application/vnd.jupyter.widget-view+json": {"model_id": "w", "version_major": 2},
                "text/plain": "<HTML>",
            },
        )
    ]
    nb.metadata["widgets"] = {WIDGET_MIME: WIDGET}
    nb.cells += overlay_notebook().cells  # every way to place, cover or restyle by attribute
    nb.cells += hostile_notebook().cells  # last: some of them leave tags open
    return nb


def gradebook_state(course: Path):
    """Everything the gradebook holds about the student's notebook that a page could change."""
    with Gradebook(f"sqlite:///{course / 'grading' / 'gradebook.db'}", course_id="LM10") as gb:
        notebook = gb.find_submission_notebook(LAB, LAB, STUDENT)
        grades = {
            g.name: (g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade)
            for g in notebook.grades
        }
        comments = {c.name: c.manual_comment for c in notebook.comments}
        return {"grades": grades, "comments": comments, "flagged": notebook.flagged}


@pytest.fixture(scope="module")
def course(browser, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    """The course with the hostile submission autograded: its folder and the grading page's
    address (the browser fixture first: without chromium the test fails or skips at once)."""
    course = tmp_path_factory.mktemp("formgrader-course")
    grading = course_copy(course)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if shutil.which("bwrap") is None:
        env["LM10_GRADE_WITHOUT_ISOLATION"] = "1"  # our own submission: the marks do not matter

    def run(*command):
        done = subprocess.run(
            [sys.executable, *command],
            cwd=grading,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,  # one submission: about 20 s on two loaded cores
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    run("-m", "nbgrader", "generate_assignment", LAB, "--force")
    released = nbformat.read(course / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    folder = grading / "submitted" / STUDENT / LAB
    folder.mkdir(parents=True)
    nbformat.write(hostile_submission(released), folder / f"{LAB}.ipynb")
    (course / GADGET).write_text(payload("gadget") + "\n")
    report = run(*AUTOGRADE, LAB, "--jobs", "1", "--timeout", "400")
    assert re.search(rf"^{STUDENT}\s+(graded|flagged)\s+10\.0 / 13\.0", report, re.M), report
    with Gradebook(f"sqlite:///{grading / 'gradebook.db'}", course_id="LM10") as gb:
        submission = gb.find_submission_notebook(LAB, LAB, STUDENT).id
    return {"course": course, "path": f"/formgrader/submissions/{submission}/"}


@contextlib.contextmanager
def served(course, scratch: Path, sanitised: bool = True):
    """JupyterLab on the course, as `make lab` starts it; with `sanitised` False, an
    nbgrader_config.py before the course's takes the sanitiser out of the formgrader's
    HTMLExporter (grading/instructor/sanitise.py): the
    server renders a student's markdown as it is."""
    config = [course["course"] / "grading"]
    if not sanitised:
        (scratch / "unsanitised").mkdir()
        (scratch / "unsanitised" / "nbgrader_config.py").write_text(
            "c = get_config()  # noqa: F821\nc.HTMLExporter.filters = {}\n"
        )
        config.insert(0, scratch / "unsanitised")  # the first on the path wins
    with jupyterlab(course["course"], os.pathsep.join(map(str, config)), scratch) as lab:
        yield lab


def open_grading_page(browser, lab, path, problems, serve=None, api=None):  # noqa: F811
    """A tab on the grading page at `path`, watching violations and every request, the page
    served by the route `serve` and the formgrader's API through the route `api` if given;
    it returns (page, main response, requests) once nbgrader's scripts have loaded the grades
    and MathJax has typeset the page."""
    page = lab.page(browser, "/api/status", problems)  # logs in (the token sets a cookie)
    page.add_init_script(WATCH)
    requests: list[tuple[str, str]] = []
    page.on("request", lambda r: requests.append((r.method, r.url)))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"))
    if serve:
        page.route(f"{lab.url}{path}", serve)
    if api:
        page.route(f"{lab.url}/formgrader/api/**", api)
    response = page.goto(f"{lab.url}{path}")
    page.wait_for_function(READY, timeout=STEP_MS, polling=200)
    return page, response, requests


def console(problems):
    """The console's errors and failed loads, but MathJax's blank font (see own_violations).
    No image of a student's is requested: the sanitiser keeps only those that carry
    themselves (data:)."""
    return [p for p in problems if BLANK_FONT not in p]


def own_violations(page):
    """The policy's violations on the page, but MathJax's font at about:blank (MathJax 2's
    HTML-CSS output times web-font loading with it, and the load fails without a policy too,
    see tests/test_browser.py)."""
    return [v for v in page.evaluate("() => window.__lm10_violations") if v != "font-src about "]


def unexpected(requests, lab):
    """Requests that change something, or that go anywhere but this server (a data:, about:
    or javascript: address goes nowhere: test_formgrader_page's CSS url(javascript:x) shows
    as a request; that it runs nothing is what the marker tells)."""
    return [
        f"{method} {url}"
        for method, url in requests
        if not url.startswith((lab.url + "/", "data:", "about:", "javascript:"))
        or (method not in ("GET", "HEAD") and not url.startswith(lab.url + REPORTS))
    ]


def directives(header: str) -> dict[str, list[str]]:
    found = {}
    for part in header.split(";"):
        name, *values = part.split()
        found[name.lower()] = values
    return found


def check_policy(response) -> str:
    """The grading page's Content-Security-Policy, checked; its nonce."""
    header = response.headers.get("content-security-policy")
    assert header, f"no Content-Security-Policy on the grading page: {response.headers}"
    policy = directives(header)
    script = policy["script-src"]
    assert "'unsafe-inline'" not in script and "'unsafe-eval'" not in script, header
    nonces = [s for s in script if s.startswith("'nonce-")]
    assert len(nonces) == 1 and "'strict-dynamic'" in script, header
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'self'"], header
    assert policy["frame-ancestors"] == ["'self'"] and policy["connect-src"] == ["'self'"], header
    assert policy["default-src"] == ["'none'"], header
    return nonces[0][len("'nonce-") : -1]


def scripts_of(html: str) -> list[dict]:
    """The attributes of every script element of a page, as the browser's parser finds them."""
    parsed = Elements()
    parsed.feed(html)
    return [attributes for tag, attributes in parsed.found if tag == "script"]


@pytest.fixture(scope="module")
def lab(course, tmp_path_factory):
    """JupyterLab serving the course as `make lab` does."""
    with served(course, tmp_path_factory.mktemp("formgrader-server")) as lab:
        yield lab


def test_no_script_of_the_submission_runs_and_grading_still_works(browser, course, lab):  # noqa: F811
    before = gradebook_state(course["course"])
    assert before["grades"][WRITTEN][1] is None, "the written answer has a score already"
    problems: list[str] = []
    page, response, requests = open_grading_page(browser, lab, course["path"], problems)

    # The policy, on the page's own response.
    assert response.status == 200
    nonce = check_policy(response)
    # Every script on the page is nbgrader's or the course's, with the nonce; the student's
    # cells and outputs hold no element or attribute that could run script.
    html = response.text()
    scripts = scripts_of(html)
    assert scripts and [s for s in scripts if s.get("nonce") != nonce] == [], scripts
    answer = html[html.index(BEGIN) : html.index(END)]
    assert not live(answer), live(answer)
    # Her code is flagged (IPython.display, among others): the page begins with its flags, as
    # the class report reads them, each her code's words as text (formgrader_flags.py)
    from grading.instructor import class_report

    grading = course["course"] / "grading"
    flags = class_report.notebook_flags(
        grading / "autograded" / STUDENT / LAB / f"{LAB}.ipynb",
        course["course"] / "labs" / LAB / f"{LAB}.ipynb",
    )
    assert flags, "the hostile submission is flagged"
    notice = page.locator("#lm10-flags")
    assert notice.count() == 1, "the grading page does not show the submission's flags"
    text = notice.text_content()
    assert "Flagged for a person" in text and all(f in text for f in flags[:20]), text
    flagged = notice.locator("ul").inner_html()  # the flags' own markup: <li> and text alone
    assert not live(flagged) and flagged.count("<") == 2 * flagged.count("<li>"), flagged
    cells = html[html.index(CELLS) : html.index(AFTER_CELLS)]  # outputs included
    assert set(live(cells)) <= NBGRADER_OWN, live(cells)
    assert WIDGET_MIME not in html

    # Nothing of the student's ran, even where clicked, and nothing was sent.
    page.wait_for_function("() => document.querySelector('.MathJax, .MathJax_Display')")
    links = page.locator("#notebook-container").first.evaluate(CLICK_LINKS)
    assert links == 0, f"{links} javascript: links on the sanitised page"
    page.wait_for_timeout(1000)  # a fetch or a timer of a payload would have been sent
    assert page.evaluate(PWNED) == [[], []], "a payload of the submission ran"
    assert unexpected(requests, lab) == [], "the page sent requests before the test acted"
    assert gradebook_state(course["course"]) == before, "the gradebook changed as the page opened"
    assert own_violations(page) == [], "nbgrader's page broke its policy"

    # No element of the student's is placed out of the flow, stays on screen as the page
    # scrolls, lies over a score or comment box, or covers one (OVERLAY: Bootstrap's classes,
    # style, ids, data-*; the test of the unsanitised page shows the same check failing).
    layout = page.evaluate(LAYOUT)
    assert layout["boxes"] >= 2 * len(before["grades"]) and layout["scrolled"], layout
    assert page.get_by_text(BANNER).count() >= 3, "the banner's text must still show, as text"
    assert {k: layout[k] for k in ("positioned", "stay", "over", "covered")} == {
        "positioned": [],
        "stay": [],
        "over": [],
        "covered": [],
    }, layout

    # nbgrader's own scripts work: inline handlers (the eye icon shows the student's name)...
    page.locator(".glyphicon.name-hidden").click()
    page.locator("a.name-shown", has_text=STUDENT).wait_for(state="visible", timeout=STEP_MS)
    # ...and a manual score typed into the written answer's box is saved when it is left.
    assert page.evaluate(GRADE_BOXES) == len(before["grades"]), "the grades were not filled in"
    box = page.locator(f"input.score#{WRITTEN}")
    with page.expect_response(
        lambda r: r.request.method == "PUT" and "/formgrader/api/grade/" in r.url,
        timeout=STEP_MS,
    ) as saved:
        box.fill("2")
        box.press("Tab")
    assert saved.value.status == 200
    after = gradebook_state(course["course"])
    assert after["grades"][WRITTEN] == (None, 2.0, None, False), after["grades"][WRITTEN]
    del after["grades"][WRITTEN], before["grades"][WRITTEN]
    assert after == before, "typing one score changed another"
    assert own_violations(page) == []
    page.close()
    assert console(problems) == [], "console:\n" + "\n".join(problems)


def without_policy(route):
    """A route that serves the page as the server does, less its policy."""
    response = route.fetch()
    headers = {k: v for k, v in response.headers.items() if k != "content-security-policy"}
    route.fulfill(response=response, headers=headers)


def stopped(blocked: list[str]):
    """A route for the API that aborts every call that would change something, in `blocked`."""

    def api(route):
        if route.request.method in ("GET", "HEAD"):
            return route.continue_()
        blocked.append(f"{route.request.method} {route.request.url}")
        return route.abort()

    return api


def settle_api_calls(page, sent, aborted, quiet_ms=1500, timeout_s=20):
    """Wait until every changing API call the page sent is in `aborted` (its route has run) and
    no new API call has come for `quiet_ms`: the payloads read the grades, then write them."""

    def api_calls():
        return [(m, u) for m, u in sent if "/formgrader/api/" in u]

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        calls = api_calls()
        if len([c for c in calls if c[0] not in ("GET", "HEAD")]) == len(aborted):
            page.wait_for_timeout(quiet_ms)
            if api_calls() == calls:
                return
        page.wait_for_timeout(250)
    raise AssertionError(f"the page's API calls did not settle: {api_calls()}, aborted {aborted}")


def refused_all(page) -> bool:
    """Whether the page has reported refusing inline scripts, handlers and every gadget file."""
    violations = page.evaluate("() => window.__lm10_violations || []")
    kinds = {v.split()[0] for v in violations if v}
    return {"script-src-elem", "script-src-attr"} <= kinds and all(
        any(url in v for v in violations) for url in GADGET_URLS
    )


def test_the_policy_alone_stops_what_the_sanitiser_would_have_removed(browser, course, tmp_path):  # noqa: F811
    before = gradebook_state(course["course"])
    problems: list[str] = []
    with served(course, tmp_path, sanitised=False) as lab:
        page, response, requests = open_grading_page(browser, lab, course["path"], problems)
        html = response.text()
        assert f'onerror="{payload("img")}"' in html, "the sanitiser is still there"
        nonce = check_policy(response)
        student = [s for s in scripts_of(html) if s.get("nonce") != nonce]
        assert len(student) >= 5, f"the student's scripts carry the page's nonce: {student}"
        assert page.locator("#notebook-container").first.evaluate(CLICK_LINKS) >= 3
        page.wait_for_timeout(1500)  # a fetch or a timer of a payload would have been sent
        # The browser reports each refusal as an event, later on a busy machine: wait for them.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not refused_all(page):
            page.wait_for_timeout(250)
        assert page.evaluate(PWNED) == [[], []], "the policy let a payload run"
        assert unexpected(requests, lab) == [], "the page sent requests"
        assert gradebook_state(course["course"]) == before, "the gradebook changed"
        violations = page.evaluate("() => window.__lm10_violations")
        assert {"script-src-elem", "script-src-attr"} <= {v.split()[0] for v in violations}
        for url in GADGET_URLS:
            assert any(url in v for v in violations), f"{url} not refused: {violations}"
        assert page.evaluate(GRADE_BOXES) == len(before["grades"]), "nbgrader's scripts broke"
        # Unsanitised, the student's classes place a fixed banner and layers out of the flow
        # (what the sanitised page's LAYOUT check finds nothing of); the grading page's
        # containment of a markdown cell's text (the course's mathjax() macro, after the
        # sixty-sixth hub tester) holds them in her cell: none stays on screen or covers a box.
        layout = page.evaluate(LAYOUT)
        assert layout["positioned"] and not layout["stay"] and not layout["covered"], layout
        page.close()
        # No script of the page failed (the console has the browser's notes on every blocked
        # script, and on the failed loads of the student's elements).
        assert [p for p in problems if ": uncaught " in p] == [], problems

        # The same page without its policy runs the payloads (their API calls stopped here).
        aborted: list[str] = []
        page, _, sent = open_grading_page(
            browser, lab, course["path"], [], without_policy, stopped(aborted)
        )
        page.locator("#notebook-container").first.evaluate(CLICK_LINKS)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            set(page.evaluate(PWNED)[0]) >= RUNS_WITHOUT_POLICY and aborted
        ):
            page.wait_for_timeout(250)
        ran = set(page.evaluate(PWNED)[0])
        assert ran >= RUNS_WITHOUT_POLICY, f"not live: {RUNS_WITHOUT_POLICY - ran}"
        assert any("/formgrader/api/grade/" in a for a in aborted), aborted
        # Close only once every call to the API has been answered or aborted and none came for a
        # second: a call still waiting for its route when the page closes goes on to the server
        # (seen on a busy machine: a payload's PUT saved full marks after the loop above ended).
        settle_api_calls(page, sent, aborted)
        page.close()
    assert gradebook_state(course["course"]) == before


# Every other page of the formgrader, each with its own scripts and inline handlers.
PAGES = [
    "/formgrader/manage_assignments",
    f"/formgrader/manage_submissions/{LAB}",
    "/formgrader/gradebook",
    f"/formgrader/gradebook/{LAB}",
    f"/formgrader/gradebook/{LAB}/{LAB}",
    "/formgrader/manage_students",
    f"/formgrader/manage_students/{STUDENT}",
    f"/formgrader/manage_students/{STUDENT}/{LAB}",
]
# A student id that closes the JavaScript string nbgrader writes it into.
STUDENT_ID = "\"-(window.__lm10_pwned=['student-id'])-\""


def test_every_formgrader_page_works_under_the_policy(browser, course, lab):  # noqa: F811
    problems: list[str] = []
    page = lab.page(browser, "/api/status", problems)  # logs in
    page.add_init_script(WATCH)
    for path in PAGES:
        response = page.goto(f"{lab.url}{path}")
        page.wait_for_load_state("networkidle")
        assert response.status == 200, path
        check_policy(response)
        assert own_violations(page) == [], path
        assert page.evaluate(PWNED) == [[], []], path
        if path.endswith(f"gradebook/{LAB}/{LAB}"):  # inline handlers, allowed by their hash
            page.locator("#toggle_names").click()
            page.locator("#toggle_names", has_text="Hide All Names").wait_for(timeout=STEP_MS)
        if path.endswith("manage_assignments"):
            page.get_by_role("link", name="Add new assignment...").click()
            page.locator("#add-assignment-modal").wait_for(timeout=STEP_MS)
        assert own_violations(page) == [], path
    assert console(problems) == [], "console:\n" + "\n".join(problems)

    # nbgrader writes the student id from the address into a script: it stays a string.
    path = f"/formgrader/manage_students/{urllib.parse.quote(STUDENT_ID)}/{LAB}"
    page.goto(f"{lab.url}{path}")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("() => student_id") == STUDENT_ID
    assert page.evaluate(PWNED) == [[], []], "a student id ran as script"
    page.close()
