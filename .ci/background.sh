#!/usr/bin/env bash
# .ci/background.sh STATE_DIR NAME COMMAND...: run COMMAND (an engine venv's install) with its state in STATE_DIR,
# as evalsuite/testing/engine_install.py reads it: STATE_DIR/NAME.pending (this script's pid) while it runs,
# moved to STATE_DIR/NAME.failed when COMMAND fails, removed when it succeeds; its output in STATE_DIR/NAME.log.
# scripts/bootstrap.sh --test runs one per engine in the background. Exit status: COMMAND's.
set -uo pipefail
[ $# -ge 3 ] || {
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
state="$1" name="$2"
shift 2
mkdir -p "$state"
rm -f "$state/$name.failed"
echo "$$" >"$state/$name.pending.tmp" && mv "$state/$name.pending.tmp" "$state/$name.pending"
"$@" >"$state/$name.log" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
    rm -f "$state/$name.pending"
else
    echo "exit $rc" >>"$state/$name.log"
    mv "$state/$name.pending" "$state/$name.failed"
fi
exit "$rc"
