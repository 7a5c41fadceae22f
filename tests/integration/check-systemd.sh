#!/bin/sh
# check-systemd.sh - perfmond@.service under a real systemd (`make
# check-systemd`, as root).  Not part of `make check` or .ci/run: it starts
# services and, if there is none, creates the perfmon system user.
#
# Where systemd is PID 1 the checks run against it.  Elsewhere (a build
# container, a VM booted without systemd) the script first boots a private
# systemd: PID 1 of new pid, mount, UTS and cgroup namespaces, on an
# overlay of the root file system whose writes go to a tmpfs, with the
# host's /dev (so the same /dev/shm) and a read-only /sys.  Only the units
# the checks need run there: everything sysinit.target would start is
# masked, /etc/fstab is empty, and there is no policy-rc.d.  The checks then run inside it, and the
# whole namespace is killed afterwards.
#
# The unit under test is the generated one, installed as the runtime unit
# perfmond-check@.service (so an installed perfmond@.service is left alone)
# running a copy of the built daemon from /run; a drop-in shortens the
# watchdog and restart delays.  Checked:
#   1. readiness ordering: a producer unit with Wants=/After= on the
#      collector, SupplementaryGroups=perfmon and SLICK_PERFMON_SHM=%i, run
#      as nobody, attaches at load time and its spans reach the CSV in
#      /var/log/perfmond/NAME/;
#   2. reload: a good change reloads; a broken file fails `systemctl reload`
#      and the collector keeps running with the same pid;
#   3. the rings survive: restart and stop keep both segments (same inode),
#      and the restarted collector resumes on them;
#   4. a configuration error fails the unit with status 78 and is not
#      restarted;
#   5. the watchdog: an idle collector is not killed; when only the drain
#      thread is stopped (ptrace) while the main thread runs on, the
#      watchdog fires and the unit restarts, keeping the rings.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir CC
self=$top_srcdir/tests/integration/check-systemd.sh
# `check-systemd.sh --run SCRIPT`: another root test (tests/integration/deb_install.sh)
# runs inside the same kind of boot instead of the checks below, directly
# where systemd is PID 1.
inner=$self
if [ "${1:-}" = --run ]; then
	inner=$2
fi

# The private boot's PID 1, in the new namespaces: build the root, exec
# systemd.  Runs under `set -e`: any failed step ends the boot.
boot_pid1() {
	scratch=$1
	m=$scratch/merged
	mount -t tmpfs -o mode=0755 tmpfs "$scratch/layers"
	mkdir "$scratch/layers/upper" "$scratch/layers/work"
	mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$scratch/layers/upper,workdir=$scratch/layers/work" "$m"
	mount -t proc proc "$m/proc"
	mount --rbind /dev "$m/dev"
	mount --rbind /sys "$m/sys"
	mount -o remount,bind,ro "$m/sys"
	# Rooted at this namespace's own cgroup: the private systemd's tree.
	mount -t cgroup2 cgroup2 "$m/sys/fs/cgroup"
	mount -t tmpfs -o mode=0755 tmpfs "$m/run"
	for d in "$top_srcdir" "$top_builddir"; do
		mkdir -p "$m$d"
		mount --bind "$d" "$m$d"
	done
	: > "$m/etc/fstab"
	# A container image's /usr/sbin/policy-rc.d (Docker's is "exit 101")
	# forbids every start and stop maintainer scripts ask for through
	# deb-systemd-invoke and invoke-rc.d.  The private boot stands for a
	# real machine, which has none: the overlay hides it (a whiteout in the
	# tmpfs; the host's file stays as it is).
	rm -f "$m/usr/sbin/policy-rc.d"
	rm -f "$m/etc/crypttab" "$m/etc/integritytab" "$m/etc/veritytab"
	mkdir -p "$m/etc/systemd/system"
	for w in /lib/systemd/system/sysinit.target.wants \
		 /usr/lib/systemd/system/sysinit.target.wants \
		 /etc/systemd/system/sysinit.target.wants; do
		[ -d "$m$w" ] || continue
		for u in "$m$w"/*; do
			u=${u##*/}
			case $u in
			systemd-journald.service | systemd-journal-flush.service | '*') ;;
			*) ln -sf /dev/null "$m/etc/systemd/system/$u" ;;
			esac
		done
	done
	printf '%s\n' '[Unit]' 'Description=perfmond check-systemd boot' \
		'Wants=systemd-journald.service' 'After=systemd-journald.service' \
		> "$m/etc/systemd/system/perfmond-check-boot.target"
	hostname perfmond-check
	for init in /lib/systemd/systemd /usr/lib/systemd/systemd; do
		if [ -x "$m$init" ]; then
			exec chroot "$m" /usr/bin/env -i container=perfmond-check \
				PATH=/usr/sbin:/usr/bin:/sbin:/bin \
				"$init" --unit=perfmond-check-boot.target
		fi
	done
	echo "no systemd binary" >&2
	exit 1
}

