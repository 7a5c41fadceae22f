#!/bin/sh
# install.sh - what `make install` delivers, used the way an operator and a
# producer's author would use it, all inside a scratch DESTDIR:
#   - every file lands (daemon, header, perfmon.pc, unit, sysusers entry,
#     example config, logrotate file, man pages and their links), and the
#     installed unit runs the installed daemon on the installed config dir;
#   - example.conf documents every key with its real default: uncommenting
#     all of it changes no value, and no key is missing;
#   - the example of the installed perfmon.h(3) builds against the installed
#     header through the installed perfmon.pc (relocated into DESTDIR), and
#     perfmon.pc asks for nothing at link time; likewise the C++ example of
#     perfmon.hpp(3), and a program written against slick-perfmon's API
#     (tests/tools/slick_usage.cc) through perfmon-slick.pc, whose compatibility
#     directory is installed apart from the real include directory;
#   - the installed daemon, run on the installed example config adjusted to
#     a temporary directory, records exactly what those producers stamped;
#   - `make uninstall` leaves no file behind.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}" "${CXX:=c++}" "${MAKE:=make}"
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
if ! command -v "$PKG_CONFIG" > /dev/null 2>&1; then
	echo "SKIP: pkg-config not found (Debian package pkgconf)"
	exit 77
fi
tmp=$(mktemp -d)
dest=$tmp/dest
name=pm-inst-$$
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	# the segments, and the lock, socket and state file in the run directory
	"$top_builddir/tests/tools/segtool" remove "$name" >/dev/null 2>&1 ||
		rm -f "/dev/shm/$name" "/dev/shm/$name.meta"
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
nbad=0
bad() { echo "FAIL: $*"; fail=1; nbad=$((nbad + 1)); }
die() { echo "FAIL: $*"; exit 1; }

# The surrounding make's jobserver and flags are not ours to use.
submake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" -C "$top_builddir" "$@"
}
submake install DESTDIR="$dest" > "$tmp/install.log" 2>&1 ||
	{ tail -n 30 "$tmp/install.log"; die "make install DESTDIR=... failed"; }

# ---- what was installed ------------------------------------------------------
find_one() {    # find_one NAME PATH-PATTERN: the one installed file
	found=$(find "$dest" \( -type f -o -type l \) -name "$1" -path "$2")
	[ "$(printf '%s\n' "$found" | grep -c .)" -eq 1 ] || return 1
	printf '%s\n' "$found"
}
daemon=$(find_one perfmond '*/sbin/perfmond') || die "perfmond not installed in an sbin directory"
header=$(find_one perfmon.h '*/include/perfmon.h') || die "perfmon.h not installed"
pc=$(find_one perfmon.pc '*/pkgconfig/perfmon.pc') || die "perfmon.pc not installed"
hpp=$(find_one perfmon.hpp '*/include/perfmon.hpp') || die "perfmon.hpp not installed"
[ "$(dirname "$hpp")" = "$(dirname "$header")" ] || bad "perfmon.hpp is not beside perfmon.h"
find_one perfmon-slick.pc '*/pkgconfig/perfmon-slick.pc' > /dev/null || die "perfmon-slick.pc not installed"
compat=$(dirname "$header")/perfmon/compat
for h in slick/perfmon.hpp slick/perfmon/types.hpp slick/perfmon/collector.hpp; do
	[ -f "$compat/$h" ] || bad "$h not installed under $compat"
