"""nbgrader configuration of the LM10 course.

The course root is the repository root (the folder above this file): lab sources in
`solutions/`, the student release in `labs/`, and everything grading produces under
`grading/` (git-ignored). nbgrader only reads `nbgrader_config.py` from the folder it is
started in, so run it from this folder (the Makefile does: `cd grading && nbgrader ...`).
"""

import os

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    GetGrades,
    LimitOutput,
    OverwriteKernelspec,
    SaveAutoGrades,
)

# The course's steps come from the grading package (this folder, installed with the course).
from grading.host.course_preprocessors import (
    FEEDBACK_MARK,
    DeduplicateIds,
    OverwriteCells,
    SandboxedExecute,
    StripHiddenTests,
)
from grading.hub import plain_logs
from grading.instructor.grades_export import GradesExport
from grading.instructor.sanitise import (
    EveryCellShown,
    clean,
    image_path,
    markdown_html,
    output_metadata,
)

# The course whose configuration this is: the folder of this file, wherever it was copied.
HERE = os.path.dirname(os.path.abspath(__file__))

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# What a submission's text puts in nbgrader's log (a grade id from her notebook's metadata, a
# cell's source in a traceback, her file names) reaches the instructor plain, in every nbgrader
# command of this course: `make feedback`, `make grades`, `make release` and `nbgrader
# autograde` run in an ordinary terminal (or over ssh on the hub) read this file but not the
# instructor's jupyter_config.py, which installs the same (grading/hub/plain_logs.py).
plain_logs.install()

c.CourseDirectory.course_id = "LM10"
c.CourseDirectory.root = os.path.dirname(HERE)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
c.CourseDirectory.submitted_directory = "grading/submitted"
c.CourseDirectory.autograded_directory = "grading/autograded"
c.CourseDirectory.feedback_directory = "grading/feedback"
# A busy timeout lets parallel autograders (grading/batch/autograde.py) queue for the write lock
# instead of failing at once with "database is locked".
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db") + "?timeout=120"
# The exchange (git-ignored) must exist, or the formgrader and the assignment list show errors;
# `make gradebook` releases every lab into it.
c.Exchange.root = os.path.join(HERE, "exchange")
os.makedirs(c.Exchange.root, exist_ok=True)
# The formgrader's grading page loads MathJax from this server instead of a CDN, so it works
# offline: grading/jupyter-data holds a template that replaces nbconvert's MathJax macro there
# (see that file), and jupyter-server-mathjax serves MathJax itself.
_DATA = os.path.join(HERE, "jupyter-data")
if _DATA not in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (_DATA, os.environ.get("JUPYTER_PATH")) if p
    )
# Students delete and duplicate cells: put missing test cells back (and run them), and keep
# one cell per grade_id (nbgrader's own DeduplicateIds then breaks OverwriteCells, see
# course_preprocessors.py), and a cell with another lab's grade_id is an ordinary cell.
# Everything else is nbgrader's default sanitizing pipeline.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [
    ClearOutput,
    DeduplicateIds,
    OverwriteKernelspec,
    OverwriteCells,
    CheckCellMetadata,
]

