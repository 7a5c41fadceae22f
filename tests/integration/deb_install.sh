#!/bin/sh
# deb_install.sh - the Debian packages installed, used, removed and purged
# the way an operator would (`make check-deb`, as root, after `make deb`).
#
# Runs under systemd as PID 1: tests/integration/check-systemd.sh --run boots a private
# one when there is none, on an overlay of the root file system whose
# writes go to a tmpfs, so the machine's /usr, /etc and package database
# are not touched and tests running meanwhile see nothing of it (they run
# the build tree's binaries anyway).  Where systemd is PID 1 the packages go
# into the machine itself: then they must not be installed already, and
# they are purged at the end, also on failure.
#
# Checked: apt-get installs ./perfmond_*.deb and ./libperfmon-dev_*.deb;
# the perfmon user exists (dh_installsysusers); perfmond@.service is known
# to systemd, with no instance enabled or started; the conffiles are those
# under /etc; every docs/*.md is in /usr/share/doc/perfmond, the dashboard
# and the Prometheus rules uncompressed (promtool tests the rules where they
# lie), and every path the unit's opening comment names exists; a producer
# builds with `pkg-config --cflags perfmon` against /usr/include/perfmon.h,
# the perfmon.hpp(3) example with it too, and slick-perfmon source
# (tests/tools/slick_usage.cc) with `pkg-config --cflags perfmon-slick`;
# perfmond@demo starts on a copy of the example configuration, the C
# producer (as nobody, group perfmon) attaches, then the two C++ ones; all
# their spans reach /var/log/perfmond/demo/demo.csv and perfmonctl status
# sees the collector; `apt-get remove` stops the instance and keeps the
# configuration and the logs; `apt-get purge` removes the conffiles and
# the logs, keeps the file the administrator made, and leaves the perfmon
# user, as Debian does.  Each step ends in one line: "ok: STEP: ..." when
# every check of it passed, else "FAIL: STEP: ..." after the failed ones.
set -u
: "${PERFMOND_DEBS:?set by make check-deb}" "${PERFMOND_VERSION:?set by make check-deb}"
: "${top_srcdir:=.}"
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: must run as root (installs packages)"
	exit 77
fi
for tool in apt-get dpkg-query systemctl pkg-config; do
	command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
CC=${CC:-cc}
CXX=${CXX:-c++}
inst=demo
svc=perfmond@$inst.service
work=/run/perfmond-deb-test.$$
fail=0
step=
step_bad=0
# step NAME: the checks that follow are NAME's; bad reports one failed,
# passed closes the step with the line that sums it up.
step() { step=$1; step_bad=0; }
bad() { echo "FAIL: $step: $*"; fail=1; step_bad=$((step_bad + 1)); }
die() { echo "FAIL: $step: $*"; journalctl -u "$svc" -n 30 --no-pager 2>/dev/null; exit 1; }
passed() {
	if [ "$step_bad" = 0 ]; then
		echo "ok: $step: $*"
	else
		echo "FAIL: $step: $step_bad check(s) failed (above)"
	fi
}
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^[ih]i'; }
deadline_in() { deadline=$(( $(date +%s) + $1 )); }
expired() { [ "$(date +%s)" -ge "$deadline" ]; }

for p in perfmond libperfmon-dev; do
	if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]'; then
		echo "SKIP: $p is already installed (or configured) here; not touching it"
		exit 77
	fi
done
if [ -e /dev/shm/$inst ] || [ -e /etc/perfmond/$inst.conf ] || [ -e /var/log/perfmond/$inst ]; then
	echo "SKIP: a perfmond instance '$inst' already exists here; not touching it"
	exit 77
fi
# A policy-rc.d that refuses (a container image's "exit 101") keeps the
# maintainer scripts from stopping services: the remove could not be
# checked as on a real machine.  The private boot of check-systemd.sh has
# none; where systemd is PID 1 it is this machine's.
if [ -x /usr/sbin/policy-rc.d ]; then
	/usr/sbin/policy-rc.d "$svc" stop >/dev/null 2>&1
	if [ $? = 101 ]; then
		echo "SKIP: /usr/sbin/policy-rc.d forbids maintainer scripts to stop services here"
		exit 77
	fi
fi
step install
debs=$(ls "$PERFMOND_DEBS"/perfmond_"$PERFMOND_VERSION"_*.deb \
	"$PERFMOND_DEBS"/libperfmon-dev_"$PERFMOND_VERSION"_all.deb 2>/dev/null)
[ "$(echo "$debs" | wc -l)" = 2 ] || die "no packages of $PERFMOND_VERSION in $PERFMOND_DEBS: make deb"

