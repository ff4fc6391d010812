#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the Python peer libraries the
# interop tests speak to (the `wyoming` package, as Home Assistant uses it) into
# ./.venv and a real Home Assistant into ./.venv-ha, builds homebot, and runs every unit
# and integration test. Integration tests start their own fake servers on 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/peers/requirements.txt
export HOMEBOT_TEST_PYTHON="$PWD/.venv/bin/python"

# A real Home Assistant (core 2025.4.4) for tests/ha_real.rs, in ./.venv-ha: about 90 s
# and 820 MB the first time (it needs pyenv's Python 3.13 and PyPI), nothing after that.
# Without it that test says so loudly and passes; HOMEBOT_REQUIRE_REAL_HA=1 makes it fail.
if ha_python="$(tests/peers/ha/install.sh)"; then
  export HOMEBOT_TEST_HA_PYTHON="$ha_python"
else
  export HOMEBOT_HA_UNAVAILABLE="Home Assistant could not be installed (tests/peers/ha/install.sh failed; see its output above)"
  printf '\n%s\n### %s\n%s\n\n' "################################################################" \
    "$HOMEBOT_HA_UNAVAILABLE" "################################################################" >&2
fi

# Headless Chromium for tests/dashboard_browser.rs (~25 s the first time), with the CJK
# fonts its screenshot needs; only when it is missing and apt-get exists. With it
# installed, HOMEBOT_REQUIRE_BROWSER=1 makes that test fail rather than skip.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk \
    || echo "chromium could not be installed; tests/dashboard_browser.rs will fail" >&2
fi
export HOMEBOT_REQUIRE_BROWSER=1

cargo build --locked --all-targets
# --no-fail-fast: one failing test binary must not hide the results of the others
cargo test --locked --all-targets --no-fail-fast -- --test-threads="${HOMEBOT_TEST_THREADS:-4}"
