# mfu_toolkit — two commands matter: `make test` and `make lab`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
NBVAL  := --nbval --nbval-current-env --nbval-cell-timeout=120

.PHONY: venv test unit notebooks browser lab lint regen bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,lab]'
	touch $(STAMP)

venv: $(STAMP)

## Every test: unit and property tests, strict nbval over notebooks/, browser tests.
test: $(STAMP)
	$(PY) -m pytest $(NBVAL) -p no:cacheprovider tests notebooks

unit: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -m "not browser" tests

notebooks: $(STAMP)
	$(PY) -m pytest $(NBVAL) -p no:cacheprovider notebooks

browser: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -m browser tests

## JupyterLab on notebooks/ (the URL with its token is printed below).
lab: $(STAMP)
	$(PY) -m jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=notebooks

## Re-execute the curated notebooks and store their outputs (byte-for-byte reproducible).
regen: $(STAMP)
	$(PY) tools/regen_notebooks.py

lint: $(STAMP)
	$(PY) -m ruff check mfu_toolkit tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache *.egg-info