# On the host: boot a private systemd, run this script inside it, tear it
# down.  Returns the checks' exit status.
boot_and_check() {
	for tool in unshare nsenter ps; do
		command -v $tool > /dev/null 2>&1 ||
			{ echo "SKIP: systemd is not PID 1 and $tool is missing to boot one"; return 77; }
	done
	if ! grep -q overlay /proc/filesystems || ! grep -q cgroup2 /proc/filesystems ||
	   ! { [ -x /lib/systemd/systemd ] || [ -x /usr/lib/systemd/systemd ]; }; then
		echo "SKIP: systemd is not PID 1, and overlayfs, cgroup2 or systemd is missing to boot one"
		return 77
	fi
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		cgroot=/sys/fs/cgroup
	elif [ -d /sys/fs/cgroup/unified ]; then
		cgroot=/sys/fs/cgroup/unified
	else
		echo "SKIP: no cgroup2 hierarchy to give a private systemd"
		return 77
	fi
	scratch=$(mktemp -d /var/tmp/perfmond-check.XXXXXX)
	cg=$cgroot/perfmond-check.$$
	mkdir "$cg" "$scratch/layers" "$scratch/merged"
	echo "note: systemd is not PID 1 here: booting a private one (log: $scratch/boot.log)"
	# Only the process that becomes the namespace's PID 1 moves into $cg.
	setsid sh -c 'echo $$ > "$1/cgroup.procs" && exec unshare --pid --fork --mount \
		--uts --cgroup --propagation private sh "$2" --pid1 "$3"' \
		sh "$cg" "$self" "$scratch" > "$scratch/boot.log" 2>&1 < /dev/null &
	upid=$!
	init=
	state=
	end=$(( $(date +%s) + 60 ))
	while [ "$(date +%s)" -lt "$end" ]; do
		[ -n "$init" ] || init=$(ps -o pid= --ppid "$upid" 2>/dev/null | tr -d ' ')
		if [ -n "$init" ]; then
			state=$(nsenter -t "$init" -m -p -u -C -r -w \
				systemctl is-system-running 2>/dev/null)
			case $state in running | degraded) break ;; esac
		fi
		kill -0 "$upid" 2>/dev/null || break
		sleep 0.2
	done
	rc=1
	case $state in
	running | degraded)
		nsenter -t "$init" -m -p -u -C -r -w env top_srcdir="$top_srcdir" \
			top_builddir="$top_builddir" CC="$CC" CXX="${CXX:-c++}" PERFMOND_DEBS="${PERFMOND_DEBS:-}" \
			PERFMOND_VERSION="${PERFMOND_VERSION:-}" sh "$inner"
		rc=$?
		;;
	*)
		cat "$scratch/boot.log"
		echo "FAIL: the private systemd did not come up (state '$state')"
		;;
	esac
	# SIGKILL to a namespace's PID 1 ends every process in it; its mounts
	# go with its mount namespace.
	[ -n "$init" ] && kill -KILL "$init" 2>/dev/null
	wait "$upid" 2>/dev/null
	find "$cg" -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null
	rmdir "$cg" 2>/dev/null || echo "note: could not remove $cg"
	rm -rf "$scratch"
	return $rc
}

