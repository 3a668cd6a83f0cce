# mfu_toolkit — two commands matter: `make test` and `make lab`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
NBVAL  := --nbval --nbval-current-env --nbval-cell-timeout=120

.PHONY: venv test unit notebooks browser lab lint regen bench clean report app exercises docs

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,lab,docs]'
	touch $(STAMP)

venv: $(STAMP)

## Every test: unit and property tests, strict nbval over notebooks/, browser tests.
test: $(STAMP)
	$(PY) -m pytest $(NBVAL) -p no:cacheprovider tests notebooks

## The fast tests (no browser, none of tests/slow_tests.txt): under 90 s on 2 cores.
unit: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -q -m "not browser and not slow" tests

notebooks: $(STAMP)
	$(PY) -m pytest $(NBVAL) -p no:cacheprovider notebooks

browser: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -m browser tests

## JupyterLab on notebooks/ (the URL with its token is printed below).
# Jupyter refuses to start as root (containers, dev VMs) without --allow-root: add it only then.
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
COMMA := ,

# JupyterLab draws a saved explorer (widget state in the file) only in a trusted notebook, so the
# curated notebooks are signed first (in your Jupyter data dir; editing one in Lab re-signs it).
# lab-settings/overrides.json keeps the widget manager's saveState off: with it on, Lab marks every
# notebook with saved explorers modified as it opens. LAB_ROOT: the folder Lab serves.
LAB_ROOT ?= notebooks
LAB_TRUST = $(wildcard notebooks/[0-9][0-9]_*.ipynb) notebooks/workshop_app.ipynb

lab: $(STAMP)
	@$(if $(ALLOW_ROOT),echo "make lab: running as root$(COMMA) so JupyterLab starts with --allow-root")
	@$(PY) -m jupyter trust --log-level=WARN $(LAB_TRUST) >/dev/null && \
		echo "make lab: signed the curated notebooks$(COMMA) so their saved explorers show before they run"
	$(PY) -m jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) --ServerApp.root_dir="$(LAB_ROOT)" --LabApp.app_settings_dir="$(CURDIR)/lab-settings" $(ALLOW_ROOT)

## Re-execute the curated notebooks and store their outputs (byte-for-byte reproducible).
regen: $(STAMP)
	$(PY) tools/regen_notebooks.py

lint: $(STAMP)
	$(PY) -m ruff check mfu_toolkit tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache *.egg-info

## A team's report: make report LOG=path [FORMAT=auto] [ACCELERATOR="H100 SXM" DTYPE=bf16 GPUS=N | PACKAGES=N]
##   [PRESET=llama3-8b SEQ_LEN=N | FLOPS_PER_SAMPLE=F | FLOPS_PER_TOKEN=F | FLOPS_PER_STEP=F] [GLOBAL_BATCH=N]
##   [COLUMN_MAP=step:iter,start_s:t0,...]
##   [TIME_UNIT=ms] [CHECKPOINT_S=s CHECKPOINT_EVERY=steps MTBF_HOURS=h] [LINK=NVLink4] [NIC=NDR]
##   [STEP_PATTERN=REGEX] [SHARDING=table_wise|column_wise|data_parallel]. Without LOG: the sample log.
## Checks the values first (mfu analyze --validate: a wrong one is one line and exit 2), then runs
## notebooks/08_team_report.ipynb headless (papermill) into $(REPORTS)/NAME-report.ipynb and .html.
## Exit status 0 written, else 2 (make's own for any failed recipe); the one line on stderr says which:
## a wrong value or a missing LOG (nothing ran), or the run's error (kept in the executed notebook).
LOG    ?=
FORMAT ?= auto
REPORTS ?= reports
SAMPLE_LOG := data/sample_team_log.csv
# What the user passes reaches the shell only as environment variables ("$$LOG"), never pasted
# into the command line, so a file name with spaces, quotes, $ or backticks is just a name.
export LOG FORMAT REPORTS ACCELERATOR DTYPE GPUS PACKAGES PRESET SEQ_LEN FLOPS_PER_SAMPLE FLOPS_PER_TOKEN \
	FLOPS_PER_STEP GLOBAL_BATCH COLUMN_MAP TIME_UNIT CHECKPOINT_S CHECKPOINT_EVERY MTBF_HOURS LINK NIC STEP_PATTERN SHARDING
