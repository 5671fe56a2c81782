"""Which notebook of a submission folder is graded, or why none is.

Before grading, each folder grading/submitted/<student>/<lab>/ must hold the lab's notebook as
a plain file: a single notebook under another name (`LM10-L2 (1).ipynb`) is graded as the
lab's, with a note; none, several, a link or a folder instead of a file is reported with the
reason, and so is a notebook that does not parse or has lost its answer cells (nbgrader's own
errors for these are cryptic). After grading, the autograded folder keeps only what feedback
may carry.
"""

import ast
import shutil

import nbformat

from grading.host import submission_checks
from grading.instructor.sanitise import first_line


def submitted_students(submitted, lab):
    """Students with a folder grading/submitted/<student>/<lab>/."""
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / lab).is_dir())


def find_notebook(folder, lab):
    """(note, problem) for a submission folder: the lab's notebook must be there as a plain
    file; a single notebook under another name is copied to the lab's name and noted."""
    want = folder / f"{lab}.ipynb"
    named = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
    links = [p.name for p in named if p.is_symlink()]
    if links:
        return "", f"{', '.join(links)} is a link, not a notebook file: not graded"
    if want.exists() and not want.is_file():
        return "", f"{want.name} is a folder (or another non-file), not a notebook: not graded"
    notebooks = [p for p in named if p.is_file()]  # a folder named draft.ipynb is no notebook
    if want.is_file():
        # Graded before under another name: say so again, so a rerun reports the same.
        same = [p.name for p in notebooks if p != want and p.read_bytes() == want.read_bytes()]
        return (f"graded {same[0]} as {lab}.ipynb" if len(same) == 1 else ""), ""
    if not notebooks:
        others = sorted(p.name for p in folder.iterdir())[:5]
        return "", (
            f"no notebook in the submission folder (expected {lab}.ipynb; found "
            f"{', '.join(others) if others else 'nothing'})"
        )
    if len(notebooks) > 1:
        names = ", ".join(p.name for p in notebooks[:5])
        return "", (
            f"{len(notebooks)} notebooks ({names}) and none named {lab}.ipynb: "
            f"rename the one to grade to {lab}.ipynb"
        )
    shutil.copyfile(notebooks[0], want)
    return f"graded {notebooks[0].name} as {lab}.ipynb", ""


def notebook_problem(path, answer_ids):
    """Why the notebook at `path` cannot be graded, or "" (nbgrader's own errors are cryptic)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # noqa: BLE001 (nbformat raises many kinds on bad input)
        return f"not a readable notebook: {type(error).__name__}: {first_line(error, 300)}"
    present = {submission_checks.meta(c).get("grade_id") for c in nb.cells}
    missing = [grade_id for grade_id in answer_ids if grade_id not in present]
    if answer_ids and len(missing) == len(answer_ids):
        return (
            f"none of the lab's answer cells ({', '.join(missing)}) is in the notebook: "
            "was it emptied or replaced by another notebook?"
        )
    if missing:
        return (
            f"answer cell{'s' if len(missing) > 1 else ''} {', '.join(missing)} deleted: "
            "put the cell back (copy it from the released notebook) and grade again"
        )
    return ""


def answer_cells(release):
    """grade_ids of the answer cells of the released notebook."""
    try:
        nb = nbformat.read(release, as_version=4)
    except OSError:
        return []
    found = (submission_checks.meta(c) for c in nb.cells if submission_checks.is_solution(c))
    return [m["grade_id"] for m in found if m.get("grade_id")]


def warm_imports(release):
    """(imports, room imports) of the released notebook's setup cells (neither answers nor
    tests: the instructor's code): their import statements, which the trusted process runs
    once for every submission, and those of its room (grading/host/room.py), which a warm sandbox
    runs once, None where the lab declares no room (the sandbox then runs the first)."""
    from grading.host import room

    try:
        nb = nbformat.read(release, as_version=4)
    except (OSError, ValueError):
        return "", None
    setup = [c.source for c in nb.cells if submission_checks.is_setup(c)]
    names = room.declared(setup)
    try:
        room_imports = None if names is None else room.warm_imports(setup, names)
    except room.RoomError:
        room_imports = ""  # grading says why, for every submission
    found = []
    for cell in nb.cells:
        if (
            cell.cell_type != "code"
            or submission_checks.is_solution(cell)
            or submission_checks.is_grade(cell)
        ):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        found += [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(found), room_imports


def keep_only_notebook(folder, lab):
    """Leave nothing in the autograded folder but the notebook and nbgrader's two small files
    (the submission's time and the secret `nbgrader release_feedback` names the feedback by),
    so feedback never carries other files."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if (
            path.is_file()
            and not path.is_symlink()
            and (
                path.name == f"{lab}.ipynb"
                or (
                    path.name in ("timestamp.txt", "submission_secret.txt")
                    and path.stat().st_size <= 1024
                )
            )
        ):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
