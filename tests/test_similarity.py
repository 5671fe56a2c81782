"""The similarity report (grading/instructor/similarity.py,
`make similarity LAB=...`) on a small class.

A course copy holds the release of LM10-L2 and a class of tests/lab_cases/copying.py: twelve
honest students who wrote their answers independently and one planted copy per kind of
disguise (verbatim, renamed, reformatted and commented, reordered, one function changed, all at
once, padded with statements that do nothing, a copy of a copy), beside a student whose notebook
is not JSON, one who handed in the release untouched, and a hostile pair (a student id and code
that are HTML). The report is built by its command, and then: every planted pair scores at least
the threshold and above every honest pair; a passage half the class writes weighs nothing;
starter code counts for no one; the page escapes everything a submission holds and opens in
Chromium from disk with no console error and no request; nothing outside the report is written;
bad input is refused with a reason. The full measurement (25 honest students a lab, L1, L2 and
L6) is benchmarks/similarity.py.
"""

import copy
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from browsing import VIEWPORT
from lab_cases import copying

from grading.host import submission_checks
from grading.instructor import csvout, similarity

ROOT = Path(__file__).resolve().parents[1]
LAB = "LM10-L2"
HOSTILE = "<img src=x onerror=alert(1)>"
SCRIPT = "</pre><script>alert(2)</script>"


def run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "grading.instructor.similarity", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def listing(root):
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    (root / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", root / "labs" / LAB)
    students, planted, family = copying.build(LAB, honest=12, copies=1)
    released = copying.release(LAB)
    hostile = dict(students["honest-11"])
    hostile["l2_serving"] += (
        f"\n\n# {SCRIPT}\ndef spare_bytes(gpu, weights):\n    return gpu - weights\n"
    )
    students[HOSTILE] = hostile
    students["copy-of-hostile"] = dict(hostile)
    planted.append((HOSTILE, "copy-of-hostile", "verbatim"))  # both copied honest-11
    family.update({"honest-11": "honest-11", HOSTILE: "honest-11", "copy-of-hostile": "honest-11"})
    grading = root / "grading"
    for student, answers in students.items():
        folder = grading / "submitted" / student / LAB
        folder.mkdir(parents=True)
        nbformat.write(copying.notebook(LAB, answers, released), folder / f"{LAB}.ipynb")
    for student in ("blank-0", "blank-1"):  # the release as it was handed out
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", grading / "submitted" / student / LAB)
    (grading / "submitted" / "broken" / LAB).mkdir(parents=True)
    (grading / "submitted" / "broken" / LAB / f"{LAB}.ipynb").write_text("{not json")
    before = listing(root)
    start = time.monotonic()
    done = run(LAB, "--grading", str(grading), cwd=root)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"similarity report of {len(students) + 3} submissions in {seconds:.1f} s")
    with open(grading / "reports" / f"{LAB}-similarity.csv", newline="") as handle:
        rows = list(csvout.DictReader(handle))
    return {
        "root": root,
        "grading": grading,
        "students": students,
        "planted": planted,
        "family": family,
        "new": listing(root) - before,
        "page": grading / "reports" / f"{LAB}-similarity.html",
        "csv": rows,
        "stdout": done.stdout,
    }


def scores(report):
    assert tuple(report["csv"][0]) == similarity.COLUMNS
    return {frozenset((r["student"], r["other"])): float(r["score"]) for r in report["csv"]}


def test_planted_copies_rank_above_every_honest_pair(report):
    got = scores(report)
    family = report["family"]
    names = sorted(report["students"])
    honest = {
        frozenset((a, b)): got.get(frozenset((a, b)), 0.0)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if family.get(a, a) != family.get(b, b)
    }
    planted = {(a, b, kind): got.get(frozenset((a, b)), 0.0) for a, b, kind in report["planted"]}
    kinds = {kind for _, _, kind in report["planted"]}
    assert set(copying.DISGUISES) <= kinds | {"copy of a copy"}
    assert min(planted.values()) >= similarity.THRESHOLD, planted
    assert min(planted.values()) > max(honest.values()), (
        min(planted.items(), key=lambda kv: kv[1]),
        max(honest.items(), key=lambda kv: kv[1]),
    )
    assert f"at or above {similarity.THRESHOLD}" in report["stdout"]


def test_starter_code_counts_for_no_one_and_broken_notebooks_are_listed(report):
    got = scores(report)
    assert not [pair for pair in got if pair & {"blank-0", "blank-1"}]
    text = report["page"].read_text()
    assert "broken" in text and "not read: " in text


