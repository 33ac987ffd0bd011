#!/usr/bin/env bash
# Builds the documentation site into docs/_build/html with warnings as errors: a broken
# cross-reference or a link to a page that does not exist fails the build. The builder
# lives in a virtual environment of its own in oltplab's cache, made from
# docs/requirements.txt (and made again when that file changes).
#   bash scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${OLTPLAB_CACHE:-$HOME/.cache/oltplab}"
venv="$cache/docs-venv"
wanted="$(sha256sum docs/requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$wanted" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r docs/requirements.txt
  echo "$wanted" > "$venv/.requirements"
fi
# The figures drawn from data the repository keeps (the power curve's real trials), by
# oltplab itself: the docs show what the committed data says, never a copy of it.
python3 -m oltplab.report.power_docs docs/_generated > /dev/null
"$venv/bin/sphinx-build" -W --keep-going -n -q -b html docs docs/_build/html
echo "docs: $(pwd)/docs/_build/html/index.html"
