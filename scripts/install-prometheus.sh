#!/usr/bin/env bash
# Installs Prometheus and promtool from the Debian package `prometheus`
# (bookworm: 2.42.0), which the Prometheus tests use (internal/promtest:
# the dashboard queries against a real server, the alert rules with
# promtool). Does nothing when both are on PATH. Needs apt-get and root
# (or sudo); elsewhere it says what to install, and fails only when
# CI=true (the tests then fail too).
# The package's systemd unit is not started here: the tests run their own
# server on a free loopback port.
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  exit 0
fi
missing() {
  echo "install-prometheus: $1; install the Debian package prometheus (apt-get install prometheus)" >&2
  case "${CI:-}" in true|TRUE|True|1) exit 1 ;; esac
  exit 0
}
command -v apt-get >/dev/null || missing "no apt-get here"
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || missing "not root and no sudo"
  sudo=(sudo -n)
fi
echo "install-prometheus: apt-get install prometheus" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends prometheus >/dev/null
prometheus --version 2>&1 | head -n 1 >&2
