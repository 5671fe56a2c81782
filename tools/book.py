"""Build the course as a book: the lessons as a static site, read in any browser, offline.

    python tools/book.py [--out build/book] [--hub URL --repo GIT_URL [--branch main]]

writes OUT/html/index.html (`make book`): the start page, the eight lessons rendered from their
stored outputs (never executed), the labs with what each asks and the lesson it follows, search,
mathematics, figures with their alternative text, and the widgets saved with their state. Every
file a page loads is the site's own (MathJax and the widget manager from npm, `make
book-assets`), so it opens from disk and from any static file server, and builds with no network.

Sphinx with myst-nb renders it (book/conf.py). With --hub and --repo, each lesson also links
"Open on the hub": an nbgitpuller link that clones REPO (the student edition's repository,
never this one: it holds the solutions) into the student's home on the hub, or merges its
updates without overwriting the student's edits, and opens the lesson (grading/JUPYTERHUB.md).

Before it finishes, the build checks the site: a figure without alternative text, a page that
loads anything from outside, or a file holding a solution or a hidden test (the student
edition's check, tools/student_edition.py) stops it.
"""

from __future__ import annotations

import argparse
import copy
import html
import json
import re
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: `python tools/book.py`
    sys.path.insert(0, str(ROOT))

from tools import student_edition  # noqa: E402

BOOK = ROOT / "book"
LESSONS = ROOT / "lessons"
LABS = ROOT / "labs"
FIGURES = BOOK / "figures.toml"
NPM = ROOT / ".npm-book" / "node_modules"
# name under _static/vendor/ -> the npm package's folder (make book-assets installs them)
VENDOR = {
    "mathjax": NPM / "mathjax" / "es5",
    "html-manager": NPM / "@jupyter-widgets" / "html-manager" / "dist",
}
# embed.js renders the widgets by itself: the AMD builds (for RequireJS pages) stay out
VENDOR_SKIP = shutil.ignore_patterns("*.map", "*.LICENSE.txt", "node-main.js", "*embed-amd*.js")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
LAB_ROW = re.compile(r"^\|\s*(LM10-L\d+)\s*\|\s*(.+?)\s*\|\s*(.+?)\s*\|\s*$")


@dataclass(frozen=True)
class Hub:
    """Where "Open on the hub" leads: the hub's address and the git repository nbgitpuller
    clones into the student's home (its folder there is the repository's name)."""

    url: str
    repo: str
    branch: str = "main"

    def __post_init__(self):
        hub = urlsplit(self.url)
        if hub.scheme not in ("https", "http") or not hub.hostname:
            raise ValueError(
                f"hub URL {self.url!r}: expected the hub's address, such as "
                "https://hub.example.edu (http or https, with a host name)"
            )
        if hub.query or hub.fragment or re.search(r"\s", self.url):
            raise ValueError(
                f"hub URL {self.url!r}: expected the hub's address alone, without a query, "
                "fragment or spaces, such as https://hub.example.edu"
            )
        if hub.path.rstrip("/").endswith("/hub"):
            raise ValueError(
                f"hub URL {self.url!r}: give the hub's address without its /hub/ path "
                f"(the link adds /hub/user-redirect/git-pull itself)"
            )
        repo = urlsplit(self.repo)
        if (
            repo.scheme not in ("https", "http", "file")
            or (repo.scheme != "file" and not repo.hostname)
            or not self.folder
            or re.search(r"\s", self.repo)
        ):
            raise ValueError(
                f"repository {self.repo!r}: expected the git URL of the student edition's "
                "repository, such as https://git.example.edu/course/lm10.git"
            )
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", self.branch) or self.branch.startswith("-"):
            raise ValueError(f"branch {self.branch!r}: expected a git branch name, such as main")

    @property
    def folder(self) -> str:
        """The folder nbgitpuller clones into, in the student's home: the repository's name
        without .git (the link says so: nbgitpuller's own default would keep the .git)."""
        name = urlsplit(self.repo).path.rstrip("/").rsplit("/", 1)[-1]
        return name.removesuffix(".git")

    def link(self, path: str) -> str:
        """The nbgitpuller link that pulls the repository and opens path (relative to it) in
        JupyterLab."""
        query = urlencode(
            {
                "repo": self.repo,
                "branch": self.branch,
                "targetpath": self.folder,
                "urlpath": f"lab/tree/{self.folder}/{path}",
            }
        )
        return f"{self.url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


