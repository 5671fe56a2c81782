"""What nbgrader's Validate button may run in an instructor's server on the hub: the course's own
notebooks only.

Validate (nbgrader's `/assignments/validate`, the button on every notebook's toolbar) runs the
whole notebook in a kernel of the server's user, outside any sandbox, in the notebook's folder.
In an instructor's server every student's notebook lies in the course once collected
(`grading/submitted/<student>/<lab>/`, then `autograded/` and `feedback/`): an instructor who
opened a submission and pressed Validate, to see whether it passes, ran the student's code as
herself, next to the solutions, the gradebook and her hub token. Autograding runs the same
notebook in the grading sandbox (grading/host/sandbox.py); Validate has none.

So in an instructor's server Validate runs only what lies in the course's source or release
folders (`solutions/`, `labs/`: what the instructor writes and releases) and refuses anything
else, a student's notebook above all, with a message that says to grade it instead. Loaded by
grading/hub/instructor/jupyter_server_config.py, which the hub gives instructors' servers only;
a student's Validate runs her own notebooks in her own sandboxed server, as before.
"""

import functools
from pathlib import Path

from nbgrader.coursedir import CourseDirectory


def check(path, root, config):
    """Why Validate may not run the notebook at `path` (relative to the server's `root`), or
    None. `config`: the nbgrader configuration Validate would run with (the course's)."""
    course = CourseDirectory(config=config)
    target = (Path(root) / path).resolve()
    allowed = [
        Path(course.root, course.source_directory).resolve(),
        Path(course.root, course.release_directory).resolve(),
    ]
    if any(target.is_relative_to(folder) for folder in allowed):
        return None
    return (
        f"Validate runs only the course's own notebooks (under "
        f"{' or '.join(ascii(str(f)) for f in allowed)}), in your kernel, outside any sandbox; "
        f"{ascii(path)} is not one of them. A student's notebook is graded in the grading "
        "sandbox: the formgrader's Autograde, or make autograde"
    )


def guard(refusal=check, who="LM10 hub"):
    """Make nbgrader's Validate handler refuse what `refusal(path, root, config)` refuses (a
    reason, or None), before any kernel starts; `who` names the guard in the server's log. A
    refusal is installed once however often its configuration file is read; different ones
    stack (on the hub an instructor's server has both this module's `check` and the one of
    grading/jupyter_server_config.py)."""
    from nbgrader.server_extensions.validate_assignment.handlers import (
        ValidateAssignmentHandler,
    )

    validate = ValidateAssignmentHandler.validate_notebook
    key = (refusal.__code__.co_filename, refusal.__qualname__)
    if key in getattr(validate, "lm10_refusals", ()):
        return

    @functools.wraps(validate)
    def guarded(self, path):
        try:
            refused = refusal(path, self.root_dir, self.load_config())
        except Exception as error:  # no course configuration: nothing is the course's
            refused = f"Validate could not read the course's configuration: {error!r}"
        if refused:
            self.log.warning("%s: not validated: %s", who, refused)
            return {"success": False, "value": f"Not validated. {refused}"}
        return validate(self, path)

    guarded.lm10_refusals = (*getattr(validate, "lm10_refusals", ()), key)
    ValidateAssignmentHandler.validate_notebook = guarded
