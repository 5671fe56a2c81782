"""Jupyter server configuration of the LM10 course, for the instructor's server.

Read by the Jupyter server that `make lab` starts (JUPYTER_CONFIG_PATH=grading) and by the
instructor's server on JupyterHub (grading/JUPYTERHUB.md), never by a student's. It enables
formgrader_csp.py (in this folder): a Content-Security-Policy with per-response nonces on the
formgrader's pages, so that no script a student's submission smuggles onto them runs.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # for formgrader_csp (nbgrader_config.py does the same)

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.jpserver_extensions.update({"formgrader_csp": True})
