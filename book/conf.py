"""Sphinx configuration of the course as a book (`make book`, tools/book.py).

tools/book.py assembles the source folder (this file, the start page, the lessons with their
figures' alternative text, the labs page) under build/book/src and runs Sphinx on it. Nothing here
reaches the network: the lessons are rendered from their stored outputs, and MathJax and the
widget manager are the site's own files (from npm, `make book-assets`).
"""

project = "LM10: decoder-only models, then and now"
author = "LM10"
copyright = "LM10"  # noqa: A001 - Sphinx's name for it

extensions = ["myst_nb"]
exclude_patterns = ["_build"]
master_doc = "index"
language = "en"

# The lessons as they are stored: never executed, outputs as committed.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "html_image"]
# A lesson's prose has one title (the first heading) and sections under it.
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# MathJax 3 with SVG output: no web fonts to load, so it renders from disk (file://) too, where
# Chromium refuses fonts to pages. The path is relative to _static.
mathjax_path = "vendor/mathjax/tex-svg.js"
mathjax3_config = {"svg": {"fontCache": "global"}}

# The widget manager of ipywidgets 8 (@jupyter-widgets/html-manager 1.x), bundled: embed.js
# renders the widgets saved with their state and fetches nothing (no RequireJS, no CDN).
nb_ipywidgets_js = {"vendor/html-manager/embed.js": {}}

html_theme = "sphinx_book_theme"
html_title = "LM10"
html_static_path = ["_static"]
html_css_files = ["lm10.css"]
html_js_files = ["book.js"]
html_favicon = "_static/favicon.svg"
# The light theme unless the reader chose otherwise (without it the theme logs an error).
html_context = {"default_mode": "light"}
html_extra_path = ["extra"]  # extra/notebooks/: each lesson's notebook, as committed
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
    "home_page_in_toc": True,
}
