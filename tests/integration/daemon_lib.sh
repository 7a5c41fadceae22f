# daemon_lib.sh - sourced by the daemon's shell tests: a scratch directory,
# a unique shm name, starting and stopping a real perfmond, and cleanup of
# everything a test created.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
PERFMOND="$top_builddir/src/perfmond"
SEGTOOL="$top_builddir/tests/tools/segtool"
PRODUCER="$top_builddir/tests/tools/producer"
CSVCHECK="$top_builddir/tests/tools/csvcheck"
T=$(mktemp -d "${TMPDIR:-/tmp}/pmtest.XXXXXX")
SHM="pmt-$(basename "$0" .sh)-$$"
DPID=
PIDS=

cleanup() {
	for p in $DPID $PIDS; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$SEGTOOL" remove "$SHM" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	if [ -f "$T/daemon.err" ]; then echo "--- daemon stderr"; cat "$T/daemon.err"; fi
	exit 1
}

ok() { echo "ok: $*"; }

# write_conf FILE [SECTION.KEY=VALUE]...: a configuration for this test's
# instance.  [shm] name = $SHM, [collector] flush_interval = 100ms,
# [output] csv = $T/out.csv and summary = $T/sum.txt, each replaced by the
# SECTION.KEY=VALUE given for it; other keys are added to their section
# (sections in order of first mention, keys as given; VALUE may be empty).
write_conf() {
	wc_file=$1; shift
	printf '%s\n' "shm.name=$SHM" "collector.flush_interval=100ms" "output.csv=$T/out.csv" \
		"output.summary=$T/sum.txt" "$@" | awk '
	{
		eq = index($0, "="); k = substr($0, 1, eq - 1); dot = index(k, ".")
		s = substr(k, 1, dot - 1)
		if (!(s in seen)) { seen[s] = 1; secs[++ns] = s }
		if (!(k in val)) { keys[++nk] = k; sec[k] = s; name[k] = substr(k, dot + 1) }
		val[k] = substr($0, eq + 1)
	}
	END {
		for (i = 1; i <= ns; i++) {
			print "[" secs[i] "]"
			for (j = 1; j <= nk; j++)
				if (sec[keys[j]] == secs[i])
					print name[keys[j]] " = " val[keys[j]]
		}
	}' >"$wc_file"
}

# start_daemon ARGS... : run perfmond in the background, wait until ready.
start_daemon() {
	"$PERFMOND" "$@" >>"$T/daemon.out" 2>>"$T/daemon.err" &
	DPID=$!
	"$SEGTOOL" wait-ready "$SHM" 10 || fail "perfmond did not become ready"
}

# stop_daemon [SIGNAL]: signal it and wait; sets DSTATUS.
stop_daemon() {
	kill -"${1:-TERM}" "$DPID"
	DSTATUS=0
	wait "$DPID" || DSTATUS=$?
	DPID=
}

# wait_for CMD...: poll until CMD succeeds (10 s).
wait_for() {
	wf_n=0
	until "$@" >/dev/null 2>&1; do
		wf_n=$((wf_n + 1))
		[ $wf_n -lt 200 ] || return 1
		sleep 0.05
	done
}

# count_of POINT STAGE FILE...: summed count column for a row label.
count_of() {
	p=$1; s=$2; shift 2
	"$CSVCHECK" "$@" | awk -F'\t' -v p="$p" -v s="$s" '$1==p && $2==s {print $3; f=1} END{if(!f) print 0}'
}

# column_sum POINT STAGE COLUMN FILE...: summed counter column (3=count,
# 4=dropped, 5=invalid, 6=stalled, 7=abandoned, 8=orphan, 9=out_of_range).
column_sum() {
	p=$1; s=$2; c=$3; shift 3
	"$CSVCHECK" "$@" | awk -F'\t' -v p="$p" -v s="$s" -v c="$c" '$1==p && $2==s {print $c; f=1} END{if(!f) print 0}'
}

# notify_listen SOCKET LOG SECONDS: our own NOTIFY_SOCKET in the background
# ($! is its pid).  Each datagram becomes one line of LOG, "MONOTONIC MSG"
# with the message's newlines as '|'; it stops at STOPPING=1 or after
# SECONDS without a message.
notify_listen() {
	python3 - "$1" "$2" "$3" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(float(sys.argv[3]))
with open(sys.argv[2], 'w') as log:
    while True:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            break
        log.write('%.3f %s\n' % (time.monotonic(), msg.replace('\n', '|')))
        log.flush()
        if 'STOPPING=1' in msg:
            break
PY
}
