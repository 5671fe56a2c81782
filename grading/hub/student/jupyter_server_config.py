"""Jupyter server configuration of a student's server on the course's JupyterHub, read before
`../config/` (jupyterhub_config.py puts both folders on JUPYTER_CONFIG_PATH).

No formgrader: nbgrader's environment enables it in every server, and a student has nothing to
grade. Its pages render their address into HTML and into inline scripts unescaped
(nbgrader 0.9: `/formgrader/gradebook/<assignment>` writes `var assignment_id = "<assignment>"`),
so a classmate's link to `/user/<her>/formgrader/gradebook/";<script>` ran that classmate's
script on the student's origin, with her cookies: her notebooks, her terminal. The instructor's
formgrader keeps its Content-Security-Policy (grading/instructor/formgrader_csp.py).
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.jpserver_extensions.update({"nbgrader.server_extensions.formgrader": False})