had_user=no
getent passwd perfmon >/dev/null && had_user=yes
cleanup() {
	systemctl stop "$svc" 2>/dev/null
	systemctl reset-failed "$svc" 2>/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq perfmond libperfmon-dev >/dev/null 2>&1
	rm -f /etc/perfmond/$inst.conf "/dev/shm/$inst" "/dev/shm/$inst.meta" \
		/run/systemd/system/perfmond-deb-producer.service
	systemctl daemon-reload 2>/dev/null
	rmdir /etc/perfmond 2>/dev/null
	rm -rf "$work"
	if [ "$had_user" = no ] && ! tr '\0' '\n' </proc/1/environ | grep -q '^container=perfmond-check$'; then
		# Only on a real machine: the private boot's users vanish with it.
		userdel perfmon 2>/dev/null
		groupdel perfmon 2>/dev/null
	fi
}
trap cleanup EXIT

# ---- install ----------------------------------------------------------------
mkdir -p "$work"
chmod 755 "$work"
cp $debs "$work/"
(cd "$work" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	./perfmond_*.deb ./libperfmon-dev_*.deb) >"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log"; die "apt-get install failed"; }
installed perfmond && installed libperfmon-dev || die "the packages are not installed"
[ "$(dpkg-query -W -f='${Version}' perfmond)" = "$PERFMOND_VERSION" ] ||
	bad "installed version $(dpkg-query -W -f='${Version}' perfmond), want $PERFMOND_VERSION"
for f in /usr/sbin/perfmond /usr/bin/perfmonctl /usr/include/perfmon.h \
	 /usr/include/perfmon/layout.h /usr/include/perfmon/clock.h \
	 /usr/include/perfmon/stamp.h /usr/include/perfmon/segment.h \
	 /usr/include/perfmon.hpp /usr/include/perfmon/compat/slick/perfmon.hpp \
	 /usr/share/pkgconfig/perfmon.pc /usr/share/pkgconfig/perfmon-slick.pc \
	 /usr/lib/sysusers.d/perfmond.conf \
	 /etc/logrotate.d/perfmond /etc/perfmond/example.conf \
	 /usr/share/man/man8/perfmond.8.gz /usr/share/man/man5/perfmond.conf.5.gz \
	 /usr/share/man/man1/perfmonctl.1.gz /usr/share/man/man3/perfmon.h.3.gz \
	 /usr/share/man/man3/perfmon.hpp.3.gz; do
	[ -e "$f" ] || bad "$f is not installed"
done
conffiles=$(dpkg-query -W -f='${Conffiles}\n' perfmond | awk 'NF { print $1 }' | sort | tr '\n' ' ')
[ "$conffiles" = "/etc/logrotate.d/perfmond /etc/perfmond/example.conf " ] ||
	bad "conffiles: $conffiles"
getent passwd perfmon >/dev/null && getent group perfmon >/dev/null ||
	die "no perfmon user and group after the install"
[ "$(getent passwd perfmon | cut -d: -f7)" != /bin/sh ] || bad "perfmon has a login shell"
[ "$(systemctl show -p LoadState --value "$svc")" = loaded ] ||
	bad "systemd does not know perfmond@.service: $(systemctl show -p LoadState --value "$svc")"
[ -z "$(systemctl list-units --no-legend --all 'perfmond@*')" ] ||
	bad "an instance was started: $(systemctl list-units --no-legend --all 'perfmond@*')"
[ "$(systemctl is-enabled "$svc" 2>/dev/null)" = disabled ] ||
	bad "perfmond@$inst is $(systemctl is-enabled "$svc" 2>&1), want disabled"
passed "$PERFMOND_VERSION: files, conffiles, perfmon user (there before: $had_user), unit known, nothing started"

# ---- documentation, and what the unit's comment names ---------------------
step docs
doc=/usr/share/doc/perfmond
# Large documents are compressed (Debian policy), small ones not.
for f in "$top_srcdir"/docs/*.md; do
	[ -f "$doc/${f##*/}" ] || [ -f "$doc/${f##*/}.gz" ] || bad "docs/${f##*/} is not in $doc"
done
# Used where they lie, so never compressed.
for f in "$top_srcdir"/docs/grafana/*.json "$top_srcdir"/docs/prometheus/*.yml; do
	rel=${f#"$top_srcdir"/docs/}
	[ -f "$doc/$rel" ] || bad "$doc/$rel is not installed (as is)"
done
for f in "$top_srcdir"/examples/*.c; do
	[ -f "/usr/share/doc/libperfmon-dev/examples/${f##*/}" ] ||
		bad "examples/${f##*/} is not in /usr/share/doc/libperfmon-dev/examples"
