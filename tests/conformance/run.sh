#!/usr/bin/env bash
# Run the official MCP conformance suite (pinned; installed on demand by setup.sh) with
# Node 22 and a preload that keeps every mock server it starts on 127.0.0.1.
# All arguments go to the suite's CLI unchanged. Examples:
#
#   tests/conformance/run.sh list
#   tests/conformance/run.sh server --url http://127.0.0.1:PORT/mcp --suite all -o OUTDIR
#   tests/conformance/run.sh server --url http://127.0.0.1:PORT/mcp --scenario tools-list
#   tests/conformance/run.sh client --command "python examples/conformance_client.py" \
#       --scenario initialize
#
# Exit status is the suite's: 0 when nothing failed (see SCENARIOS.md for the rules).
# The working directory is kept, so relative paths in --command and -o work as given.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

eval "$("$HERE/setup.sh" --quiet)"
[ -f "$CONFORMANCE_PRELOAD" ] || { echo "run.sh: missing $CONFORMANCE_PRELOAD" >&2; exit 1; }

exec "$CONFORMANCE_NODE" --require "$CONFORMANCE_PRELOAD" "$CONFORMANCE_SUITE" "$@"
