"""The course as a book (`make book`, tools/book.py): built afresh here, then checked as files and
in Debian's chromium.

As files: every lesson is a page with its figures, mathematics, notebook and "Open on the hub"
link (an nbgitpuller link whose parts are read back); the start page reaches every lesson and the
labs; the labs page lists each lab with what it asks and the lesson it follows, and no file of
the site holds a solution or a hidden test (the student edition's scan); no page loads anything
from another machine; every image has alternative text; headings are in order; the figures'
palette is held to book/ACCESSIBILITY.md. The build runs, too, in a network namespace with no
way out (bubblewrap). Bad hub addresses are refused with the reason. A
lesson's hub link, against nbgitpuller in a student's JupyterLab server, clones the student
edition's repository and later merges an update without losing the student's edits.

In chromium, from a plain static file server and from disk (file://), with every request
outside the site, and every one the site does not answer, counted as a failure: a lesson's
mathematics typeset, a figure loaded with its alt text, a stored widget drawn from its saved
state whose slider moves, search finding the lesson, every lesson's stored widgets drawn, and no
console error. Screenshots of two lesson
pages go to build/screenshots/ (or $LM10_SCREENSHOTS: `LM10_SCREENSHOTS=docs/screenshots`
refreshes the README's).
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from browsing import SHOTS, jupyterlab

from tools import book, colour_vision, student_edition

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("LM10-T*.ipynb"))
HUB = book.Hub("https://hub.example.edu", "https://git.example.edu/course/lm10.git", "main")
WIDGET_LESSON = "LM10-T2-rotary-positions"  # math, figures and a widget of three sliders
SECOND_SHOT = "LM10-T5-kv-cache"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The book built from nothing (no earlier doctrees), with a hub configured."""
    start = time.perf_counter()
    built = book.build(tmp_path_factory.mktemp("book"), HUB)
    print(f"\nthe book built from scratch in {time.perf_counter() - start:.1f} s")
    return built


def page_text(site: Path, page: str) -> str:
    return (site / page).read_text()


