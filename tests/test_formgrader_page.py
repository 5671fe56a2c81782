"""The formgrader's grading page loads MathJax from the Jupyter server, not from a CDN, and
shows a student's markdown sanitised, as does the feedback.

nbgrader 0.9.6 renders that page with nbconvert's `mathjax()` macro and its CDN default;
grading/jupyter-data/nbconvert/templates/formgrade/mathjax.html.j2 replaces the macro for that
page (grading/nbgrader_config.py puts the folder on JUPYTER_PATH) and jupyter-server-mathjax
serves MathJax 2. Here the page is rendered as the formgrader renders it; tests/test_browser.py
loads the macro's output from a running server and checks that MathJax typesets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = "/static/jupyter_server_mathjax/MathJax.js"
CDN = "cdnjs.cloudflare.com"

# Builds the exporter as nbgrader's FormgradeExtension does (its HTMLExporter, template
# "formgrade", nbgrader's templates first), after loading the course's nbgrader_config.py.
_RENDER = """
import os
import sys
import nbformat
from nbconvert import HTMLExporter
from nbgrader.server_extensions.formgrader import handlers
from traitlets.config.loader import PyFileConfigLoader

config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
config.HTMLExporter.template_name = "formgrade"
config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
if sys.argv[1] == "feedback":  # as nbgrader's GenerateFeedback sets it up
    config.HTMLExporter.template_name = "feedback"
    static = os.path.join(handlers.__file__, "..", "static", "node_modules", "bootstrap", "dist")
    config.HTMLExporter.extra_template_paths = [os.path.abspath(os.path.join(static, "css"))]
exporter = HTMLExporter(config=config)
if sys.argv[1] in ("page", "feedback"):
    nb = nbformat.reads(sys.stdin.read(), as_version=4)
    resources = dict(assignment_id="LM10-L1", notebook_id="LM10-L1", submission_id="s", index=0,
                     total=1, base_url="", student="s", last_name="", first_name="",
                     notebook_path="p",
                     nbgrader=dict(notebook="LM10-L1", score=0, max_score=0, late_penalty=0))
    print(exporter.from_notebook_node(nb, resources=resources)[0])
else:
    print(exporter.environment.from_string(
        "{% from 'mathjax.html.j2' import mathjax %}<!DOCTYPE html><html><head>{{ mathjax() }}"
        "</head><body><p id='math'>$e^{i\\\\pi} + 1 = 0$</p></body></html>").render())
"""


def render(what: str, nb=None) -> str:
    """'page' or 'feedback': the grading page or the feedback of `nb` (default: one formula);
    'macro': a page holding only the formgrader's `mathjax()` and one formula."""
    nb = nb or nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x^2$")])
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_PATH"}
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, what],
        cwd=ROOT / "grading",
        env=env,
        input=nbformat.writes(nb),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# Markdown a student can write in an answer, each a way to run script on the instructor's page.
HOSTILE = [
    "<img src=x onerror=\"fetch('/formgrader/api/grade/1', {method: 'PUT'})\">",
    "<script>window.lm10 = 'ran'</script>",
    '<svg onload="window.lm10=1"><script>window.lm10 = 2</script></svg>',
    '<iframe srcdoc="<script>parent.lm10 = 3</script>"></iframe>',
    "[a link](javascript:window.lm10=4)",
    '<a href="JaVa&#x09;ScRiPt:window.lm10=5">spaced scheme</a>',
    '<div style="background:url(javascript:x)" onmouseover="window.lm10=6">hover</div>',
    '<object data="javascript:window.lm10=7"></object><embed src="x.swf">',
    '<form action="/api/contents"><button formaction="javascript:x">go</button></form>',
    "<math><mtext><table><mglyph><style><img src=x onerror=window.lm10=8>",
    '<a href="data:text/html,<script>window.lm10=9</script>">data link</a>',
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
    "<meta http-equiv=refresh content='0;url=javascript:x'><base href='javascript:x'>",
]
DANGEROUS_TAGS = {
    "script", "iframe", "svg", "object", "embed", "form", "button", "style", "meta", "base",
    "math", "link", "input", "textarea",
}  # fmt: skip
# matched against the address with its whitespace removed, as a browser reads "java\tscript:"
SCHEMES = re.compile(r"(?:javascript|vbscript|data:(?!image/(?:png|jpeg|gif);))", re.I)


class Elements(HTMLParser):
    """Every element of a page with its attributes, as a browser's parser would see them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def live(html):
    """The elements and attributes in `html` that could run script or leave the page."""
    parser = Elements()
    parser.feed(html)
    bad = []
    for tag, attrs in parser.found:
        if tag in DANGEROUS_TAGS:
            bad.append(tag)
        for name, value in attrs.items():
            if name.startswith("on") or name in ("style", "srcdoc", "formaction", "action"):
                bad.append(f"{tag} {name}")
            elif name in ("href", "src", "data") and SCHEMES.match("".join((value or "").split())):
                bad.append(f"{tag} {name}={value[:40]}")
    return bad


def hostile_notebook():
    """One markdown cell per attack, an honest cell beside them, and widget state."""
    honest = "## My answer\n\nGQA keeps **fewer** heads: see ![chart](attachment:c.png) and [the paper](https://arxiv.org/abs/2305.13245)."
    cells = [
        nbformat.v4.new_markdown_cell(f"<p id='cell{i}'>case {i}</p>\n\n{source}")
        for i, source in enumerate(HOSTILE)
    ]
    chart = nbformat.v4.new_markdown_cell(honest)
    chart.attachments = {"c.png": {"image/png": "iVBORw0KGgo="}}
    nb = nbformat.v4.new_notebook(cells=[chart, *cells])
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {},
            "version_major": 2,
            "version_minor": 0,
        }
    }
    return nb


def cells_of(page):
    """The rendered cells of a page (its own scripts, nbgrader's, come before and after)."""
    return page[page.index("case 0") - 200 : page.rindex("case ") + 2000]


def test_the_grading_page_loads_mathjax_from_the_server_not_a_cdn():
    page = render("page")
    assert "formgrade.js" in page, "this is not nbgrader's grading page"
    assert LOCAL in page and CDN not in page, page[:3000]


def test_jupyter_server_mathjax_ships_what_the_page_asks_for():
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    for name in ("MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js"):
        assert (static / name).is_file(), f"jupyter-server-mathjax has no {name}"


@pytest.mark.parametrize("page", ["page", "feedback"])
def test_student_markdown_is_sanitised_on_the_instructors_pages(page):
    """nbgrader's own templates render markdown unsanitised; the course's allow-list filter
    (grading/sanitise.py) removes every way to run script, and keeps what markdown makes."""
    html = render(page, hostile_notebook())
    assert ("formgrade.js" in html) == (page == "page"), "not nbgrader's page"
    for i in range(len(HOSTILE)):
        assert f"case {i}" in html, f"case {i} vanished: the page must still show the cell"
    assert not live(cells_of(html)), live(cells_of(html))
    assert "widget-state+json" not in html and "embed-amd" not in html, "widget state rendered"
    assert "<h2" in html and "<strong>fewer</strong>" in html
    assert '<img alt="chart" src="data:image/png;base64,iVBORw0KGgo="/>' in html
    assert '<a href="https://arxiv.org/abs/2305.13245">the paper</a>' in html
