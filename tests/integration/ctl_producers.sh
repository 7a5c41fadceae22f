#!/bin/sh
# ctl_producers.sh - perfmonctl status and list show the producers attached
# to an instance (pid, command, attach time), drop one that exits or is
# killed, and print JSON documents that parse; names --format json too.
. "$top_srcdir/tests/integration/daemon_lib.sh"
LATE="$top_builddir/tests/tools/late_producer"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse the JSON"; exit 77; }

producers_of() {  # the pids status --format json lists, sorted, one line
	"$PERFMONCTL" status "$SHM" --format json |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted(str(p["pid"]) for p in d["producers"])))'
}

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms
mkfifo "$T/in"
SLICK_PERFMON_SHM=$SHM "$LATE" <"$T/in" >"$T/late.out" 2>&1 &
LPID=$!
PIDS=$LPID
exec 3>"$T/in"
echo "wait-attached" >&3
wait_for grep -q '^attached' "$T/late.out" || fail "late producer did not attach"
"$PRODUCER" "$SHM" 3 100 --seconds 60 --pause-us 1000 >/dev/null &
KPID=$!
PIDS="$PIDS $KPID"
wait_for sh -c "[ \"\$(\"$PERFMONCTL\" status \"$SHM\" --format json | grep -o '\"pid\":$KPID,')\" ]" ||
	fail "second producer never listed"

want=$(printf '%s\n' "$LPID" "$KPID" | sort | tr '\n' ' ' | sed 's/ $//')
[ "$(producers_of)" = "$want" ] || fail "status lists '$(producers_of)', want '$want'"

# The JSON document: every field of the schema, numbers as numbers.
"$PERFMONCTL" status "$SHM" --format json >"$T/status.json" || fail "status exit $?"
python3 - "$T/status.json" "$LPID" "$SHM" <<'PY' || fail "status JSON wrong: $(cat "$T/status.json")"
import json, sys, time
d = json.load(open(sys.argv[1]))
assert d["instance"] == sys.argv[3] and d["alive"] is True and d["state"] == "alive"
for k in ("pid", "events_drained", "dropped", "stalled", "ring_capacity", "open_spans",
          "names", "max_names", "name_conflicts"):
    assert isinstance(d[k], int), k
assert isinstance(d["uptime_s"], float) and d["uptime_s"] >= 0
p = [p for p in d["producers"] if p["pid"] == int(sys.argv[2])][0]
assert p["command"] == "late_producer", p
assert p["alive"] is True
assert abs(p["attach_time_s"] - time.time()) < 600, p
PY
"$PERFMONCTL" status "$SHM" | grep -q "pid $LPID late_producer, attached" || fail "live status lacks the producer line"

# list: our instance, alive, with two producers; JSON parses.
"$PERFMONCTL" list --format json >"$T/list.json" || fail "list exit $?"
python3 - "$T/list.json" "$SHM" <<'PY' || fail "list JSON wrong: $(cat "$T/list.json")"
import json, sys
d = json.load(open(sys.argv[1]))
me = [i for i in d["instances"] if i["name"] == sys.argv[2]]
assert len(me) == 1, d
me = me[0]
assert me["alive"] is True and me["state"] == "alive" and me["producers"] == 2, me
assert isinstance(me["pid"], int) and isinstance(me["dropped"], int)
PY
"$PERFMONCTL" list | grep -E "^$SHM +alive +$DPID " >/dev/null || fail "list table lacks the instance: $("$PERFMONCTL" list)"

# names --format json: the labels the late producer published.
"$PERFMONCTL" names "$SHM" --format json >"$T/names.json" || fail "names exit $?"
python3 - "$T/names.json" <<'PY' || fail "names JSON wrong: $(cat "$T/names.json")"
import json, sys
d = json.load(open(sys.argv[1]))
got = {(n["point"], n["step"]): n["label"] for n in d["names"]}
assert got[(5, 0)] == "late" and got[(5, 1)] == "late.s1", got
PY

# A producer killed outright leaves its entry behind: it is not listed.
kill -9 "$KPID"
wait "$KPID" 2>/dev/null || true
[ "$(producers_of)" = "$LPID" ] || fail "killed producer still listed: $(producers_of)"
# One that exits cleanly gives its entry back.
echo quit >&3
exec 3>&-
wait "$LPID" || fail "late producer failed"
PIDS=
[ "$(producers_of)" = "" ] || fail "exited producer still listed: $(producers_of)"
"$PERFMONCTL" status "$SHM" | grep -q "producers *none attached" || fail "status does not say none attached"
stop_daemon TERM
ok "producers listed with pid, command and attach time; dead ones dropped; JSON parses"
