"""Configuration of every Jupyter application started with JUPYTER_CONFIG_PATH=grading: the
server that `make lab` starts, and the commands of its terminals, which inherit that path. There
an instructor may run `jupyter nbconvert` or `nbgrader` in a collected submission's folder
(grading/submitted/<student>/<lab>/), and nbconvert and nbgrader put the folder they run in
first on sys.path themselves, whatever PYTHONSAFEPATH says, and nbconvert reads its templates
from it: a student's `codeop.py` or `lab/index.html.j2` there ran as the instructor in
`jupyter nbconvert --to html` of her notebook. The hub's instructors have the same problem and
the same answer, grading/hub/instructor/jupyter_config.py (it says how), run here as it is: the
folder a command runs in is taken off sys.path again and no template folder is named but
nbconvert's and nbgrader's own.

It is read from the installed package `grading`, so a course folder that holds only this
file (a course copy, tools/course_copy.py) gets the same protection.
"""

import runpy
from pathlib import Path

import grading

runpy.run_path(
    str(Path(grading.__file__).parent / "hub" / "instructor" / "jupyter_config.py"),
    init_globals={"get_config": get_config},  # noqa: F821 (provided by traitlets)
)