done
[ -e "$(dirname "$header")/slick" ] && bad "something installed a slick/ directory into the include directory"
# The pieces <perfmon.h> is built from, beside it: every one in the tree.
for h in "$top_srcdir"/include/perfmon/*.h; do
	[ -f "$(dirname "$header")/perfmon/${h##*/}" ] || bad "perfmon/${h##*/} not installed beside perfmon.h"
done
unit=$(find_one 'perfmond@.service' '*/systemd/system/*') || die "perfmond@.service not installed"
find_one perfmond.conf '*/sysusers.d/*' > /dev/null || bad "sysusers.d/perfmond.conf not installed"
example=$(find_one example.conf '*/perfmond/example.conf') || die "perfmond/example.conf not installed"
find_one perfmond '*/logrotate.d/perfmond' > /dev/null || bad "logrotate.d/perfmond not installed"
for page in man8/perfmond.8 man5/perfmond.conf.5 man1/perfmonctl.1 man3/perfmon.h.3 \
	    man3/perfmon.hpp.3; do
	find_one "${page#*/}" "*/$page" > /dev/null || bad "$page not installed"
done
manpage=$(find_one perfmon.h.3 '*/man3/perfmon.h.3') || die "perfmon.h.3 not installed"
for l in perfmon_attach perfmon_begin perfmon_value PERFMON_SCOPE; do
	link=$(dirname "$manpage")/$l.3
	[ -L "$link" ] && [ "$(readlink "$link")" = perfmon.h.3 ] || bad "$l.3 is not a link to perfmon.h.3"
done
[ -x "$top_builddir/src/perfmonctl" ] && { find_one perfmonctl '*/bin/perfmonctl' > /dev/null ||
	bad "perfmonctl is built but not installed"; }
echo "ok: daemon, headers, perfmon.pc, perfmon-slick.pc, unit, sysusers, example config, logrotate, man pages installed"

# Documentation under the package's doc directory, the examples in theirs
# (the doc directory's examples/ unless configured otherwise), and the
# unit's comment names only what is there.
nbad_before=$nbad
docdir=
examples=
ops=$(find_one operations.md '*/doc/perfmond/operations.md') || bad "docs/operations.md not installed in doc/perfmond"
if [ -n "${ops:-}" ]; then
	docdir=$(dirname "$ops")
	for f in README.md prometheus/perfmond-alerts.yml prometheus/perfmond-recording.yml \
		prometheus/perfmond-rules.test.yml grafana/perfmond.json; do
		[ -f "$docdir/$f" ] || bad "$f not installed under ${docdir#"$dest"}"
	done
	# Every document of the source tree: the man pages send readers to them.
	for f in "$top_srcdir"/docs/*.md; do
		[ -f "$docdir/${f##*/}" ] || bad "docs/${f##*/} not installed under ${docdir#"$dest"}"
	done
fi
examples=$(find_one pipeline.c '*/examples/pipeline.c') && examples=$(dirname "$examples") ||
	bad "examples/pipeline.c not installed in an examples directory"
for f in "$top_srcdir"/examples/*.c; do
	[ -z "$examples" ] || [ -f "$examples/${f##*/}" ] || bad "examples/${f##*/} not installed in ${examples#"$dest"}"
done
# The paths of the comment opening the unit, but those of its example
# instance (trading), which the reader makes.
sed -n '/^\[Unit\]/q; s/^#//p' "$unit" | grep -oE '(^|[ (])/[^ ()]*' |
	sed -e 's/^[ (]//' -e 's/[.,;:]*$//' | grep -v trading > "$tmp/named" || :
for want in ${docdir:+"${docdir#"$dest"}"} ${examples:+"${examples#"$dest"}"}; do
	grep -qx "$want/\{0,1\}" "$tmp/named" || bad "the unit's comment does not name $want/"
done
while IFS= read -r p; do
	[ -e "$dest$p" ] || bad "the unit's comment names $p, which is not installed"
done < "$tmp/named"
[ $nbad = $nbad_before ] && echo "ok: every docs/*.md and the Prometheus rules under ${docdir#"$dest"}," \
	"the examples in ${examples#"$dest"}; the unit's comment names $(wc -l < "$tmp/named") installed paths"
grep -q "^\.Os perfmond [0-9]" "$manpage" || bad "installed perfmon.h.3 has no version in its .Os"

# The unit runs what was installed, on the directory example.conf went to.
sbin=$(dirname "${daemon#"$dest"}")
confdir=$(dirname "${example#"$dest"}")
grep -q "^ExecStart=$sbin/perfmond --instance=%i $confdir/%i.conf\$" "$unit" &&
	echo "ok: the unit runs $sbin/perfmond on $confdir/%i.conf" ||
	bad "the installed unit does not run $sbin/perfmond on $confdir/%i.conf: $(grep '^ExecStart=' "$unit")"

# ---- example.conf: every key, with its real default ----------------------------
# With the instance and log directory the unit gives, the example's paths are
# exactly the defaults; uncommenting everything must change nothing.
check() {       # check FILE: the effective values, without their origins
	LOGS_DIRECTORY=/var/log/perfmond/trading "$daemon" --instance=trading --check-config "$1" \
		2> "$tmp/check.err" | sed -e '/^;/d' -e 's/[[:space:]]*; from .*//'
}
# Keys are ";key = ...", followed by any continuation lines ";    ...".
awk '/^;[a-z_]+ =/ { sub(/^;/, ""); cont = 1; print; next }
     cont && /^;    / { sub(/^;/, ""); print; next }
     { cont = 0; print }' "$example" > "$tmp/uncommented.conf"
check "$example" > "$tmp/as-shipped" || { cat "$tmp/check.err"; bad "the installed example.conf is refused"; }
check "$tmp/uncommented.conf" > "$tmp/uncommented" ||
	{ cat "$tmp/check.err"; bad "example.conf with every key uncommented is refused"; }
if ! cmp -s "$tmp/as-shipped" "$tmp/uncommented"; then
	diff "$tmp/as-shipped" "$tmp/uncommented"
	bad "a value shown in example.conf is not the default"
fi
keys=$(sed -n 's/^\([a-z_]*\) =.*/\1/p' "$tmp/as-shipped")
for k in $keys; do
	grep -q "^;$k = \|^;$k =\$" "$example" || bad "example.conf does not show key $k"
done
[ "$(grep -c '^;[a-z_]* =' "$example")" -eq "$(printf '%s\n' $keys | grep -c .)" ] ||
	bad "example.conf shows a key perfmond does not have"
echo "ok: example.conf shows all $(printf '%s\n' $keys | grep -c .) keys with their defaults"

# ---- a producer built against the installed header ------------------------------
prefix=$(PKG_CONFIG_PATH=$(dirname "$pc") "$PKG_CONFIG" --variable=prefix perfmon) ||
	die "pkg-config cannot read the installed perfmon.pc"
pkgm() {        # pkgm MODULE ARGS...
	m=$1; shift
	PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR= \
		"$PKG_CONFIG" --define-variable=prefix="$dest$prefix" "$@" "$m"
}
pkg() { pkgm perfmon "$@"; }
cflags=$(pkg --cflags) || die "pkg-config --cflags perfmon failed"
libs=$(pkg --libs) || die "pkg-config --libs perfmon failed"
[ -z "$(echo $libs)" ] || bad "perfmon.pc asks for link flags: $libs"
case " $cflags " in
*" -I$(dirname "$header") "*) echo "ok: pkg-config --cflags perfmon gives $cflags" ;;
*) bad "pkg-config --cflags perfmon gives '$cflags', not -I$(dirname "$header")" ;;
esac
# The producer is the example of the installed perfmon.h(3).
sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$manpage" | sed -n '/^\.Bd -literal/,/^\.Ed/p' |
	sed -e '1d' -e '$d' -e 's/\\e/\\/g' -e 's/\\&//g' > "$tmp/orders.c"
