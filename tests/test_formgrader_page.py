"""The formgrader's grading page loads MathJax from the Jupyter server, not from a CDN, and
shows a student's markdown sanitised, as does the feedback.

nbgrader 0.9.6 renders that page with nbconvert's `mathjax()` macro and its CDN default;
grading/jupyter-data/nbconvert/templates/formgrade/mathjax.html.j2 replaces the macro for that
page (grading/nbgrader_config.py puts the folder on JUPYTER_PATH) and jupyter-server-mathjax
serves MathJax 2. Here the page is rendered as the formgrader renders it; tests/test_browser.py
loads the macro's output from a running server and checks that MathJax typesets.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from formgrader_pages import (
    BANNER,
    CDN,
    HOSTILE,
    LOCAL,
    OVERLAY,
    cells_of,
    hostile_notebook,
    live,
    overlay_notebook,
    placed,
    render,
)
from nbconvert.filters import markdown2html

from grading.instructor import sanitise


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
    (grading/instructor/sanitise.py) removes every way
    to run script, and keeps what markdown makes."""
    html = render(page, hostile_notebook())
    assert ("formgrade.js" in html) == (page == "page"), "not nbgrader's page"
    for i in range(len(HOSTILE)):
        assert f"case {i}" in html, f"case {i} vanished: the page must still show the cell"
    assert not live(cells_of(html)), live(cells_of(html))
    assert "widget-state+json" not in html and "embed-amd" not in html, "widget state rendered"
    assert "<h2" in html and "<strong>fewer</strong>" in html
    assert '<img alt="chart" src="data:image/png;base64,iVBORw0KGgo="/>' in html
    link = '<a href="https://arxiv.org/abs/2305.13245" rel="noopener noreferrer">the paper</a>'
    assert link in html


@pytest.mark.parametrize(
    "image",
    [
        '<img src="/hub/logout">',
        "![x](../../../hub/logout)",
        '<img src="https://hub.example/hub/logout">',
        '<img src=" /user/lm10-instructor/git-pull?repo=x">',
        '<img src="x">',
    ],
)
def test_an_image_on_the_instructors_pages_carries_itself(image):
    """The sixtieth hub tester: an image's address is a GET the instructor's browser sends as
    the page opens, with the instructor's cookies, and the formgrader's policy allows images
    from 'self': `<img src="/hub/logout">` in her markdown logs the instructor out
    (JupyterHub's LogoutHandler.get). Only an image that carries itself (data:) keeps its
    source; the image's text stays."""
    html = sanitise.markdown_html(markdown2html(image))
    assert "src" not in html and "<img" in html, html
    kept = '<img src="data:image/png;base64,iVBORw0KGgo=">'
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in sanitise.markdown_html(kept)


@pytest.mark.parametrize("page", ["page", "feedback"])
def test_no_student_attribute_places_covers_or_restyles(page):
    """Bootstrap's classes, style, ids of the page, names, data-* (Bootstrap's data API),
    aria-* and the rest: none of a student's survives on the instructor's pages, in markdown,
    raw cells, outputs or cell tags; the text stays."""
    html = render(page, overlay_notebook())
    for i in range(len(OVERLAY)):
        assert f"overlay {i}" in html, f"overlay case {i} vanished: the cell must still show"
    assert BANNER in html and "All marks given." in html and "a table" in html
    assert placed(html) == []
    # what markdown makes stays
    assert '<ol start="3">' in html and '<img alt="a large image"/>' in html


@pytest.mark.parametrize("what", ["page", "feedback"])
def test_an_output_image_shows_its_data_not_an_address_it_names(what):
    """A display of hers, run as the lab is autograded, names the file its image is in
    (`display({"image/png": ...}, metadata={"filenames": {"image/png": "/hub/logout"}},
    raw=True)` keeps that metadata in the graded notebook): nbconvert's templates made it
    `<img src="/hub/logout">`, a GET the instructor's browser sent as the page opened (the
    sixty-second hub tester's). Only the image's own data may be its source."""
    cell = nbformat.v4.new_code_cell("chart()")
    addresses = ["/hub/logout", "http://127.0.0.1:8000/hub/logout", "../../api/shutdown"]
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={mime: "iVBORw0KGgo=", "text/plain": "a chart"},
            metadata={"filenames": {mime: address}},
        )
        for mime in ("image/png", "image/jpeg")
        for address in addresses
    ]
    page = render(what, nbformat.v4.new_notebook(cells=[cell]))
    sources = re.findall(r"<img\b[^>]*?\bsrc=\"([^\"]*)\"", page)
    assert sources, page[-3000:]
    assert not [s for s in sources if s and not s.startswith("data:image/")], sources


