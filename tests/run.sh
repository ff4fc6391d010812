#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the Python peer libraries the
# interop tests speak to (the `wyoming` package, as Home Assistant uses it) into
# ./.venv, a real Home Assistant with its test harness into ./.venv-ha and Chromium,
# runs the integration's Python tests, builds homebot, and runs every unit and
# integration test; none of them skips for a missing peer. Integration
# tests start their own fake servers on 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/peers/requirements.txt
export HOMEBOT_TEST_PYTHON="$PWD/.venv/bin/python"

# A real Home Assistant (core 2025.4.4) for the tests against it (tests/it/ha_real*.rs,
# ha_integration.rs, ha_pipeline/), in ./.venv-ha or $HOMEBOT_HA_VENV (kept outside the clone on a CI
# machine): about 90 s and 820 MB the first time (it needs pyenv's Python 3.13 and
# PyPI), nothing after that. A run without it is not a green run:
# if it cannot be installed, this stops here with install.sh's reason.
# install_tests.sh runs install.sh, then adds HA's own test harness
# (pytest-homeassistant-custom-component, requirements-ha-tests.txt) to that venv under
# HA's constraints, homeassistant itself untouched.
ha_python="$(tests/peers/ha/install_tests.sh)"
export HOMEBOT_TEST_HA_PYTHON="$ha_python"

# The integration's own tests (custom_components/homebot, tests/ha_component/) in HA's
# harness: about 10 s, so before cargo; a failure fails the run, after cargo's results.
py_status=0
COVERAGE_FILE="$(mktemp -d)/coverage" "$ha_python" -m pytest tests/ha_component \
  -p no:cacheprovider -p no:sugar \
  --cov=custom_components.homebot --cov-report=term-missing || py_status=$?

# Headless Chromium for tests/it/dashboard_browser.rs (~25 s the first time), with the CJK
# fonts its screenshot needs, when it is missing. Required like Home Assistant: the
# browser test fails without it.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${HOMEBOT_CHROMIUM:-}" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium is missing and apt-get is not here to install it (or set HOMEBOT_CHROMIUM)" >&2
    exit 2
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk
fi

cargo build --locked --all-targets
# --no-fail-fast: one failing test binary must not hide the results of the others
cargo_status=0
cargo test --locked --all-targets --no-fail-fast -- --test-threads="${HOMEBOT_TEST_THREADS:-4}" ||
  cargo_status=$?
if [ "$py_status" -ne 0 ]; then
  echo "the Python tests of custom_components/homebot failed (pytest exit $py_status)" >&2
fi
if [ "$py_status" -ne 0 ] || [ "$cargo_status" -ne 0 ]; then
  exit 1
fi
