"""Jupyter server configuration of an instructor's server on the course's JupyterHub, read
after the course's own (`~/LM10/grading/`) and before `../config/` (jupyterhub_config.py puts
the three folders on JUPYTER_CONFIG_PATH).

Validate runs only the course's own notebooks (grading/hub/validate_guard.py): a student's
collected notebook, validated in the instructor's kernel, ran the student's code as the
instructor.

Beside it, `labconfig/page_config.json` turns off JupyterLab's Vega renderer in the
instructor's JupyterLab: it renders a chart stored in any notebook, trusted or not, and its
loader fetches the chart's data with the page's cookies; a chart in a collected submission read
the solutions from the instructor's server and sent them, as images' addresses, to the
student's.
"""

from grading.hub import validate_guard

validate_guard.guard()
