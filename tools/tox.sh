#!/usr/bin/env bash
# Copyright 2026 The ironic-partition Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Run tox, installing it first where it is missing: a fresh machine needs
# only python3. tox goes into .tox-bootstrap/ (a venv inside the checkout),
# never into the system Python, with the tox-uv plugin: the environments'
# packages are then installed by uv (the same pins, upper-constraints.txt,
# in a quarter of pip's time). A tox already installed is used as it is,
# with pip.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if python3 -m tox --version >/dev/null 2>&1; then
    exec python3 -m tox "$@"
fi

venv="$top/.tox-bootstrap"
if [ ! -x "$venv/bin/tox" ] || ! "$venv/bin/python" -c 'import tox_uv' \
        >/dev/null 2>&1; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian ships venv separately.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get update -q && apt-get install -y -q python3-venv
            rm -rf "$venv"
            python3 -m venv "$venv"
        else
            echo "python3 -m venv failed; install python3-venv" >&2
            exit 1
        fi
    fi
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q 'tox>=4.4.0' 'tox-uv>=1.11.0'
fi
exec "$venv/bin/tox" "$@"
