"""The labs and their grading, end to end, with real nbgrader runs.

For every lab solutions/LM10-L<n>/ (found automatically, with its submissions in
tests/lab_cases/l<n>.py): labs/ is exactly what nbgrader generates; the solution passes
nbgrader's Validator and the release fails it; and in a temporary course the batch autograder
(grading/batch/autograde.py, here with one grader process: tests/test_class_report.py and
tests/test_grading_hostile.py grade on two) grades correct answers in a
messy notebook, a blank release with tampered tests, a mistake and hard-coded answers as it should,
beside an unparseable submission. Feedback must not show hidden tests.

Select labs with -k, e.g. `pytest tests/test_labs.py -k L2`.
"""

import copy
import html
import importlib
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from lab_cases import course_copy
from lmcourse import offlimits, slips
from nbgrader.api import Gradebook

from grading.batch import autograde, report
from grading.host import room, submission_checks
from grading.host.course_preprocessors import FEEDBACK_MARK, HIDDEN_MESSAGE, HIDDEN_SLIPS

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted(
    p.name for p in (ROOT / "solutions").glob("LM10-L*") if (p / f"{p.name}.ipynb").is_file()
)
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def autograded_cells(nb):
    """Autograded test cells (grade, not solution) by grade_id."""
    return {
        meta(c)["grade_id"]: c
        for c in nb.cells
        if meta(c).get("grade") and not meta(c).get("solution")
    }


def hidden_lines(source):
    """Non-blank lines between the hidden-test delimiters."""
    inside, lines = False, []
    for line in source.split("\n"):
        inside = inside or BEGIN in line
        if inside and line.strip() and BEGIN not in line and END not in line:
            lines.append(line.strip())
        inside = inside and END not in line
    return lines


def lab_cases(lab):
    number = re.fullmatch(r"LM10-L(\d+)", lab).group(1)
    try:
        return importlib.import_module(f"lab_cases.l{number}")
    except ModuleNotFoundError as error:
        pytest.fail(
            f"{lab} has no submissions for the round trip: write "
            f"tests/lab_cases/l{number}.py (see tests/lab_cases/__init__.py): {error}"
        )


def nbgrader_api(course):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course / "grading")).load_config()
    return NbGraderAPI(config=config)


def validate(paths, grading):
    """nbgrader's Validator (the course's config) on each notebook of `paths`, one after the
    other in one process of its own (nbgrader imported once): {path: Validator's answer}."""
    code = (
        "import json, sys\n"
        "from nbgrader.validator import Validator\n"
        "from traitlets.config.loader import PyFileConfigLoader\n"
        "config = PyFileConfigLoader('nbgrader_config.py', path=sys.argv[1]).load_config()\n"
        "for path in sys.argv[2:]:\n"
        "    print('validated', json.dumps(Validator(config=config).validate(path)), flush=True)"
    )
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-c", code, str(grading), *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"Validator crashed on {paths}:\n{done.stderr[-2000:]}"
    lines = done.stdout.splitlines()
    answers = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("validated ")]
    return dict(zip(paths, answers, strict=True))


CASES = ("correct", "alternatives", "delegate", "mistakes", "mistake", "hardcoded", "refpatch")
# Issue 40's kinds of fair grading, each a case of every lab (tests/lab_cases/__init__.py):
# a slip in an early part that later parts build on, a combination of the prompt's axes only a
# hidden input tries, and answers that are numpy or torch integers.
FAIRNESS = ("cascade", "combinations", "numpy")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A temporary course: this repository's grading config and tools, and its lab sources."""
    root = tmp_path_factory.mktemp("course")
    course_copy(root)
    return root


@pytest.fixture(scope="module", params=LABS)
def lab(request, course):
    """One lab, released in the temporary course by nbgrader generate_assignment."""
    name = request.param
    result = nbgrader_api(course).generate_assignment(name, force=True)
    assert result["success"], f"generate_assignment {name} failed:\n{result['log']}"
    return name


