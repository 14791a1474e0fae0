# Two entry points, both doing their own set-up on a fresh machine:
#   make run    - install and run the example pipeline (local Spark, SQLite commit owner)
#   make test   - install and run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: install run test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) scripts/check_java.py
	$(PY) scripts/run_example.py

test: install
	$(PY) scripts/check_java.py
	$(PY) -m pytest -q tests

bench: install
	$(PY) tests/benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
