"""The formgrader's pages as nbgrader renders them (`render`), the student markdown that attacks
them (HOSTILE: script; OVERLAY: placing, covering or restyling without script) and what finds an
attack that survived (`live`, `placed`): shared by tests/test_formgrader_page.py,
test_formgrader_browser.py and test_browser.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat

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
# Markdown that places, covers or restyles the instructor's page without any script: nbgrader's
# page carries Bootstrap 3, whose classes draw fixed banners and layers, and its own scripts
# find their score boxes by id. Every attribute value a case writes carries MARK, so that any
# attribute of theirs the page keeps is found wherever it lands.
MARK = "lm10x"
BANNER = "13 / 13 points: pre-approved by the instructor"
OVERLAY = [
    f'<div class="navbar navbar-inverse navbar-fixed-top {MARK}"><h1>{BANNER}</h1></div>',
    f'<div class="modal-backdrop in {MARK}"></div>'
    f'<div class="modal-backdrop fade in {MARK}"></div>',
    f'<div class="modal in {MARK}" style="display:block;{MARK}:0" role="dialog {MARK}">'
    f'<div class="modal-dialog {MARK}"><div class="modal-content {MARK}">All marks given.'
    "</div></div></div>",
    f'<p class="affix {MARK}" data-spy="affix {MARK}" data-offset-top="0{MARK}">affixed</p>',
    f'<div style="position:fixed;inset:0;z-index:99999;background:#fff;{MARK}:0">'
    "a white sheet</div>",
    f'<span id="l2_written_tradeoff" name="{MARK}">the id of a score box</span>'
    f'<a name="formgrader" id="{MARK}" href="#x">a named anchor</a>',
    f'<div hidden="{MARK}" popover="{MARK}" dir="rtl{MARK}" tabindex="1{MARK}" accesskey="{MARK}" '
    f'role="banner{MARK}" aria-owns="notebook-container {MARK}" aria-describedby="{MARK}" '
    f'data-toggle="modal{MARK}" data-target="#{MARK}" lang="{MARK}" title="a tooltip">'
    "attributes</div>",
    f'<table class="pull-right {MARK}" width="9000{MARK}"><tr><td class="text-danger {MARK}" '
    f'style="{MARK}:0" width="9000{MARK}" colspan="2">a table</td></tr></table>',
    f'<img src="x" width="5000{MARK}" height="5000{MARK}" class="{MARK}" alt="a large image">',
    f'<label for="{MARK}" form="{MARK}">a label</label>'
    f'<ol start="3" class="{MARK}"><li>three</li></ol>',
    "# notebook-container\n\n## l2_written_tradeoff",  # markdown writes a heading's text as its id
]
# What a student element may carry, per tag
# (grading/instructor/sanitise.py's allow-list; nh3 adds rel).
KEPT = {
    "a": {"href", "title", "rel"},
    "abbr": {"title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
}
VOID = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
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


class StudentElements(HTMLParser):
    """The elements inside the rendered markdown of cells (`text_cell_render`) and inside
    outputs (`output_subarea`): what a student's markdown and outputs made, nothing of
    nbgrader's own."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self.depth = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth:
            self.found.append((tag, attrs))
        classes = (attrs.get("class") or "").split()
        if tag in VOID:
            return
        if self.depth or "text_cell_render" in classes or "output_subarea" in classes:
            self.depth += 1

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID:
            self.depth -= 1


def placed(html):
    """Every attribute of a student element that the allow-list does not keep (an id among
    them: markdown's heading ids too), and every attribute anywhere on the page that carries
    MARK (a raw cell, a cell's tags)."""
    students = StudentElements()
    students.feed(html)
    bad = [
        f"{tag} {name}"
        for tag, attrs in students.found
        for name in attrs
        if name not in KEPT.get(tag, ())
    ]
    everything = Elements()
    everything.feed(html)
    bad += [
        f"{tag} {name}={value}"
        for tag, attrs in everything.found
        for name, value in attrs.items()
        if MARK in (value or "") or MARK in name
    ]
    return bad


def overlay_notebook():
    """One markdown cell per overlay case, a raw HTML cell, a code cell whose tags carry
    classes (nbconvert writes each tag into the cell's class as `celltag_<tag>`) and an HTML
    output."""
    cells = [
        nbformat.v4.new_markdown_cell(f"overlay {i}\n\n{source}")
        for i, source in enumerate(OVERLAY)
    ]
    raw = nbformat.v4.new_raw_cell(OVERLAY[0])
    raw.metadata["raw_mimetype"] = "text/html"
    code = nbformat.v4.new_code_cell("x = 1", metadata={"tags": [f"x navbar-fixed-top {MARK}"]})
    code.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/html": OVERLAY[1], "text/markdown": OVERLAY[0]}
        )
    ]
    return nbformat.v4.new_notebook(cells=[*cells, raw, code])


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