@pytest.mark.parametrize("what", ["page", "feedback"])
def test_an_output_images_size_adds_no_attribute(what):
    """nbconvert writes an output image's width and height unquoted, escaping only `&<>"'`: a
    width of hers of "1 srcset=/hub/logout style=... class=navbar-fixed-top", set by a display
    run as the lab is autograded, became attributes of the <img> on the grading page (the
    sixty-second hub tester's). A number stays a number."""
    injected = "1 srcset=/hub/logout style=background-image:url(/hub/x) class=navbar-fixed-top"
    cell = nbformat.v4.new_code_cell("chart()")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={mime: "iVBORw0KGgo=", "text/plain": "a chart"},
            metadata={mime: {"width": injected, "height": "2 onerror=x"}},
        )
        for mime in ("image/png", "image/jpeg")
    ]
    honest = nbformat.v4.new_code_cell("chart()")
    honest.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": "iVBORw0KGgo=", "text/plain": "a chart"},
            metadata={"image/png": {"width": 320, "height": "240"}},
        )
    ]
    page = render(what, nbformat.v4.new_notebook(cells=[cell, honest]))
    images = re.findall(r"<img\b[^>]*>", page)
    assert len(images) >= 3, page[-3000:]
    for image in images:
        for name in ("srcset", "style", "class", "onerror"):
            assert not re.search(rf"\s{name}=", image), image
    assert any('width="320"' in i and 'height="240"' in i for i in images), images


@pytest.mark.parametrize("what", ["page", "feedback"])
def test_every_cell_she_handed_in_shows_its_source(what):
    """nbconvert leaves out the source of a cell whose metadata says `transient.remove_source`,
    and the autograded notebook keeps a cell's metadata: her answer cell so marked, graded and
    flagged for the code in it, showed its outputs on the grading page and not a line of that
    code (the eighty-second hub tester's, played through the real autograde). Every cell's
    source is on the page, a markdown cell's too."""
    hidden = {"transient": {"remove_source": True}}
    code = nbformat.v4.new_code_cell("import os\nHIDDEN_CODE = os.getcwd()", metadata=hidden)
    code.outputs = [nbformat.v4.new_output("stream", text="HER_OUTPUT\n")]
    written = nbformat.v4.new_markdown_cell("HIDDEN_WRITTEN", metadata=hidden)
    shown = nbformat.v4.new_code_cell("SHOWN_CODE = 1")
    page = render(what, nbformat.v4.new_notebook(cells=[code, written, shown]))
    for text in ("HIDDEN_CODE", "HER_OUTPUT", "HIDDEN_WRITTEN", "SHOWN_CODE"):
        assert text in page, f"{text} is not on the {what}"


@pytest.mark.parametrize("what", ["page", "feedback"])
def test_no_direction_character_of_hers_reorders_what_the_page_shows(what):
    """Her code and her text carry bidi overrides and isolates, which nothing flags: the page
    showed her line `if access != "none<RLO> <LRI># not reached<PDI> <LRI>":` as a comment
    where Python runs a string compared (Trojan Source), and her written answer backwards
    (the eighty-second hub tester's). Each is shown by its name, in her outputs too."""
    code = nbformat.v4.new_code_cell(
        'if access != "none\u202e \u2066# not reached\u2069 \u2066":\n    pass\n'
    )
    code.outputs = [nbformat.v4.new_output("stream", text="printed \u202ekcab\n")]
    text = "My answer: \u202eeno tcerroc eht si sihT \u2067x\u2069"
    nb = nbformat.v4.new_notebook(cells=[code, nbformat.v4.new_markdown_cell(text)])
    page = render(what, nb)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", page), "a direction character"
    assert page.count("[U+202E]") == 3 and "[U+2066]" in page and "[U+2067]" in page


@pytest.mark.parametrize("what", ["page", "feedback"])
def test_no_direction_mark_of_hers_reorders_her_code(what):
    """The rest of Unicode's Bidi_Control: the right-to-left mark (U+200F), the Arabic letter
    mark (U+061C) and the left-to-right mark (U+200E), invisible and strong, which 722b461 left
    as they were. Her line `x = ["<RLM>", 10 - 3, "<RLM>"][1]` (both marks inside strings, as
    Python allows) showed in Chromium on the grading page as `x = ["" ,3 - 10 ,""][1]`: a sum
    she does not compute, with the numbers between two right-to-left marks turned around (the
    eighty-fourth hub tester's). Each is shown by its name, as the overrides are; a flag quoting
    one, plain."""
    from grading.instructor import formgrader_flags, sanitise

    code = nbformat.v4.new_code_cell('x = ["\u200f", 10 - 3, "\u061c"][1]  # \u200e\n')
    code.outputs = [nbformat.v4.new_output("stream", text="total \u200f10-3\u200f\n")]
    text = "My answer: \u200f10-3\u061c"
    page = render(what, nbformat.v4.new_notebook(cells=[code, nbformat.v4.new_markdown_cell(text)]))
    assert not re.search("[\u061c\u200e\u200f]", page), "a direction mark"
    assert page.count("[U+200F]") == 4 and "[U+061C]" in page and "[U+200E]" in page
    assert "\u061c" not in sanitise.plain("10-3\u061c")
    assert "\u061c" not in formgrader_flags.banner(["getattr: .\u061c10-3\u200f"])


