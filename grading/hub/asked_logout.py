"""Logging out only when the person asks: JupyterHub 5.5's `LogoutHandler` logs out on any GET
of `/hub/logout`, and a GET is what an image sends. The instructor's JupyterLab keeps a
student's images from any address, so `![](https://<the hub>/hub/logout)` in a submission, or
`![](/user/<instructor>/logout)` (her server's logout, which clears its cookie and redirects
there), logged the instructor out as she opened it (the sixty-eighth hub tester's).

A GET logs out only where the browser says it is a top-level navigation (`Sec-Fetch-Dest:
document`: JupyterLab's and the hub's "Log out" over https or on localhost); any other GET (an
image, a frame, a browser that sends no such header, as over plain http) gets a page with a
button, whose POST (with the hub's XSRF token) logs out. A server's `/logout` clears its own
cookie on a navigation only, and otherwise sends the request on to the hub's, which asks.
"""

import functools
from html import escape

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Log out</title></head>
<body><form method="post" action="{action}">{xsrf}
<button id="logout_submit" type="submit">Log out of the hub</button>
</form></body></html>
"""


def navigation(handler):
    """Whether the browser says this request is a top-level navigation (not an image, a
    frame, a script's fetch). Browsers send the header to https and localhost origins."""
    return handler.request.headers.get("Sec-Fetch-Dest") == "document"


@functools.cache
def hub_handler():
    """The hub's `/logout` handler (JupyterHub's, asking first); for
    `CourseAccounts.get_handlers`, which JupyterHub routes before its own."""
    from jupyterhub.handlers.login import LogoutHandler
    from jupyterhub.utils import url_path_join

    class AskedLogout(LogoutHandler):
        async def get(self):
            if navigation(self):
                await super().get()
                return
            self.set_header("Content-Type", "text/html; charset=UTF-8")
            self.set_header("Cache-Control", "no-store")
            action = escape(url_path_join(self.hub.base_url, "logout"))
            self.finish(PAGE.format(action=action, xsrf=self.xsrf_form_html()))

        async def post(self):
            await super().get()

    return AskedLogout


def guard_server():
    """In a server the hub starts: its `/logout` clears the server's cookie only on a
    navigation; otherwise it redirects to the hub's, which asks (grading/hub/config)."""
    from jupyterhub.singleuser import extension
    from jupyterhub.utils import url_path_join

    logout = extension.JupyterHubLogoutHandler.get

    @functools.wraps(logout)
    def get(self):
        if navigation(self):
            return logout(self)
        hub_auth = self.identity_provider.hub_auth
        self.redirect(hub_auth.hub_host + url_path_join(hub_auth.hub_prefix, "logout"))

    extension.JupyterHubLogoutHandler.get = get
