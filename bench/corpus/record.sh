#!/usr/bin/env bash
# Records (or resumes) the long-cell replay corpus, then packs its results without the
# engines' scratch into bench/corpus/long-cells.tar.xz. About 9 hours on 2 cores; a
# killed recording resumes where it stopped when run again (the ledger is crash-safe).
#   bash bench/corpus/record.sh [RESULTS_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="${1:-$here/long-cells}"
if [ ! -d "$results" ] && [ -f "$here/long-cells.tar.xz" ]; then
  # Resume what an earlier session recorded.
  mkdir -p "$results" && tar -C "$results" -xJf "$here/long-cells.tar.xz"
fi
status=0
oltplab run "$here/long-cells.toml" --results "$results" || status=$?
# The ledger whole in its main file (no write-ahead log beside it); replays' outputs stay out.
sqlite3 "$results/ledger.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
tar -C "$results" --exclude=./.work --exclude=./.oltplab.lock --exclude=./replay.csv \
  --exclude=./replay.json -cJf "$here/long-cells.tar.xz.partial" .
mv "$here/long-cells.tar.xz.partial" "$here/long-cells.tar.xz"
echo "corpus: $here/long-cells.tar.xz ($(du -h "$here/long-cells.tar.xz" | cut -f1)); next: oltplab replay $results --stop adaptive --resolution 2%"
exit "$status"
