"""The formgrader's grading page loads MathJax from the Jupyter server, not from a CDN.

nbgrader 0.9.6 renders that page with nbconvert's `mathjax()` macro and its CDN default;
grading/jupyter-data/nbconvert/templates/formgrade/mathjax.html.j2 replaces the macro for that
page (grading/nbgrader_config.py puts the folder on JUPYTER_PATH) and jupyter-server-mathjax
serves MathJax 2. Here the page is rendered as the formgrader renders it; tests/test_browser.py
loads the macro's output from a running server and checks that MathJax typesets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL = "/static/jupyter_server_mathjax/MathJax.js"
CDN = "cdnjs.cloudflare.com"

# Builds the exporter as nbgrader's FormgradeExtension does (its HTMLExporter, template
# "formgrade", nbgrader's templates first), after loading the course's nbgrader_config.py.
_RENDER = """
import sys
import nbformat
from nbconvert import HTMLExporter
from nbgrader.server_extensions.formgrader import handlers
from traitlets.config.loader import PyFileConfigLoader

config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
config.HTMLExporter.template_name = "formgrade"
config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
exporter = HTMLExporter(config=config)
if sys.argv[1] == "page":
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x^2$")])
    resources = dict(assignment_id="LM10-L1", notebook_id="LM10-L1", submission_id="s", index=0,
                     total=1, base_url="", student="s", last_name="", first_name="",
                     notebook_path="p")
    print(exporter.from_notebook_node(nb, resources=resources)[0])
else:
    print(exporter.environment.from_string(
        "{% from 'mathjax.html.j2' import mathjax %}<!DOCTYPE html><html><head>{{ mathjax() }}"
        "</head><body><p id='math'>$e^{i\\\\pi} + 1 = 0$</p></body></html>").render())
"""


def render(what: str) -> str:
    """'page': the grading page of a one-cell notebook; 'macro': a page holding only the
    formgrader's `mathjax()` and one formula."""
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_PATH"}
    return subprocess.run(
        [sys.executable, "-c", _RENDER, what],
        cwd=ROOT / "grading",
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_grading_page_loads_mathjax_from_the_server_not_a_cdn():
    page = render("page")
    assert "formgrade.js" in page, "this is not nbgrader's grading page"
    assert LOCAL in page and CDN not in page, page[:3000]


def test_jupyter_server_mathjax_ships_what_the_page_asks_for():
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    for name in ("MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js"):
        assert (static / name).is_file(), f"jupyter-server-mathjax has no {name}"
