// The book's own script (tools/book.py), for the widgets saved in the lessons.
(function () {
  "use strict";

  // Alternative text for the figures inside stored widgets. The widget manager draws a widget's
  // saved output (its figure) as an <img> without alt; tools/book.py puts the figure's
  // description (book/figures.toml) into the widget's view data as "lm10_alt", and this gives
  // it to every image the widget draws.
  function describe(script) {
    var alt;
    try { alt = JSON.parse(script.textContent).lm10_alt; } catch (e) { return; }
    if (!alt) { return; }
    var box = script.parentElement;
    function apply() {
      box.querySelectorAll("img:not([alt])").forEach(function (img) { img.alt = alt; });
    }
    apply();
    new MutationObserver(apply).observe(box, { childList: true, subtree: true });
  }

  // ipywidgets typesets a widget's label with MathJax 2's MathJax.Hub.Queue; the book serves
  // MathJax 3, whose call is MathJax.typesetPromise. The widget manager renders on the window's
  // load event, after this has run.
  function bridgeMathJax() {
    var mj = window.MathJax;
    if (!mj || mj.Hub || typeof mj.typesetPromise !== "function") { return; }
    mj.Hub = {
      Queue: function (job) {
        var element = Array.isArray(job) ? job[2] : undefined;
        mj.typesetPromise(element ? [element] : undefined);
      },
    };
  }

  // Sphinx's search page fetches each result's page to show a summary under it. A page opened
  // from disk may not fetch another file (Chromium refuses file:// to fetch): there the
  // results are listed by title alone, instead of failing one fetch per result.
  if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    bridgeMathJax();
    document
      .querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')
      .forEach(describe);
  });
})();