# The same values as mfu analyze flags; MFU_INTERFACE=make makes its errors name the make variables.
CHECK_ARGS = $(if $(filter-out auto,$(FORMAT)),--format "$$FORMAT") \
	$(if $(ACCELERATOR),--accelerator "$$ACCELERATOR") $(if $(DTYPE),--dtype "$$DTYPE") \
	$(if $(GPUS),--gpus "$$GPUS") $(if $(PACKAGES),--packages "$$PACKAGES") \
	$(if $(PRESET),--preset "$$PRESET") $(if $(SEQ_LEN),--seq-len "$$SEQ_LEN") \
	$(if $(FLOPS_PER_SAMPLE),--flops-per-sample "$$FLOPS_PER_SAMPLE") \
	$(if $(FLOPS_PER_TOKEN),--flops-per-token "$$FLOPS_PER_TOKEN") $(if $(FLOPS_PER_STEP),--flops-per-step "$$FLOPS_PER_STEP") \
	$(if $(GLOBAL_BATCH),--global-batch "$$GLOBAL_BATCH") $(if $(COLUMN_MAP),--columns "$$COLUMN_MAP") \
	$(if $(TIME_UNIT),--time-unit "$$TIME_UNIT") $(if $(CHECKPOINT_S),--checkpoint-s "$$CHECKPOINT_S") \
	$(if $(CHECKPOINT_EVERY),--checkpoint-every "$$CHECKPOINT_EVERY") \
	$(if $(MTBF_HOURS),--mtbf-hours "$$MTBF_HOURS") $(if $(LINK),--link "$$LINK") $(if $(NIC),--nic "$$NIC") \
	$(if $(STEP_PATTERN),--step-pattern "$$STEP_PATTERN") $(if $(SHARDING),--sharding "$$SHARDING")
REPORT_ARGS = -r interface make -r log_format "$$FORMAT" \
	$(if $(ACCELERATOR),-r accelerator "$$ACCELERATOR") $(if $(DTYPE),-r dtype "$$DTYPE") \
	$(if $(GPUS),-p n_accelerators "$$GPUS") $(if $(PACKAGES),-p packages "$$PACKAGES") \
	$(if $(PRESET),-r preset "$$PRESET") $(if $(SEQ_LEN),-p seq_len "$$SEQ_LEN") \
	$(if $(FLOPS_PER_SAMPLE),-p flops_per_sample "$$FLOPS_PER_SAMPLE") \
	$(if $(FLOPS_PER_TOKEN),-p flops_per_token "$$FLOPS_PER_TOKEN") $(if $(FLOPS_PER_STEP),-p flops_per_step "$$FLOPS_PER_STEP") \
	$(if $(GLOBAL_BATCH),-p global_batch "$$GLOBAL_BATCH") $(if $(COLUMN_MAP),-r columns "$$COLUMN_MAP") \
	$(if $(TIME_UNIT),-r time_unit "$$TIME_UNIT") $(if $(CHECKPOINT_S),-p checkpoint_write_s "$$CHECKPOINT_S") \
	$(if $(CHECKPOINT_EVERY),-p checkpoint_every_steps "$$CHECKPOINT_EVERY") \
	$(if $(MTBF_HOURS),-p mtbf_hours "$$MTBF_HOURS") $(if $(LINK),-r link "$$LINK") $(if $(NIC),-r nic "$$NIC") \
	$(if $(STEP_PATTERN),-r step_pattern "$$STEP_PATTERN") $(if $(SHARDING),-r sharding "$$SHARDING")
# The notebook's cells about the template itself (tagged template: its title, how to run it, the
# questions to try) are left out of every report; the report's own title and headings are outputs.
REPORT_STRIP = --TagRemovePreprocessor.enabled=True --TagRemovePreprocessor.remove_cell_tags=template
# One HTML file that loads nothing from the network: docs/nbconvert/offline (the lab template) embeds the
# widget manager when the notebook saved widget state and MathJax when it holds math, each from
# build/web_assets/static, which tools/web_assets.py --for fills (once, with their sha512 checked) only then.
REPORT_HTML = --TemplateExporter.extra_template_basedirs="$(CURDIR)/docs/nbconvert" --template offline \
	--TemplateExporter.extra_template_paths="$(CURDIR)/build/web_assets/static"

