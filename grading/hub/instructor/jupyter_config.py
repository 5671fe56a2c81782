"""Configuration of every Jupyter application an instructor starts on the course's JupyterHub:
her server, and the commands of her terminal (`jupyter nbconvert`, `nbgrader ...`), which read
it from JUPYTER_CONFIG_PATH (jupyterhub_config.py puts this folder there, also in the k8s
values).

Nothing of the folder a command runs in is imported or rendered. PYTHONSAFEPATH=1 keeps Python
itself from putting that folder on sys.path, but nbconvert and nbgrader put it there themselves
(`NbConvertApp.init_syspath`, `NbGrader.init_syspath`: `sys.path.insert(0, os.getcwd())`,
before they read this file), and nbconvert looks for its templates there
(`TemplateExporter.extra_template_basedirs`: the working folder). In a submission's collected
folder, `jupyter nbconvert --to html` of her notebook (to read it) ran her `codeop.py`, a module
nbconvert imports after it starts, and her `lab/index.html.j2`, a Jinja template that calls
Python, as the instructor. This file, read after those insertions and before any of that is
imported, takes the working folder off sys.path again, and names no template folder besides
nbconvert's and nbgrader's own.

And what a submission's text puts in a log reaches her plain (grading/hub/plain_logs.py):
nbgrader's autograde logged a grade id from her notebook's metadata as it was, escape sequences
and all, into the instructor's terminal and the formgrader's answer.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

_here = os.path.realpath(os.getcwd())
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != _here]

c.TemplateExporter.extra_template_basedirs = []

# What a submission's text puts in a log (nbgrader logs a cell's grade id and source) reaches
# her terminal and the formgrader's answers plain: no escape sequence or control character.
from grading.hub import plain_logs  # noqa: E402 (after the working folder left sys.path)

plain_logs.install()
