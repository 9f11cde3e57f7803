#!/usr/bin/env bash
# syslog-ng for the SIEM tests (tests/controlplane/test_siem_receivers.py). Debian's syslog-ng-core
# conflicts with rsyslog (both provide system-log-daemon), so it is unpacked, not installed, into
# /opt/syslog-ng (its libraries come from scripts/apt-packages.txt). Idempotent; needs root and apt.
set -euo pipefail
dest=/opt/syslog-ng
[ -x "$dest/usr/sbin/syslog-ng" ] && exit 0
[ "$(id -u)" = 0 ] || { echo "syslog-ng.sh: run as root to unpack syslog-ng-core into $dest" >&2; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -qq syslog-ng-core 2>/dev/null)
dpkg -x "$work"/syslog-ng-core_*.deb "$dest"
echo "syslog-ng.sh: syslog-ng-core unpacked into $dest"