# ---- the source folder Sphinx reads ------------------------------------------------------


def figure_texts(path: Path = FIGURES) -> dict[str, list[dict]]:
    """book/figures.toml: lesson (LM10-T2) -> its entries {cell, alt}, in file order."""
    entries: dict[str, list[dict]] = {}
    for entry in tomllib.loads(path.read_text())["figure"]:
        if set(entry) != {"lesson", "cell", "alt"} or not entry["alt"].strip():
            raise ValueError(f"{path.name}: every [[figure]] has lesson, cell and alt: {entry}")
        entries.setdefault(entry["lesson"], []).append(entry)
    return entries


def _shows_figure(cell: dict) -> bool:
    return any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def _shows_widget(cell: dict) -> bool:
    return any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", []))


def lesson_code(path: Path) -> str:
    """LM10-T2 for lessons/LM10-T2-rotary-positions.ipynb."""
    return "-".join(path.stem.split("-")[:2])


def describe_figures(notebook: dict, lesson: str, entries: list[dict]) -> dict:
    """A copy of notebook whose every figure carries its alternative text: a figure cell's image
    through myst-nb's cell metadata, a widget's figure through its view data (`lm10_alt`,
    book/_static/widget-alt.js). Each entry of figures.toml names its cell by a piece of its
    source; a figure without an entry, or an entry matching no cell or several, is an error
    that names it, so a changed lesson cannot lose its descriptions silently."""
    notebook = copy.deepcopy(notebook)
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    drawn = [c for c in cells if _shows_figure(c) or _shows_widget(c)]
    described: set[int] = set()
    for entry in entries:
        matches = [c for c in drawn if entry["cell"] in "".join(c["source"])]
        if len(matches) != 1:
            raise ValueError(
                f"book/figures.toml: {lesson}'s entry cell={entry['cell']!r} matches "
                f"{len(matches)} figure cells of the lesson; it must match exactly one"
            )
        cell = matches[0]
        described.add(id(cell))
        if _shows_figure(cell):
            cell["metadata"].setdefault("mystnb", {})["image"] = {"alt": entry["alt"]}
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output["data"][WIDGET_VIEW]["lm10_alt"] = entry["alt"]
    missing = [c for c in drawn if id(c) not in described]
    if missing:
        first = ["".join(c["source"]).strip().splitlines()[0] for c in missing]
        raise ValueError(
            f"book/figures.toml: {lesson} has figures without alternative text, in the cells "
            f"starting {first}: add a [[figure]] entry saying what each shows"
        )
    return notebook


def links_cell(name: str, hub: Hub | None) -> dict:
    """The Markdown cell put under a lesson's title: its notebook, and the hub where there is
    one."""
    notebook = html.escape(f"../notebooks/{name}")
    links = [f'<a class="lm10-notebook" href="{notebook}" download>Download the notebook</a>']
    if hub is not None:
        address = html.escape(hub.link(f"lessons/{name}"))
        links.append(f'<a class="lm10-hub" href="{address}">Open on the hub</a>')
    else:
        links.append(
            '<span class="lm10-static-note">To run it: <code>make lab</code> in the course</span>'
        )
    return {
        "cell_type": "markdown",
        "id": "lm10-links",
        "metadata": {},
        "source": '<div class="lm10-links">' + " ".join(links) + "</div>\n",
    }


def lesson_page(path: Path, entries: list[dict], hub: Hub | None) -> dict:
    notebook = describe_figures(json.loads(path.read_text()), lesson_code(path), entries)
    notebook["cells"].insert(1, links_cell(path.name, hub))
    return notebook