@pytest.fixture(scope="module")
def round_trip(lab, course):
    """Submit every case of the lab, autograde them in one batch, read the gradebook back."""
    cases = lab_cases(lab)
    released = nbformat.read(course / "labs" / lab / f"{lab}.ipynb", as_version=4)
    submissions = {
        name: getattr(cases, name)(copy.deepcopy(released))
        for name in CASES + FAIRNESS + more_cases(cases)
        if hasattr(cases, name)
    }
    # Correct answers in a notebook as students leave them: an answer cell duplicated, a test
    # cell deleted (nbgrader keeps one copy and puts the test back).
    messy = submissions["correct"]
    first_answer = next(i for i, c in enumerate(messy.cells) if meta(c).get("solution"))
    duplicate = copy.deepcopy(messy.cells[first_answer])
    duplicate.id = "duplicated-by-student"
    messy.cells.insert(first_answer + 1, duplicate)
    messy.cells.remove(list(autograded_cells(messy).values())[-1])
    # The blank release with every test replaced by `pass`: graded on the restored tests, zero.
    blank = copy.deepcopy(released)
    for cell in autograded_cells(blank).values():
        cell.source = "pass"
    submissions["blank"] = blank

    submitted = course / "grading" / "submitted"
    for student, nb in submissions.items():
        (submitted / student / lab).mkdir(parents=True)
        nbformat.write(nb, submitted / student / lab / f"{lab}.ipynb")
    (submitted / "broken" / lab).mkdir(parents=True)
    (submitted / "broken" / lab / f"{lab}.ipynb").write_text('{"cells": [ this is not json')

    grading = course / "grading"
    notebooks = {
        "solution": course / "solutions" / lab / f"{lab}.ipynb",
        "release": course / "labs" / lab / f"{lab}.ipynb",
        "delegate": submitted / "delegate" / lab / f"{lab}.ipynb",
        "mistakes": submitted / "mistakes" / lab / f"{lab}.ipynb",
    }
    if not notebooks["mistakes"].is_file():
        del notebooks["mistakes"]
    with ThreadPoolExecutor(max_workers=1) as pool:  # validation runs beside the batch
        validated = pool.submit(validate, list(notebooks.values()), grading)
        # One grader process: its start (nbgrader, a trusted test process and a sandbox, each
        # importing torch) is paid once per lab; the validations run beside it, and the class
        # report and the hostile batch play the batch on two.
        graded = autograde.autograde(lab, grading=grading, jobs=1)
        results = {r.student: r for r in graded}
        answers = validated.result()
        validation = {name: answers[path] for name, path in notebooks.items()}
        validation.setdefault("mistakes", None)

    db_url = f"sqlite:///{course / 'grading' / 'gradebook.db'}"
    scores = {}
    with Gradebook(db_url, course_id="LM10") as gradebook:
        for student in results:
            notebook = gradebook.find_submission_notebook(lab, lab, student)
            scores[student] = {g.name: g.score for g in notebook.grades}
    return {
        "results": results,
        "scores": scores,
        "validation": validation,
        "cases": cases,
        "release": course / "labs" / lab / f"{lab}.ipynb",
        "autograded": course / "grading" / "autograded",
        "source": nbformat.read(course / "solutions" / lab / f"{lab}.ipynb", as_version=4),
    }


def autograded_scores(trip, student):
    tests = autograded_cells(trip["source"])
    return {grade_id: trip["scores"][student][grade_id] for grade_id in tests}


