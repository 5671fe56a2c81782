"""Jupyter server configuration of the LM10 course, for the instructor's server.

Read by the Jupyter server that `make lab` starts (JUPYTER_CONFIG_PATH=grading) and by the
instructor's server on JupyterHub (grading/JUPYTERHUB.md), never by a student's. It enables
grading.instructor.formgrader_csp: a Content-Security-Policy with per-response nonces on the
formgrader's pages, so that no script a student's submission smuggles onto them runs.

`make lab` serves one person who may be both a student (labs fetched from the assignment list,
lessons) and the instructor (submissions collected under grading/). Nothing a collected
submission holds may run as her:

- Kernels and terminals run with PYTHONSAFEPATH=1. A kernel starts in its notebook's folder
  as `python -m ipykernel_launcher`, which puts that folder first on sys.path: a student's
  `ipykernel_launcher.py` collected beside her notebook ran as the instructor the moment the
  instructor opened the notebook. No lesson or lab imports from its own folder.
- nbgrader's Validate runs nothing under the course's grading folders (`refused_folders`):
  it runs a notebook in the server's own kernel, outside any sandbox, so Validate on a
  collected notebook ran the student's code as the instructor. A student's own labs (labs/,
  or where the assignment list fetches them: the server's root) validate as before. On the
  hub, grading/hub/validate_guard.py then narrows Validate to solutions/ and labs/.
- `labconfig/page_config.json` beside this file turns off JupyterLab's Vega renderer, which
  draws a chart stored in any notebook, trusted or not, and fetches its data with the page's
  cookies: a chart in a collected notebook read the solutions from this server.
"""

import os
from pathlib import Path

from grading.hub import validate_guard

HERE = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.jpserver_extensions.update({"grading.instructor.formgrader_csp": True})
# The course's templates (those nbgrader_config.py puts on JUPYTER_PATH): their scripts are the
# course's own and get the nonce, wherever this course folder is.
c.LM10CSP.course_templates = os.path.join(HERE, "jupyter-data")

# Every process this server starts (kernels, terminals) inherits its environment.
os.environ["PYTHONSAFEPATH"] = "1"


def refused_folders(config):
    """The folders whose notebooks Validate must not run: this grading folder, the course's
    submitted, autograded and feedback folders and the exchange, wherever they are configured
    (`config`: the nbgrader configuration Validate runs with)."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.exchange import Exchange

    course = CourseDirectory(config=config)
    named = [
        course.submitted_directory,
        course.autograded_directory,
        course.feedback_directory,
    ]
    return [Path(HERE), *(Path(course.root, d) for d in named), Path(Exchange(config=config).root)]


def refusal(path, root, config):
    """Why Validate may not run the notebook at `path` (relative to the server's `root`), or
    None. Each folder above the notebook is compared to each refused one as a file (same
    device and inode), so neither a link nor a name's case on a case-insensitive disk gets
    around it."""
    target = (Path(root) / path).resolve()
    refused = [f for f in refused_folders(config) if f.exists()]
    for folder in (target, *target.parents):
        if folder.exists() and any(os.path.samefile(folder, f) for f in refused):
            return (
                f"Validate runs a notebook in your own kernel, outside any sandbox, and "
                f"{ascii(path)} lies in the course's grading folders ({ascii(str(folder))}), "
                "where collected submissions are: a student's notebook is graded in the grading "
                "sandbox. Use Autograde (the formgrader's, or make autograde)"
            )
    return None


validate_guard.guard(refusal, who="LM10")  # nbgrader's Validate handler, before any kernel
