"""jupyterhub-singleuser on the listening socket the hub made for this server (the hub runs it).

    python -m grading.hub.singleuser [jupyterhub-singleuser's arguments]

The hub binds each server's loopback port and listens on it itself, as root, before the server
starts, hands the socket down (its descriptor in $LM10_SERVER_SOCKET_FD), and closes its own
copy only once the proxy no longer routes there (grading/hub/jupyterhub_config.py,
`SandboxedSpawner`). So the port is never free while the proxy may send someone's requests to
it: not between the hub choosing a port and the server binding it, and not after the server
ends on its own (JupyterLab's File > Shut Down, a crash) before the hub notices. No other user
can bind it then (a listening socket of root's, without SO_REUSEPORT), and what the proxy sends
there waits in the socket's queue instead of reaching another user's listener, with the
browser's cookies and tokens.

Jupyter Server binds a port of its own; this module has it serve on the hub's socket instead,
then runs jupyterhub-singleuser as it is.
"""

import os
import socket
import sys

from jupyter_server.serverapp import ServerApp

FD_VARIABLE = "LM10_SERVER_SOCKET_FD"  # the hub sets it for every server it starts


def adopt(fd):
    """Make every ServerApp of this process serve on the listening TCP socket `fd`."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as error:
        raise SystemExit(f"${FD_VARIABLE}={fd}: not an open socket ({error})") from None
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        raise SystemExit(f"${FD_VARIABLE}={fd}: not a TCP socket")
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        raise SystemExit(f"${FD_VARIABLE}={fd}: not listening")
    sock.set_inheritable(False)  # kernels and terminals do not get it
    sock.setblocking(False)
    port = sock.getsockname()[1]

    def find_port(app):
        app.port = port

    def bind(app):
        app.http_server.add_socket(sock)
        return True

    ServerApp._find_http_port = find_port
    ServerApp._bind_http_server_tcp = bind
    return port


def main():
    fd = os.environ.pop(FD_VARIABLE, "")
    if not fd.isdigit():
        raise SystemExit(
            f"${FD_VARIABLE} is not set: this server is started by the course's JupyterHub, "
            "which listens on its port for it"
        )
    adopt(int(fd))
    from jupyterhub.singleuser import main as singleuser

    sys.argv[0] = "jupyterhub-singleuser"
    return singleuser()


if __name__ == "__main__":
    sys.exit(main())
