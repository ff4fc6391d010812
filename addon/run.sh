#!/bin/sh
# The add-on's entry point (Dockerfile's CMD). The Supervisor has set SUPERVISOR_TOKEN
# and written /data/options.json; homebot reads both itself (src/config/addon.rs), so
# this only starts the gateway in the foreground, where it gets the Supervisor's SIGTERM.
set -eu
mkdir -p "${HOMEBOT_WORKSPACE:-/data/workspace}"
exec /usr/bin/homebot gateway