def lab_rows(readme: Path = ROOT / "README.md") -> dict[str, tuple[str, str]]:
    """The README's table of labs: lab -> (what students do, after which lesson)."""
    rows = {}
    for line in readme.read_text().splitlines():
        match = LAB_ROW.match(line)
        if match:
            rows[match[1]] = (match[2], match[3])
    return rows


def labs_page(labs: Path = LABS, readme: Path = ROOT / "README.md") -> str:
    """The labs as the book lists them: from the released notebooks (labs/, never solutions/),
    each one's title and opening paragraph, with what it asks and the lesson it follows from
    the README's table."""
    rows = lab_rows(readme)
    parts = [
        "# The labs\n",
        "Each lab follows a lesson. You write the answers in the lab's notebook, check them with "
        "*Validate* in JupyterLab and hand the notebook in; it is graded automatically, with "
        "more tests than the ones you see. The labs come with the course (its `labs/` folder, or "
        "the *Assignments* list on your course's hub), not on these pages.\n",
        "| lab | what you do | after lesson |\n|---|---|---|",
    ]
    sections = []
    for path in sorted(labs.glob("LM10-L*/LM10-L*.ipynb")):
        lab = path.parent.name
        if lab not in rows:
            raise ValueError(f"README.md's table of labs has no row for {lab}")
        asks, after = rows[lab]
        parts.append(f"| [{lab}](#{lab.lower()}) | {asks} | {after} |")
        intro = next(
            "".join(c["source"])
            for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "markdown"
        )
        title, _, rest = intro.strip().partition("\n")
        opening = rest.strip().split("\n\n")[0]
        sections.append(
            f"({lab.lower()})=\n## {title.lstrip('# ').strip()}\n\n{opening}\n\n"
            f"*After lesson {after}.* What you hand in: {asks}.\n"
        )
    if len(sections) != len(rows):
        raise ValueError(f"README.md lists labs {sorted(rows)}; labs/ holds {len(sections)}")
    return "\n".join(parts) + "\n\n" + "\n".join(sections)


