# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test test-fast lint bench chromium clean readme-inputs readme-fidelity

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# The replay's numba kernels, compiled once here (8-17 s) instead of in the first replay;
# again whenever kernels.py changes (kvmodel/replay/warm.py).
$(VENV)/.kernels: kvmodel/replay/kernels.py $(VENV)/.installed
	$(PY) -m kvmodel.replay.warm
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

# ui.serve is `streamlit run app.py` with the pages' modules loaded before the first visitor.
# browser.serverAddress names the address to print: without it a headless server asks an outside
# host for the machine's public IP at start (the app makes no outbound request).
run: $(VENV)/.installed $(VENV)/.kernels
	@echo "KV Transfer Planner on http://localhost:$(PORT)"
	$(PY) -m ui.serve --server.port $(PORT) --server.headless true \
	    --browser.serverAddress localhost

# Debian's chromium for the browser tests: installed only when missing and running as root.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is missing and this is not root: browser tests will be skipped"; fi
	@if command -v shellcheck >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian shellcheck for the recipe tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null \
	  || echo "shellcheck could not be installed: its recipe tests will be skipped (and say so)"; \
	else echo "shellcheck is missing and this is not root: its recipe tests will be skipped"; fi

# The project's bytecode first: where PYTHONDONTWRITEBYTECODE is set Python never writes it,
# and each of the suite's CLI and server processes compiled ~60 modules again (~0.1 s each).
test: $(VENV)/.dev-installed $(VENV)/.kernels chromium
	$(PY) -m ruff check kvmodel kvview ui tests pages app.py bench
	$(PY) -m compileall -q kvmodel kvview ui pages app.py
	$(PY) -m pytest -q

# Everything but the seconds-long kaleido exports and the browser tests (a quick loop while editing).
test-fast: $(VENV)/.dev-installed
	$(PY) -m pytest -q -m "not slow and not e2e"

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check kvmodel kvview ui tests pages app.py bench
	$(PY) -m ruff format --check kvmodel kvview ui tests pages app.py bench

bench: $(VENV)/.dev-installed
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts

# Rewrite the generated tables between their markers in docs/: the parameter table of
# docs/links.md from kvmodel/inputs.py and the fidelity table of docs/model.md from
# data/fidelity (tests/test_inputs.py and tests/test_fidelity.py check them).  readme-inputs and
# readme-fidelity are the same recipe (names kept from when the tables lived in README.md).
readme-inputs readme-fidelity: $(VENV)/.installed
	$(PY) -c "import re, pathlib; from kvmodel import inputs, fidelity; \
	tables = {'inputs': inputs.markdown_table, 'fidelity': fidelity.markdown_table}; \
	pat = r'(<!-- (inputs|fidelity) table:[^\n]*-->\n).*?(<!-- end \2 table -->)'; \
	new = lambda m: m.group(1) + tables[m.group(2)]() + '\n' + m.group(3); \
	[p.write_text(re.sub(pat, new, p.read_text(encoding='utf-8'), flags=re.S), encoding='utf-8') \
	 for p in (pathlib.Path('docs/links.md'), pathlib.Path('docs/model.md'))]"
