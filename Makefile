# The two commands of the README: `make demo` and `make test`. Everything else here serves them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Debian packages the demo and the tests need: the QEMU board and Cortex-M toolchain, the Raspberry Pi cross
# toolchains and qemu-user, sshd for the loopback "Pi", clang with its fuzzer runtime for the C fuzz test,
# cmake for the `edge export` builds (tests/test_export.py).
DEBIAN_PACKAGES := qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi openssh-server openssh-client gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user clang libclang-rt-14-dev cmake ccache
PYTEST_ARGS ?=

.PHONY: demo test setup system-deps clean tables

demo: setup
	$(PY) examples/demo.py

# The output ends with every skipped / xfailed test and its reason (tests/skip_policy.py); under CI=true a skip
# whose reason is not allow-listed there fails the run. pytest's exit 5 (no test collected) fails too, by name.
# --dist worksteal: a worker that runs out of tests takes queued ones from the other (the suite's durations range
# from milliseconds to minutes; "load" would leave one worker idle behind the other's queue of slow tests).
test: setup
	@status=0; $(PY) -m pytest -n 2 --dist worksteal --durations=15 $(PYTEST_ARGS) || status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (exit 5): failing"; fi; \
	exit $$status

setup: $(VENV)/.installed system-deps

# The generated tables, after adding an op (a C kernel's EDGE_KERNEL line, an op_table row): the op table's C side
# (tests/test_op_table_c.py), the rows' facts the C runtime reads (tests/test_op_facts.py) and the README's ops
# table (tests/test_docs.py) say when they are stale.
tables: $(VENV)/.installed
	$(PY) firmware_c/tools/gen_ops.py --python edge_sdk/runtime/op_table_c.py
	$(PY) firmware_c/tools/gen_ops.py --facts firmware_c/include/edge_op_facts.h
	$(PY) -m edge_sdk.tools.docs --write README.md

# pip's output goes to $(VENV)/install.log; it is shown only when an install fails.
$(VENV)/.installed: pyproject.toml
	@echo "==> installing edge-sdk into $(VENV) (log: $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@( $(PY) -m pip install --upgrade pip && $(PY) -m pip install -e '.[test]' ) > $(VENV)/install.log 2>&1 \
		|| { tail -n 60 $(VENV)/install.log; echo "pip install failed: the whole log is $(VENV)/install.log"; exit 1; }
	@touch $@

# Installs what is missing when run as root (CI, a fresh Debian box); otherwise names the command to run.
# Tests that need a missing tool skip and say which. An apt-get install that was stopped (Ctrl-C, a killed
# `make demo`) leaves dpkg half-done: apt then refuses everything with "dpkg was interrupted"; `dpkg -s` still
# calls such packages installed. Found by dpkg's journal ($(DPKG_ADMINDIR)/updates) or `dpkg --audit`: as root
# `dpkg --configure -a` finishes it first, otherwise the line to run is printed.
DPKG_ADMINDIR ?= /var/lib/dpkg
system-deps:
	@missing=""; \
	for pkg in $(DEBIAN_PACKAGES); do dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	interrupted=""; \
	if [ -n "$$(ls -A $(DPKG_ADMINDIR)/updates 2>/dev/null)" ] || [ -n "$$(dpkg --audit 2>/dev/null)" ]; then \
		interrupted=yes; \
	fi; \
	if [ -z "$$missing" ] && [ -z "$$interrupted" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		if [ -n "$$interrupted" ]; then \
			echo "==> dpkg was interrupted (an earlier apt-get install was stopped): running dpkg --configure -a"; \
			DEBIAN_FRONTEND=noninteractive dpkg --configure -a \
				|| { echo "make: dpkg --configure -a failed: fix what it says, then run make again"; exit 1; }; \
		fi; \
		if [ -n "$$missing" ]; then \
			echo "==> installing Debian packages:$$missing"; \
			{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
			|| { echo "make: apt-get install failed; to finish by hand: dpkg --configure -a && apt-get install$$missing"; \
			     exit 1; }; \
		fi; \
	else \
		if [ -n "$$interrupted" ]; then \
			echo "note: dpkg was interrupted (an earlier apt-get install was stopped); finish it with:"; \
			echo "      sudo dpkg --configure -a"; \
		fi; \
		if [ -n "$$missing" ]; then \
			echo "note: missing Debian packages:$$missing"; \
			echo "      install them with: sudo apt-get install$$missing"; \
			echo "      (tests that need them are skipped)"; \
		fi; \
	fi

clean:
	rm -rf $(VENV) build dist *.egg-info out