def test_a_passage_half_the_class_writes_weighs_nothing():
    """Two honest students share one part; half the class then adds the same long helper. The
    weight the pair shares stays what it was (to the seams where the helper meets each one's
    own code) and its score does not grow, while copydetect's plain share grows."""
    students, _, _ = copying.build(LAB, honest=12, copies=0)
    starter = similarity.starter_texts(copying.release(LAB))
    texts = {s: similarity.answer_text(copying.notebook(LAB, a)) for s, a in students.items()}
    helper = (
        "\n\ndef fits(free_bytes, request_bytes):\n"
        "    assert request_bytes > 0, 'a request needs memory'\n"
        "    whole = free_bytes // request_bytes if free_bytes > 0 else 0\n"
        "    return whole\n"
    )
    common = dict(texts)
    for s in sorted(texts)[: len(texts) // 2]:
        common[s] += helper
    pair = frozenset(("honest-00", "honest-05"))  # method 0 of the first part, both

    def score(class_texts):
        _, pairs, *_ = similarity.match(starter, class_texts)
        found = {frozenset((p.a, p.b)): p for p in pairs}
        return found.get(pair, similarity.Pair("", "", 0.0, 0.0, 0.0, 0, 0))

    alone, shared = score(texts), score(common)
    # only the seams where the helper meets each one's own code are new
    assert shared.shared_weight == pytest.approx(alone.shared_weight, rel=0.05)
    assert alone.shared_weight > 0
    assert shared.score <= alone.score  # the helper's seams make each a little larger
    assert shared.score < similarity.THRESHOLD
    assert shared.plain_share > alone.plain_share
    # and the weights themselves: nothing from half the class up, most for two alone
    weights = similarity.rarity_weights([2, 5, 11, 12, 20], 22)
    assert list(weights[2:]) == [0.0, 0.0, 0.0] and weights[0] > weights[1] > 0


def test_renaming_and_comments_change_nothing_and_reformatting_little():
    students, _, _ = copying.build(LAB, honest=12, copies=0)
    starter = similarity.starter_texts(copying.release(LAB))
    texts = {s: similarity.answer_text(copying.notebook(LAB, a)) for s, a in students.items()}
    original = students["honest-03"]
    commented = {
        g: "".join(
            f"{line}  # see the lesson\n" if line.strip() else "\n" for line in s.split("\n")
        )
        for g, s in original.items()
    }
    copies = {
        "renamed": copying.disguise("renamed", original, LAB),
        "commented": commented,
        "reformatted": copying.disguise("reformatted", original, LAB),
    }
    for name, answers in copies.items():
        texts[name] = similarity.answer_text(copying.notebook(LAB, answers))
    assert texts["commented"].count("# see the lesson") > 10
    _, pairs, *_ = similarity.match(starter, texts)
    found = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert found[frozenset(("honest-03", "renamed"))] == pytest.approx(1.0)
    assert found[frozenset(("honest-03", "commented"))] == pytest.approx(1.0)
    assert found[frozenset(("honest-03", "reformatted"))] >= 0.9


class Page(HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.tags, self.attributes = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value) for name, value in attrs]


def test_the_page_explains_and_escapes(report):
    text = report["page"].read_text()
    page = Page(text)
    assert page.tags.count("script") == 1  # the sorting script of the class report's pages
    assert not [a for a in page.attributes if a[1].startswith("on")]
    assert "img" not in page.tags
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in text
    assert "never a verdict" in text and "nothing of it reaches students" in text
    assert "weighs log2(" in text and "mark" in page.tags
    clusters = text.split("<h2>Clusters</h2>")[1].split("<h2>")[0]
    for a, b, _ in report["planted"]:
        assert similarity.esc(a) in clusters and similarity.esc(b) in clusters


def test_only_the_report_is_written(report):
    assert report["new"] == {
        "grading/reports",
        f"grading/reports/{LAB}-similarity.html",
        f"grading/reports/{LAB}-similarity.csv",
    }


def refused(capsys, *args):
    """The command's exit status and what it wrote to stderr (run in this process)."""
    with pytest.raises(SystemExit) as stopped:
        similarity.main(list(args))
    return stopped.value.code, capsys.readouterr().err


def test_bad_input_is_refused_with_a_reason(report, tmp_path, capsys):
    grading = str(report["grading"])
    code, said = refused(capsys)
    assert code == 2 and "lab" in said
    code, said = refused(capsys, "LM10-L9", "--grading", grading)
    assert code == 2 and "no released notebook" in said and "make release LAB=LM10-L9" in said
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    code, said = refused(capsys, LAB, "--grading", str(tmp_path / "grading"))
    assert code == 2 and f"no submissions of {LAB}" in said
    code, said = refused(capsys, "../x", "--grading", grading)
    assert code == 2 and "folder name" in said
    code, said = refused(capsys, LAB, "--threshold", "2", "--grading", grading)
    assert code == 2 and "threshold" in said


