"""A Content-Security-Policy on the formgrader's pages: a Jupyter server extension.

The formgrader's grading page shows what a student handed in, on the instructor's own Jupyter
server, with the instructor's rights over the formgrader's API (grades), the contents API,
terminals and kernels. sanitise.py removes every way to run script from a student's markdown;
this policy is the second wall, should anything get past it (a sanitiser bug, an nbgrader or
nbconvert template that renders an output or a name raw): the browser itself refuses to run
any script on a formgrader page that nbgrader's own templates did not write.

How nbgrader's own scripts are told apart from anything else: by a nonce, a fresh random value
per response, that the browser requires on every script (`script-src 'nonce-...'
'strict-dynamic'`). The nonce is added to the *template source*, never to the page: when the
formgrader's Jinja environments (its own, for the .tpl pages, and the HTMLExporter's, for the
grading page) load a template file from nbgrader's formgrader templates or from the course's
grading/jupyter-data, every `<script` tag in that file gets `nonce="{{ lm10_csp_nonce() }}"`.
What a template renders from data (a student's markdown, an output, a name) is never touched,
so a `<script>` a student smuggles into the page has no nonce and does not run, wherever it
lands; nbconvert's own templates, which render a notebook's JavaScript and widget outputs
inside script tags, are left as they are (no nonce: blocked). This holds for any nbgrader
version whose templates write their scripts as tags, unlike hashes of the scripts' text, which
change with every page (they hold the submission's id) and with every nbgrader release; and
unlike a filter that would add the nonce to every `<script` of the rendered page, it cannot
bless a script that came from the submission. 'strict-dynamic' lets those scripts load the
rest (MathJax's components); it also means that no same-origin address is trusted by itself,
so a student's own .js file, which the server serves under /files/ and the formgrader under
/formgrader/submissions/<id>/, cannot be loaded as a script either ('self' is there only for
browsers that predate 'strict-dynamic' and ignore it).

Inside those trusted scripts nbgrader writes values into JavaScript strings
(`var student_id = "{{ student_id }}";`, from the address or the gradebook) without escaping;
a nonce would bless whatever such a value closed the string with, so every `{{ ... }}` inside a
string literal of a trusted script is rewritten to go through `lm10_js_string` (JSON string
escaping, and no `<`, `>`, `&` or quote left raw). nbgrader's templates also hold a few inline
event handlers (five in 0.9.6: `onclick="toggle_name(true);"`, `onClick="createAssignmentModal();"`,
...): a nonce cannot cover an attribute, so their sha256 hashes, read from the same template
files when the server starts, are allowed with 'unsafe-hashes', which lets exactly those
strings run as handlers (harmless ones, wherever they stand) and nothing else. A template
rendered outside a formgrader handler's render gets an empty nonce: its scripts do not run.

There is no 'unsafe-inline' and no 'unsafe-eval' for scripts (nbgrader's scripts and MathJax 2
need neither); styles may be inline (MathJax and nbgrader's templates set style attributes,
and a style cannot run script). Images and fonts come from this server or data: addresses (a
student's attached image is one): an image from elsewhere does not load, so a written answer
cannot tell its author when and from where it was read. Connections, form targets and the base
address are this server only, no plugin (`object-src 'none'`), and only this server's pages
(JupyterLab's formgrader panel) may frame the pages. Files of a submission served by the
formgrader (`/formgrader/submissions/<id>/<file>`) are also sandboxed: a student's HTML file
opened from there runs no script and has no access to the server.

Only the formgrader's handlers (nbgrader's formgrader BaseHandler and its subclasses: its pages,
API and submission files, everything under <base_url>/formgrader/ but its static files) get
this policy; JupyterLab and the rest of the server keep Jupyter's own. grading/
jupyter_server_config.py enables this module as a server extension for the server that
`make lab` starts (JUPYTER_CONFIG_PATH=grading) and the instructor's server on JupyterHub.
tests/test_formgrader_browser.py opens a hostile submission's grading page in Chromium.

The same extension refuses nbgrader's `/formgrader?path=<folder>` (`refuse_other_roots`): that
GET re-rooted the formgrader at the folder and ran the folder's `nbgrader_config.py` in the
server, as the instructor, and an image sends a GET: `![](/user/<instructor>/formgrader?path=
/home/<student>/x)` in a notebook the instructor opened in her JupyterLab ran a file of a
student's who had opened her home to everyone (the sixty-ninth hub tester's).

It also keeps nbconvert's "script" export to the exporters installed for it
(`script_exporters_registered_only`): a notebook names its own in
`metadata.language_info.nbconvert_exporter`, which nbconvert imports when the name has a dot
and calls with `config=`, so an image of `/user/<instructor>/nbconvert/script/<her submitted
notebook>` imported any installed module of the student's choosing in the instructor's server
and called a callable of it (the seventy-seventh hub tester's).
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import json
import os
import re
import secrets

from jinja2 import BaseLoader

GRADING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # grading/
# The course's own templates; the course's jupyter_server_config.py names its folder
# (c.LM10CSP.course_templates), which is this package's unless the course was copied.
COURSE_TEMPLATES = os.path.join(GRADING, "jupyter-data")

_NONCE = contextvars.ContextVar("lm10_csp_nonce", default="")
# A script element as the HTML parser reads it: its body ends at the first "</script".
SCRIPT = re.compile(r"(<script\b)([^>]*>)(.*?)(</script)", re.I | re.S)
EXPRESSION = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.S)
STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
HANDLER = re.compile(r"\son[a-z]+\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.I)


def lm10_js_string(value) -> str:
    """`value` as the inside of a JavaScript string literal in an HTML script element."""
    text = json.dumps(str(value), ensure_ascii=True)[1:-1]  # backslash, quote, controls
    for char in "<>&'":  # "</script" and "<!--" end a script element; ' a '...' string
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def lm10_csp_nonce() -> str:
    """The nonce of the response being rendered ("" outside one: then no script runs)."""
    return _NONCE.get()


def _escape_strings(body: str) -> str:
    """`body` (a trusted inline script) with every `{{ x }}` inside a string literal escaped."""
    held: list[str] = []

    def hold(match):
        held.append(match.group(0))
        return f"\0{len(held) - 1}\0"

    code = EXPRESSION.sub(hold, body)

    def escape(literal):
        def put(match):
            left, expression, right = EXPRESSION.match(held[int(match.group(1))]).groups()
            return f"{{{{{left} lm10_js_string({expression.strip()}) {right}}}}}"

        return re.sub(r"\0(\d+)\0", put, literal.group(0))

    code = STRING.sub(escape, code)
    return re.sub(r"\0(\d+)\0", lambda m: held[int(m.group(1))], code)


def trust_scripts(source: str) -> str:
    """A trusted template's source with the response's nonce on every script tag."""

    def tag(match):
        start, attributes, body, end = match.groups()
        if "nonce" not in attributes.lower():
            start += ' nonce="{{ lm10_csp_nonce() }}"'
        if "src" not in attributes.lower():
            body = _escape_strings(body)
        return start + attributes + body + end

    return SCRIPT.sub(tag, source)


def trusted_folders() -> list[str]:
    """Where the templates are whose scripts are nbgrader's or the course's own."""
    from nbgrader.server_extensions.formgrader import handlers

    return [os.path.realpath(handlers.template_path), os.path.realpath(COURSE_TEMPLATES)]


def _is_trusted(filename: str | None) -> bool:
    if not filename:
        return False
    path = os.path.realpath(filename)
    return any(os.path.commonpath([path, folder]) == folder for folder in trusted_folders())


class TrustedScripts(BaseLoader):
    """A Jinja loader that serves another loader's templates, with the nonce on the script tags
    of the trusted ones (trusted_folders); every other template comes as it is."""

    def __init__(self, loader):
        self.loader = loader

    def get_source(self, environment, template):
        source, filename, uptodate = self.loader.get_source(environment, template)
        if _is_trusted(filename):
            source = trust_scripts(source)
        return source, filename, uptodate

    def list_templates(self):
        return self.loader.list_templates()


def trust(environment) -> bool:
    """Install TrustedScripts and the two functions in a Jinja environment; True if it was new."""
    if isinstance(environment.loader, TrustedScripts):
        return False
    environment.loader = TrustedScripts(environment.loader)
    environment.globals.update(lm10_csp_nonce=lm10_csp_nonce, lm10_js_string=lm10_js_string)
    return True


def handler_hashes() -> list[str]:
    """'sha256-...' of every fixed inline event handler in the trusted templates."""
    found = set()
    for folder in trusted_folders():
        for parent, _, names in os.walk(folder):
            for name in names:
                if not name.endswith((".tpl", ".j2", ".html")):
                    continue
                with open(os.path.join(parent, name), encoding="utf-8") as file:
                    text = SCRIPT.sub("", file.read())
                for double, single in HANDLER.findall(text):
                    value = double or single
                    if "{{" not in value and "{%" not in value:
                        digest = hashlib.sha256(value.encode()).digest()
                        found.add(f"'sha256-{base64.b64encode(digest).decode()}'")
    return sorted(found)


def policy(nonce: str, report_uri: str, hashes: list[str], sandbox: bool = False) -> str:
    """The formgrader's Content-Security-Policy for one response."""
    script = [f"'nonce-{nonce}'", "'strict-dynamic'", "'self'"]
    if hashes:
        script += ["'unsafe-hashes'", *hashes]
    directives = [
        "default-src 'none'",
        "script-src " + " ".join(script),
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'self'",
        f"report-uri {report_uri}",
    ]
    if sandbox:
        directives.append("sandbox")
    return "; ".join(directives)