# Student code runs in a sandbox (course_preprocessors.SandboxedExecute, grading/host/sandbox.py):
# it replaces nbgrader's Execute, and its stderr never costs points, so nbgrader's
# IgnorePattern is not needed. The rest is nbgrader's default autograding pipeline.
c.Autograde.autograde_preprocessors = [
    SandboxedExecute,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
# Without a working bubblewrap SandboxedExecute refuses to run any submission, unless the
# instructor chose LM10_GRADE_WITHOUT_ISOLATION=1 (grading/host/sandbox.py). Which of the two it was
# stays in the autograded notebook's metadata (`lm10`), which ClearMetadataPreprocessor keeps,
# and `make grades` exports it as the `isolated` column (grades_export.py).
# nbgrader lists nbconvert's preprocessors as they come, and nbconvert's ClearMetadataPreprocessor
# comes disabled: it had cleared nothing, so every key of her notebook's and her code cells'
# metadata reached the autograded notebook, which the instructor's pages render (the
# eighty-second hub tester's table: `widgets`, `language_info.nbconvert_exporter`). It runs now,
# and keeps of a code cell only what the steps after it read: nbgrader's own, and the grader's
# marks for the feedback (course_preprocessors.FEEDBACK_MARK); a markdown cell's metadata is
# nbconvert's to leave (grading/instructor/sanitise.py reads what the pages would).
c.ClearMetadataPreprocessor.enabled = True
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {("language_info", "name"), "lm10"}
c.ClearMetadataPreprocessor.preserve_cell_metadata_mask = {"nbgrader", FEEDBACK_MARK}
c.ExportApp.plugin_class = GradesExport

# Seconds per cell (nbgrader's default is 30). Each lab's setup cell imports torch and
# transformers, which took 30 s on a loaded 2-core machine; a cell still running after this is
# interrupted and scores as an error, and the rest of the notebook is graded.
# grading/batch/autograde.py bounds a whole submission (--timeout, SandboxedExecute.total_timeout).
c.Execute.timeout = 120

# The limits of every graded sandbox, each described in grading/host/sandbox.py (SandboxLimits; the
# defaults below are Limits'). The batch's workers warm their sandbox with these and
# SandboxedExecute grades with them, so a change here changes both; a submission whose limits
# differ from the warm sandbox's would run in a cold one, and the worker's log says so.
# c.SandboxLimits.memory_bytes = 8 << 30  # address space of each process
# c.SandboxLimits.file_bytes = 64 << 20  # largest file written, largest message back
# c.SandboxLimits.processes = 512  # processes and threads at once
# c.SandboxLimits.cpu_seconds = 3600  # CPU seconds of each process
# c.SandboxLimits.home_bytes = 256 << 20  # the private home, /tmp and /dev/shm, each
# c.SandboxLimits.files = 10_000  # files and folders in each of them
# c.SandboxLimits.open_files = 4096  # descriptors each process holds open
# c.SandboxLimits.output_chars = 20_000  # characters kept of each output of a cell

# nbgrader's Validate runs a lab's tests in the student's own kernel: there the course's IPython
# extension stops the student's code from calling what a test declares off limits, as
# autograding does in the sandbox (lmcourse/offlimits.py). The student edition's
# jupyter-config/nbgrader_config.py sets the same.
c.Execute.extra_arguments = ["--IPKernelApp.extensions=lmcourse.offlimits"]

# Every page nbgrader renders from a submission (the formgrader's grading page, the feedback)
# shows the student's markdown through an allow-list sanitiser (sanitise.py: nbgrader's
# templates ignore nbconvert's own), and no script, widget state or HTML output of the notebook.
# The same sanitiser replaces nbconvert's `clean_html` (raw cells, HTML, markdown and SVG
# outputs), which keeps every class and id; a cell's tags, which nbconvert writes into the
# cell's class, are left out by grading/jupyter-data/.../celltags.j2. No attribute a student
# writes can place, cover or restyle anything on these pages.
# An output's image is shown from its data, never from an address the notebook names
# (sanitise.image_path, as nbconvert's `posix_path`).
c.HTMLExporter.filters = {
    "strip_files_prefix": markdown_html,
    "clean_html": clean,
    "posix_path": image_path,
    "get_metadata": output_metadata,  # an image's width and height: numbers only
}
c.HTMLExporter.sanitize_html = True
# Every cell she handed in is shown, its source too: a cell's `transient.remove_source`, which
# the autograded notebook keeps, left her code off the grading page (sanitise.EveryCellShown).
c.HTMLExporter.preprocessors = [EveryCellShown]

# Feedback is what students see: remove the hidden tests (and any output that quotes them).
c.GenerateFeedback.preprocessors = [GetGrades, StripHiddenTests, CSSHTMLHeaderPreprocessor]