def test_the_page_opens_in_chromium_and_requests_nothing(report, browser):  # noqa: F811
    page = browser.new_page(viewport=VIEWPORT)
    requests, problems = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(report["page"].as_uri())
    assert problems == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert page.locator("details[open] mark").count() > 0
    assert page.evaluate("document.querySelectorAll('script').length") == 1
    # the pairs table sorts by a click on a heading (the page's one script runs)
    table = page.locator("table.sortable").first
    table.locator("th", has_text="score").click()
    shown = [float(v) for v in table.locator("tbody tr td:nth-child(4)").all_text_contents()]
    assert shown == sorted(shown)
    page.close()


def test_the_class_report_s_section_links_the_page(report, tmp_path):
    """What `make report` puts on the lab's page (grading/instructor/class_report.py calls it)."""
    text = similarity.section(LAB, report["grading"], tmp_path)
    page = Page(text)
    assert ("a", "href", f"{LAB}-similarity.html") in page.attributes
    assert (tmp_path / f"{LAB}-similarity.html").is_file()
    linked = sum(float(r["score"]) >= similarity.THRESHOLD for r in report["csv"])
    assert f"{linked} pairs of submissions score {similarity.THRESHOLD} or more" in text
    assert "never a verdict" in text and "<img" not in text
    empty = tmp_path / "empty"
    (empty / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", empty / "labs" / LAB)
    assert f"Not built: no submissions of {LAB}" in similarity.section(LAB, empty / "grading")


def test_a_huge_submission_is_compared_in_part_and_says_so(report, monkeypatch):
    monkeypatch.setattr(similarity, "MAX_CHARS", 2_000)
    _, texts, problems = similarity.read_class(LAB, report["grading"])
    cut = [s for s, why in problems.items() if why.startswith("only the first 2,000 characters")]
    assert cut and all(len(texts[s]) == 2_000 for s in cut)
    assert "broken" in problems and "broken" not in texts


def test_her_answers_count_by_the_release_s_grade_ids_and_her_added_cells_count(tmp_path):
    """Which cells are answers is the release's word (the forty-fourth hub tester): a verbatim
    copy whose answer cells say `solution: false` (nbgrader grades them by their grade ids all
    the same), and a copy moved into code cells she added after the release's starter code
    (grading runs those as hers), are each paired with the original; the release's setup and
    tests, and the honest class's pairs, stay as they were."""
    students, _, _ = copying.build(LAB, honest=8, copies=0, kinds=())
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    grading = tmp_path / "grading"
    unmarked = copying.notebook(LAB, students["honest-03"], released)
    for cell in unmarked.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.metadata["nbgrader"]["solution"] = False
    moved = copy.deepcopy(released)
    answers = copying.notebook(LAB, students["honest-05"], released)
    for at in reversed(range(len(moved.cells))):
        if moved.cells[at].metadata.get("nbgrader", {}).get("solution"):
            theirs = answers.cells[at].source
            moved.cells.insert(at + 1, nbformat.v4.new_code_cell(theirs))
    class_ = {s: copying.notebook(LAB, a, released) for s, a in students.items()}
    class_ |= {"unmarked": unmarked, "moved": moved}
    for student, nb in class_.items():
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / LAB / f"{LAB}.ipynb")
    starter, texts, problems = similarity.read_class(LAB, grading)
    assert not problems
    _, pairs, _ = similarity.match(starter, texts)
    got = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert got[frozenset(("honest-03", "unmarked"))] >= 0.99
    assert got[frozenset(("honest-05", "moved"))] >= 0.99
    # an honest notebook's text is what its own solution cells gave before
    assert all(texts[s] == similarity.answer_text(class_[s]) for s in students)
    assert similarity.starter_texts(released) == (
        similarity.release_text(released),
        similarity.answer_text(released),
    )
    honest = [score for pair, score in got.items() if not pair & {"unmarked", "moved"}]
    assert honest and max(honest) < similarity.THRESHOLD


def test_her_answer_cells_count_whatever_type_she_gives_them(tmp_path):
    """The fifty-third hub tester: a verbatim copy whose answer cells she typed markdown or raw
    (grade ids kept). nbgrader gives each the release's type back (OverwriteCells) and runs it:
    graded 10.0 of 13.0 like the original, nothing flagged, and the page read nothing of it
    (its text empty, no pair). Each is paired with the original now; the honest class's pairs
    stay below the threshold."""
    students, _, _ = copying.build(LAB, honest=8, copies=0, kinds=())
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    grading = tmp_path / "grading"
    class_ = {s: copying.notebook(LAB, a, released) for s, a in students.items()}
    for kind in ("markdown", "raw"):
        typed = copying.notebook(LAB, students["honest-03"], released)
        for cell in typed.cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.cell_type = kind
                cell.pop("outputs", None)
                cell.pop("execution_count", None)
        class_[kind] = typed
    for student, nb in class_.items():
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / LAB / f"{LAB}.ipynb")
    starter, texts, problems = similarity.read_class(LAB, grading)
    assert not problems
    assert texts["markdown"] == texts["raw"] == texts["honest-03"]
    _, pairs, _ = similarity.match(starter, texts)
    got = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert got[frozenset(("honest-03", "markdown"))] >= 0.99
    assert got[frozenset(("honest-03", "raw"))] >= 0.99
    honest = [score for pair, score in got.items() if not pair & {"markdown", "raw"}]
    assert honest and max(honest) < similarity.THRESHOLD


