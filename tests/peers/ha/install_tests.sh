#!/usr/bin/env bash
# Install Home Assistant's test harness (requirements-ha-tests.txt) into the HA venv that
# install.sh made (./.venv-ha or $HOMEBOT_HA_VENV), constrained by that HA's own
# package_constraints.txt so homeassistant and its pins stay as they are. Its own stamp
# (.installed-tests): changing the harness does not rebuild HA, and rebuilding HA
# (a new .installed) installs the harness again. Idempotent.
# Prints the venv's python on success; exits non-zero with a reason otherwise.
set -euo pipefail
cd "$(dirname "$0")/../../.."
HERE=tests/peers/ha
py="$("$HERE/install.sh")"
VENV="$(dirname "$(dirname "$py")")"
STAMP="$VENV/.installed-tests"
want="$(cat "$HERE/requirements-ha-tests.txt" "$VENV/.installed" | sha256sum | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "$py"
  exit 0
fi
constraints="$("$py" -c 'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))')"
if [ ! -f "$constraints" ]; then
  echo "the HA venv at $VENV has no package_constraints.txt; cannot install the test harness safely" >&2
  exit 2
fi
before="$("$py" -c 'import homeassistant.const as c; print(c.__version__)')"
nice -n 15 "$VENV/bin/pip" install --quiet --disable-pip-version-check \
  -r "$HERE/requirements-ha-tests.txt" -c "$constraints" >&2 ||
  { echo "could not install Home Assistant's test harness (requirements-ha-tests.txt) into $VENV" >&2; exit 2; }
after="$("$py" -c 'import homeassistant.const as c; print(c.__version__)')"
if [ "$before" != "$after" ]; then
  echo "installing the test harness moved homeassistant from $before to $after" >&2
  exit 2
fi
echo "$want" > "$STAMP"
echo "$py"
