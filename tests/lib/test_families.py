"""The family registry: every family is complete, so a half-added one fails loudly."""

import pytest
import torch
import transformers
from lmcourse import as_spec, configs
from lmcourse.blocks import DecoderLM
from lmcourse.bridge import converted_state
from lmcourse.families import FAMILIES, family
from lmcourse.spec import ModelSpec
from parity_cases import CASES

# test_parity (logits against transformers') and test_fastdecode (FastDecoder against DecoderLM)
# both parametrize over parity_cases.CASES (test_parity_cases_are_what_both_comparisons_check)
PARITY = {case.values[0].model_type for case in CASES}


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_has_every_part(name):
    entry = FAMILIES[name]
    parts = {
        "a reader whose one-line docstring says what differs from its parent": entry.summary
        and "\n" not in entry.summary,
        "weight rules of its own or its parent's": entry.weights or entry.parent,
        "a toy size (toy)": bool(entry.toy),
        "a published config (published)": bool(entry.published),
        "a parity case (parity), checked by tests/lib/test_parity.py and, on the fast path, by "
        "tests/lib/test_fastdecode.py": name in PARITY,
        "a parent in the registry": entry.parent is None
        or FAMILIES.get(entry.parent.name) is entry.parent,
    }
    missing = [part for part, present in parts.items() if not present]
    assert not missing, f"family {name!r} lacks {'; '.join(missing)} (docs/ADDING_A_FAMILY.md)"


@pytest.mark.parametrize("name", [n for n, entry in FAMILIES.items() if entry.parent])
def test_a_family_differs_from_its_parent(name):
    """A family written as a diff changes what is read from its published configs (a spec
    field), or the names its tensors have (weight rules of its own), or both."""
    entry = FAMILIES[name]
    spec = {published: as_spec(configs.load(published)) for published in entry.published}
    as_parent = {
        published: ModelSpec(family=name, **entry.parent.read(configs.load(published)))
        for published in entry.published
    }
    assert spec != as_parent or entry.weights is not None, f"{name} is its parent under a new name"


def test_published_names_are_unique_and_load_as_their_family():
    names = [name for entry in FAMILIES.values() for name in entry.published]
    assert len(names) == len(set(names)), "a published name is listed by two families"
    assert sorted(names, key=str.lower) == configs.available()
    for entry in FAMILIES.values():
        for name in entry.published:
            assert configs.load(name).model_type == entry.name


@pytest.mark.parametrize("name", configs.available())
def test_weight_rules_fill_every_tensor_of_the_toy_model(name):
    """Names and shapes only, on the meta device: each toy's tensors map one to one."""
    config = configs.toy(name)
    spec = as_spec(config)
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(config).state_dict()
        ours = DecoderLM(spec).state_dict()
    state = converted_state(spec, theirs, ours)
    assert set(state) == set(ours)


def test_unknown_family_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unsupported model_type 'bert'; supported families: "):
        family("bert")


def test_parity_cases_are_what_both_comparisons_check():
    """Both modules compare every case of parity_cases.CASES, read from their source (a test
    module imports no other): `@pytest.mark.parametrize("config", CASES)`, CASES imported
    from parity_cases."""
    import ast
    from pathlib import Path

    for module in ("test_parity.py", "test_fastdecode.py"):
        tree = ast.parse((Path(__file__).parent / module).read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "parity_cases"
            for alias in node.names
        }
        over_cases = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and ast.unparse(node.func) == "pytest.mark.parametrize"
            and [ast.unparse(a) for a in node.args] == ["'config'", "CASES"]
        ]
        assert "CASES" in imported and over_cases, f"{module} no longer compares every case"
