"""Jupyter server configuration of the LM10 course, for the instructor's server.

Read by the Jupyter server that `make lab` starts (JUPYTER_CONFIG_PATH=grading) and by the
instructor's server on JupyterHub (grading/JUPYTERHUB.md), never by a student's. It enables
grading.instructor.formgrader_csp: a Content-Security-Policy with per-response nonces on the
formgrader's pages, so that no script a student's submission smuggles onto them runs.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.jpserver_extensions.update({"grading.instructor.formgrader_csp": True})
# The course's templates (those nbgrader_config.py puts on JUPYTER_PATH): their scripts are the
# course's own and get the nonce, wherever this course folder is.
c.LM10CSP.course_templates = os.path.join(HERE, "jupyter-data")
