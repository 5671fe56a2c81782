"""What a student wrote, made safe for the pages an instructor opens.

The formgrader's grading page and the HTML feedback render a submission's markdown cells with
nbgrader's own templates (formgrade/index.html.j2, feedback/index.html.j2), which ignore
nbconvert's `sanitize_html` setting: each renders `cell.source | markdown2html |
strip_files_prefix` as it is. A student's `<img src=x onerror=...>` then runs on the
instructor's Jupyter server, with the instructor's rights over the formgrader's API, the
contents API, terminals and kernels.

`markdown_html` is what nbgrader_config.py installs as HTMLExporter's `strip_files_prefix`
filter, the last step of those templates (and of nbconvert's own): nbconvert's
strip_files_prefix, then an allow-list sanitiser (bleach): the tags and attributes markdown
produces, links to http, https and mailto only, images from http, https, attachments (data:
PNG, JPEG, GIF) only; everything else (scripts, event handlers, style, iframes, SVG, forms,
objects, `javascript:` and other schemes) is removed, never escaped into view.
tests/test_formgrader_page.py renders hostile markdown through nbgrader's real templates.

`plain` is the same for text: what a student's code wrote (an error message, a folder name),
shown on the instructor's terminal or in a CSV file, without the escape sequences and control
characters that would make it show something else.
"""

import re

import bleach
from nbconvert.filters import strip_files_prefix

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {
    "*": ["class", "id", "title"],
    "a": ["href"],
    "img": ["src", "alt", "width", "height"],
    "td": ["align", "colspan", "rowspan"],
    "th": ["align", "colspan", "rowspan"],
}
ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)?")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
IMAGE_DATA = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*\Z")


def allowed(tag, name, value):
    """bleach's attribute filter: the allow-list above, and the schemes links and images may
    use (a relative link or image stays: it points into the course's own server)."""
    if name not in ATTRIBUTES.get(tag, []) + ATTRIBUTES["*"]:
        return False
    if name not in ("href", "src"):
        return True
    url = "".join(value.split()).lower()  # "java\tscript:" is still javascript:
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", url)
    if tag == "img" and url.startswith("data:"):
        return bool(IMAGE_DATA.match(value.strip()))
    if scheme is None:
        return not url.startswith("//")  # a relative address, not another host's
    return scheme.group(1) in (("http", "https", "mailto") if tag == "a" else ("http", "https"))


def clean(html):
    """`html` (what markdown rendered) with only the allow-listed tags and attributes."""
    return bleach.clean(
        str(html),
        tags=TAGS,
        attributes=allowed,
        protocols=["http", "https", "mailto", "data"],  # allowed() decides per tag
        strip=True,
        strip_comments=True,
    )


def markdown_html(text):
    """nbconvert's strip_files_prefix, then `clean`: installed under that filter's name."""
    return clean(strip_files_prefix(text))


def plain(text):
    """`text` without terminal escape sequences (colours, cursor moves, titles, the clipboard)
    or other control and direction characters: a student's text, in a report line or a CSV
    file, must show as what it is. Newlines and tabs stay."""
    return CONTROL.sub("", ESCAPE.sub("", str(text)))


def first_line(text, limit=160):
    """The first line of `text`, plain (as above), at most `limit` characters."""
    text = plain(text).strip()
    return (text.splitlines() or [""])[0][:limit]
