"""lmcourse.source: the library's code as the lessons print it, with file and line numbers."""

import inspect
import json

import pytest
from lmcourse import source
from lmcourse.blocks import norms
from lmcourse.blocks.attention import Attention


def test_a_whole_function_with_its_file_and_lines():
    text = source.excerpt(norms.RMSNorm.forward)
    header, *body = text.splitlines()
    lines, start = inspect.getsourcelines(norms.RMSNorm.forward)
    assert header == (
        f"# lmcourse/blocks/norms.py, lines {start}-{start + len(lines) - 1} (RMSNorm.forward)"
    )
    assert body[0].startswith("def forward(self, x"), "the method's indentation was not removed"
    assert body == [line[4:].rstrip("\n") if line.strip() else "" for line in lines]


def test_first_and_last_select_the_lines_between_them():
    text = source.excerpt(Attention.forward, "if self.rotary", "k = apply_rotary")
    header, *body = text.splitlines()
    assert body == [
        "if self.rotary:",
        "    q = apply_rotary(q, cos, sin, self.rope_layout)",
        "    k = apply_rotary(k, cos, sin, self.rope_layout)",
    ]
    lines, start = inspect.getsourcelines(Attention.forward)
    first = start + next(i for i, line in enumerate(lines) if "if self.rotary" in line)
    expected = f"# lmcourse/blocks/attention.py, lines {first}-{first + 2} (Attention.forward)"
    assert header == expected


def test_a_decorated_method_is_shown_without_its_decorator_wrapper():
    from lmcourse.blocks.model import DecoderLM

    text = source.excerpt(DecoderLM.generate)  # wrapped by torch.inference_mode()
    assert text.startswith("# lmcourse/blocks/model.py, lines ")
    assert "def generate(self, input_ids" in text


@pytest.mark.parametrize(
    "args, match",
    [
        ((json.dumps,), "must be defined in lmcourse"),
        ((len,), "must be a function, method or class of lmcourse"),
        ((norms.RMSNorm.forward, "no such line"), "no line containing 'no such line'"),
        (
            (norms.RMSNorm.forward, "x32 = x.float()", "def forward"),
            "no line containing 'def forward'",
        ),
    ],
)
def test_bad_requests_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        source.excerpt(*args)
