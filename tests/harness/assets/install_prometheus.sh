#!/usr/bin/env bash
# Install Prometheus from Debian's package if /usr/bin/prometheus is missing (needs root).
# The package's service is kept from starting (a temporary policy-rc.d): the test bed runs its own
# Prometheus on a loopback port with a config it writes (tests/harness/prometheus/server.py).
set -euo pipefail

if [[ -x /usr/bin/prometheus ]]; then
    /usr/bin/prometheus --version 2>&1 | head -1
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "install_prometheus.sh: /usr/bin/prometheus is missing and installing it needs root" >&2
    exit 1
fi

policy=/usr/sbin/policy-rc.d
added_policy=0
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    added_policy=1
fi
cleanup() { if [[ $added_policy -eq 1 ]]; then rm -f "$policy"; fi; }
trap cleanup EXIT

echo "install_prometheus.sh: apt-get install prometheus" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends prometheus
/usr/bin/prometheus --version 2>&1 | head -1
