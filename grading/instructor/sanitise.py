"""What a student wrote, made safe for the pages an instructor opens.

The formgrader's grading page and the HTML feedback render a submission's markdown cells with
nbgrader's own templates (formgrade/index.html.j2, feedback/index.html.j2), which ignore
nbconvert's `sanitize_html` setting: each renders `cell.source | markdown2html |
strip_files_prefix` as it is. A student's `<img src=x onerror=...>` then runs on the
instructor's Jupyter server, with the instructor's rights over the formgrader's API, the
contents API, terminals and kernels.

`markdown_html` is what nbgrader_config.py installs as HTMLExporter's `strip_files_prefix`
filter, the last step of those templates (and of nbconvert's own), and `clean` as its
`clean_html` filter, which nbconvert's templates apply to raw cells and to HTML, markdown and
SVG outputs: nbconvert's strip_files_prefix, then an allow-list sanitiser (nh3, the Python
binding of Rust's Ammonia, which parses as a browser's HTML5 parser does): the tags markdown
produces, links to http, https and mailto only, images that carry themselves (data: PNG, JPEG,
GIF: attachments) only, never an address (an image loads as the page opens: a request to the
course's server with the instructor's cookies); everything else (scripts, event handlers,
style, iframes, SVG, forms, objects, `javascript:` and other schemes) is removed, never escaped
into view, and the contents of script and style elements with it.

No attribute a student writes can place, cover or restyle anything on the instructor's page,
so none survives but the address of a link or image, an image's alternative text, a tooltip
(`title`), a list's first number and a table cell's span and alignment. In particular:
`class` (nbgrader's page carries Bootstrap: `navbar-fixed-top`, `modal-backdrop`, `alert` draw
a fixed banner or a layer over every score and comment box, no script needed), `style`,
`id` and `name` (an element that takes the id of a score box, or of a name nbgrader's script
reads from `window` or `document`, changes what that script finds: DOM clobbering), `width`
and `height`, `hidden`, `popover`, `dir`, `tabindex`, `accesskey`, `for`, `form`, `role`,
`data-*` and `aria-*` (some name elements of the page by id). Markdown's own heading ids go
with them (nbconvert writes the heading's text as its id).
tests/test_formgrader_page.py renders hostile markdown through nbgrader's real templates,
tests/test_formgrader_browser.py opens the page in Chromium.

`plain` is the same for text: what a student's code wrote (an error message, a folder name),
shown on the instructor's terminal or in a CSV file, without the escape sequences and control
characters that would make it show something else.
"""

import re

import nh3
from nbconvert.filters import get_metadata, strip_files_prefix
from nbconvert.preprocessors import Preprocessor

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
# Nothing on "*": no attribute every element may carry (see the module's docstring).
ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
}
ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)?")
# Unicode's Bidi_Control: the marks (U+061C, U+200E, U+200F), embeddings and overrides, isolates
BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
IMAGE_DATA = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*\Z")


def allowed(tag, name, value):
    """nh3's attribute filter, for the attributes the allow-list keeps: the schemes links and
    images may use (a relative link stays: it points into the course's own server, and only a
    click follows it); None removes the attribute. An image loads when the page opens, so its
    address must carry the image itself (data:): a relative one is a GET the instructor's
    browser sends, with the instructor's cookies, to any page of the course's server
    (`<img src="/hub/logout">` logs the instructor out: JupyterHub's LogoutHandler.get; the
    sixtieth hub tester's, and the formgrader's policy allows images from 'self'), and so is an
    http one naming the course's own host (another host's the policy blocks anyway)."""
    if name not in ATTRIBUTES.get(tag, ()):
        return None if name != "rel" else value  # nh3's own rel="noopener noreferrer"
    if name not in ("href", "src"):
        return value
    url = "".join(value.split()).lower()  # "java\tscript:" is still javascript:
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", url)
    if tag == "img":
        return value if url.startswith("data:") and IMAGE_DATA.match(value.strip()) else None
    if scheme is None:
        return None if url.startswith("//") else value  # relative, not another host's
    return value if scheme.group(1) in ("http", "https", "mailto") else None


CLEANER = nh3.Cleaner(
    tags=TAGS,
    clean_content_tags={"script", "style"},
    attributes=ATTRIBUTES,
    attribute_filter=allowed,
    url_schemes={"http", "https", "mailto", "data"},  # allowed() decides per tag
    strip_comments=True,
)


def clean(html):
    """`html` (what markdown rendered, or any HTML of a submission) with only the allow-listed
    tags and attributes. Installed as nbconvert's `clean_html` filter too, which the pages
    apply to her highlighted code as well. A bidi override, embedding or isolate (U+202A to
    U+202E, U+2066 to U+2069) is shown as its name: in her code one made a line read otherwise
    than it runs ("Trojan Source", CVE-2021-42574: `if access != "none\u202e \u2066# ..."`
    showed on the grading page as a comment that runs as a string; the eighty-second hub
    tester's), in her text it turned her words around."""
    return named_directions(CLEANER.clean(str(html)))