def figures_of(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum(
        "image/png" in o.get("data", {})
        for c in cells
        if c["cell_type"] == "code"
        for o in c["outputs"]
    )


def link(text: str, css_class: str) -> str:
    match = re.search(rf'<a class="{css_class}" href="([^"]+)"', text)
    assert match, f"no link of class {css_class}"
    return html.unescape(match[1])


def test_every_lesson_is_a_page_with_its_figures_math_notebook_and_hub_link(site):
    assert LESSONS, "no lessons found"
    for path in LESSONS:
        text = page_text(site, f"lessons/{path.stem}.html")
        title = re.search(r"<h1>(.*?)<a", text, re.S)[1]
        assert title.startswith(book.lesson_code(path)), title
        # every stored figure is on the page, as an image the site serves
        images = [i for i in book.read_page(site / "lessons" / f"{path.stem}.html").images]
        served = [i for i in images if i["src"].startswith("../_images/")]
        assert len(served) == figures_of(path) > 0, path.name
        assert all((site / "lessons" / i["src"]).is_file() for i in served)
        # mathematics left for MathJax, in its delimiters
        if "$" in "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]):
            assert 'class="math' in text, f"{path.name}: no mathematics on the page"
        # the notebook, byte for byte as committed
        notebook = (site / "lessons" / link(text, "lm10-notebook")).resolve()
        assert notebook.read_bytes() == path.read_bytes()
        # "Open on the hub": nbgitpuller's git-pull with the repository, branch, folder, lesson
        hub = urlsplit(link(text, "lm10-hub"))
        assert (hub.scheme, hub.netloc, hub.path) == (
            "https",
            "hub.example.edu",
            "/hub/user-redirect/git-pull",
        )
        assert parse_qs(hub.query, strict_parsing=True) == {
            "repo": [HUB.repo],
            "branch": ["main"],
            "targetpath": ["lm10"],
            "urlpath": [f"lab/tree/lm10/lessons/{path.name}"],
        }


def test_the_book_builds_with_no_network(tmp_path, sandbox_installed):
    """The build in a network namespace of its own (bubblewrap, as the grading sandbox): no
    interface but loopback, so any download, even a DNS lookup, fails it."""
    bwrap = shutil.which("bwrap")
    tool = [sys.executable, "tools/book.py", "--out", str(tmp_path)]
    probe = [sys.executable, "-c", "import socket; socket.getaddrinfo('pypi.org', 443)"]
    walled = [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--"]
    assert subprocess.run([*walled, *probe], capture_output=True, check=False).returncode != 0
    built = subprocess.run([*walled, *tool], capture_output=True, text=True, cwd=ROOT, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "html" / "lessons" / f"{WIDGET_LESSON}.html").is_file()


def test_without_a_hub_a_lesson_links_its_notebook_only():
    cell = book.links_cell("LM10-T1-then-and-now.ipynb", None)
    assert "lm10-notebook" in cell["source"] and "lm10-hub" not in cell["source"]
    assert "lm10-hub" in book.links_cell("LM10-T1-then-and-now.ipynb", HUB)["source"]


def test_the_start_page_reaches_every_lesson_and_the_labs(site):
    text = page_text(site, "index.html")
    for path in LESSONS:
        assert f'href="lessons/{path.stem}.html"' in text, path.stem
    assert 'href="labs.html"' in text


def test_the_labs_page_lists_each_lab_after_its_lesson_and_no_solution(site):
    text = page_text(site, "labs.html")
    rows = book.lab_rows()
    released = sorted(p.name for p in (ROOT / "labs").glob("LM10-L*"))
    assert sorted(rows) == released and len(released) == 6
    for lab, (_, after) in rows.items():
        assert f'id="{lab.lower()}"' in text, lab
        assert f"After lesson {html.escape(after)}." in text, lab
    secrets = student_edition.secret_lines()
    assert len(secrets) > 100, "too few solution lines found: the scan would prove nothing"
    assert student_edition.leaks(site, secrets) == []


def test_the_scan_finds_a_solution_put_into_a_page(site, tmp_path):
    secrets = student_edition.secret_lines()
    page = tmp_path / "labs.html"
    page.write_text(page_text(site, "labs.html") + "\n" + sorted(secrets)[0] + "\n")
    assert len(student_edition.leaks(tmp_path, secrets)) == 1


def test_no_page_loads_anything_from_another_machine(site, tmp_path):
    assert book.outside_loads(site) == []
    (tmp_path / "a.html").write_text(
        '<script src="https://cdn.example.com/x.js"></script><img src="data:image/png;base64,x">'
        '<link rel="preconnect" href="//fonts.example.com"><img src="_images/local.png">'
    )
    (tmp_path / "s.css").write_text("@font-face { src: url('https://fonts.example.com/f.woff') }")
    assert book.outside_loads(tmp_path) == [
        "a.html: https://cdn.example.com/x.js",
        "a.html: //fonts.example.com",
        "s.css: https://fonts.example.com/f.woff",
    ]


def test_every_image_has_alternative_text_saying_what_it_shows(site):
    assert book.images_without_alt(site) == []
    texts = book.figure_texts()
    for path in LESSONS:
        wanted = {e["alt"] for e in texts[book.lesson_code(path)]}
        page = book.read_page(site / "lessons" / f"{path.stem}.html")
        shown = {i["alt"] for i in page.images if i["src"].startswith("../_images/")}
        # each figure's own text (widgets' figures get theirs in the browser)
        assert shown and shown <= wanted, path.name
        assert all(len(alt.split()) >= 12 for alt in shown), "alt text too short to say anything"


def test_a_figure_without_its_text_or_a_stale_entry_stops_the_build():
    path = ROOT / "lessons" / f"{WIDGET_LESSON}.ipynb"
    notebook, entries = json.loads(path.read_text()), book.figure_texts()["LM10-T2"]
    book.describe_figures(notebook, "LM10-T2", entries)  # complete: no error
    with pytest.raises(ValueError, match="figures without alternative text"):
        book.describe_figures(notebook, "LM10-T2", entries[1:])
    stale = [*entries, {"lesson": "LM10-T2", "cell": "plot_not_there(", "alt": "x"}]
    with pytest.raises(ValueError, match="matches 0 figure cells"):
        book.describe_figures(notebook, "LM10-T2", stale)


def test_headings_are_in_order_on_every_page(site):
    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts]
    assert len(pages) >= 12
    for page in pages:
        levels = book.read_page(page).headings
        name = page.relative_to(site)
        assert levels[:1] == [1] and levels.count(1) == 1, f"{name}: one h1 first: {levels}"
        jumps = [(a, b) for a, b in zip(levels, levels[1:], strict=False) if b > a + 1]
        assert jumps == [], f"{name}: a heading skips a level: {jumps}"


@pytest.mark.parametrize(
    ("hub", "repo", "branch", "says"),
    [
        ("hub.example.edu", HUB.repo, "main", "http or https"),
        ("ftp://hub.example.edu", HUB.repo, "main", "http or https"),
        ("https://", HUB.repo, "main", "host name"),
        ("https://hub.example.edu/?next=x", HUB.repo, "main", "without a query"),
        ("https://hub.example.edu/hub/", HUB.repo, "main", "without its /hub/ path"),
        ("https://hub.example.edu", "lm10", "main", "git URL"),
        ("https://hub.example.edu", "https://git.example.edu/", "main", "git URL"),
        ("https://hub.example.edu", HUB.repo, "-x", "branch"),
    ],
)
def test_a_malformed_hub_address_or_repository_is_refused_with_the_reason(hub, repo, branch, says):
    with pytest.raises(ValueError, match=says):
        book.Hub(hub, repo, branch)


def test_make_book_refuses_a_bad_hub_before_building(tmp_path):
    run = functools.partial(
        subprocess.run, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    tool = [sys.executable, "tools/book.py", "--out", str(tmp_path)]
    bad = run([*tool, "--hub", "hub.example.edu", "--repo", HUB.repo])
    assert bad.returncode == 2 and "http or https" in bad.stderr, bad.stderr
    alone = run([*tool, "--hub", "https://hub.example.edu"])
    assert alone.returncode == 2 and "--hub and --repo go together" in alone.stderr
    assert list(tmp_path.iterdir()) == []


def git(repo: Path, *args: str) -> str:
    who = ["-c", "user.name=LM10 instructor", "-c", "user.email=instructor@example.edu"]
    done = subprocess.run(
        ["git", *who, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout


def pull(lab, query: str) -> list[dict]:
    """What nbgitpuller's API streams for a link's query, as the page the link opens asks it."""
    request = urllib.request.Request(
        f"{lab.url}/git-pull/api?{query}", headers={"Authorization": f"token {lab.token}"}
    )
    events = []
    with urllib.request.urlopen(request, timeout=120) as stream:
        for line in stream:
            if line.startswith(b"data: "):
                events.append(json.loads(line[6:]))
    return events


def test_open_on_the_hub_pulls_the_student_edition_and_merges_its_updates(tmp_path):
    """The book's link against nbgitpuller in a student's server (the hub's part of the link,
    /hub/user-redirect/, only sends the student to that server): the first click clones the
    student edition's repository into ~/lm10, a later one merges the instructor's update and
    keeps the student's edit, the student's line winning where both changed the same one."""
    student_edition.build(tmp_path / "edition")
    # named as a hosted repository is, .git at the end; the clone is ~/lm10 all the same
    repo = (tmp_path / "edition" / student_edition.NAME).rename(tmp_path / "lm10.git")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the student edition")
    lesson = LESSONS[1].name
    link = urlsplit(book.Hub("https://hub.example.edu", repo.as_uri()).link(f"lessons/{lesson}"))
    assert link.path == "/hub/user-redirect/git-pull"
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    (scratch / "config").mkdir(parents=True)
    with jupyterlab(home, scratch / "config", scratch) as lab:
        first = pull(lab, link.query)
        assert first[-1]["phase"] == "finished", first
        clone = home / "lm10"
        assert (clone / "lessons" / lesson).read_bytes() == (repo / "lessons" / lesson).read_bytes()
        # the page the link opens sends the student on to the lesson, in JupyterLab
        request = urllib.request.Request(
            f"{lab.url}/git-pull?{link.query}", headers={"Authorization": f"token {lab.token}"}
        )
        with urllib.request.urlopen(request, timeout=60) as page:
            assert f"lab/tree/lm10/lessons/{lesson}" in page.read().decode()
        # the student edits the first line and one in the middle; the instructor changes the
        # first line and the last, and adds a file
        readme = (clone / "README.md").read_text().splitlines()
        middle = len(readme) // 2
        mine = ["# my notes on LM10", *readme[1:middle], "my note", *readme[middle + 1 :]]
        (clone / "README.md").write_text("\n".join(mine) + "\n")
        theirs = ["# LM10, updated", *readme[1:-1], "an instructor's update"]
        (repo / "README.md").write_text("\n".join(theirs) + "\n")
        (repo / "ERRATA.md").write_text("# Errata\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "an update")
        second = pull(lab, link.query)
        assert second[-1]["phase"] == "finished", second
        merged = (clone / "README.md").read_text().splitlines()
        assert merged[0] == "# my notes on LM10" and merged[middle] == "my note"
        assert merged[-1] == "an instructor's update"
        assert (clone / "ERRATA.md").read_text() == "# Errata\n"


def accessibility_table() -> set[tuple[str, str, str]]:
    text = (ROOT / "book" / "ACCESSIBILITY.md").read_text()
    rows = re.findall(r"^\| (protanopia|deuteranopia|tritanopia) \| (\S+) \| (\S+) \|", text, re.M)
    return set(rows)


def test_the_figures_palette_under_colour_vision_deficiencies_is_as_documented():
    # the simulation tells the classic confusion from a safe pair
    assert ("deuteranopia", "green", "red") in colour_vision.confusable(
        {"red": "tab:red", "green": "tab:green"}
    )
    assert colour_vision.confusable({"black": "black", "white": "white"}) == []
    found = set(colour_vision.confusable(colour_vision.palette()))
    assert found == accessibility_table(), (
        f"book/ACCESSIBILITY.md is out of date: newly confusable {found - accessibility_table()}, "
        f"no longer {accessibility_table() - found}"
    )


# ---- in chromium -------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A connection the browser closed (a request it abandoned: see failed) is no error;
        anything else is printed as the standard library does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(folder: Path):
    server = _Server(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def in_site(url: str, base: str, site: Path) -> Path | None:
    """The site's file that `url` names (a folder's index.html), or None where it names none."""
    if not url.startswith(base):
        return None
    path = (site / unquote(urlsplit(url[len(base) :]).path)).resolve()
    if path.is_dir():
        path = path / "index.html"
    return path if path.is_relative_to(site.resolve()) and path.is_file() else None


def failed(request, base: str, site: Path, problems: list[str]) -> None:
    """A request that failed is a problem, except one the browser abandoned because the page
    moved on (net::ERR_ABORTED), whose file the site has: chromium asks for the favicon after
    `load`, so the test's next goto may come first. That says nothing of the site; a missing
    file still does."""
    if request.failure == "net::ERR_ABORTED" and in_site(request.url, base, site):
        return
    problems.append(f"failed: {request.url} {request.failure}")


def open_page(browser, url: str, base: str, site: Path, problems: list[str]):  # noqa: F811
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    page.set_default_timeout(120_000)  # a loaded 2-core machine typesets slowly
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: failed(r, base, site, problems))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status}: {r.url}"))

    def outside(route):
        problems.append(f"outside request: {route.request.url}")
        route.abort()

    page.route(re.compile(rf"^(?!{re.escape(base)}|data:|blob:|about:).*"), outside)
    page.goto(url, wait_until="load")
    return page


def read_a_lesson(page, shots: bool) -> None:
    # mathematics typeset by the site's MathJax, without an error
    page.wait_for_function("() => document.querySelectorAll('mjx-container svg').length > 20")
    assert page.locator("mjx-container [data-mml-node='merror']").count() == 0
    # a figure, loaded, with its alternative text
    figure = page.locator("img[src*='_images/']").first
    figure.scroll_into_view_if_needed()
    assert page.evaluate("img => img.complete && img.naturalWidth > 0", figure.element_handle())
    assert len(figure.get_attribute("alt").split()) >= 12
    # the stored widget, drawn from its saved state: three sliders, its figure described, and a
    # slider that moves (no kernel: the figure stays the stored one)
    widget = page.locator(".jupyter-widgets.widget-vbox").first
    widget.wait_for()
    widget.scroll_into_view_if_needed()
    assert widget.locator(".widget-slider").count() == 3
    inner = widget.locator("img").first
    inner.wait_for()
    assert "widget's figure" in inner.get_attribute("alt")
    readout = widget.locator(".widget-readout").first
    before = readout.inner_text()
    widget.locator(".noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([el, old]) => el.innerText !== old", arg=[readout.element_handle(), before]
    )
    assert int(readout.inner_text()) == int(before) + 2
    if shots:
        SHOTS.mkdir(parents=True, exist_ok=True)
        widget.scroll_into_view_if_needed()
        page.evaluate("() => window.scrollBy(0, -120)")
        page.screenshot(path=str(SHOTS / "book-lesson-widget.png"))


def search_finds(page, base: str, word: str, stem: str) -> None:
    page.goto(f"{base}search.html?q={word}", wait_until="load")
    page.wait_for_function(
        "stem => [...document.querySelectorAll('#search-results a')]"
        ".some(a => a.getAttribute('href').includes(stem))",
        arg=stem,
    )
    # the search page then fetches each result's page for its summary: let it finish
    page.wait_for_load_state("networkidle")


def test_the_book_in_chromium_from_a_static_server_and_from_disk(site, browser):  # noqa: F811
    server = serve(site)
    bases = [f"http://127.0.0.1:{server.server_address[1]}/", site.as_uri() + "/"]
    try:
        for n, base in enumerate(bases):
            problems: list[str] = []
            page = open_page(browser, f"{base}lessons/{WIDGET_LESSON}.html", base, site, problems)
            read_a_lesson(page, shots=n == 0)
            search_finds(page, base, "rotary", WIDGET_LESSON)
            page.goto(f"{base}lessons/{SECOND_SHOT}.html", wait_until="load")
            page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 5")
            if n == 0:
                page.locator("img[src*='_images/']").nth(1).scroll_into_view_if_needed()
                page.evaluate("() => window.scrollBy(0, -200)")
                page.screenshot(path=str(SHOTS / "book-lesson-figure.png"))
            if n == 0:  # every lesson: each stored widget drawn, and nothing else amiss
                for path in LESSONS:
                    page.goto(f"{base}lessons/{path.stem}.html", wait_until="load")
                    views = page.locator(f"script[type='{book.WIDGET_VIEW}']").count()
                    page.wait_for_function(
                        "n => document.querySelectorAll('.widget-subarea > .jupyter-widgets')"
                        ".length === n",
                        arg=views,
                    )
            page.goto(f"{base}index.html", wait_until="load")
            page.close()
            assert problems == [], f"{base}:\n" + "\n".join(problems)
    finally:
        server.shutdown()
