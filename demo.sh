#!/bin/sh
# demo.sh - build everything and run the demo: the daemon on built-in
# defaults, an example producer for a few seconds, and the summary.
set -eu
cd "$(dirname "$0")"
echo "demo: not yet available (the perfmond daemon is not built yet)"
exit 0
