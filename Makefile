# Two entry points, both doing their own set-up on a fresh machine:
#   make run    - install and run the example pipeline (local Spark, SQLite commit owner)
#   make test   - install and run the test suite (with CI set: also a local PostgreSQL server)
# and the example DAGs under Airflow's own processes, to click through the UI:
#   make airflow-up / make airflow-down   (scripts/airflow_deploy.py; AIRFLOW_DEPLOY_ARGS adds options)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Test processes (pytest-xdist): the tests of the one local SparkSession run in one of them, the rest
# spread over all (tests/conftest.py, SparkSessionScheduling); TEST_WORKERS=0 runs everything in this one process
TEST_WORKERS ?= 2
# Delta Spark jars for spark.jars, fetched through Maven once (scripts/delta-spark/pom.xml pins them)
JARS_STAMP := .jars/.fetched

.PHONY: install jars servers run test bench docs clean airflow-up airflow-down

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

$(JARS_STAMP): scripts/delta-spark/pom.xml scripts/fetch_delta_jars.py scripts/delta_spark.py $(VENV)/.installed
	$(PY) scripts/fetch_delta_jars.py

jars: $(JARS_STAMP)

run: install jars
	$(PY) scripts/check_java.py
	$(PY) scripts/run_example.py

# api-server (http://localhost:8080), scheduler, dag-processor, triggerer on ./airflow_home with a
# PostgreSQL metadata database (DELTA_TEST_POSTGRES_URL's server; --sqlite for none), in the background
AIRFLOW_DEPLOY_ARGS ?=
airflow-up: install jars
	$(PY) scripts/check_java.py
	$(PY) scripts/airflow_deploy.py up $(AIRFLOW_DEPLOY_ARGS)

airflow-down:
	$(PY) scripts/airflow_deploy.py down $(AIRFLOW_DEPLOY_ARGS)

# Object-store servers for tests/objectstore (Azurite from npm into .tools/; moto and the GCS
# emulator come with the test extra)
servers: install
	bash scripts/install_test_servers.sh

test: install jars servers
	$(PY) scripts/check_java.py
	@if [ -n "$$CI" ]; then bash scripts/ci_postgres.sh; fi
	$(PY) -m pytest -q tests -rfE --durations=30 -n $(TEST_WORKERS) --dist load --junitxml=build/test-results.xml
	-$(PY) scripts/suite_balance.py build/test-results.xml

bench: install jars
	$(PY) tests/benchmarks/run_all.py

# The documentation site (Sphinx + MyST), warnings as errors as in CI (tests/docs); not committed
docs: install
	AIRFLOW_HOME=$${AIRFLOW_HOME:-$$(mktemp -d)} $(PY) -m sphinx -W --keep-going -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

clean:
	rm -rf $(VENV) .jars .pytest_cache build *.egg-info docs/_build