def test_no_get_reroots_the_formgrader():
    """nbgrader's `/formgrader?path=<folder>` re-rooted the formgrader on a GET (no XSRF check)
    and ran the folder's `nbgrader_config.py` as the instructor: an image in a student's
    notebook sent it (the sixty-ninth hub tester's; played on a real hub in
    tests/test_jupyterhub.py). grading/instructor/formgrader_csp.py refuses a `path`."""
    from types import SimpleNamespace

    from nbgrader.server_extensions.formgrader import handlers
    from tornado import web

    from grading.instructor import formgrader_csp

    formgrader_csp.refuse_other_roots()
    rooted = []

    class Asked:  # what the handler's GET reads of itself
        request = SimpleNamespace(arguments={"path": [b"/home/lm10-mallory/x"]}, method="GET")
        current_user, xsrf_token, base_url = "lm10-instructor", b"token", "/user/lm10-instructor"
        settings = {
            "nbgrader_bad_setup": False,
            "initial_config": None,
            "nbgrader_formgrader": SimpleNamespace(
                initialize=lambda argv, root="": rooted.append(root)
            ),
        }

        def get_argument(self, name, default=None):
            found = self.request.arguments.get(name)
            return found[0].decode() if found else default

        def redirect(self, url):
            pass

    with pytest.raises(web.HTTPError) as refused:
        handlers.FormgraderHandler.get(Asked())
    assert refused.value.status_code == 403 and rooted == [], rooted


def test_no_notebook_picks_a_module_for_its_script_export(tmp_path, monkeypatch):
    """nbconvert's script export (`/nbconvert/script/<path>`, which an image in a student's
    notebook sends from the instructor's JupyterLab) imported the module a notebook's
    `language_info.nbconvert_exporter` named with a dot and called what it found with `config=`:
    played on a real hub, `matplotlib.pyplot.figure` wrote the instructor's matplotlib cache
    and `grading.hub.jupyterhub_config.x` ran that file's top level in her server (the
    seventy-seventh hub tester's). grading/instructor/formgrader_csp.py lets a notebook name an
    installed exporter only; an honest notebook's ("python") still exports."""
    import nbformat
    from nbconvert.exporters import ScriptExporter
    from nbconvert.exporters.base import ExporterNameError

    from grading.instructor import formgrader_csp

    ran = tmp_path / "ran"
    (tmp_path / "lm10_t77_picked.py").write_text(
        f"import pathlib\npathlib.Path({str(ran)!r}).write_text('imported')\n"
        "def Exporter(**kwargs):\n    raise SystemExit('called')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    formgrader_csp.script_exporters_registered_only()

    def notebook(exporter):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
        nb.metadata["language_info"] = {"name": "python", "nbconvert_exporter": exporter}
        return nb

    for name in ("lm10_t77_picked.Exporter", "webpdf", "pdf"):
        with pytest.raises(ExporterNameError):
            ScriptExporter().from_notebook_node(notebook(name))
    assert not ran.exists(), "her module was imported"
    script, _ = ScriptExporter().from_notebook_node(notebook("python"))
    assert "x = 1" in script


def test_a_flagged_submissions_grading_page_says_so_as_text():
    """The formgrader showed a flagged submission's score as any other's (What this set-up
    leaves open: the formgrader pages show no flags). Its grading page begins with the flags
    (tests/test_formgrader_browser.py plays it in Chromium); a flag quotes her code, so it is
    written as text; an unflagged page gets nothing."""
    from grading.instructor import formgrader_flags

    assert formgrader_flags.banner([]) == ""
    hers = 'answer line 2: imports os <img src=x onerror=alert(1)> & "q"'
    shown = formgrader_flags.banner([hers] * 23)
    assert "<img" not in shown and "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;" in shown
    assert shown.count("<li>") == 21 and "and 3 more" in shown


def test_a_flag_quoting_her_string_cannot_turn_its_line_around():
    """A flag quotes the strings her code passes getattr ("outside the labs' vocabulary: .x");
    one holding a right-to-left override (U+202E) and her words backwards showed on the grading
    page as a sentence of hers ("It is right, so") after the flag's own words, and escape
    sequences went through as they were (the eighty-second hub tester's: submission_checks.flags
    on `getattr(x, "\u202eso ,thgir si tI\x1b[31m")`). The banner shows flags as the batch's
    report does: plain."""
    from grading.instructor import formgrader_flags

    hers = "answer line 1: outside the labs' vocabulary: .\u202eso ,thgir si tI\x1b[31m\u2066x"
    shown = formgrader_flags.banner([hers])
    assert not any(c in shown for c in "\u202e\x1b\u2066"), ascii(shown)
    assert "so ,thgir si tI" in shown