if [ "${1:-}" = --pid1 ]; then
	[ $$ -eq 1 ] || { echo "--pid1 is boot_and_check's, for a new pid namespace" >&2; exit 1; }
	set -e
	boot_pid1 "$2"
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: must run as root"
	exit 77
fi
if ! [ -d /run/systemd/system ]; then
	boot_and_check
	exit $?
fi
[ "$inner" = "$self" ] || exec sh "$inner"
for tool in systemctl systemd-sysusers python3; do
	command -v $tool > /dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
daemon=$top_builddir/src/perfmond
unit=$top_builddir/systemd/perfmond@.service
[ -x "$daemon" ] && [ -f "$unit" ] || { echo "FAIL: build first (make)"; exit 1; }

inst=pmchk$$
svc=perfmond-check@$inst.service
prod=perfmond-check-producer@$inst.service
base=/run/perfmond-check.$$
units=/run/systemd/system
logdir=/var/log/perfmond/$inst
tracer=
fail=0
bad() { echo "FAIL: $*"; fail=1; }
die() { echo "FAIL: $*"; journalctl -u "$svc" -n 30 --no-pager 2>/dev/null; exit 1; }
cleanup() {
	[ -n "$tracer" ] && kill "$tracer" 2>/dev/null
	systemctl stop "$prod" "$svc" 2>/dev/null
	systemctl reset-failed "$prod" "$svc" 2>/dev/null
	rm -rf "$units/perfmond-check@.service" "$units/perfmond-check@.service.d" \
	       "$units/perfmond-check-producer@.service"
	systemctl daemon-reload
	rm -f "/dev/shm/$inst" "/dev/shm/$inst.meta"
	rm -rf "$base" "$logdir" "/var/lib/perfmond/$inst"
	rmdir /var/log/perfmond /var/lib/perfmond 2>/dev/null
}
trap cleanup EXIT
prop() { systemctl show -p "$1" --value "$svc"; }
deadline_in() { deadline=$(( $(date +%s) + $1 )); }
expired() { [ "$(date +%s)" -ge "$deadline" ]; }

# ---- set-up ------------------------------------------------------------------
if ! getent passwd perfmon > /dev/null; then
	echo "note: creating the perfmon system user with systemd-sysusers"
fi
systemd-sysusers "$top_srcdir/systemd/sysusers.d/perfmond.conf" || die "systemd-sysusers failed"

mkdir -p "$base/sbin" "$base/etc/perfmond"
chmod 755 "$base" "$base/sbin" "$base/etc" "$base/etc/perfmond"
cp "$daemon" "$base/sbin/perfmond"
sed -e 's/^;flush_interval = .*/flush_interval = 200ms/' \
    "$top_srcdir/etc/perfmond/example.conf" > "$base/etc/perfmond/$inst.conf"
cp "$base/etc/perfmond/$inst.conf" "$base/good.conf"
chmod 644 "$base/etc/perfmond/$inst.conf"

cat > "$base/producer.c" <<'C'
#include <stdio.h>
#include <perfmon.h>
/* Attached at load time through SLICK_PERFMON_SHM, or it fails. */
int main(void)
{
	uint32_t i;

	if (!perfmon_enabled()) {
		fprintf(stderr, "producer: not attached to a ring\n");
		return 1;
	}
	perfmon_name(5, 0, "check_point");
	for (i = 1; i <= 500; i++) {
		perfmon_begin(5, i);
		perfmon_end(5, i);
	}
	return 0;
}
C
"$CC" -std=c11 -O2 -I"$top_srcdir/include" -o "$base/producer" "$base/producer.c" ||
	die "cannot build the producer"
