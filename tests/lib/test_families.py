"""The family registry: every family is complete, so a half-added one fails loudly."""

import pytest
import torch
import transformers
from lmcourse import as_spec, configs
from lmcourse.blocks import DecoderLM
from lmcourse.bridge import converted_state
from lmcourse.families import FAMILIES, family
from test_fastdecode import FAMILIES as FAST_CASES
from test_parity import HELD_OUT, MAIN, OTHER_FAMILIES, YARN

PUBLISHED = {configs.load(name).model_type for name in configs.available()}
PARITY = {c.model_type for cases in (MAIN, HELD_OUT, OTHER_FAMILIES, YARN) for c in cases.values()}
FAST = {case.values[0].model_type for case in FAST_CASES}  # FastDecoder against DecoderLM


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_has_every_part(name):
    entry = FAMILIES[name]
    parts = {
        "a config reader with a one-line docstring saying what differs": callable(entry.read)
        and entry.summary
        and "\n" not in entry.summary,
        "weight rules": callable(entry.weights),
        "a toy size (toy)": bool(entry.toy),
        "a published config in lmcourse/configs.py (_PUBLISHED)": name in PUBLISHED,
        "a parity case in tests/lib/test_parity.py": name in PARITY,
        "a fast-path parity case (tests/lib/test_fastdecode.py FAMILIES: MAIN, HELD_OUT or "
        "OTHER_FAMILIES of tests/lib/test_parity.py)": name in FAST,
        "a parent that is itself in the registry": entry.parent in (None, *FAMILIES),
    }
    missing = [part for part, present in parts.items() if not present]
    assert not missing, f"family {name!r} lacks {'; '.join(missing)} (docs/ADDING_A_FAMILY.md)"


def test_every_published_config_and_parity_case_belongs_to_a_registered_family():
    strays = (PUBLISHED | PARITY) - set(FAMILIES)
    assert not strays, f"configs or parity cases of unregistered families: {sorted(strays)}"


@pytest.mark.parametrize("name", configs.available())
def test_weight_rules_fill_every_tensor_of_the_toy_model(name):
    """Names and shapes only, on the meta device: each toy's tensors map one to one."""
    config = configs.tiny(name)
    spec = as_spec(config)
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(config).state_dict()
        ours = DecoderLM(spec).state_dict()
    state = converted_state(spec, theirs, ours)
    assert set(state) == set(ours)


def test_unknown_family_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unsupported model_type 'bert'; supported families: "):
        family("bert")