def named_directions(text):
    """`text` with each bidi override, embedding, isolate or mark written as its name
    ("[U+202E]"). The marks (RLM U+200F, ALM U+061C, LRM U+200E) are invisible strong
    characters: two right-to-left marks in strings of hers turned `10 - 3` between them into
    `3 - 10` on the grading page (the eighty-fourth hub tester's)."""
    return BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def markdown_html(text):
    """nbconvert's strip_files_prefix, then `clean`: installed under that filter's name."""
    return clean(strip_files_prefix(text))


def image_path(path):
    """Installed as nbconvert's `posix_path` filter, which its templates apply only to the
    address of an output's image held in a file (`output.metadata.filenames[mime]`, written by
    nbconvert's ExtractOutputPreprocessor, and `output.svg_filename`). No page nbgrader renders
    extracts outputs, so such an address comes from the notebook: a page rendered from a
    notebook whose output says `metadata={"filenames": {"image/png": "/hub/logout"}}` held
    `<img src="/hub/logout">`, a GET sent with the instructor's cookies as it opened (the
    sixty-second hub tester's). The autograded notebook cannot carry it (course_preprocessors'
    `clean_output` rebuilds every output from its data alone, and her stored outputs are
    cleared first): this is a second wall. Only an image that carries itself stays, as in
    `allowed`; anything else is "", which loads nothing."""
    path = str(path)
    return path if IMAGE_DATA.match(path.strip()) else ""


def output_metadata(output, key, mimetype=None):
    """Installed as nbconvert's `get_metadata` filter. Its templates write an output image's
    `width` and `height` from the output's metadata unquoted (`width={{ width | escape_html }}`),
    and escape_html leaves spaces and `=`: an output with metadata {"image/png": {"width": "1
    srcset=/hub/logout style=... class=..."}} wrote those attributes into the page's <img> (a
    GET with the instructor's cookies as it opened, and Bootstrap's classes over the page: the
    sixty-second hub tester's, on a page rendered from such a notebook; the autograded one
    carries no output metadata, see `image_path`: a second wall). A width or height stays only
    as a plain number; every other key is nbconvert's own answer."""
    value = get_metadata(output, key, mimetype)
    number = not isinstance(value, bool) and re.fullmatch(r"\d{1,6}(?:\.\d{1,6})?", str(value))
    return None if key in ("width", "height") and not number else value


class EveryCellShown(Preprocessor):
    """Installed as the HTMLExporter's preprocessor: each cell's `transient` metadata removed
    before the page is rendered. nbconvert's templates leave out the source of any cell whose
    metadata says `{"transient": {"remove_source": true}}` (base/null.j2), and nothing between
    her submitted notebook and the autograded one removed a cell's metadata (nbgrader's
    sanitising steps rewrite only `nbgrader`; the course's ClearMetadataPreprocessor, which
    now clears code cells' but not markdown cells', was not enabled): her answer cell so
    marked was graded and flagged, and the
    formgrader's grading page, where a person reads a flagged submission's code, showed its
    outputs and not one line of it (the eighty-second hub tester's). Jupyter never saves
    `transient` in a notebook; a page of hers shows every cell she handed in.
    Her code, and the text of her outputs, are shown without the direction characters that
    would make them read otherwise than they run: `named_directions` (nbconvert's highlighted
    code and streams do not pass through `clean`)."""

    enabled = True

    def preprocess_cell(self, cell, resources, index):
        metadata = cell.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("transient", None)
        if isinstance(cell.get("source"), str):
            cell.source = named_directions(cell.source)
        for output in cell.get("outputs") or []:
            if not isinstance(output, dict):
                continue
            if isinstance(output.get("text"), str):
                output["text"] = named_directions(output["text"])
            if isinstance(output.get("traceback"), list):
                output["traceback"] = [
                    named_directions(t) if isinstance(t, str) else t for t in output["traceback"]
                ]
            data = output.get("data")
            if isinstance(data, dict) and isinstance(data.get("text/plain"), str):
                data["text/plain"] = named_directions(data["text/plain"])
        return cell, resources


def plain(text):
    """`text` without terminal escape sequences (colours, cursor moves, titles, the clipboard)
    or other control and direction characters: a student's text, in a report line or a CSV
    file, must show as what it is. Newlines and tabs stay."""
    return CONTROL.sub("", ESCAPE.sub("", str(text)))


def first_line(text, limit=160):
    """The first line of `text`, plain (as above), at most `limit` characters."""
    text = plain(text).strip()
    return (text.splitlines() or [""])[0][:limit]
