#!/usr/bin/env bash
# The Jupyter kernel's Python-side tests: jupyter_kernel_test's conformance
# suite, kernel behaviour (forged signatures, interrupts, inspect, code-point
# cursors) and a notebook under nbclient. Makes its own virtualenv
# (target/jupyter-venv) with the packages in requirements.txt, and installs
# the kernelspec for the given binary into a private prefix.
# Usage: jupyter/tests/run.sh path/to/tilebook
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
VENV=${TILEBOOK_TEST_VENV:-$root/target/jupyter-venv}
if ! "$VENV/bin/python" -c "import jupyter_client, jupyter_kernel_test, nbclient, nbformat" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
fi
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$BIN" jupyter install --prefix "$prefix" > /dev/null
cd "$here"
JUPYTER_PATH="$prefix/share/jupyter" TILEBOOK_CACHE=off TILEBOOK_DEVICE="${TILEBOOK_DEVICE:-cpu}" \
  "$VENV/bin/python" -m unittest -v test_conformance test_kernel_behaviour