done
if command -v promtool >/dev/null 2>&1; then
	(cd / && promtool test rules "$doc/prometheus/perfmond-rules.test.yml") >"$work/promtool.log" 2>&1 ||
		{ cat "$work/promtool.log"; bad "promtool test rules fails on the installed rules"; }
else
	echo "note: promtool not found: the installed rules are not tested"
fi
# The comment opening the unit: every path it names, but those of its
# example instance (trading), which the reader makes.
unit=/lib/systemd/system/perfmond@.service
sed -n '/^\[Unit\]/q; s/^#//p' "$unit" | grep -oE '(^|[ (])/[^ ()]*' |
	sed -e 's/^[ (]//' -e 's/[.,;:]*$//' | grep -v trading >"$work/named" || :
for want in $doc/ $doc/prometheus/ $doc/grafana/ /usr/share/doc/libperfmon-dev/examples/; do
	grep -qx "$want" "$work/named" || bad "the unit's comment does not name $want"
done
while IFS= read -r p; do
	[ -e "$p" ] || bad "the unit's comment names $p, which does not exist"
done <"$work/named"
passed "every docs/*.md in $doc, dashboard and rules as is, examples in libperfmon-dev's;" \
	"the $(wc -l <"$work/named") paths of the unit's comment exist"

# ---- a producer against the installed header --------------------------------
step producer
[ "$(pkg-config --modversion perfmon)" = "$PERFMOND_VERSION" ] ||
	bad "pkg-config perfmon: $(pkg-config --modversion perfmon 2>&1)"
cat >"$work/producer.c" <<'C'
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
	/* Point 40: the C++ producers below name points 0-5, 20 and 21. */
	perfmon_name(40, 0, "deb_point");
	for (i = 1; i <= 500; i++) {
		perfmon_begin(40, i);
		perfmon_end(40, i);
	}
	return 0;
}
C
# shellcheck disable=SC2046
header=$(echo '#include <perfmon.h>' | "$CC" $(pkg-config --cflags perfmon) -E -x c - 2>&1 |
	sed -n 's/^# [0-9]* "\(.*perfmon\.h\)".*/\1/p' | head -n 1)
[ "$header" = /usr/include/perfmon.h ] || bad "<perfmon.h> resolves to '$header'"
# shellcheck disable=SC2046
"$CC" -std=c11 -O2 $(pkg-config --cflags perfmon) -o "$work/producer" "$work/producer.c" \
	$(pkg-config --libs perfmon) || die "cannot build a producer against the installed header"
chmod 755 "$work/producer"
# C++: the perfmon.hpp(3) example, and slick-perfmon source through
# perfmon-slick.pc; nothing of the source tree's include directory.
zcat /usr/share/man/man3/perfmon.hpp.3.gz | sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' |
	sed -n '/^\.Bd -literal/,/^\.Ed/p' |
	sed -e '1d' -e '$d' -e 's/\\e/\\/g' -e 's/\\&//g' >"$work/handler.cpp"
grep -q 'perfmon::attach' "$work/handler.cpp" || bad "no example program in perfmon.hpp(3)"
# shellcheck disable=SC2046
"$CXX" -std=c++17 -Wall -Wextra -Werror -O2 $(pkg-config --cflags perfmon) \
	-o "$work/handler" "$work/handler.cpp" ||
	bad "the perfmon.hpp(3) example does not build against the installed header"
case " $(pkg-config --cflags perfmon-slick) " in
*" -I/usr/include/perfmon/compat "*) ;;
*) bad "pkg-config --cflags perfmon-slick: '$(pkg-config --cflags perfmon-slick 2>&1)'" ;;
esac
# shellcheck disable=SC2046
"$CXX" -std=c++20 -Wall -Wextra -Werror -O2 $(pkg-config --cflags perfmon-slick) -pthread \
	-o "$work/slick_usage" "$top_srcdir/tests/tools/slick_usage.cc" $(pkg-config --libs perfmon-slick) ||
	bad "slick-perfmon source does not build with pkg-config perfmon-slick"
passed "C ($header), C++ (perfmon.hpp(3) example) and slick-perfmon producers build with pkg-config"

# ---- perfmond@demo ----------------------------------------------------------
step run
sed -e 's/^;flush_interval = .*/flush_interval = 200ms/' /etc/perfmond/example.conf \
	>/etc/perfmond/$inst.conf
systemctl start "$svc" || die "systemctl start $svc failed"
[ "$(systemctl show -p ActiveState --value "$svc")" = active ] || die "$svc is not active"
# The producer as a unit, the way producers are meant to run beside it.
prod=perfmond-deb-producer.service
cat >/run/systemd/system/$prod <<EOF
[Unit]
Wants=$svc
After=$svc

