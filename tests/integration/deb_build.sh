#!/bin/sh
# deb_build.sh DIR VERSION - build the Debian packages from DIR, an
# unpacked release tree with its debian/ directory (`make deb` makes it):
# `dpkg-buildpackage -us -uc -b`, then lintian on the .changes, which must
# report no error and no warning.  The packages land in DIR's parent.
#
# The package build runs the test suite (dh_auto_test) unless
# DEB_BUILD_OPTIONS has nocheck, and prints the reason of every test it
# skipped (checked here).  Run as root, the build drops to the user nobody
# (debian/control says Rules-Requires-Root: no): a package build needs no
# privilege, must not change the machine, and the tests that need root
# (new users, mounts, namespaces) or systemd as PID 1 then skip with their
# reason, as on a build daemon; built as root all the same, those that
# would change the machine skip too (debian/rules sets
# PERFMOND_PACKAGE_BUILD).
set -eu
dir=$(cd "$1" && pwd)
want=$2
out=$(dirname "$dir")
for tool in dpkg-buildpackage dpkg-parsechangelog lintian dh; do
	command -v $tool >/dev/null 2>&1 || {
		echo "deb: $tool not found: apt-get install dpkg-dev debhelper lintian" >&2
		exit 1
	}
done
got=$(dpkg-parsechangelog -l "$dir/debian/changelog" -S Version)
if [ "$got" != "$want" ]; then
	echo "deb: debian/changelog is at version $got, configure.ac at $want:" \
		"add a changelog entry (dch -v $want)" >&2
	exit 1
fi

opts="parallel=$(nproc)${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}"
start=$(date +%s)
build() {
	if [ "$(id -u)" = 0 ]; then
		echo "deb: building as user nobody (no root needed, nor wanted, in a package build)"
		work=$out
		# A tree below a directory closed to nobody (a private temporary
		# directory, say) is built in a copy nobody can reach, and the
		# results are brought back.
		if ! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$dir"; then
			work=$(mktemp -d "${TMPDIR:-/tmp}/perfmond-deb.XXXXXX")
			chmod 0755 "$work"
			cp -a "$dir" "$work/"
			echo "deb: $out is closed to nobody: building in $work"
		fi
		mkdir -p "$work/home"
		chown -R nobody:nogroup "$work"
		rc=0
		(cd "$work/${dir##*/}" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
			env HOME="$work/home" DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -us -uc -b) ||
			rc=$?
		if [ "$work" != "$out" ]; then
			[ "$rc" != 0 ] || cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/ ||
				rc=$?
			rm -rf "$work"
		fi
		return "$rc"
	else
		(cd "$dir" && env DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -us -uc -b)
	fi
}
{ build 2>&1 || echo "deb: dpkg-buildpackage failed (exit $?)"; } | tee "$out/build.log"
grep -q '^deb: dpkg-buildpackage failed' "$out/build.log" && exit 1
echo "deb: dpkg-buildpackage took $(($(date +%s) - start)) s (DEB_BUILD_OPTIONS=$opts)"
# Every test the package build skipped is named with its reason.
if ! printf '%s\n' "$opts" | grep -qw nocheck; then
	grep -q '^# TOTAL: ' "$out/build.log" || { echo "deb: the test suite did not run" >&2; exit 1; }
	for t in $(sed -n 's/^SKIP: \([^ ]*\)$/\1/p' "$out/build.log" | sed 's/ .*//'); do
		grep "^skipped: ${t%.*}: ..*" "$out/build.log" | grep -qv ': no reason given in ' || {
			echo "deb: the build log gives no reason for skipping $t" >&2
			exit 1
		}
	done
	echo "deb: $(grep -c '^skipped: ' "$out/build.log") skipped test(s), each with its reason"
fi

changes=$(ls "$out"/perfmond_"$want"_*.changes)
status=0
lintian --fail-on error,warning "$changes" >"$out/lintian.raw" 2>&1 || status=$?
# lintian warns when run as root; that is about lintian, not the packages.
grep -v '^running with root privileges' "$out/lintian.raw" >"$out/lintian.txt" || :
cat "$out/lintian.txt"
if [ "$status" != 0 ] || [ -s "$out/lintian.txt" ]; then
	echo "deb: lintian is not clean (above)" >&2
	exit 1
fi
echo "deb: lintian: clean"
ls -l "$out"/*.deb