grep -q 'perfmon_attach' "$tmp/orders.c" || die "no example program in perfmon.h.3"
# No -I of the source tree: only what pkg-config says.
"$CC" -std=c11 -Wall -Wextra -Werror -O2 $cflags -o "$tmp/orders" "$tmp/orders.c" ||
	die "the perfmon.h(3) example does not build against the installed header"
echo "ok: the perfmon.h(3) example builds with \$(pkg-config --cflags perfmon)"
# A reader of the segments includes the layout alone.
printf '#include <perfmon/layout.h>\nint main(void) { return PERFMON_RING_SLOTS_OFFSET(1) != 384; }\n' \
	> "$tmp/reader.c"
"$CC" -std=c99 -pedantic -Wall -Wextra -Werror $cflags -o "$tmp/reader" "$tmp/reader.c" &&
	"$tmp/reader" && echo "ok: <perfmon/layout.h> alone builds with \$(pkg-config --cflags perfmon)" ||
	bad "<perfmon/layout.h> alone does not build against the installed headers"

# C++: the perfmon.hpp(3) example, and slick-perfmon source through perfmon-slick.pc.
sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$(dirname "$manpage")/perfmon.hpp.3" |
	sed -n '/^\.Bd -literal/,/^\.Ed/p' |
	sed -e '1d' -e '$d' -e 's/\\e/\\/g' -e 's/\\&//g' > "$tmp/handler.cpp"
grep -q 'perfmon::attach' "$tmp/handler.cpp" || die "no example program in perfmon.hpp.3"
"$CXX" -std=c++17 -Wall -Wextra -Werror -O2 $cflags -o "$tmp/handler" "$tmp/handler.cpp" ||
	die "the perfmon.hpp(3) example does not build against the installed header"
echo "ok: the perfmon.hpp(3) example builds with \$(pkg-config --cflags perfmon)"
slick_cflags=$(pkgm perfmon-slick --cflags) || die "pkg-config --cflags perfmon-slick failed"
case " $slick_cflags " in
*" -I$compat "*) ;;
*) bad "pkg-config --cflags perfmon-slick gives '$slick_cflags', not -I$compat" ;;
esac
[ -z "$(echo $(pkgm perfmon-slick --libs))" ] || bad "perfmon-slick.pc asks for link flags"
"$CXX" -std=c++20 -Wall -Wextra -Werror -O2 $slick_cflags -pthread -o "$tmp/slick_usage" \
	"$top_srcdir/tests/tools/slick_usage.cc" ||
	die "slick-perfmon source does not build with \$(pkg-config --cflags perfmon-slick)"