def _write(path: Path, text: str) -> None:
    """Write only what changed, so Sphinx rebuilds only the pages that did."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def assemble(src: Path, hub: Hub | None) -> None:
    """The Sphinx source folder: book/, the lessons as pages, their notebooks, the labs page."""
    for path in BOOK.rglob("*"):
        if path.is_file() and path != FIGURES and "__pycache__" not in path.parts:
            _write(src / path.relative_to(BOOK), path.read_text())
    texts = figure_texts()
    lessons = sorted(LESSONS.glob("LM10-T*.ipynb"))
    unknown = set(texts) - {lesson_code(p) for p in lessons}
    if unknown:
        raise ValueError(f"book/figures.toml names lessons that do not exist: {sorted(unknown)}")
    for stale in [*(src / "lessons").glob("*.ipynb"), *(src / "extra" / "notebooks").glob("*")]:
        if not (LESSONS / stale.name).exists():
            stale.unlink()
    for path in lessons:
        page = lesson_page(path, texts.get(lesson_code(path), []), hub)
        _write(src / "lessons" / path.name, json.dumps(page, indent=1) + "\n")
        _write(src / "extra" / "notebooks" / path.name, path.read_text())
    _write(src / "labs.md", labs_page())


# ---- checks over the built site ----------------------------------------------------------


class _Resources(HTMLParser):
    """Every address a page loads (script, style sheet, image, frame, media), every image with
    its alt text, and the heading levels of the page's content in order: inside <main>, leaving
    out the theme's print-only copy of the title and its contents (class "onlyprint", hidden on
    screen)."""

    LOADS = {"script", "img", "iframe", "source", "audio", "video", "embed"}
    FETCHED = {"stylesheet", "preload", "modulepreload", "icon", "preconnect", "dns-prefetch"}

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.images: list[dict] = []
        self.headings: list[int] = []
        self._main = 0
        self._hidden: list[str] = []  # the hidden element's tag, once per nested one like it

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.LOADS and attrs.get("src"):
            self.loads.append(attrs["src"])
        if (
            tag == "link"
            and attrs.get("href")
            and set((attrs.get("rel") or "").split()) & (self.FETCHED)
        ):
            self.loads.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs)
        if tag == "main":
            self._main += 1
        print_only = "onlyprint" in (attrs.get("class") or "").split()
        if (self._hidden and tag == self._hidden[0]) or (not self._hidden and print_only):
            self._hidden.append(tag)
        if re.fullmatch(r"h[1-6]", tag) and self._main and not self._hidden:
            self.headings.append(int(tag[1]))

    def handle_endtag(self, tag):
        if tag == "main":
            self._main -= 1
        if self._hidden and tag == self._hidden[0]:
            self._hidden.pop()


def read_page(path: Path) -> _Resources:
    parser = _Resources()
    parser.feed(path.read_text())
    return parser


def outside_loads(site: Path) -> list[str]:
    """'page: address' for every resource a page would fetch from another machine (any
    address with a scheme or starting with //, other than data: URIs)."""
    found = []
    for page in sorted(site.rglob("*.html")):
        for address in read_page(page).loads:
            if re.match(r"^([a-z][a-z0-9+.-]*:|//)", address, re.I) and not address.startswith(
                "data:"
            ):
                found.append(f"{page.relative_to(site)}: {address}")
    css_url = re.compile(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)")
    for sheet in sorted(site.rglob("*.css")):
        found += [f"{sheet.relative_to(site)}: {u}" for u in css_url.findall(sheet.read_text())]
    return found


def images_without_alt(site: Path) -> list[str]:
    """'page: image' for every image of a page without alternative text (an empty alt marks
    decoration, which the lessons' figures are not)."""
    return [
        f"{page.relative_to(site)}: {img.get('src', '')[:80]}"
        for page in sorted(site.rglob("*.html"))
        for img in read_page(page).images
        if not (img.get("alt") or "").strip()
    ]


def check(site: Path) -> None:
    problems = [f"loads from outside: {p}" for p in outside_loads(site)]
    problems += [f"image without alt text: {p}" for p in images_without_alt(site)]
    problems += [
        f"solution or hidden test: {p}"
        for p in student_edition.leaks(site, student_edition.secret_lines())
    ]
    if problems:
        raise SystemExit("the book is not fit to publish:\n  " + "\n  ".join(problems))


def build(out: Path, hub: Hub | None = None, quiet: bool = True) -> Path:
    """Build out/html from out/src (doctrees in out/doctrees); return out/html."""
    from sphinx.cmd.build import build_main

    missing = [str(p) for p in VENDOR.values() if not p.is_dir()]
    if missing:
        raise SystemExit(f"the book's scripts are missing ({', '.join(missing)}): make book-assets")
    src, site = out / "src", out / "html"
    assemble(src, hub)
    if site.exists():  # no page of a lesson that is gone (the doctrees keep the rebuild quick)
        shutil.rmtree(site)
    args = ["-b", "html", "-W", "--keep-going", "-d", str(out / "doctrees"), str(src), str(site)]
    if build_main((["-q"] if quiet else []) + args) != 0:
        raise SystemExit("sphinx-build failed (above)")
    for name, folder in VENDOR.items():
        target = site / "_static" / "vendor" / name
        if not target.exists():
            shutil.copytree(folder, target, ignore=VENDOR_SKIP)
    check(site)
    return site


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "book")
    parser.add_argument("--hub", help="the hub's address, e.g. https://hub.example.edu")
    parser.add_argument("--repo", help="git URL of the student edition's repository")
    parser.add_argument("--branch", default="main", help="its branch (default: main)")
    args = parser.parse_args()
    if bool(args.hub) != bool(args.repo):
        parser.error("--hub and --repo go together: the hub's address and the repository to pull")
    try:
        hub = Hub(args.hub, args.repo, args.branch) if args.hub else None
    except ValueError as error:
        parser.error(str(error))
    start = time.perf_counter()
    site = build(args.out, hub)
    print(f"book: {site / 'index.html'} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
