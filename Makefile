# The two commands: `make demo` and `make test`. Both set up `.venv` first.
PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
PIP := $(VENV_PYTHON) -m pip
ARGS ?=
TORCH_VERSION ?= 2.13.0

.PHONY: setup test-setup demo test benchmark clean protos

$(VENV_PYTHON):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Reinstalled whenever the package metadata changes.
$(VENV)/.installed: $(VENV_PYTHON) setup.cfg setup.py pyproject.toml
	$(PIP) install --quiet -e ".[tensorflow,profile]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install --quiet -e ".[tensorflow,profile,test]"
	@# The JAX and PyTorch backends are tested on the CPU. torch is pinned to
	@# the CPU build this machine kind provides; a bare `torch` would fetch
	@# the newest build with several GB of CUDA packages.
	$(PIP) install --quiet "torch==$(TORCH_VERSION)" jax
	@# Browser tests drive Debian's Chromium; Playwright's own download is not reachable.
	@if ! command -v chromium >/dev/null 2>&1; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; \
	fi
	touch $@

setup: $(VENV)/.installed

test-setup: $(VENV)/.installed-test

demo: setup
	$(VENV_PYTHON) -m demo $(ARGS)

# pytest exits 5 when it ran no test: that is a failure here, never a pass.
# The 20 longest tests are listed at the end, so a slow one shows (issue 37).
# The suite runs on two processes (pytest-xdist, a unit of test files to
# each at a time, so shared fits run once: tests/conftest.py); JOBS=0 runs
# it in this one process, JOBS=N on N. Its times are in the README.
JOBS ?= 2
test: test-setup
	@$(VENV_PYTHON) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=20 $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest ran no test: failing"; exit 1; fi; \
	exit $$status

# The CPU benchmarks that hold targets (benchmarks/README.md), one after
# another, each printing its figure against its target last; exits non-zero
# if any script does. Tens of minutes: run it on a quiet machine.
BENCHMARKS := "overhead.py --backend tensorflow --rounds 9 --short-fits 9" \
	"overhead.py --trace-window 100 --rounds 2" \
	"step_cpu.py --rounds 6 --calls --short-epochs" \
	"truth_matrix.py --repeats 2" \
	"scale.py --runs 200 --steps 10000 --extra-run-steps 1000000 --tab --reuse" \
	"scale.py --processes 8,64,512 --steps 2000"

benchmark: test-setup
	@status=0; for command in $(BENCHMARKS); do \
		echo "== benchmarks/$$command"; \
		$(VENV_PYTHON) benchmarks/$$command || status=1; \
	done; exit $$status

clean:
	rm -rf $(VENV) build dist *.egg-info

# The XSpace schema's generated code (tb_devicecost/traces/protos/xplane_pb2.py).
# protoc 25 (grpcio-tools 1.62) writes code that loads on protobuf 4.21
# and newer; the package ships the result, so only a schema change needs it.
protos:
	python3 -m venv /tmp/tb-devicecost-protoc
	/tmp/tb-devicecost-protoc/bin/pip install -q "grpcio-tools==1.62.3"
	/tmp/tb-devicecost-protoc/bin/python -m grpc_tools.protoc -I. --python_out=. tb_devicecost/traces/protos/xplane.proto