def test_statements_that_do_nothing_are_left_out_and_nothing_else():
    """The padding of the forty-eighth hub tester's copy (a statement that does nothing after
    each of hers, 0.23 against its original before, 1.0 now: the `padded` disguise above) is
    cut; a docstring, a store into a name read anywhere in her cells, a call of her own or a
    method's are kept; a cell that does not parse is left as it is; the columns the cut needs
    are counted as Python counts them (UTF-8 bytes, lines ended at a form feed by nothing)."""
    first = (
        'def f(x):\n    """\u00e9t\u00e9"""\n    y = "\u00e9\u00e9"; _ = 1\n\x0c    pass\n'
        "    0\n    len(())\n    unused = (0, None)\n    x.append(1)\n    g(y)\n"
        "    kept = 2\n    return y\n"
    )
    second = "z = kept\nprint(2)\n"
    cut = similarity.without_idle([first, second, "def broken(:\n    pass\n"])
    assert cut == [
        'def f(x):\n    """\u00e9t\u00e9"""\n    y = "\u00e9\u00e9"; \n    x.append(1)\n'
        "    g(y)\n    kept = 2\n    return y",
        "z = kept",
        "def broken(:\n    pass\n",
    ]


def test_a_copy_in_cells_carrying_the_tests_ids_counts(tmp_path):
    """The fifty-third hub tester: a verbatim copy of a classmate's answers in code cells of her
    own that carry a test cell's grade id (its nbgrader metadata copied), each put just before
    that test, the answer cells left with the release's starter code. nbgrader's
    DeduplicateIds keeps the id of the last cell of an id and strips hers: her cells ran as
    hers, graded 10.0 of 13.0 like the original, nothing flagged; the page skipped each as the
    test it named and paired it with no one. It is paired with the original now."""
    students, _, _ = copying.build(LAB, honest=8, copies=0, kinds=())
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    grading = tmp_path / "grading"
    class_ = {s: copying.notebook(LAB, a, released) for s, a in students.items()}
    marks = [c.metadata.get("nbgrader", {}) for c in class_["honest-03"].cells]
    theirs = {
        m["grade_id"]: c.source
        for m, c in zip(marks, class_["honest-03"].cells, strict=True)
        if m.get("solution")
    }
    cells, pending = [], []
    for cell in copy.deepcopy(released).cells:
        mark = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and mark.get("solution"):
            pending.append(theirs[mark["grade_id"]])
        elif cell.cell_type == "code" and mark.get("grade") and pending:
            twin = nbformat.v4.new_code_cell("\n\n".join(pending))
            twin.metadata = copy.deepcopy(cell.metadata)
            cells.append(twin)
            pending = []
        cells.append(cell)
    hidden = copy.deepcopy(released)
    hidden.cells = cells
    class_["hidden"] = hidden
    for student, nb in class_.items():
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / LAB / f"{LAB}.ipynb")
    starter, texts, problems = similarity.read_class(LAB, grading)
    assert not problems
    _, pairs, _ = similarity.match(starter, texts)
    got = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert got[frozenset(("honest-03", "hidden"))] >= 0.99
    honest = [score for pair, score in got.items() if "hidden" not in pair]
    assert honest and max(honest) < similarity.THRESHOLD
    # the release's own cells keep their ids: its tests are still skipped as the release's
    assert similarity.kept_ids(released) == set(range(len(released.cells)))