chmod 755 "$base/producer"

# The generated unit, pointed at the copies in $base.
sed -E -e "s#^(Exec[A-Za-z]+=)[^ ]*/perfmond #\\1$base/sbin/perfmond #" \
       -e "s# [^ ]*/perfmond/%i\\.conf\$# $base/etc/perfmond/%i.conf#" \
       "$unit" > "$units/perfmond-check@.service"
grep -q "^ExecStart=$base/sbin/perfmond --instance=%i $base/etc/perfmond/%i.conf\$" \
	"$units/perfmond-check@.service" || die "could not rewrite the unit's paths"
mkdir -p "$units/perfmond-check@.service.d"
cat > "$units/perfmond-check@.service.d/test.conf" <<EOF
[Service]
WatchdogSec=3s
RestartSec=1s
EOF
cat > "$units/perfmond-check-producer@.service" <<EOF
[Unit]
Wants=perfmond-check@%i.service
After=perfmond-check@%i.service

[Service]
Type=oneshot
User=nobody
SupplementaryGroups=perfmon
Environment=SLICK_PERFMON_SHM=%i
ExecStart=$base/producer
EOF
systemctl daemon-reload

# ---- 1. readiness ordering -------------------------------------------------------
systemctl start "$prod" || die "the producer unit failed (not attached?)"
[ "$(prop ActiveState)" = active ] || die "the collector is not active"
stat -c '%U:%G %a' "/dev/shm/$inst" | grep -q '^perfmon:perfmon 660$' ||
	bad "segment owner/mode: $(stat -c '%U:%G %a' "/dev/shm/$inst")"
spans() { awk -F, '$2 == "check_point" && $3 == "total" { n += $5 } END { print n + 0 }' \
	"$logdir/$inst.csv" 2>/dev/null || echo 0; }
deadline_in 20
until [ "$(spans)" -ge 500 ]; do
	expired && die "the producer's spans did not reach $logdir/$inst.csv"
	sleep 0.1
done
echo "ok: the producer unit started after READY=1, attached as nobody+perfmon, and its 500 spans were recorded"

# ---- 2. reload -------------------------------------------------------------------
pid=$(prop MainPID)
sed -i 's/^flush_interval = .*/flush_interval = 300ms/' "$base/etc/perfmond/$inst.conf"
systemctl reload "$svc" || bad "reloading a good change failed"
echo '[shm' >> "$base/etc/perfmond/$inst.conf"
if systemctl reload "$svc" 2>/dev/null; then
	bad "reloading a broken file succeeded"
