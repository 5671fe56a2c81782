"""lmcourse.source: the library's code as the lessons print it, under its file and name."""

import inspect
import json

import pytest
from lmcourse import source
from lmcourse.blocks import norms
from lmcourse.blocks.attention import Attention


def test_a_whole_function_with_its_file_and_name():
    text = source.excerpt(norms.RMSNorm.forward)
    header, *body = text.splitlines()
    lines, _ = inspect.getsourcelines(norms.RMSNorm.forward)
    assert header == "# lmcourse/blocks/norms.py: RMSNorm.forward"
    assert body[0].startswith("def forward(self, x"), "the method's indentation was not removed"
    assert body == [line[4:].rstrip("\n") if line.strip() else "" for line in lines]


def test_first_and_last_select_the_lines_between_them():
    text = source.excerpt(Attention.forward, "if self.rotates", "k = apply_rotary")
    header, *body = text.splitlines()
    assert body == [
        "if self.rotates:",
        "    q = apply_rotary(q, cos, sin, self.rope_layout)",
        "    k = apply_rotary(k, cos, sin, self.rope_layout)",
    ]
    assert header == "# lmcourse/blocks/attention.py: part of Attention.forward"


def test_moving_the_code_within_its_file_changes_no_excerpt(monkeypatch):
    """Stored lesson outputs print excerpts: lines added above a function must not change them."""
    before = source.excerpt(Attention.forward, "if self.rotates", "k = apply_rotary")
    real = inspect.getsourcelines

    def moved(obj):
        lines, start = real(obj)
        return lines, start + 40  # as if 40 lines had been added above it

    monkeypatch.setattr(inspect, "getsourcelines", moved)
    assert source.excerpt(Attention.forward, "if self.rotates", "k = apply_rotary") == before


def test_a_decorated_method_is_shown_without_its_decorator_wrapper():
    from lmcourse.blocks.model import DecoderLM

    text = source.excerpt(DecoderLM.generate)  # wrapped by torch.inference_mode()
    assert text.startswith("# lmcourse/blocks/model.py: DecoderLM.generate\n")
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