# honest-03's answers of LM10-L2 as lambdas stored in the names the tests call (the helpers
# passed as a default named like a builtin, so that no call names a function of hers)
LAMBDAS = {
    "l2_attention": "attention_parameters = lambda d, heads, kv_heads: d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))\n",  # noqa: E501
    "l2_cache": "cache_bytes_per_token = lambda layers, kv_heads, head_dim, bytes_per_number=2: bytes_per_number * (kv_heads * 2 * head_dim * layers)\n",  # noqa: E501
    "l2_flops": "attention_flops_per_token = lambda d, heads, kv_heads, layers, context: layers * ((d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))) * 2 + d * (4 * context))\n",  # noqa: E501
    "l2_compare": "compare_variants = lambda d, heads, layers, gqa_kv_heads, context, len=lambda d, heads, layers, context, k0: {'parameters': layers * (d * d + (d * (d // heads * k0) + (d * d + d // heads * k0 * d))), 'cache_bytes': 2 * (k0 * 2 * (d // heads) * layers), 'flops': layers * ((d * d + (d * (d // heads * k0) + (d * d + d // heads * k0 * d))) * 2 + d * (4 * context))}: {'MHA': len(d, heads, layers, context, heads), 'GQA': len(d, heads, layers, context, gqa_kv_heads), 'MQA': len(d, heads, layers, context, 1)}\n",  # noqa: E501
    "l2_serving": "max_concurrent_requests = lambda gpu_bytes, weight_bytes, per_token, tokens_per_request: max(0, gpu_bytes - weight_bytes) // (per_token * tokens_per_request)\n",  # noqa: E501
}


def test_answers_written_as_lambdas_are_read(tmp_path):
    """The fifty-fifth hub tester: answers written as lambdas stored in the names the tests
    call, calling nothing but builtins (a helper passed as a default named `len`). Each store
    was idle (a value that calls nothing, in a name no cell of hers reads): graded 10.0 of 13.0
    by the real autograde, nothing flagged, and the page read nothing of it (its text the grade
    ids alone), so a verbatim copy of it (renamed) was paired with no one. A lambda is code
    she wrote: the pair scores 1.0 now, the honest class's pairs stay below the threshold."""
    students, _, _ = copying.build(LAB, honest=8, copies=0, kinds=())
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    grading = tmp_path / "grading"
    class_ = {s: copying.notebook(LAB, a, released) for s, a in students.items()}
    renamed = {g: s.replace("heads", "h").replace("layers", "n") for g, s in LAMBDAS.items()}
    class_["lambdas"] = copying.notebook(LAB, LAMBDAS, released)
    class_["copy"] = copying.notebook(LAB, renamed, released)
    for student, nb in class_.items():
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / LAB / f"{LAB}.ipynb")
    starter, texts, problems = similarity.read_class(LAB, grading)
    assert not problems
    assert "lambda" in texts["lambdas"] and "max_concurrent_requests" in texts["copy"]
    _, pairs, _ = similarity.match(starter, texts)
    got = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert got.get(frozenset(("lambdas", "copy")), 0.0) >= 0.99
    honest = [score for pair, score in got.items() if not pair & {"lambdas", "copy"}]
    assert honest and max(honest) < similarity.THRESHOLD


def test_answers_bound_in_a_bare_annotation_are_read(tmp_path):
    """The fifty-fifth hub tester: the same answers each bound by a walrus in a bare annotation
    (`_: (max_concurrent_requests := lambda ...)`, evaluated at the top of a cell). A store
    with no value was idle whatever its annotation ran: graded 10.0 of 13.0, nothing
    flagged, and a renamed copy was paired with no one. It scores 1.0 now."""
    students, _, _ = copying.build(LAB, honest=8, copies=0, kinds=())
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    grading = tmp_path / "grading"
    annotated = {
        g: re.sub(r"^(\w+) = (lambda.*)$", r"_: (\1 := \2)", s.rstrip("\n")) + "\n"
        for g, s in LAMBDAS.items()
    }
    assert all(s.startswith("_: (") for s in annotated.values())
    renamed = {g: s.replace("heads", "h").replace("layers", "n") for g, s in annotated.items()}
    class_ = {s: copying.notebook(LAB, a, released) for s, a in students.items()}
    class_["annotated"] = copying.notebook(LAB, annotated, released)
    class_["copy"] = copying.notebook(LAB, renamed, released)
    for student, nb in class_.items():
        (grading / "submitted" / student / LAB).mkdir(parents=True)
        nbformat.write(nb, grading / "submitted" / student / LAB / f"{LAB}.ipynb")
    starter, texts, problems = similarity.read_class(LAB, grading)
    assert not problems
    assert ":= lambda" in texts["annotated"] and "max_concurrent_requests" in texts["copy"]
    _, pairs, _ = similarity.match(starter, texts)
    got = {frozenset((p.a, p.b)): p.score for p in pairs}
    assert got.get(frozenset(("annotated", "copy")), 0.0) >= 0.99
    honest = [score for pair, score in got.items() if not pair & {"annotated", "copy"}]
    assert honest and max(honest) < similarity.THRESHOLD
    # a plain annotation stays idle
    assert similarity.without_idle(["x: int\ny: list[int] = []\n"]) == [""]


