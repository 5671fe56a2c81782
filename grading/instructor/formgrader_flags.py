"""The formgrader's grading page of a flagged submission says so, above the notebook.

A flag (grading/host/submission_checks.py; the room's names, results.room_flag) is where the
course sends what a guard cannot decide to a person: until now only the batch's report, the
class report, `make grades` (its `flagged` column) and `make lms` (`<out>-flagged.csv`) showed
it. An instructor who autogrades from the formgrader and grades by hand on its pages saw the
score of a flagged submission as any other's. Here nbgrader's grading page
(`/formgrader/submissions/<id>`) begins with the flags the autograded notebook carries, read as
the class report reads them (class_report.notebook_flags, against the released notebook);
each flag's text quotes the student's code, so it is written escaped, as text, never markup.
"""

from __future__ import annotations

import functools
import html
import os
import re

from grading.instructor.sanitise import plain

BODY = re.compile(r"<body\b[^>]*>", re.IGNORECASE)
SHOWN = 20  # flags written on the page; the rest counted

STYLE = (
    "margin:0;padding:12px 20px;background:#fff3cd;color:#533f03;"
    "border-bottom:2px solid #b58900;font-family:sans-serif;font-size:14px"
)


def banner(flags: list[str]) -> str:
    """The notice for `flags` (each escaped), or "" for none."""
    if not flags:
        return ""
    # plain: a flag quotes her strings (getattr's names), and a bidi override or an escape
    # sequence in one turned its line around on the page (the eighty-second hub tester's)
    items = "".join(f"<li>{html.escape(plain(flag), quote=True)}</li>" for flag in flags[:SHOWN])
    if len(flags) > SHOWN:
        items += f"<li>and {len(flags) - SHOWN} more (the class report lists them all)</li>"
    return (
        f'<div id="lm10-flags" role="alert" style="{STYLE}"><strong>Flagged for a person: '
        "read every answer cell by hand before you trust this score.</strong>"
        f"<ul>{items}</ul></div>"
    )


def flags_of(handler, submission_id: str) -> list[str]:
    """The flags of the submitted notebook `submission_id`, as class_report.notebook_flags
    reads them off its autograded notebook; one flag saying so where either notebook cannot
    be read (a page that cannot show its flags is no clean page)."""
    from grading.instructor import class_report

    submission = handler.gradebook.find_submission_notebook_by_id(submission_id)
    lab, notebook = submission.assignment.assignment.name, submission.notebook.name
    coursedir = handler.coursedir
    autograded = coursedir.format_path(coursedir.autograded_directory, submission.student.id, lab)
    release = coursedir.format_path(coursedir.release_directory, ".", lab)
    found = class_report.notebook_flags(
        os.path.join(os.path.abspath(autograded), f"{notebook}.ipynb"),
        os.path.join(os.path.abspath(release), f"{notebook}.ipynb"),
    )
    if found is None:
        return [
            "the autograded or the released notebook could not be read to check this "
            "submission's flags: run `make report` and read its row"
        ]
    return found


def install() -> None:
    """nbgrader's SubmissionHandler.get writes the page once, after its own checks (login, XSRF,
    the course's folder); the flags go in front of that page's body."""
    from nbgrader.server_extensions.formgrader import handlers

    get = handlers.SubmissionHandler.get
    if getattr(get, "_lm10_flags", False):
        return

    @functools.wraps(get)
    def get_with_flags(self, submission_id):
        write = self.write

        def flagged(chunk):
            if isinstance(chunk, str) and self.get_status() == 200 and BODY.search(chunk):
                notice = banner(flags_of(self, submission_id))
                chunk = BODY.sub(lambda m: m.group(0) + notice, chunk, count=1)
            return write(chunk)

        self.write = flagged
        try:
            return get(self, submission_id)
        finally:
            self.__dict__.pop("write", None)

    get_with_flags._lm10_flags = True
    handlers.SubmissionHandler.get = get_with_flags
