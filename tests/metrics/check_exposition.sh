#!/bin/bash
# The exporter's output (with every series populated) passes promtool's exposition
# parser and linter (counter names end in _total, help text present, base units …).
# usage: check_exposition.sh DUMP_EXPOSITION_BINARY
set -euo pipefail
if ! command -v promtool >/dev/null; then
    echo "SKIP: promtool not found (Debian: apt-get install prometheus)"
    exit 77
fi
text=$("$1")
printf '%s\n' "$text" | promtool check metrics
echo "promtool check metrics: ok ($(printf '%s\n' "$text" | grep -vc '^#') samples)"