fi
[ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" = "$pid" ] &&
	echo "ok: reload applies a good file, refuses a broken one and keeps running" ||
	bad "the collector did not survive a refused reload"
# The refusal names the file and line in the journal, at error priority.
deadline_in 10
until journalctl -u "$svc" --no-pager 2>/dev/null | grep -q "$inst\.conf:[0-9]"; do
	expired && { bad "the journal has no FILE:LINE error for the refused reload"; break; }
	sleep 0.2
done
journalctl -u "$svc" -p err --no-pager 2>/dev/null | grep -q "$inst\.conf:[0-9]" ||
	bad "the FILE:LINE error of the refused reload is not logged at error priority"
cp "$base/good.conf" "$base/etc/perfmond/$inst.conf"

# ---- 3. the rings survive restart and stop -----------------------------------------
inodes() { stat -c %i "/dev/shm/$inst" "/dev/shm/$inst.meta" | tr '\n' ' '; }
before=$(inodes)
systemctl restart "$svc" || die "restart failed"
[ "$(prop MainPID)" != "$pid" ] || bad "restart kept the old pid"
[ "$(inodes)" = "$before" ] || bad "restart replaced the segments"
systemctl stop "$svc"
[ "$(inodes)" = "$before" ] && echo "ok: restart and stop keep both segments (RemoveIPC=no)" ||
	bad "stop removed or replaced the segments"
n=$(spans)
systemctl start "$prod" || bad "the producer failed after the collector restarted"
deadline_in 20
until [ "$(spans)" -ge $((n + 500)) ]; do
	expired && { bad "spans after the restart did not arrive"; break; }
	sleep 0.1
done
echo "ok: the restarted collector resumed on the same ring"

# ---- 4. a configuration error is not retried ------------------------------------------
restarts=$(prop NRestarts)
printf '[shm]\ncapacity = 1000\n' > "$base/etc/perfmond/$inst.conf"
systemctl restart "$svc" 2>/dev/null && bad "a broken configuration started"
# Three restart delays: time enough for Restart= to have retried.
sleep 3
[ "$(prop ActiveState)" = failed ] && [ "$(prop ExecMainStatus)" = 78 ] &&
	[ "$(prop NRestarts)" = "$restarts" ] &&
	echo "ok: a configuration error fails the unit with 78 and is not restarted" ||
	bad "after a config error: $(prop ActiveState), status $(prop ExecMainStatus), restarts $(prop NRestarts) (was $restarts)"
cp "$base/good.conf" "$base/etc/perfmond/$inst.conf"
systemctl reset-failed "$svc"
systemctl start "$svc" || die "start after fixing the configuration failed"

# ---- 5. the watchdog ---------------------------------------------------------------
# Idle for two watchdog periods: the drain thread's heartbeat keeps moving.
pid=$(prop MainPID)
restarts=$(prop NRestarts)
sleep 6
[ "$(prop MainPID)" = "$pid" ] && [ "$(prop NRestarts)" = "$restarts" ] &&
	echo "ok: an idle collector keeps its watchdog fed" ||
	bad "an idle collector was restarted by the watchdog"

drain=
for t in /proc/"$pid"/task/*; do
	[ "$(cat "$t/comm" 2>/dev/null)" = perfmond-drain ] && drain=${t##*/}
done
[ -n "$drain" ] || die "no perfmond-drain thread in process $pid"
# Stop that one thread; the main thread runs on.
cat > "$base/stop_thread.py" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE, PTRACE_INTERRUPT, WALL = 0x4206, 0x4207, 0x40000000
tid = int(sys.argv[1])
if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0 or \
   libc.ptrace(PTRACE_INTERRUPT, tid, None, None) != 0:
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
os.waitpid(tid, WALL)
print("stopped", flush=True)
while True:
    time.sleep(1)
PY
python3 "$base/stop_thread.py" "$drain" > "$base/tracer.out" 2>&1 &
tracer=$!
deadline_in 10
until grep -q stopped "$base/tracer.out"; do
	if ! kill -0 "$tracer" 2>/dev/null || expired; then
		cat "$base/tracer.out"
		echo "note: cannot stop a single thread here: watchdog firing not checked"
		tracer=
		break
	fi
	sleep 0.1
done
if [ -n "$tracer" ]; then
	grep -q '^State:.*[SR]' "/proc/$pid/status" || bad "the main thread stopped too"
	# systemd records the watchdog as the unit's result while it aborts
	# the process; the ptrace-stopped thread holds the dying process until
	# the tracer lets go.
	deadline_in 15
	until [ "$(prop Result)" = watchdog ]; do
		expired && { bad "the watchdog did not fire"; break; }
		sleep 0.1
	done
	kill "$tracer" 2>/dev/null
	tracer=
	deadline_in 40
	until [ "$(prop NRestarts)" -gt "$restarts" ] && [ "$(prop ActiveState)" = active ]; do
		expired && { bad "the unit was not restarted after the watchdog"; break; }
		sleep 0.2
	done
	[ "$(prop MainPID)" != "$pid" ] &&
		echo "ok: a stalled drain thread starves the watchdog; the unit was restarted" ||
		bad "the watchdog restart kept pid $pid"
	[ "$(inodes)" = "$before" ] || bad "the watchdog restart replaced the segments"
fi
exit $fail
