#!/bin/sh
# ctl_list.sh - perfmonctl list: every instance on the host, alive or not,
# as a table, CSV and a JSON document; exit 0, also when there is none.
. "$top_srcdir/tests/integration/daemon_lib.sh"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse the JSON"; exit 77; }
SHM2="$SHM-b"
trap 'cleanup; "$SEGTOOL" remove "$SHM2" >/dev/null 2>&1 || true' EXIT

# A second instance whose collector ran and stopped.
"$PERFMOND" --shm "$SHM2" --csv "" --summary "" --duration 200ms 2>"$T/d2.err" ||
	fail "short daemon failed: $(cat "$T/d2.err")"
start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "" --interval 100ms
"$PRODUCER" "$SHM" 1 100 --seconds 60 --pause-us 1000 >/dev/null &
PIDS=$!
wait_for sh -c "\"$PERFMONCTL\" list --format csv | grep -q '^$SHM,alive,$DPID,.*,1\$'" ||
	fail "list never showed the producer: $("$PERFMONCTL" list --format csv)"

"$PERFMONCTL" list >"$T/list.txt"; rc=$?
[ $rc = 0 ] || fail "list exit $rc"
grep -Eq "^$SHM +alive +$DPID " "$T/list.txt" || fail "alive instance missing: $(cat "$T/list.txt")"
grep -Eq "^$SHM2 +stopped " "$T/list.txt" || fail "stopped instance missing: $(cat "$T/list.txt")"
head -1 "$T/list.txt" | grep -q "^name  *state  *pid  *uptime  *events/s  *dropped  *producers" ||
	fail "list header: $(head -1 "$T/list.txt")"

"$PERFMONCTL" list --format json >"$T/list.json" || fail "list --format json exit $?"
python3 - "$T/list.json" "$SHM" "$SHM2" "$DPID" <<'PY' || fail "list JSON wrong: $(cat "$T/list.json")"
import json, sys
d = json.load(open(sys.argv[1]))
by = {i["name"]: i for i in d["instances"]}
a, s = by[sys.argv[2]], by[sys.argv[3]]
assert a["state"] == "alive" and a["alive"] is True and a["pid"] == int(sys.argv[4]), a
assert a["producers"] == 1 and a["dropped"] == 0, a
assert isinstance(a["events_per_s"], float) and a["events_per_s"] > 0, a
assert isinstance(a["events_drained"], int) and a["events_drained"] > 0, a
assert a["uptime_s"] > 0, a
assert s["state"] == "stopped" and s["alive"] is False and s["uptime_s"] is None, s
assert s["events_per_s"] is None and s["producers"] == 0, s
PY
kill "$PIDS"; wait "$PIDS" 2>/dev/null || true; PIDS=
stop_daemon TERM

# No instance at all: exit 0 and an empty list (in a private /dev/shm).
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
   unshare -m sh -c 'mount -t tmpfs none /dev/shm' 2>/dev/null; then
	out=$(unshare -m sh -c "mount -t tmpfs none /dev/shm && \"$PERFMONCTL\" list --format json") ||
		fail "list with no instance exited $?"
	[ "$out" = '{"instances":[]}' ] || fail "empty list JSON: $out"
	unshare -m sh -c "mount -t tmpfs none /dev/shm && \"$PERFMONCTL\" list" | grep -q "no perfmond instance" ||
		fail "empty list table does not say so"
	ok "list with no instance: exit 0, empty document"
else
	echo "note: cannot mount a private /dev/shm here; the no-instance case is not run"
fi
ok "list: alive and stopped instances, table, CSV and JSON"
