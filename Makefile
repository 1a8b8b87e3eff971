# CapBench: `make run` starts the whole platform, `make test` runs the whole suite.
# Both create .venv and install into it (torch/torchvision always through constraints.txt).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt
export PYTHONPATH := $(CURDIR)/platform:$(CURDIR)

.PHONY: run test install install-dev lint clean-state

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: $(VENV)/.installed
	$(PY) -m capbench.run

# DATABASE_URL / REDIS_URL when set, else embedded PostgreSQL and Valkey in .capbench/test.
test: $(VENV)/.installed-dev
	$(PY) -m ruff check platform evaluation tests bench
	DJANGO_SETTINGS_MODULE=capbench.settings.test \
		$(PY) -m capbench.embedded --state-dir .capbench/test -- $(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check platform evaluation tests bench

clean-state:
	rm -rf .capbench
