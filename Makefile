# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_STEPS ?= 2000
IDX_DIR ?= /usr/share/datasets/fashion-mnist

.PHONY: install demo test bench bench-quick clean

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

# The course's loops against ours on full-size data (about 20-25 minutes on 2 cores); ARGS=--repeats 5 etc.
bench: install
	$(PY) bench/bench.py --idx-dir $(IDX_DIR) $(ARGS)

# The same on the bundled sample with short runs: a smoke test of every row, a few minutes.
bench-quick: install
	$(PY) bench/bench.py --quick $(ARGS)

clean:
	rm -rf model model_lenet5 mnist_data_jpg data/*.tfrecords bench/work