def test_lab_has_at_least_ten_points_and_named_cells(lab, course):
    nb = nbformat.read(course / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    prefix = f"l{lab.rsplit('L', 1)[1]}_"
    graded = [meta(c) for c in nb.cells if meta(c).get("grade")]
    total = sum(m["points"] for m in graded)
    assert total >= 10, f"{lab} is worth {total} points; every lab is worth at least 10"
    bad = [
        meta(c)["grade_id"]
        for c in nb.cells
        if meta(c) and not meta(c)["grade_id"].startswith(prefix)
    ]
    assert not bad, f"{lab}: grade_ids must start with {prefix!r}: {bad}"
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert meta(first_code).get("locked") and not meta(first_code).get("grade"), (
        f"{lab}: the first code cell must be the locked, ungraded setup cell"
    )
    for grade_id, cell in autograded_cells(nb).items():
        assert hidden_lines(cell.source), f"{lab} {grade_id}: a test cell without hidden tests"
        last = cell.source.rstrip().split("\n")[-1]
        assert not re.fullmatch(r"[\d.]+", last.strip()), (
            f"{lab} {grade_id}: last line {last!r} would be read as partial credit"
        )


def test_release_is_exactly_what_nbgrader_generates(lab, course):
    generated, committed = course / "labs" / lab, ROOT / "labs" / lab
    fix = f"run `make release LAB={lab}`"
    files = sorted(p.relative_to(generated) for p in generated.rglob("*") if p.is_file())
    present = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert present == files, f"labs/{lab} holds {present}, nbgrader generates {files}: {fix}"
    for name in files:
        want, got = (generated / name).read_bytes(), (committed / name).read_bytes()
        if name.suffix == ".ipynb":  # the same JSON; indentation and key order do not matter
            want, got = json.loads(want), json.loads(got)
        assert got == want, f"labs/{lab}/{name} differs from what nbgrader generates: {fix}"


def test_solution_passes_validation_and_release_fails(round_trip, lab):
    solution, release = round_trip["validation"]["solution"], round_trip["validation"]["release"]
    problems = {k: v for k, v in solution.items() if v}
    assert not problems, f"{lab} solution fails nbgrader validation: {json.dumps(problems)[:2000]}"
    failed = {cell["source"] for cell in release.get("failed", [])}
    released = nbformat.read(round_trip["release"], as_version=4)
    passing = [g for g, c in autograded_cells(released).items() if c.source.strip() not in failed]
    assert not passing, f"{lab} release: test cells {passing} pass on the stubs"


def test_correct_submission_gets_full_marks(round_trip, lab):
    scores = autograded_scores(round_trip, "correct")
    maxima = {g: meta(c)["points"] for g, c in autograded_cells(round_trip["source"]).items()}
    assert scores == maxima, (
        f"{lab}: correct answers (in a notebook with a duplicated answer cell and a deleted test "
        f"cell) scored {scores}, expected full marks {maxima}"
    )


def test_correct_answers_written_another_way_get_full_marks(round_trip, lab):
    """Tolerances come from the numerics of every correct method, not the model solution's."""
    assert hasattr(round_trip["cases"], "alternatives"), f"{lab} has no `alternatives` case"
    scores = autograded_scores(round_trip, "alternatives")
    maxima = {g: meta(c)["points"] for g, c in autograded_cells(round_trip["source"]).items()}
    assert scores == maxima, f"{lab}: correct alternatives scored {scores}, expected {maxima}"


def test_correct_answers_ask_the_rooms_copies_for_nothing_they_lack(round_trip, lab):
    """Every honest answer of a lab reads only what the room's copies of transformers' objects
    hold: none is flagged for asking them what they lack (course_preprocessors.room_flag)."""
    for student in ("correct", "alternatives"):
        message = round_trip["results"][student].message
        assert "copies of transformers' objects" not in message, (student, message)


def test_calling_what_a_test_compares_against_scores_zero_and_says_which(round_trip, lab):
    """Each lab's `delegate` case calls the references its tests declare off limits
    (lmcourse.offlimits) instead of computing: exactly those parts score 0, with an
    OffLimitsError naming a declared reference; every other part keeps its points."""
    cases = round_trip["cases"]
    assert hasattr(cases, "delegate"), f"tests/lab_cases for {lab} has no `delegate` case"
    scores = autograded_scores(round_trip, "delegate")
    want = cases.expected["delegate"]
    assert scores == want, f"{lab} delegate: scored {scores}, expected {want}"
    graded = nbformat.read(round_trip["autograded"] / "delegate" / lab / f"{lab}.ipynb", 4)
    sources = autograded_cells(round_trip["source"])
    setup = [c.source for c in round_trip["source"].cells if submission_checks.is_setup(c)]
    in_room = room.declared(setup)
    # what the setup binds and its room does not hold, and the packages no room holds
    outside = submission_checks.setup_names(round_trip["source"]) - set(in_room or ())
    outside |= set(room.OUTSIDE)
    for grade_id, cell in autograded_cells(graded).items():
        declared = offlimits.declared(sources[grade_id].source)
        errors = [o for o in cell.outputs if o.output_type == "error"]
        stopped = [o for o in errors if o.ename == "OffLimitsError"]
        if want[grade_id]:
            assert not stopped, f"{lab} {grade_id} kept its points but reports {stopped}"
            continue
        assert declared, f"{lab} {grade_id} scores 0 in the delegate case but declares nothing"
        if in_room is not None and not stopped:  # the reference is not in the sandbox at all
            assert errors and absent_from_room(errors[-1], outside), (
                f"{lab} {grade_id}: expected an error saying a declared reference is not in the "
                f"room, got {errors}"
            )
            continue
        assert len(stopped) == 1 and stopped[0] is errors[-1], (
            f"{lab} {grade_id}: expected one OffLimitsError as the test's error, got {errors}"
        )
        named = re.split(r" (?:is|are) off limits", stopped[0].evalue, maxsplit=1)[0]
        assert named in declared, f"{lab} {grade_id}: the error names {named!r}, not {declared}"
    # Validate, which runs the tests in the student's own kernel, stops the same parts.
    failed = {
        cell["source"].strip(): cell["error"]
        for cell in round_trip["validation"]["delegate"].get("failed", [])
    }
    for grade_id, cell in sources.items():
        source = cell.source.split("### BEGIN HIDDEN TESTS")[0].strip()
        error = next((e for s, e in failed.items() if s.startswith(source[:200])), None)
        if want[grade_id]:
            assert error is None, f"{lab} {grade_id}: Validate fails the delegate case: {error}"
        else:
            assert error and "OffLimitsError" in error, (
                f"{lab} {grade_id}: Validate should stop the delegate case with an "
                f"OffLimitsError, reported {error!r}"
            )


def absent_from_room(error, outside):
    """Whether `error` says that what the student's code reached for is not in the room
    (grading/host/room.py): a name of the setup the room does not hold, a package no room holds (its
    stand-in refuses the import, or has no such attribute), a transformers layer held as its
    weights only."""
    text = f"{error.ename}: {error.evalue}"
    if error.ename == "NameError":
        return any(f"name '{name}' is not defined" in text for name in outside)
    if error.ename in ("ImportError", "ModuleNotFoundError", "AttributeError"):
        return "is not available to your code while it is graded" in text or any(
            f"'{package}'" in text for package in room.OUTSIDE
        )
    return error.ename == "NotImplementedError" and "weights only" in text


def test_a_catalogued_slip_is_named_wherever_the_student_reads_the_result(round_trip, lab, course):
    """Each part's slip (lmcourse.slips) costs the part its points and is named in the
    autograded notebook, the autograde report, Validate and the HTML feedback (where a hidden
    test found it, the feedback lists the part's slips instead, without singling it out);
    correct answers are never given a hint."""
    cases = round_trip["cases"]
    assert hasattr(cases, "mistakes"), f"tests/lab_cases for {lab} has no `mistakes` case"
    scores = autograded_scores(round_trip, "mistakes")
    assert scores == cases.expected["mistakes"], f"{lab} mistakes: {scores}"
    graded_path = round_trip["autograded"] / "mistakes" / lab / f"{lab}.ipynb"
    cells = autograded_cells(nbformat.read(graded_path, 4))
    result = nbgrader_api(course).generate_feedback(lab, "mistakes", force=True)
    assert result["success"], f"generate_feedback failed:\n{result['log']}"
    page = (course / "grading" / "feedback" / "mistakes" / lab / f"{lab}.html").read_text()
    feedback = html.unescape(re.sub(r"<[^>]+>", "", page))
    message = round_trip["results"]["mistakes"].message
    assert "likely slips: " in message, f"{lab}: the report line names no slip: {message!r}"
    reported = {g: found for g, _, found in report.failures(graded_path)}
    failed = {
        c["source"].strip(): html.unescape(c["error"])
        for c in round_trip["validation"]["mistakes"]["failed"]
    }
    hidden_only = getattr(cases, "slips_only_hidden_tests_find", set())
    sources = autograded_cells(round_trip["source"])
    # parts whose hidden tests ran (a slip only they find, or full marks): after them, a visible
    # check's message is withheld from the feedback, which lists the part's slips instead
    order = list(sources)
    ran_hidden = [g for g in order if g in hidden_only or scores[g] == meta(sources[g])["points"]]
    for grade_id, sentence in cases.slips.items():
        listed = "".join(f"\n- {s}" for s in sorted(slips.sentences(grade_id)))
        after_hidden = any(g in ran_hidden for g in order[: order.index(grade_id)])
        errors = [o.evalue for o in cells[grade_id].outputs if o.output_type == "error"]
        assert any(sentence in slips.named(e, grade_id) for e in errors), (
            f"{lab} {grade_id}: the autograded notebook does not name {sentence!r}: {errors}"
        )
        assert sentence in reported.get(grade_id, []), f"{lab} {grade_id}: not in the report"
        visible = sources[grade_id].source.split("### BEGIN HIDDEN TESTS")[0].strip()[:200]
        validated = next((e for src, e in failed.items() if src.startswith(visible)), None)
        if grade_id in hidden_only:  # Validate runs the visible tests only: they pass
            assert validated is None, f"{lab} {grade_id}: Validate failed it: {validated}"
            # Under the neutral message, every slip of the part, the same list whichever the
            # answer made (course_preprocessors.with_slips): the one found is not singled out.
            assert f"{HIDDEN_MESSAGE}\n{HIDDEN_SLIPS}{listed}" in feedback, (
                f"{lab} {grade_id}: the feedback should list the part's slips under the neutral "
                "message"
            )
            assert f"{slips.PREFIX}{sentence}" not in feedback, (
                f"{lab} {grade_id}: the feedback names the slip a hidden test found"
            )
        else:
            assert validated and sentence in validated, (
                f"{lab} {grade_id}: Validate does not name {sentence!r}: {validated!r}"
            )
            if after_hidden:  # an earlier part's hidden input had reached the student's code
                assert f"{HIDDEN_SLIPS}{listed}" in feedback, (
                    f"{lab} {grade_id}: after a hidden input, the feedback should list the part's "
                    "slips"
                )
                assert f"{slips.PREFIX}{sentence}" not in feedback, (
                    f"{lab} {grade_id}: the feedback names a slip after a hidden input"
                )
            else:
                assert f"{slips.PREFIX}{sentence}" in feedback, (
                    f"{lab} {grade_id}: not in the feedback"
                )
    for student in ("correct", "alternatives"):
        path = round_trip["autograded"] / student / lab / f"{lab}.ipynb"
        if path.is_file():
            outputs = json.dumps([c.get("outputs", []) for c in nbformat.read(path, 4).cells])
            assert slips.PREFIX not in outputs, f"{lab} {student}: a hint on a right answer"


@pytest.mark.parametrize("case", FAIRNESS)
def test_a_slip_costs_its_own_part_and_is_named(round_trip, lab, case):
    """Graded through the sandboxed path: every correct part of the case keeps its points, every
    slipped part loses only its own (exactly expected[case]), and where the lab's slip catalogue
    knows the slip (the module's dict `named`: case -> grade_id -> sentence), the slipped
    part's output names it."""
    costs_its_own_part(round_trip, lab, case)


def more_cases(cases):
    return tuple(getattr(cases, "more", ())) + tuple(getattr(cases, "sandboxed_only", ()))


def test_more_slips_cost_their_own_parts(round_trip, lab):
    """The lab's further fairness cases (its module's tuples `more` and `sandboxed_only`: an
    earlier part that raises or returns a float, a later part that keeps the earlier one under
    another name, an answer that reaches for what the room does not hold, ...), each held to
    the same rule as the three above, and where the module's dict `said` (case -> grade_id ->
    text) says so, the part's error says that text."""
    cases = round_trip["cases"]
    for case in more_cases(cases):
        costs_its_own_part(round_trip, lab, case)
        graded = nbformat.read(round_trip["autograded"] / case / lab / f"{lab}.ipynb", 4)
        cells = autograded_cells(graded)
        for grade_id, text in getattr(cases, "said", {}).get(case, {}).items():
            errors = [o.evalue for o in cells[grade_id].outputs if o.output_type == "error"]
            assert any(text in e for e in errors), f"{lab} {case} {grade_id}: {errors}"


def costs_its_own_part(round_trip, lab, case):
    cases = round_trip["cases"]
    assert hasattr(cases, case), f"tests/lab_cases for {lab} has no `{case}` case"
    scores = autograded_scores(round_trip, case)
    want = cases.expected[case]
    assert set(want) == set(scores), f"{lab} {case}: expected scores for {sorted(scores)}"
    assert scores == want, f"{lab} {case}: scored {scores}, expected {want}"
    graded_path = round_trip["autograded"] / case / lab / f"{lab}.ipynb"
    cells = autograded_cells(nbformat.read(graded_path, 4))
    for grade_id, sentence in getattr(cases, "named", {}).get(case, {}).items():
        errors = [o.evalue for o in cells[grade_id].outputs if o.output_type == "error"]
        assert any(sentence in slips.named(e, grade_id) for e in errors), (
            f"{lab} {case} {grade_id}: the autograded notebook does not name {sentence!r}: {errors}"
        )
    for grade_id, score in scores.items():
        if score:  # a part that keeps its points shows no error
            errors = [o for o in cells[grade_id].outputs if o.output_type == "error"]
            assert not errors, f"{lab} {case} {grade_id} kept its points but shows {errors}"


def test_blank_release_with_tampered_tests_gets_zero(round_trip, lab):
    scores = autograded_scores(round_trip, "blank")
    assert not any(scores.values()), (
        f"{lab}: the blank release with its tests replaced by `pass` scored {scores}; "
        "nbgrader should restore the tests from the gradebook and give zero"
    )


def test_mistake_gets_partial_marks(round_trip, lab):
    scores = autograded_scores(round_trip, "mistake")
    maximum = sum(meta(c)["points"] for c in autograded_cells(round_trip["source"]).values())
    total = sum(scores.values())
    assert 0 < total < maximum, f"{lab} mistake: {total} of {maximum} points ({scores})"
    want = getattr(round_trip["cases"], "expected", {}).get("mistake", {})
    assert {g: scores[g] for g in want} == want, f"{lab} mistake: {scores}, expected {want}"


def test_hardcoded_answers_lose_the_hidden_test_points(round_trip, lab):
    scores = autograded_scores(round_trip, "hardcoded")
    kept = {g: s for g, s in scores.items() if s}
    assert not kept, f"{lab}: hard-coded answers kept points in cells with hidden tests: {kept}"
    want = getattr(round_trip["cases"], "expected", {}).get("hardcoded", {})
    assert {g: scores[g] for g in want} == want, f"{lab} hardcoded: {scores}, expected {want}"


def test_batch_autograder_survives_an_unparseable_submission(round_trip, lab):
    results = round_trip["results"]
    broken = results["broken"]
    assert broken.status == "error" and broken.score == 0, f"{lab} broken submission: {broken}"
    assert broken.message, "the report should say why the broken submission was not graded"
    assert round_trip["scores"]["broken"] and not any(round_trip["scores"]["broken"].values()), (
        f"{lab}: the broken submission should have zero recorded in the gradebook"
    )
    others = {s: r.status for s, r in results.items() if s not in ("broken", "refpatch")}
    assert set(others.values()) == {"graded"}, f"{lab}: every other submission is graded: {others}"


def test_redefining_a_reference_changes_no_score(round_trip, lab):
    """Every lab's tests compare against something its setup cell defines: a wrong answer plus
    that reference redefined to agree scores as the wrong answer alone, and is flagged."""
    assert "refpatch" in round_trip["results"], (
        f"{lab}: tests/lab_cases has no refpatch case for it (see tests/lab_cases/__init__.py)"
    )
    result = round_trip["results"]["refpatch"]
    assert result.status == "flagged" and "redefines" in result.message, result
    want = round_trip["cases"].expected["refpatch"]
    got = autograded_scores(round_trip, "refpatch")
    assert got == want, f"{lab} refpatch: {got}, expected {want} (as without the redefinition)"


@pytest.mark.parametrize("student", ["hardcoded", "blank", "delegate"])
def test_feedback_hides_hidden_tests(round_trip, lab, course, student):
    """Hard-coded answers fail inside hidden regions, blank ones on visible lines next to them;
    answers that call a test's references read which one, whether a visible or a hidden test
    caught the call."""
    result = nbgrader_api(course).generate_feedback(lab, student, force=True)
    assert result["success"], f"generate_feedback failed:\n{result['log']}"
    page = (course / "grading" / "feedback" / student / lab / f"{lab}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    tests = autograded_cells(round_trip["source"]).values()
    visible = [line.strip() for c in tests for line in c.source.split("\n")[:2] if line.strip()]
    assert all(line in text for line in visible), "blind check: visible test lines are missing"
    # Lines the student sees anyway: the release's, and the student's own (a delegating answer
    # may write `with torch.device("meta"):` as a hidden test does).
    seen = [course / "labs" / lab, course / "grading" / "submitted" / student / lab]
    seen = "\n".join(
        c.source for p in seen for c in nbformat.read(p / f"{lab}.ipynb", as_version=4).cells
    )
    shown = [
        line for c in tests for line in hidden_lines(c.source) if line not in seen and line in text
    ]
    assert not shown, f"{lab} feedback for {student} shows hidden test lines: {shown[:5]}"
    if student == "hardcoded":
        assert "A hidden test failed" in text, "feedback should say that a hidden test failed"
    if student == "delegate":
        graded = nbformat.read(round_trip["autograded"] / student / lab / f"{lab}.ipynb", 4)
        stops = [
            # whether it came before a hidden input reached her code, and its words
            ((c.metadata.get(FEEDBACK_MARK) or {}).get("error", True) is not False, o.evalue)
            for c in autograded_cells(graded).values()
            for o in c.outputs
            if o.output_type == "error" and o.ename == "OffLimitsError"
        ]
        named = {html.unescape(words) for before, words in stops if before}
        for before, words in stops:
            words = html.unescape(words)
            if before:
                assert words in text, f"{lab}: the feedback does not say {words!r}"
            elif words not in named:
                # after a hidden input, a stop reads as any error of hers there does, its
                # reference unnamed (the seventy-fourth hub tester's 3c6d76f)
                assert words not in text, f"{lab}: the feedback names {words!r}"


def released_with_setup(lab):
    """The lab's release, a namespace its setup cells ran in (compiled as a cell's code, as the
    kernel compiles them), and the cell file prefix to compile an answer under: the guard's view
    of a student's notebook, without a kernel."""
    released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", 4)
    cell_file = offlimits._cell_prefixes()[-1]
    namespace = {}
    for cell in released.cells:
        if submission_checks.is_setup(cell):
            exec(compile(cell.source, cell_file + "setup.py", "exec"), namespace)
    return released, namespace, cell_file


def test_l5s_tests_declare_the_course_library_that_does_each_part():
    """The forty-first hub tester's: lmcourse.blocks holds a whole Llama block (group_kv,
    rotary_cos_sin and apply_rotary, RMSNorm, GatedMLP, Attention, Block), and L4 declares it
    off limits; L5's tests did not, so her expand_kv returning group_kv(kv, n_rep) and her
    apply_rope through rotary_cos_sin and apply_rotary scored their parts, nothing fired, nothing
    flagged. Each of L5's graded tests now declares it."""
    released, namespace, cell_file = released_with_setup("LM10-L5")
    answer = (
        "from lmcourse.blocks import group_kv, inverse_frequencies, apply_rotary\n"
        "from lmcourse.blocks.rope import rotary_cos_sin\n"
        "def expand_kv(kv, n_rep):\n"
        "    return group_kv(kv, n_rep)\n"
        "def apply_rope(x, positions, base):\n"
        "    inv = inverse_frequencies(base, x.shape[-1])\n"
        "    return apply_rotary(x, *rotary_cos_sin(positions[None], inv))\n"
    )
    exec(compile(answer, cell_file + "answer.py", "exec"), namespace)
    torch = namespace["torch"]
    kv, x = torch.randn(1, 2, 5, 8), torch.randn(1, 4, 5, 8)
    calls = {"expand_kv": lambda: namespace["expand_kv"](kv, 3)}
    calls["apply_rope"] = lambda: namespace["apply_rope"](x, torch.arange(5), 500.0)
    graded = [c for c in released.cells if submission_checks.is_grade(c) and c.cell_type == "code"]
    for cell in graded:
        names = offlimits.declared(cell.source)
        assert "lmcourse.blocks" in names, (cell.metadata["nbgrader"]["grade_id"], names)
        for name, call in calls.items():
            if f"{name}(" not in cell.source:
                continue
            guard = offlimits.Guard(names, namespace)
            with guard, pytest.raises(offlimits.OffLimitsError):
                call()
            assert guard.fired == ["lmcourse.blocks"], guard.fired


def test_l6s_tests_declare_the_course_library_that_builds_the_model():
    """The forty-second hub tester's: lmcourse.blocks' DecoderLM builds a DeepSeek-V3 (latent
    attention, shared and routed experts, dense first blocks) from lmcourse.families' reading of
    the config, with transformers' parameters, and L6's tests declared only lmcourse.count of the
    course's library: her moe_parameters counting a DecoderLM built on the meta device scored the
    visible and hidden tests, nothing fired, nothing flagged. Each of L6's declaring tests now
    declares it."""
    released, namespace, cell_file = released_with_setup("LM10-L6")
    answer = (
        "from lmcourse.families import as_spec\n"
        "from lmcourse.blocks.model import DecoderLM\n"
        "def moe_parameters(config):\n"
        "    with torch.device('meta'):\n"
        "        model = DecoderLM(as_spec(config))\n"
        "    total = sum(p.numel() for p in model.parameters())\n"
        "    routed = sum(p.numel() for name, p in model.named_parameters()\n"
        "                 if 'experts' in name and 'shared' not in name)\n"
        "    k, experts = config.num_experts_per_tok, config.n_routed_experts\n"
        "    return total, total - routed + routed * k // experts\n"
    )
    exec(compile(answer, cell_file + "answer.py", "exec"), namespace)
    config = namespace["configs"].toy("DeepSeek-V3")
    assert namespace["moe_parameters"](config) == namespace["reference_parameters"](config)
    graded = [c for c in released.cells if submission_checks.is_grade(c) and c.cell_type == "code"]
    declaring = [c for c in graded if offlimits.declared(c.source)]
    assert len(declaring) >= 3
    for cell in declaring:
        names = offlimits.declared(cell.source)
        assert "lmcourse.blocks" in names, (cell.metadata["nbgrader"]["grade_id"], names)
        if "moe_parameters(" in cell.source:
            guard = offlimits.Guard(names, namespace)
            with guard, pytest.raises(offlimits.OffLimitsError):
                namespace["moe_parameters"](config)
            assert guard.fired == ["lmcourse.blocks"], guard.fired


def test_l6s_cache_tests_declare_the_model_and_the_caches_of_transformers():
    """The forty-second hub tester's: L6's cache tests declared only DynamicCache of
    transformers. Her cache_bytes_per_token built the config's model (from_config, on the meta
    device), ran one token through it into a Cache of cache_utils' DynamicLayer and
    DynamicSlidingWindowLayer and counted the keys and values, which is what
    reference_cache_bytes does: l6_test_cache's visible and hidden tests passed (a latent
    config aside, a line of hers), nothing fired, nothing flagged. The cache tests now declare
    transformers.cache_utils and PreTrainedModel.__init__: a model, or a cache layer, of
    transformers in her code is stopped."""
    released, namespace, cell_file = released_with_setup("LM10-L6")
    answer = (
        "from transformers.cache_utils import Cache, DynamicLayer, DynamicSlidingWindowLayer\n"
        "def layers(config):\n"
        "    window = getattr(config, 'sliding_window', None)\n"
        "    kinds = getattr(config, 'layer_types', None)\n"
        "    kinds = kinds or ['full_attention'] * config.num_hidden_layers\n"
        "    return [DynamicSlidingWindowLayer(sliding_window=window) if k == 'sliding_attention'\n"
        "            else DynamicLayer() for k in kinds]\n"
        "def measured(config, tokens, kv_bytes=2):\n"
        "    with torch.device('meta'):\n"
        "        model = transformers.AutoModelForCausalLM.from_config(config).eval()\n"
        "    cache = Cache(layers=layers(config))\n"
        "    ids = torch.zeros(1, tokens, dtype=torch.long, device='meta')\n"
        "    model(ids, past_key_values=cache, use_cache=True)\n"
        "    return sum(l.keys.numel() + l.values.numel() for l in cache.layers) * kv_bytes\n"
        "def kept(config, tokens, kv_bytes=2):\n"
        "    total = 0\n"
        "    for layer in layers(config):\n"
        "        k = torch.zeros(1, 1, tokens, 1)\n"
        "        layer.update(k, k)\n"
        "        total += layer.keys.shape[-2]\n"
        "    return total\n"
    )
    exec(compile(answer, cell_file + "answer.py", "exec"), namespace)
    config = namespace["configs"].toy("Gemma-2-2B")
    with namespace["torch"].no_grad():
        assert namespace["measured"](config, 7) == namespace["reference_cache_bytes"](config, 7)
    graded = [c for c in released.cells if submission_checks.is_grade(c) and c.cell_type == "code"]
    cache_tests = [c for c in graded if "reference_cache_bytes" in offlimits.declared(c.source)]
    assert len(cache_tests) == 2
    for cell in cache_tests:
        names = offlimits.declared(cell.source)
        for name, call, fired in (
            ("measured", lambda: namespace["measured"](config, 7), "PreTrainedModel.__init__"),
            ("kept", lambda: namespace["kept"](config, 7), "cache_utils"),
        ):
            guard = offlimits.Guard(names, namespace)
            with guard, pytest.raises(offlimits.OffLimitsError):
                call()
            assert guard.fired == [f"transformers.{fired}"], (name, guard.fired)


def test_l6s_moe_test_declares_another_familys_model_of_the_same_count():
    """The forty-second hub tester's: transformers' DeepSeek-V2 builds, from a DeepSeek-V3
    config's fields, a model of exactly DeepSeek-V3's parameters (its code is not V3's, so no
    twin of the declared classes), and l6_test_moe declared V3's classes only: her
    moe_parameters counting a DeepseekV2ForCausalLM on the meta device passed the visible and
    hidden tests, nothing fired, nothing flagged. The test now declares DeepSeek-V2's module and
    PreTrainedModel.__init__ (any transformers model built in her code)."""
    released, namespace, cell_file = released_with_setup("LM10-L6")
    answer = (
        "from transformers import DeepseekV2Config, DeepseekV2ForCausalLM, LlamaForCausalLM\n"
        "def moe_parameters(config):\n"
        "    fields = config.to_dict()\n"
        "    for key in ('model_type', 'architectures', 'quantization_config'):\n"
        "        fields.pop(key, None)\n"
        "    with torch.device('meta'):\n"
        "        v2 = DeepseekV2Config(**fields, topk_method='noaux_tc')\n"
        "        model = DeepseekV2ForCausalLM(v2)\n"
        "    total = sum(p.numel() for p in model.parameters())\n"
        "    routed = sum(p.numel() for name, p in model.named_parameters()\n"
        "                 if '.experts.' in name and 'shared_experts' not in name)\n"
        "    k, experts = config.num_experts_per_tok, config.n_routed_experts\n"
        "    return total, total - routed + routed * k // experts\n"
        "def a_llama(config):\n"
        "    with torch.device('meta'):\n"
        "        return LlamaForCausalLM(config)\n"
    )
    exec(compile(answer, cell_file + "answer.py", "exec"), namespace)
    config = namespace["configs"].toy("DeepSeek-V3")
    assert namespace["moe_parameters"](config) == namespace["reference_parameters"](config)
    llama = namespace["configs"].toy("Llama-3.1-8B")
    (cell,) = [
        c
        for c in released.cells
        if "moe_parameters(" in c.source and c.metadata.get("nbgrader", {}).get("grade")
    ]
    names = offlimits.declared(cell.source)
    for call, fired in (
        (lambda: namespace["moe_parameters"](config), "PreTrainedModel.__init__"),
        (lambda: namespace["a_llama"](llama), "PreTrainedModel.__init__"),
    ):
        guard = offlimits.Guard(names, namespace)
        with guard, pytest.raises(offlimits.OffLimitsError):
            call()
        assert guard.fired == [f"transformers.{fired}"], guard.fired


def test_l6s_cache_tests_declare_every_module_built_in_her_code():
    """The forty-second hub tester's: with transformers' models and caches declared, her
    cache_bytes_per_token built the config's family's attention layer (LlamaAttention,
    Qwen2Attention, Qwen3Attention: nn.Modules, not models) on the meta device and read its
    k_proj and v_proj widths, so transformers worked out the head width and key-value heads:
    l6_test_cache's visible and hidden tests passed, nothing fired, nothing flagged. The cache
    tests now declare torch.nn.Module.__init__, as L2's do: no honest answer builds a module."""
    released, namespace, cell_file = released_with_setup("LM10-L6")
    answer = (
        "from transformers.models.llama.modeling_llama import LlamaAttention\n"
        "def cache_bytes_per_token(config, kv_bytes=2):\n"
        "    with torch.device('meta'):\n"
        "        attn = LlamaAttention(config, 0)\n"
        "    width = attn.k_proj.out_features + attn.v_proj.out_features\n"
        "    return config.num_hidden_layers * width * kv_bytes\n"
    )
    exec(compile(answer, cell_file + "answer.py", "exec"), namespace)
    config = namespace["configs"].load("Llama-2-7B")
    assert namespace["cache_bytes_per_token"](config) == 524_288
    graded = [c for c in released.cells if submission_checks.is_grade(c) and c.cell_type == "code"]
    cache_tests = [c for c in graded if "reference_cache_bytes" in offlimits.declared(c.source)]
    assert len(cache_tests) == 2
    for cell in cache_tests:
        guard = offlimits.Guard(offlimits.declared(cell.source), namespace)
        with guard, pytest.raises(offlimits.OffLimitsError):
            namespace["cache_bytes_per_token"](config)
        assert guard.fired == ["torch.nn.Module.__init__"], guard.fired
