# `make demo`, `make test` and the other targets run `$(PYTHON) tasks.py TARGET`: the same tasks,
# which also run where there is no make (Windows: `py -3.11 tasks.py demo`; see `python3 tasks.py --help`).
PYTHON ?= python3
DEMO_STEPS ?= 2000
IDX_DIR ?= /usr/share/datasets/fashion-mnist

.PHONY: install demo test test-long test-quick test-floor bench bench-quick clean

install:
	$(PYTHON) tasks.py install

demo:
	$(PYTHON) tasks.py demo --steps $(DEMO_STEPS)

# The suite but its long tests, in parallel (pytest-xdist, one worker more than the cores).
test:
	$(PYTHON) tasks.py test

# The long scenario tests (marked long: each takes a quarter of a minute or more), in parallel; CI runs them too.
test-long:
	$(PYTHON) tasks.py test-long

# The tests marked quick (they train nothing longer than a few steps): under a minute, the check before a commit.
test-quick:
	$(PYTHON) tasks.py test-quick

# The end-to-end test on the oldest versions requirements.txt allows, in its own venv .venv-floor.
test-floor:
	$(PYTHON) tasks.py test-floor

# The course's loops against ours on full-size data (about 20-25 minutes on 2 cores); ARGS=--repeats 5 etc.
bench:
	$(PYTHON) tasks.py bench --idx-dir $(IDX_DIR) $(ARGS)

# The same on the bundled sample with short runs: a smoke test of every row, a few minutes.
bench-quick:
	$(PYTHON) tasks.py bench-quick $(ARGS)

clean:
	$(PYTHON) tasks.py clean
