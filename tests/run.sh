#!/usr/bin/env bash
# The whole test suite, from a fresh clone: builds homebot and runs every unit and
# integration test. Integration tests start their own fake servers on 127.0.0.1:0.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --locked --all-targets
cargo test --locked --all-targets -- --test-threads="${HOMEBOT_TEST_THREADS:-4}"
