"""The proxy's output in the hub's log, bounded as a server's is (grading/hub/server_output.py).

JupyterHub starts configurable-http-proxy with the hub's own standard output and error, and the
proxy logs, itself and at its default level (info), every answer of its REST API, with the
request's whole path: anyone on the machine reaches that port on the loopback without a
credential (its 403 is logged at warn, a malformed `%` escape at error before the token is
read). A student's four connections asking `/api/routes/<15,000 characters>` without a token
were 52,717 requests and 794 MB of the hub's output in 10 s (6 TB a day), past the hub's own
bounds (grading/hub/access_log.py), which see only the hub's Python log (the forty-eighth
tester's table in JUPYTERHUB.md). So the hub gives the proxy a pipe to write, and relays it as
a server's output: each line plain, at most 4 KiB, 50 lines a second, 32 MiB a day, under the
name `configurable-http-proxy`. Drained, not paused past 1 MiB a second as a server's pipe is:
node keeps in its own memory what the pipe does not take, and paused, her flood grew the proxy
(root's) by about 90 MB a second without bound (the fiftieth tester's table).
"""

import os
import subprocess

from jupyterhub import proxy
from jupyterhub.proxy import ConfigurableHTTPProxy

from grading.hub import server_output

NAME = "configurable-http-proxy"


class RelayedProxy(ConfigurableHTTPProxy):
    """ConfigurableHTTPProxy whose process writes to a pipe the hub relays (server_output)."""

    async def start(self):
        read, write = os.pipe()
        started = proxy.Popen

        def popen(*args, **kwargs):
            return started(*args, stdin=subprocess.DEVNULL, stdout=write, stderr=write, **kwargs)

        server_output.relay(read, self.log, NAME, drain=True)
        proxy.Popen = popen
        try:
            return await super().start()
        finally:
            proxy.Popen = started
            os.close(write)