"$tmp/slick_usage" --modes > "$tmp/modes.out" 2> "$tmp/modes.err" &&
	grep -q '^local 0$' "$tmp/modes.out" && grep -q 'perfmond@' "$tmp/modes.err" ||
	bad "the slick-perfmon program built on the installed headers does not refuse local mode"
[ -z "${docdir:-}" ] || [ -f "$docdir/migrating-from-slick-perfmon.md" ] ||
	bad "docs/migrating-from-slick-perfmon.md not installed under ${docdir#"$dest"}"
echo "ok: slick-perfmon source builds and runs with \$(pkg-config --cflags perfmon-slick) ($slick_cflags)"

# ---- the installed daemon on the installed example config ------------------------
mkdir -p "$tmp/out"
sed -e "s|^;csv = .*|csv = $tmp/out/orders.csv|" \
    -e "s|^;summary = .*|summary = $tmp/out/orders_summary.txt|" \
    -e "s|^;flush_interval = .*|flush_interval = 100ms|" \
    "$example" > "$tmp/orders.conf"
"$daemon" --instance="$name" "$tmp/orders.conf" 2> "$tmp/daemon.log" &
dpid=$!
deadline=$(( $(date +%s) + 30 ))
until [ -e "/dev/shm/$name.meta" ] && [ -f "$tmp/out/orders.csv" ]; do
	kill -0 "$dpid" 2>/dev/null || { cat "$tmp/daemon.log"; die "the installed daemon exited"; }
	[ "$(date +%s)" -lt "$deadline" ] || die "the installed daemon did not start"
	sleep 0.05
done
"$tmp/orders" "$name" 2> "$tmp/orders.err" || { cat "$tmp/orders.err"; die "the producer failed"; }
[ -s "$tmp/orders.err" ] && { cat "$tmp/orders.err"; bad "the producer did not attach"; }
"$tmp/handler" "$name" 2> "$tmp/handler.err" || { cat "$tmp/handler.err"; die "the C++ producer failed"; }
[ -s "$tmp/handler.err" ] && { cat "$tmp/handler.err"; bad "the C++ producer did not attach"; }
total() {       # total POINT STAGE: count over every interval row
	awk -F, -v p="$1" -v s="$2" '$2 == p && $3 == s { n += $5 } END { print n + 0 }' "$tmp/out/orders.csv"
}
until [ "$(total order total)" -ge 1000 ] && [ "$(total queue_depth value)" -ge 1000 ] &&
      [ "$(total request total)" -ge 1000 ] && [ "$(total backlog value)" -ge 1000 ]; do
	kill -0 "$dpid" 2>/dev/null || { cat "$tmp/daemon.log"; die "the installed daemon exited"; }
	[ "$(date +%s)" -lt "$deadline" ] || { cat "$tmp/out/orders.csv"; die "the producer's rows did not arrive"; }
	sleep 0.05
done
kill -TERM "$dpid"
wait "$dpid"
rc=$?
dpid=
[ $rc -eq 0 ] || { cat "$tmp/daemon.log"; bad "the installed daemon exited $rc on SIGTERM"; }
for row in "order decode" "order check" "order send" "order total" "check_call total" \
	   "queue_depth value"; do
	n=$(total $row)
	[ "$n" -eq 1000 ] || bad "row '$row': $n samples, expected 1000"
done
# The C++ example: every 50th request throws before its steps.
for row in "request parse 980" "request handle 980" "request step_2->255 980" \
	   "request total 1000" "backlog value 1000"; do
	set -- $row
	n=$(total "$1" "$2")
	[ "$n" -eq "$3" ] || bad "row '$1 $2': $n samples, expected $3"
done
grep -q '^order  *total ' "$tmp/out/orders_summary.txt" || bad "no order/total line in the summary"
echo "ok: the installed daemon recorded every span and value of the producer"

# ---- uninstall -----------------------------------------------------------------
submake uninstall DESTDIR="$dest" > "$tmp/uninstall.log" 2>&1 ||
	{ tail -n 30 "$tmp/uninstall.log"; die "make uninstall DESTDIR=... failed"; }
left=$(find "$dest" \( -type f -o -type l \) | sed "s|^$dest||")
if [ -n "$left" ]; then
	printf '%s\n' "$left"
	bad "make uninstall left files behind"
else
	echo "ok: make uninstall removed everything"
fi
exit $fail
