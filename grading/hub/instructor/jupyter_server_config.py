"""Jupyter server configuration of an instructor's server on the course's JupyterHub, read
after the course's own (`~/LM10/grading/`) and before `../config/` (jupyterhub_config.py puts
the three folders on JUPYTER_CONFIG_PATH).

Validate runs only the course's own notebooks (grading/hub/validate_guard.py): a student's
collected notebook, validated in the instructor's kernel, ran the student's code as the
instructor.
"""

from grading.hub import validate_guard

validate_guard.guard()
