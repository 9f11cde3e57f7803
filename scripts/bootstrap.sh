#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine (as root) or a developer laptop:
#  1. Debian packages listed in scripts/apt-packages.txt (only the missing ones; skipped when not root
#     or when VELYRIX_SKIP_APT=1);
#  2. .venv with Velyrix and its pinned dependencies (re-run only when pyproject.toml changes).
set -euo pipefail
cd "$(dirname "$0")/.."

want=$(sed -e 's/#.*//' scripts/apt-packages.txt | awk 'NF{print $1}')
missing=()
for pkg in $want; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ] && [ "${VELYRIX_SKIP_APT:-0}" != 1 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "bootstrap: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: missing Debian packages (install them as root): ${missing[*]}" >&2
  fi
fi

[ "${VELYRIX_SKIP_APT:-0}" = 1 ] || bash scripts/syslog-ng.sh || echo "bootstrap: syslog-ng not unpacked; its SIEM tests will skip" >&2

stamp=.venv/.velyrix-installed
digest=$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
  echo "$digest" > "$stamp"
fi

# npm packages of the tests (package-lock.json pins them): the OpenID provider of tests/identity
if command -v npm >/dev/null && [ ! -d tests/identity/oidc/node_modules ]; then
  (cd tests/identity/oidc && npm ci --no-audit --no-fund --silent)
fi
# the web console's pinned front-end assets (src/velyrix/console/assets/package-lock.json), served from the package
if command -v npm >/dev/null && [ ! -d src/velyrix/console/assets/node_modules ]; then
  (cd src/velyrix/console/assets && npm ci --no-audit --no-fund --silent)
fi
if [ -d src/velyrix/console/assets/node_modules ]; then
  mkdir -p src/velyrix/console/static/vendor
  cp src/velyrix/console/assets/node_modules/htmx.org/dist/htmx.min.js \
     src/velyrix/console/assets/node_modules/htmx-ext-sse/dist/sse.min.js src/velyrix/console/static/vendor/
fi
