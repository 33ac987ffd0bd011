#!/usr/bin/env bash
# Runs a command on a busy host: one CPU kept busy by a process of its own for the whole of
# the command, stopped by its pid afterwards; the command's exit status is returned.
#
#   bash bench/busy_host.sh python3 -m pytest
#
# The suite's tests must hold on such a host: they assert what the product promises (a cell
# clean or flagged with its figure, a verdict decided or UNKNOWN), never a quiet machine.
set -uo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: bash bench/busy_host.sh COMMAND [ARGS...]" >&2
  exit 2
fi
python3 -c 'while True: pass' &
burner=$!
echo "busy_host: pid $burner keeps one CPU busy" >&2
"$@"
status=$?
kill "$burner"
wait "$burner" 2>/dev/null
echo "busy_host: pid $burner stopped; the command exited $status" >&2
exit "$status"
