# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_STEPS ?= 2000

.PHONY: install demo test bench clean

$(VENV)/installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

install: $(VENV)/installed

demo: install
	$(PY) mnist_generateds.py
	$(PY) mnist_backward.py --steps $(DEMO_STEPS)
	$(PY) mnist_test.py --once

test: install
	$(PY) -m pytest -q tests

clean:
	rm -rf model mnist_data_jpg data/*.tfrecords
