#!/usr/bin/env bash
# Install a real Home Assistant (core 2025.4.4) into ./.venv-ha for tests/it/ha_real.rs,
# or into $HOMEBOT_HA_VENV (an absolute path: a CI machine keeps it outside the clone, so
# a fresh clone finds it there). Idempotent: a complete venv (marked by its .installed)
# is left alone; a missing or incomplete one is built again.
# Prints the venv's python on success; exits non-zero with a reason otherwise.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV="${HOMEBOT_HA_VENV:-$PWD/.venv-ha}"
HERE=tests/peers/ha
STAMP="$VENV/.installed"
# HA converts announcements for Wyoming satellites with ffmpeg
if ! command -v ffmpeg >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ffmpeg (Home Assistant needs it to announce on Wyoming satellites)" >&2
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends ffmpeg; } >&2 ||
      { echo "could not install ffmpeg with apt-get" >&2; exit 2; }
  else
    echo "ffmpeg is missing (install it: Home Assistant needs it to announce on Wyoming satellites)" >&2
    exit 2
  fi
fi
want="$(sha256sum "$HERE/requirements-ha.txt" | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
PY="${HOMEBOT_HA_BASE_PYTHON:-}"
if [ -z "$PY" ]; then
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for cand in "$root/versions/3.13.0/bin/python3" python3.13; do
    if command -v "$cand" >/dev/null 2>&1; then PY="$(command -v "$cand")"; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "no Python 3.13 found (pyenv 3.13.0 or python3.13 on PATH; or set HOMEBOT_HA_BASE_PYTHON)" >&2
  exit 2
fi
ver="$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
case "$ver" in 3.13.*) ;; *) echo "$PY is Python $ver; Home Assistant 2025.4.4 needs 3.13" >&2; exit 2 ;; esac
rm -rf "$VENV"
"$PY" -m venv "$VENV"
dl="$(mktemp -d)"
trap 'rm -rf "$dl"' EXIT
# HA's own pins, so that loose dependencies do not float to versions it never ran with
"$VENV/bin/pip" download --quiet --no-deps homeassistant==2025.4.4 -d "$dl" >&2
"$VENV/bin/python" - "$dl"/homeassistant-2025.4.4-py3-none-any.whl "$dl/constraints.txt" <<'PY'
import sys, zipfile
open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("homeassistant/package_constraints.txt"))
PY
nice -n 15 "$VENV/bin/pip" install --quiet -r "$HERE/requirements-ha.txt" -c "$dl/constraints.txt" >&2
echo "$want" > "$STAMP"
echo "$VENV/bin/python"
