#!/usr/bin/env bash
# The browser test (browser.py): JupyterLab from PyPI in a virtualenv of its
# own (target/browser-venv), Debian's chromium and chromium-driver (.ci/setup
# installs them), the tilebook kernelspec for the given binary in a private
# prefix, every tutorial notebook on the CPU backend. Screenshots go to
# target/browser-test/.
# Usage: jupyter/tests/browser.sh path/to/tilebook
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
for tool in /usr/bin/chromium /usr/bin/chromedriver; do
  if [ ! -x "$tool" ]; then
    echo "browser test: $tool is missing; .ci/setup installs Debian's chromium and chromium-driver" >&2
    exit 1
  fi
done
VENV=${TILEBOOK_BROWSER_VENV:-$root/target/browser-venv}
start=$(date +%s)
if ! "$VENV/bin/python" -c "import jupyterlab, selenium" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$here/browser-requirements.txt"
  echo "browser test: installed JupyterLab and selenium in $(( $(date +%s) - start )) s"
fi
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$BIN" jupyter install --prefix "$prefix" > /dev/null
JUPYTER_PATH="$prefix/share/jupyter" TILEBOOK_CACHE=off TILEBOOK_DEVICE=cpu \
  "$VENV/bin/python" "$here/browser.py" "$root/target/browser-test" "$root"/tutorials/*.ipynb