def install() -> None:
    """Give nbgrader's formgrader handlers the policy and their templates the nonce."""
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.formgrader import base
    from tornado import web

    handler = base.BaseHandler
    if getattr(handler, "_lm10_csp", False):
        return
    hashes = handler_hashes()
    render, exporter = handler.render, handler.exporter

    def csp_nonce(self) -> str:
        # One per response: set_default_headers reads the policy when the handler is made,
        # and again after clear(), so the nonce is made once and kept on the handler.
        if "_lm10_nonce" not in self.__dict__:
            self.__dict__["_lm10_nonce"] = secrets.token_urlsafe(18)
        return self.__dict__["_lm10_nonce"]

    def content_security_policy(self) -> str:
        report = self.settings.get(
            "csp_report_uri",
            url_path_join(self.settings.get("base_url", "/"), "api/security/csp-report"),
        )
        return policy(
            csp_nonce(self), report, hashes, sandbox=isinstance(self, web.StaticFileHandler)
        )

    # Every template the formgrader renders goes through one of these two, synchronously,
    # right after: the nonce is set for that render (a context variable, so concurrent
    # requests never see each other's).
    def render_with_nonce(self, name, **ns):
        trust(self.settings["nbgrader_jinja2_env"])
        _NONCE.set(csp_nonce(self))
        return render(self, name, **ns)

    def exporter_with_nonce(self):
        found = exporter.fget(self)
        if trust(found.environment):  # nbconvert rebuilds it when its settings change
            # a template compiled before (none is, in nbgrader 0.9.6) would have no nonce
            getattr(found, "_invalidate_template_cache", lambda: None)()
        _NONCE.set(csp_nonce(self))
        return found

    handler.content_security_policy = property(content_security_policy)
    handler.render = render_with_nonce
    handler.exporter = property(exporter_with_nonce)
    handler._lm10_csp = True


