# LM10 course: the command interface. `make lab` and `make test` set everything up
# from a fresh clone with nothing but Python 3.11 installed.

EXTRAS := [dev]
include setup.mk
LAB    ?=

.PHONY: lab test test-perturbed lint notebooks release autograde feedback grades bench student-edition clean hub-proxy

# JUPYTER_CONFIG_PATH lets nbgrader's JupyterLab panels (formgrader, validate) find the course.
lab: setup
	$(RUN) JUPYTER_CONFIG_PATH="$(abspath grading)" $(BIN)/jupyter lab --notebook-dir=. $(ROOT_FLAG) $(JUPYTER_ARGS)

lint: setup
	$(RUN) $(BIN)/ruff check lib tests benchmarks grading lessons solutions

# Strict nbval: re-execute every lesson and compare its stored outputs.
NBVAL := $(BIN)/python -m pytest --nbval lessons --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

test: setup lint hub-proxy
	$(RUN) $(BIN)/python -m pytest tests
	$(RUN) $(NBVAL)
	$(MAKE) --no-print-directory test-perturbed

# The stored outputs must hold on other machines too. Here they are compared again as another
# machine would present them: torch's generic CPU kernels instead of this CPU's vector ones, one
# thread, and an empty course cache (the SmolLM2 weights converted afresh).
test-perturbed: setup
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && \
	echo "strict nbval, perturbed: ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 LMCOURSE_CACHE=$$scratch" && \
	$(RUN) ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 LMCOURSE_CACHE="$$scratch" $(NBVAL)

# Re-execute every lesson in place and store its outputs (what strict nbval compares).
notebooks: setup
	$(RUN) $(BIN)/jupyter nbconvert --to notebook --execute --inplace lessons/*.ipynb

# Instructor workflow (grading/README.md). nbgrader reads grading/nbgrader_config.py because it
# runs from grading/; the config points the course root back at the repository root.
NBGRADER = cd grading && $(RUN) $(BIN)/nbgrader
JOBS    ?=
NEED_LAB = @test -n "$(LAB)" || { echo "usage: make $@ LAB=LM10-L2"; exit 2; }

# Student version of solutions/$(LAB) into labs/$(LAB), and the lab's entry in the gradebook.
release: setup
	$(NEED_LAB)
	$(NBGRADER) generate_assignment $(LAB) --force

# Every grading/submitted/<student>/$(LAB)/, in parallel (JOBS=n, default every core), each in
# a bubblewrap sandbox (grading/README.md).
autograde: setup
	$(NEED_LAB)
	$(RUN) $(BIN)/python grading/autograde.py $(LAB) $(if $(JOBS),--jobs $(JOBS))

# HTML feedback in grading/feedback/<student>/$(LAB)/, hidden tests removed; nothing but the
# HTML pages is handed back (nbgrader copies every file of the autograded folder), and the two
# files `nbgrader release_feedback` reads there (timestamp and submission secret) are kept.
feedback: setup
	$(NEED_LAB)
	$(NBGRADER) generate_feedback $(LAB) --force
	test ! -d grading/feedback || find grading/feedback -path '*/$(LAB)/*' ! -type d ! -name '*.html' ! -name timestamp.txt ! -name submission_secret.txt -print -delete

# One line per student and lab: grading/grades.csv.
grades: setup
	$(NBGRADER) export --to grades.csv

bench: setup
	$(RUN) $(BIN)/python benchmarks/forward.py
	$(RUN) $(BIN)/python benchmarks/lessons.py
	$(RUN) $(BIN)/python benchmarks/autograde.py

# configurable-http-proxy from npm, for the JupyterHub round trip (tests/test_jupyterhub.py),
# in .npm-tools/ (git-ignored). Without npm the test skips, or fails where LM10_REQUIRE_HUB=1.
PROXY := .npm-tools/node_modules/.bin/configurable-http-proxy
hub-proxy: $(PROXY)
$(PROXY):
	@if command -v npm >/dev/null; then \
		npm install --silent --no-audit --no-fund --prefix .npm-tools configurable-http-proxy@4; \
	else echo "npm not found: tests/test_jupyterhub.py will skip (apt-get install npm)"; fi

# The course as a student receives it: lessons, released labs, the library, a student README
# and Makefile; no solutions, hidden tests or grading tools (checked before it is written).
student-edition:
	$(PYTHON) grading/student_edition.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
