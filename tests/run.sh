#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the Python peer libraries the
# interop tests speak to (the `wyoming` package, as Home Assistant uses it) into
# ./.venv, builds homebot, and runs every unit and integration test. Integration tests
# start their own fake servers on 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/peers/requirements.txt
export HOMEBOT_TEST_PYTHON="$PWD/.venv/bin/python"

cargo build --locked --all-targets
# --no-fail-fast: one failing test binary must not hide the results of the others
cargo test --locked --all-targets --no-fail-fast -- --test-threads="${HOMEBOT_TEST_THREADS:-4}"
