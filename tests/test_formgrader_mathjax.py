"""What a student's formula makes the instructor's browser send as the grading page opens.

The formgrader's grading page typesets her markdown's formulas with MathJax 2 and its Safe
extension (grading/jupyter-data/nbconvert/templates/formgrade/mathjax.html.j2). Safe lets
`\\style{...}` and `\\bbox[...]` keep a few CSS properties, `cursor` among them, and a cursor
may be an image at an address: `$\\style{cursor:url(/hub/logout),auto}{x}$` is a GET that
Chromium sends, with the instructor's cookies, as soon as the formula is typeset, no mouse
needed (the formgrader's policy allows images from 'self'; JupyterHub's LogoutHandler.get logs
out: the sixty-second hub tester's, after the sixtieth's `<img src="/hub/logout">`).

Here the grading page is rendered as the formgrader renders it (formgrader_pages.render, the
course's sanitiser included), served beside jupyter-server-mathjax's files at a formgrader
address, and opened in Chromium: the formulas are typeset, a harmless style stays, and no
request leaves for any address her formulas name.
"""

from __future__ import annotations

import functools
import http.server
import threading
import time
from pathlib import Path

import nbformat
import pytest
from formgrader_pages import render

MARK = "/hub/lm10-cursor"
FORMULAS = [
    f"$\\style{{cursor:url({MARK}-style),auto}}{{x}}$",
    f"$\\style{{color:red;cursor:url('{MARK}-quoted') 2 2,pointer}}{{y}}$",
    f"$\\bbox[cursor:url({MARK}-bbox),auto]{{z}}$",
    f"$$\\style{{cursor:url({MARK}-display),auto}}{{w}}$$",
]


@pytest.mark.slow  # Chromium
def test_a_formula_sends_no_request_as_the_page_opens(browser, tmp_path):  # noqa: F811
    import jupyter_server_mathjax

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("\n\n".join(FORMULAS))])
    page = render("page", nb)
    site = tmp_path / "site"
    (site / "u" / "formgrader" / "submissions").mkdir(parents=True)
    (site / "u" / "static").mkdir()
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    (site / "u" / "static" / "jupyter_server_mathjax").symlink_to(static)
    (site / "u" / "formgrader" / "submissions" / "s.html").write_text(page, encoding="utf-8")

    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/u/formgrader/submissions/s.html")
        tab.wait_for_function(
            "() => window.MathJax && document.querySelectorAll('.MathJax, .MathJax_Display')"
            f".length >= {len(FORMULAS)}",
            timeout=60_000,
        )
        time.sleep(2)  # a cursor image is asked for once the typeset formula is styled
        red = tab.evaluate(
            "() => [...document.querySelectorAll('[style]')].some(e => e.style.color === 'red')"
        )
        context.close()
    finally:
        server.shutdown()
    sent = [path for path in asked if path.startswith(MARK)]
    assert not sent, f"her formulas made the instructor's browser ask for {sent}"
    assert red, "MathJax's Safe extension no longer keeps a harmless style"


def _graded(source: str, grade_id: str, code: bool = False):
    meta = {
        "nbgrader": {
            "grade": True,
            "solution": True,
            "grade_id": grade_id,
            "points": 2,
            "locked": False,
            "schema_version": 3,
            "task": False,
        }
    }
    make = nbformat.v4.new_code_cell if code else nbformat.v4.new_markdown_cell
    return make(source, metadata=meta)


# A white sheet of hers over the answers above, and a line of hers where the grader's would be.
SHEET = (
    "$\\smash{\\rlap{\\raise{18em}{\\color{white}{\\rule{80em}{30em}}}}}"
    "\\smash{\\rlap{\\raise{16em}{\\color{red}{\\text{13 / 13 points: approved}}}}}$"
)


@pytest.mark.slow  # Chromium
def test_a_formula_lies_over_none_of_the_pages_controls(browser, tmp_path):  # noqa: F811
    """The sixty-sixth hub tester: TeX places a formula's glyphs anywhere (\\smash, \\rlap,
    \\raise), and Safe filters attributes, not places. Her formula in a later answer (or in a
    markdown or raw cell she adds) laid a white \\rule over the score boxes, the "Full credit"
    buttons and the comment boxes of the answers above it: the page's controls under her span
    (document.elementFromPoint gave MathJax's span, not the control), her line where the
    grader's would be. Each control is the topmost element at its centre, and an honest
    formula is still typeset."""
    import jupyter_server_mathjax
    from nbgrader.server_extensions import formgrader

    nb = nbformat.v4.new_notebook(
        cells=[
            _graded("An honest answer: $e^{i\\pi} + 1 = 0$", "answer_a"),
            _graded("x = 1", "answer_b", code=True),
            _graded("My answer. " + SHEET, "answer_c"),
            nbformat.v4.new_markdown_cell("added " + SHEET),
            nbformat.v4.new_raw_cell("raw " + SHEET),
        ]
    )
    site = tmp_path / "site"
    (site / "formgrader" / "submissions").mkdir(parents=True)
    (site / "formgrader" / "static").symlink_to(Path(formgrader.__file__).parent / "static")
    (site / "static").mkdir()
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    (site / "static" / "jupyter_server_mathjax").symlink_to(static)
    (site / "formgrader" / "submissions" / "s.html").write_text(render("page", nb), "utf-8")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        tab = context.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/formgrader/submissions/s.html")
        tab.wait_for_function(
            "() => window.MathJax && document.querySelectorAll('.MathJax').length >= 2",
            timeout=60_000,
        )
        time.sleep(1)
        covered = tab.evaluate(
            """() => [...document.querySelectorAll(
                    'input.score, textarea.comment, button.full-credit, button.no-credit')]
                .map(e => {
                    const r = e.getBoundingClientRect();
                    const top = document.elementFromPoint(r.left + r.width / 2,
                                                          r.top + r.height / 2);
                    return top && (top === e || e.contains(top)) ? null
                        : (e.id || e.className) + ' under ' + (top ? top.className : 'nothing');
                }).filter(x => x)"""
        )
        honest = tab.evaluate(
            "() => document.querySelector('.MathJax').getBoundingClientRect().width"
        )
        context.close()
    finally:
        server.shutdown()
    assert not covered, f"her formula lies over the page's controls: {covered}"
    assert honest > 20, "an honest formula is no longer typeset"