[Service]
Type=oneshot
User=nobody
SupplementaryGroups=perfmon
Environment=SLICK_PERFMON_SHM=$inst
ExecStart=$work/producer
EOF
systemctl daemon-reload
systemctl start $prod || bad "the producer (nobody, group perfmon) failed"
csv=/var/log/perfmond/$inst/$inst.csv
# count POINT STAGE: samples over every interval row
count() { awk -F, -v p="$1" -v s="$2" '$2 == p && $3 == s { n += $5 } END { print n + 0 }' \
	"$csv" 2>/dev/null || echo 0; }
deadline_in 20
until [ "$(count deb_point total)" -ge 500 ]; do
	expired && die "the producer's spans did not reach $csv (got $(count deb_point total))"
	sleep 0.1
done
# The C++ producers, as root (the C one showed the group's way in).
if [ -x "$work/handler" ]; then
	"$work/handler" $inst 2>"$work/handler.err" && ! [ -s "$work/handler.err" ] ||
		{ cat "$work/handler.err"; bad "the perfmon.hpp(3) example did not stamp into $inst"; }
fi
if [ -x "$work/slick_usage" ]; then
	"$work/slick_usage" $inst >/dev/null 2>"$work/slick.err" ||
		{ cat "$work/slick.err"; bad "the slick-perfmon producer failed"; }
fi
deadline_in 20
until { ! [ -x "$work/handler" ] || [ "$(count request total)" -ge 1000 ]; } &&
      { ! [ -x "$work/slick_usage" ] || [ "$(count order_path total)" -ge 1000 ]; }; do
	if expired; then
		bad "the C++ producers' spans did not all reach $csv" \
			"(request: $(count request total) of 1000, order_path: $(count order_path total) of 1000)"
		break
	fi
	sleep 0.1
done
[ "$(count deb_point total)" = 500 ] || bad "deb_point total: $(count deb_point total) spans, want 500"
perfmonctl status $inst >"$work/status" 2>&1 || bad "perfmonctl status $inst: $(cat "$work/status")"
passed "perfmond@$inst ran as $(stat -c %U "/dev/shm/$inst"); in $csv the C producer's 500 spans," \
	"the C++ ones' $(count request total) + $(count order_path total)"

# ---- remove -----------------------------------------------------------------
step remove
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq perfmond libperfmon-dev >"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log"; die "apt-get remove failed"; }
[ "$(systemctl show -p ActiveState --value "$svc")" != active ] || bad "remove left $svc running"
[ ! -e /usr/sbin/perfmond ] && [ ! -e /usr/include/perfmon.h ] || bad "remove left the programs"
[ "$(systemctl show -p LoadState --value "$svc")" = not-found ] ||
	bad "systemd still knows perfmond@.service after remove"
for f in /etc/perfmond/example.conf /etc/logrotate.d/perfmond /etc/perfmond/$inst.conf "$csv"; do
	[ -e "$f" ] || bad "remove deleted $f"
done
dpkg-query -W -f='${db:Status-Abbrev}' perfmond | grep -q '^rc' ||
	bad "perfmond is '$(dpkg-query -W -f='${db:Status-Abbrev}' perfmond)' after remove, want rc"
[ -e "/dev/shm/$inst" ] || bad "the ring went with the package"
passed "stopped, programs gone; configuration, logs and the ring kept"

# ---- purge ------------------------------------------------------------------
step purge
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq perfmond libperfmon-dev >"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log"; die "apt-get purge failed"; }
for f in /etc/perfmond/example.conf /etc/logrotate.d/perfmond /var/log/perfmond /var/lib/perfmond; do
	[ ! -e "$f" ] || bad "purge left $f"
done
[ -e /etc/perfmond/$inst.conf ] || bad "purge deleted the administrator's /etc/perfmond/$inst.conf"
for p in perfmond libperfmon-dev; do
	! installed $p && ! dpkg-query -W -f='${db:Status-Abbrev}' $p 2>/dev/null | grep -q '^.[^n]' ||
		bad "$p is '$(dpkg-query -W -f='${db:Status-Abbrev}' $p)' after purge"
done
getent passwd perfmon >/dev/null || bad "purge removed the perfmon user"
left=$(dpkg-query -S perfmond 2>/dev/null | grep -v '^diversion' || :)
[ -z "$left" ] || bad "dpkg still lists files of perfmond: $left"
passed "conffiles, logs and state gone; $inst.conf (not a conffile) and the perfmon user kept"
exit $fail