def test_a_value_only_the_tests_read_is_her_answer():
    """A store into a name no cell of hers reads is cut, unless the release's code reads the
    name: a test reads her answer by its name (`head_dim = 64 // 4`, no call in it)."""
    cells = ["head_dim = 64 // 4\nscratch = 3\n"]
    assert similarity.without_idle(cells, {"head_dim"}) == ["head_dim = 64 // 4"]
    assert similarity.without_idle(cells) == [""]
    released = nbformat.read(ROOT / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    reads = similarity.names_read(similarity._parsed(similarity.release_sources(released)))
    assert {"attention_parameters", "cache_bytes_per_token"} <= reads


# honest-03's first two answers, their code moved into generator expressions stored in a class
# body and taken by next(C.g) (the fifty-seventh hub tester's)
IN_CLASSES = {
    "l2_attention": 'def attention_parameters(d, heads, kv_heads):\n    """Parameters."""\n    class C:\n        g = (d * d + (d * kw0 + (d * d + kw0 * d)) for _ in range(1) for kw0 in [d // heads * kv_heads])\n\n    return next(C.g)\n',  # noqa: E501
    "l2_cache": "def cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_number=2):\n    class C:\n        g = (bytes_per_number * tn1 for _ in range(1) for npl0 in [kv_heads * 2 * head_dim] for tn1 in [npl0 * layers])\n\n    return next(C.g)\n",  # noqa: E501
}


def test_answers_in_a_class_s_namespace_are_read(tmp_path):
    """The fifty-seventh hub tester: each answer's code in a generator expression stored in a
    class body (`class C: g = (... for _ in range(1))`, `return next(C.g)`), calling nothing but
    builtins. The store was idle (a name no statement reads: the class's names are read as its
    attributes) and a generator expression counted as calling nothing, so the page read the
    answers' signatures and `class C:` alone: graded 10.0 of 13.0 by the real autograde, nothing
    flagged. A store in a class's namespace is never idle, nor is a generator expression (its
    code runs later, as a lambda's)."""
    namespace = {}
    for source in IN_CLASSES.values():
        exec(source, namespace)
    assert namespace["attention_parameters"](64, 4, 2) == PARAMETERS
    assert namespace["cache_bytes_per_token"](2, 2, 16) == 2 * 2 * 2 * 16 * 2
    released = copying.release(LAB)
    (tmp_path / "labs" / LAB).mkdir(parents=True)
    shutil.copy(ROOT / "labs" / LAB / f"{LAB}.ipynb", tmp_path / "labs" / LAB)
    folder = tmp_path / "grading" / "submitted" / "classes" / LAB
    folder.mkdir(parents=True)
    nbformat.write(copying.notebook(LAB, IN_CLASSES, released), folder / f"{LAB}.ipynb")
    _, texts, problems = similarity.read_class(LAB, tmp_path / "grading")
    assert not problems
    assert "d * kw0 + (d * d + kw0 * d)" in texts["classes"]
    assert "bytes_per_number * tn1" in texts["classes"]
    # a generator expression stored in a name nobody reads is kept too; a plain value is not
    kept = similarity.without_idle(["g = (d * d for _ in range(1))\nx = 64 // 4\n"])
    assert kept == ["g = (d * d for _ in range(1))"]


PARAMETERS = 64 * 64 + 64 * 32 + 64 * 64 + 32 * 64  # attention_parameters(64, 4, 2)


def computes_and_is_read(cell, fragment):
    """The cell's `attention_parameters` computes the count, and `fragment` (where its formula
    is) survives the cut of idle statements."""
    namespace = {}
    exec(cell, namespace)
    assert namespace["attention_parameters"](64, 4, 2) == PARAMETERS
    assert fragment in similarity.without_idle([cell])[0], fragment


def test_an_operation_on_a_value_of_hers_is_never_idle():
    """The fifty-seventh hub tester: the formula as the operand of an operator on an object of
    hers (`r << formula`, her class's `__lshift__` keeping the value, `return r.value`): the
    statement called nothing and was cut, the formula with it. An operator, a subscript or an
    attribute on a name's value may call her method: kept; on constants alone it is still cut."""
    cell = (
        "class Box:\n    def __lshift__(self, value):\n        self.value = value\n\n\n"
        "def attention_parameters(d, heads, kv_heads):\n    r = Box()\n"
        "    r << d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))\n"
        "    return r.value\n"
    )
    computes_and_is_read(cell, "r << d * d + (d * (d // heads")
    box = cell.split("def attention_parameters")[0]
    for kept in ("r < 2 * d", "r[d]", "r.value", "unused = -r", "print(f'{r}')"):
        assert similarity.without_idle([box, kept])[1] == kept, kept
    # a builtin given a value of hers calls her method too (`round(r, n)` calls her
    # `__round__(n)`, `len(r)` her `__len__`), or raises on it (`pow(bit, -1)` when the bit
    # is 0): a formula of builtins' calls alone, handed on so, was cut with its statement
    for kept in ("round(r, pow(d, 2))", "len(r)", "pow(bit, -1)", "x", "_ = abs(d)"):
        assert similarity.without_idle([box, kept])[1] == kept, kept
    for cut in ("1 + 2", "unused = 64 // 4", "print(len(()))", "_ = pow(2, 8)"):
        assert similarity.without_idle([box, cut])[1] == "", cut
    # with no class of hers, an operation on a name may raise, and a `try` reads that: her
    # function rebuilt the formula's value bit by bit (`1 // (formula >> k & 1)`)
    bits = (
        "def attention_parameters(d, heads, kv_heads):\n    total = 0\n"
        "    for k in range(64):\n        try:\n"
        "            1 // ((d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))) >> k & 1)\n"  # noqa: E501
        "            total += 1 << k\n        except ZeroDivisionError:\n            pass\n"
        "    return total\n"
    )
    computes_and_is_read(bits, "1 // ((d * d + (d * (d // heads")
    # her names count whatever they are named: locals named like builtins
    builtin_named = (
        "def attention_parameters(d, heads, kv_heads):\n"
        "    int, str, list = d, heads, kv_heads\n    total = 0\n"
        "    for round in range(64):\n        try:\n"
        "            1 // ((int * int + (int * (int // str * list) + (int * int + int // str * list * int))) >> round & 1)\n"  # noqa: E501
        "            total += 1 << round\n        except ZeroDivisionError:\n            pass\n"
        "    return total\n"
    )
    computes_and_is_read(builtin_named, "1 // ((int * int + (int * (int // str")
    # so a padding of `_ = d * 1` is kept, as a padding of calls of hers is ("What this set-up
    # leaves open"); of constants alone it is cut
    assert similarity.without_idle(["_ = d * 1"]) == ["_ = d * 1"]
    # a lookup with a name in its key may keep the key, with no class of hers (`defaultdict`)
    seen = (
        "from collections import defaultdict\n\n\n"
        "def attention_parameters(d, heads, kv_heads):\n    seen = defaultdict(int)\n"
        "    seen[d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))]\n"
        "    return list(seen)[0]\n"
    )
    computes_and_is_read(seen, "seen[d * d + (d * (d // heads")
    assert similarity.without_idle(["_ = (1, 2)[0]"]) == [""]
    # a builtin given a function of hers calls it: `max(..., key=seen.append)` keeps the value
    key = (
        "def attention_parameters(d, heads, kv_heads):\n    seen = []\n"
        "    max([d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))],"
        " key=seen.append)\n    return seen[0]\n"
    )
    computes_and_is_read(key, "max([d * d + (d * (d // heads")
    assert similarity.without_idle(["max([1, 2], key=abs)"]) == [""]
    # a comprehension that stores into an item keeps the value
    stored = (
        "def attention_parameters(d, heads, kv_heads):\n    seen = [0]\n"
        "    [0 for seen[0] in [d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))]]\n"  # noqa: E501
        "    return seen[0]\n"
    )
    computes_and_is_read(stored, "[0 for seen[0] in [d * d")
    assert similarity.without_idle(["[0 for x in [1, 2]]"]) == [""]
    # an augmented assignment reads its target: `seen += [...]` extends the list `kept` names
    extended = (
        "def attention_parameters(d, heads, kv_heads):\n    seen = kept = []\n"
        "    seen += [d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))]\n"  # noqa: E501
        "    return kept[0]\n"
    )
    computes_and_is_read(extended, "seen += [d * d + (d * (d // heads")
    # a class of hers with no dunder: a library base's operator may call her property
    # (`UserList`'s `+` sets `data` on a new instance of her subclass)
    user_data = (
        "from collections import UserList\n\nlast = []\n\n\nclass Box(UserList):\n"
        "    data = property(lambda self: last[-1], lambda self, value: last.append(value))\n"
        "\n\ndef attention_parameters(d, heads, kv_heads):\n    r = Box()\n"
        "    r + [d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))]\n"
        "    return last[-1][0]\n"
    )
    computes_and_is_read(user_data, "r + [d * d + (d * (d // heads")
    # her `__init__` is such a method: a `UserList`'s `+` makes an instance of her subclass
    user_list = (
        "from collections import UserList\n\n\nclass Box(UserList):\n"
        "    def __init__(self, data=()):\n        super().__init__(data)\n"
        "        Box.last = data\n\n\n"
        "def attention_parameters(d, heads, kv_heads):\n    r = Box()\n"
        "    r + [d * d + (d * (d // heads * kv_heads) + (d * d + d // heads * kv_heads * d))]\n"
        "    return Box.last[0]\n"
    )
    computes_and_is_read(user_list, "r + [d * d + (d * (d // heads")
    # a method an operation calls, named in a string (`type`'s namespace) counts too
    made = "Box = type('Box', (), {'__lshift__': print})\n"
    assert similarity.without_idle([made, "r << d * d"])[1] == "r << d * d"


SYMBOLS = """def combine(s, other, how):
    g = other.f if isinstance(other, Sym) else (lambda a: other)
    return Sym(lambda a: how(s.f(a), g(a)))


class Sym:
    def __init__(self, f):
        self.f = f

    def __add__(self, other):
        return combine(self, other, lambda x, y: x + y)

    def __mul__(self, other):
        return combine(self, other, lambda x, y: x * y)

    def __floordiv__(self, other):
        return combine(self, other, lambda x, y: x // y)


class Box:
    def __lshift__(self, value):
        self.value = value


def attention_parameters(d, heads, kv_heads):
    return divmod.value.f((d, heads, kv_heads))
"""


def test_names_a_cell_of_prompts_binds_count():
    """The sixtieth hub tester: a cell of `>>> ` prompts is no Python (`ast.parse` fails), but
    IPython strips the prompts and runs it. Hers bound builtins' names to symbols of hers
    (`>>> divmod, hash, repr, abs = Box(), Sym(...), ...`, nothing flagged), and the formula,
    written in those names (`divmod << hash * hash + ...`: no call, only builtins' names), was
    cut from the page as idle while her kernel computed it and the tests passed. The names
    such a cell binds and reads count; the cell itself is left as it is. So do the names of
    a cell of `In [1]: ` prompts, which parses as other Python (`In[1]: divmod = Box()`, an
    annotation): a cell is read as the kernel runs it."""
    prompts = (
        ">>> divmod, hash, repr, abs = (\n... Box(), Sym(lambda a: a[0]), Sym(lambda a: a[1]),"
        " Sym(lambda a: a[2]))\n"
    )
    formula = (
        "divmod << hash * hash + (hash * (hash // repr * abs) + (hash * hash + hash // repr"
        " * abs * hash))"
    )
    namespace = {}
    for cell in (SYMBOLS, prompts, formula):
        exec(submission_checks.python_source(cell), namespace)
    assert namespace["attention_parameters"](64, 4, 2) == PARAMETERS
    assert similarity.without_idle([SYMBOLS, prompts, formula])[1:] == [prompts, formula]
    # `In [1]: ` prompts are Python too (an annotation of `In[1]`, which binds nothing)
    prompts = "".join(
        f"In [{i}]: {name} = {value}\n"
        for i, (name, value) in enumerate(
            [("divmod", "Box()")]
            + [(n, f"Sym(lambda a: a[{k}])") for k, n in enumerate(("hash", "repr", "abs"))]
        )
    )
    namespace = {}
    for cell in (SYMBOLS, prompts, formula):
        exec(submission_checks.python_source(cell), namespace)
    assert namespace["attention_parameters"](64, 4, 2) == PARAMETERS
    assert similarity.without_idle([SYMBOLS, prompts, formula])[1:] == [prompts, formula]
    # a cell of prompts that binds no builtin's name leaves the cut as it was
    assert similarity.without_idle([">>> x = 1\n", "hash * 2"])[1] == ""


def test_a_line_of_hers_that_reads_as_a_header_names_no_part():
    """The sixty-fourth hub tester: the side-by-side view names the share of each of her
    answers inside the passages she shares (`parts_alike`, which finds each answer's header
    line `# [<grade id>]` again in the text). A comment line `# [answer-a]` of hers at the top
    of answer-b, or an added cell's id holding a newline, read as a header: the copy in
    answer-b was named answer-a's at 100 % and answer-b was not named at all."""

    def answer(source, grade_id):
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": grade_id}
        return cell

    copied = "def attention(q, k, v):\n    w = (q @ k.T) / 8.0\n    return w.softmax(-1) @ v\n"
    for forged in ("# [answer-a]\n", "y = 2\n# [answer-a]\n"):
        nb = nbformat.v4.new_notebook(
            cells=[answer("print(1)\n", "answer-a"), answer(forged + copied, "answer-b")]
        )
        text = similarity.answer_text(nb)
        start = text.index(copied)
        alike = similarity.parts_alike(text, [(start, start + len(copied), 2)])
        assert set(alike) == {"answer-b"} and alike["answer-b"] > 0.5, alike
        assert "# [answer-a]" in text.split("# [answer-b]\n")[1]  # her comment still shown
    added = answer(copied, "added]\n# [answer-a")
    added.metadata["nbgrader"]["solution"] = False
    nb = nbformat.v4.new_notebook(cells=[answer("print(1)\n", "answer-a"), added])
    text = similarity.answer_text(nb, release=nbformat.v4.new_notebook(cells=[nb.cells[0]]))
    start = text.index(copied)
    alike = similarity.parts_alike(text, [(start, start + len(copied), 2)])
    assert "answer-a" not in alike or alike["answer-a"] == 0, alike