def refuse_other_roots() -> None:
    """nbgrader's FormgraderHandler (`/formgrader`) takes a `path` argument on a GET and then
    re-roots the formgrader there (`initialize([], root=path)`), which runs that folder's
    `nbgrader_config.py` in the server: code of whoever wrote the file, run as the instructor by
    any GET her browser sends (an image in a student's notebook), with no XSRF check. The
    course's formgrader has one root, its configured one: a request that names another is
    refused (403); JupyterLab's "Formgrader" (no path) works as before."""
    import functools

    from nbgrader.server_extensions.formgrader import handlers
    from tornado import web

    get = handlers.FormgraderHandler.get
    if getattr(get, "_lm10_one_root", False):
        return

    @functools.wraps(get)
    def one_root(self, *args, **kwargs):
        if self.request.arguments.get("path"):
            raise web.HTTPError(403, "the formgrader serves the course's own folder only")
        return get(self, *args, **kwargs)

    one_root._lm10_one_root = True
    handlers.FormgraderHandler.get = one_root


# Registered exporters that run a program (LaTeX, Chromium, Qt) on the notebook: never the one a
# notebook's metadata picks for a script.
RUNS_A_PROGRAM = frozenset({"pdf", "webpdf", "qtpdf", "qtpng"})


def script_exporters_registered_only() -> None:
    """nbconvert's ScriptExporter (`/nbconvert/script/<path>`, JupyterLab's "Export Notebook As
    Executable Script") hands the notebook to the exporter its metadata names
    (`language_info.nbconvert_exporter`); `get_exporter` imports a name with a dot as a module
    path and calls what it finds with `config=`. A student's notebook naming
    `matplotlib.pyplot.figure` or `grading.hub.jupyterhub_config.x` made the instructor's server
    import that module (running its top level) and call the callable, on a GET an image sends.
    Here the metadata may name only an exporter installed as one (`nbconvert.exporters` entry
    points) that runs no program; anything else is refused (nbconvert's ExporterNameError)."""
    import functools

    from nbconvert.exporters import script
    from nbconvert.exporters.base import ExporterNameError, get_export_names

    get = script.get_exporter
    if getattr(get, "_lm10_registered_only", False):
        return

    @functools.wraps(get)
    def registered_only(name, config=None):
        if name not in set(get_export_names()) - RUNS_A_PROGRAM:
            raise ExporterNameError(f"a notebook may not name {name!r} as its script exporter")
        return get(name, config=config)

    registered_only._lm10_registered_only = True
    script.get_exporter = registered_only


def _jupyter_server_extension_points():
    return [{"module": "grading.instructor.formgrader_csp"}]


def _load_jupyter_server_extension(serverapp):
    global COURSE_TEMPLATES
    named = serverapp.config.get("LM10CSP", {}).get("course_templates")
    if isinstance(named, str) and named:
        COURSE_TEMPLATES = named
    install()
    refuse_other_roots()
    script_exporters_registered_only()
    from grading.instructor import formgrader_flags

    formgrader_flags.install()  # a flagged submission's grading page says so
    serverapp.log.info("LM10: Content-Security-Policy with nonces on the formgrader's pages")
