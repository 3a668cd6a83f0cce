# mfu_toolkit — two commands matter: `make test` and `make lab`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
NBVAL  := --nbval --nbval-current-env --nbval-cell-timeout=120

.PHONY: venv test unit notebooks browser lab lint regen bench clean report app exercises

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
# Jupyter refuses to start as root (containers, dev VMs) without --allow-root: add it only then.
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
COMMA := ,

lab: $(STAMP)
	@$(if $(ALLOW_ROOT),echo "make lab: running as root$(COMMA) so JupyterLab starts with --allow-root")
	$(PY) -m jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir=notebooks $(ALLOW_ROOT)

## Re-execute the curated notebooks and store their outputs (byte-for-byte reproducible).
regen: $(STAMP)
	$(PY) tools/regen_notebooks.py

lint: $(STAMP)
	$(PY) -m ruff check mfu_toolkit tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache *.egg-info

## A team's report: make report LOG=path [FORMAT=auto] [ACCELERATOR="H100 SXM" DTYPE=bf16 GPUS=N]
##   [PRESET=llama3-8b SEQ_LEN=N | FLOPS_PER_SAMPLE=F] [GLOBAL_BATCH=N] [COLUMN_MAP=step:iter,start_s:t0,...]
##   [TIME_UNIT=ms] [CHECKPOINT_S=s CHECKPOINT_EVERY=steps MTBF_HOURS=h]. Without LOG: the sample log.
## Runs notebooks/08_team_report.ipynb headless (papermill) into $(REPORTS)/NAME-report.ipynb and .html.
LOG    ?=
FORMAT ?= auto
REPORTS ?= reports
# What the user passes reaches the shell only as environment variables ("$$LOG"), never pasted
# into the command line, so a file name with spaces, quotes, $ or backticks is just a name.
export LOG FORMAT REPORTS ACCELERATOR DTYPE GPUS PRESET SEQ_LEN FLOPS_PER_SAMPLE GLOBAL_BATCH \
	COLUMN_MAP TIME_UNIT CHECKPOINT_S CHECKPOINT_EVERY MTBF_HOURS
REPORT_ARGS = -r log_format "$$FORMAT" \
	$(if $(ACCELERATOR),-r accelerator "$$ACCELERATOR") $(if $(DTYPE),-r dtype "$$DTYPE") \
	$(if $(GPUS),-p n_accelerators "$$GPUS") $(if $(PRESET),-r preset "$$PRESET") \
	$(if $(SEQ_LEN),-p seq_len "$$SEQ_LEN") $(if $(FLOPS_PER_SAMPLE),-p flops_per_sample "$$FLOPS_PER_SAMPLE") \
	$(if $(GLOBAL_BATCH),-p global_batch "$$GLOBAL_BATCH") $(if $(COLUMN_MAP),-r columns "$$COLUMN_MAP") \
	$(if $(TIME_UNIT),-r time_unit "$$TIME_UNIT") $(if $(CHECKPOINT_S),-p checkpoint_write_s "$$CHECKPOINT_S") \
	$(if $(CHECKPOINT_EVERY),-p checkpoint_every_steps "$$CHECKPOINT_EVERY") \
	$(if $(MTBF_HOURS),-p mtbf_hours "$$MTBF_HOURS")
# On a team's log, the commentary written for the sample (cells tagged sample-reading) is left out.
REPORT_STRIP = $(if $(LOG),--TagRemovePreprocessor.enabled=True --TagRemovePreprocessor.remove_cell_tags=sample-reading)

report: $(STAMP)
	@if [ -n "$$LOG" ] && [ ! -e "$$LOG" ]; then \
		printf 'make report: LOG=%s: no such file or directory\n' "$$LOG" >&2; exit 2; fi
	@mkdir -p -- "$$REPORTS"
	@if [ -n "$$LOG" ]; then log_path=$$(cd -- "$$(dirname -- "$$LOG")" && pwd)/$$(basename -- "$$LOG"); \
		name=$$(basename -- "$${LOG%/}"); name=$${name%.*}; else log_path=; name=sample; fi; \
	nb="$$REPORTS/$$name-report.ipynb"; rc=0; \
	$(PY) -m papermill notebooks/08_team_report.ipynb "$$nb" --cwd notebooks \
		--no-progress-bar -r log_path "$$log_path" $(REPORT_ARGS) || rc=$$?; \
	$(if $(LOG),$(PY) -m jupyter nbconvert --to notebook --inplace --log-level=ERROR $(REPORT_STRIP) "$$nb" || exit $$?;) \
	$(PY) -m jupyter nbconvert --to html --no-input --log-level=ERROR $(REPORT_STRIP) "$$nb" || exit $$?; \
	if [ $$rc -ne 0 ]; then printf 'make report: the report failed; the error is in %s\n' "$$nb" >&2; exit $$rc; fi; \
	printf 'wrote %s and %s\n' "$$nb" "$${nb%.ipynb}.html"

## The workshop app: the explorers as a Voila dashboard (no code shown), on loopback.
app: $(STAMP)
	$(PY) -m voila notebooks/workshop_app.ipynb --no-browser --Voila.ip=127.0.0.1 --port=$${PORT:-8866}

## Regenerate the exercise versions of the teaching notebooks (answers removed).
exercises: $(STAMP)
	$(PY) tools/make_exercises.py
