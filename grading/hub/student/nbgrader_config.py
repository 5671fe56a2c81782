"""nbgrader configuration of a student's server on the course's JupyterHub, read before
`../config/` (the exchange): only what the Validate button needs, as in the student edition.

Validate runs a lab's tests in a new kernel. A test cell may name what it compares against
("# Off limits while graded: ..."); the course's IPython extension stops the student's code
from calling those while that test runs, as the grader does (lmcourse/offlimits.py). Its
kernel, like every kernel of the server (jupyterhub_config.py's Spawner.args), talks over
ZeroMQ's ipc transport: Unix sockets in the server's private /tmp, no TCP port.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.Execute.extra_arguments = ["--IPKernelApp.extensions=lmcourse.offlimits"]
c.KernelManager.transport = "ipc"