report: $(STAMP)
	@if [ -n "$$LOG" ] && [ ! -e "$$LOG" ]; then \
		printf 'make report: LOG=%s: no such file or directory\n' "$$LOG" >&2; exit 2; fi
	@MFU_INTERFACE=make $(PY) -m mfu_toolkit analyze "$${LOG:-$(SAMPLE_LOG)}" $(CHECK_ARGS) --validate
	@mkdir -p -- "$$REPORTS"
	@if [ -n "$$LOG" ]; then log_path=$$(cd -- "$$(dirname -- "$$LOG")" && pwd)/$$(basename -- "$$LOG"); \
		name=$$(basename -- "$${LOG%/}"); name=$${name%.gz}; name=$${name%.*}; else log_path=; name=sample; fi; \
	nb="$$REPORTS/$$name-report.ipynb"; rm -f -- "$$nb"; err=$$(mktemp); rc=0; \
	$(PY) -m papermill notebooks/08_team_report.ipynb "$$nb" --cwd notebooks --no-progress-bar \
		-r log_path "$$log_path" -r report_date "$$(date +%Y-%m-%d)" $(REPORT_ARGS) 2>"$$err" || rc=$$?; \
	if [ $$rc -ne 0 ] && [ ! -s "$$nb" ]; then cat "$$err" >&2; rm -f "$$err"; exit $$rc; fi; \
	if [ $$rc -ne 0 ]; then printf 'make report: the report failed (%s); the error is in %s\n' \
		"$$(grep -E '^[A-Za-z_.]*(Error|Exception)' "$$err" | tail -n 1)" "$$nb" >&2; fi; rm -f "$$err"; \
	$(PY) -m jupyter nbconvert --to notebook --inplace --log-level=ERROR $(REPORT_STRIP) "$$nb" || exit $$?; \
	$(PY) tools/web_assets.py --for "$$nb" >/dev/null || exit $$?; \
	$(PY) -m jupyter nbconvert --to html --no-input --log-level=ERROR $(REPORT_HTML) "$$nb" || exit $$?; \
	if [ $$rc -ne 0 ]; then exit 1; fi; \
	printf 'wrote %s and %s\n' "$$nb" "$${nb%.ipynb}.html"

## The workshop app: the explorers as a Voila dashboard (no code shown), on loopback.
# Voila starts a kernel per page load; a kernel whose page is gone (no connection) and that has been
# idle CULL_IDLE_S seconds is shut down, checked every CULL_INTERVAL_S, so a workshop host does not
# grow without bound. Open pages keep their kernels.
CULL_IDLE_S ?= 600
CULL_INTERVAL_S ?= 60
export CULL_IDLE_S CULL_INTERVAL_S

app: $(STAMP)
	$(PY) -m voila notebooks/workshop_app.ipynb --no-browser --Voila.ip=127.0.0.1 --port=$${PORT:-8866} \
		--MappingKernelManager.cull_idle_timeout="$$CULL_IDLE_S" --MappingKernelManager.cull_interval="$$CULL_INTERVAL_S"

## Regenerate the exercise versions of the teaching notebooks (answers removed).
exercises: $(STAMP)
	$(PY) tools/make_exercises.py

## The documentation site: build/docs/html/index.html (README, the notebooks with their explorers, a
## page per log format, the API reference), opened from disk with no network. Sphinx's warnings are
## printed; docs/check_build.py fails the build on errors (broken markup, a page or module missing).
## The first build fetches the pinned widget manager and MathJax (tools/web_assets.py).
DOCS_OUT ?= build/docs

docs: $(STAMP)
	@mkdir -p -- "$(DOCS_OUT)"
	@$(PY) tools/web_assets.py >/dev/null
	$(PY) -m sphinx -b html -E -q -j auto -d "$(DOCS_OUT)/doctrees" -w "$(DOCS_OUT)/warnings.txt" docs "$(DOCS_OUT)/html"
	$(PY) docs/check_build.py "$(DOCS_OUT)/warnings.txt" "$(DOCS_OUT)/html"
	@echo "make docs: open $(DOCS_OUT)/html/index.html"
