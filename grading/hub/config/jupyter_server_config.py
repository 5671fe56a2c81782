"""Jupyter server configuration of every server the course's JupyterHub starts (students' and
instructors'; jupyterhub_config.py puts this folder on JUPYTER_CONFIG_PATH).

"Open on the hub" links (nbgitpuller) pull only the course's repository, into a plain folder
under the server's root, and nothing in an instructor's server (grading/hub/gitpuller_guard.py).
The server's `/logout` clears its cookie only when it is a navigation, not an image of a
student's notebook (grading/hub/asked_logout.py).
"""

from grading.hub import asked_logout, gitpuller_guard

gitpuller_guard.guard()
asked_logout.guard_server()
