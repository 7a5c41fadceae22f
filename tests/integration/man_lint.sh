#!/bin/sh
# man_lint.sh - the man pages: lint-clean, renderable, and in step with the
# code they document.
#   - `mandoc -Tlint -Wwarning` and `groff -mandoc -ww -z` print nothing;
#   - `man --warnings -l` renders each page with its NAME, silently;
#   - `lexgrog` can read each NAME section (whatis/apropos);
#   - no macro lands in the text: a macro written in the middle of a line
#     (".Fn f ..It Ev X") is only an argument, printed as it stands, and
#     lint says nothing; the sources have no "..Xx", and no rendering shows
#     a macro name with its dot;
#   - every option of `perfmond --help` is in perfmond(8), every config key
#     of `perfmond --check-config` in perfmond.conf(5), every command and
#     option of `perfmonctl --help` (once it is built) in perfmonctl(1), and
#     every perfmon_* call of <perfmon.h> in perfmon.h(3), every function
#     and class of <perfmon.hpp> in perfmon.hpp(3);
#   - the configuration example of perfmond.conf(5) passes --check-config;
#   - every perfmon page another page refers to exists;
#   - the pages make installs (mangen/) carry the project and its version
#     in the footer, and no renderer heads them "BSD ... Manual".
# A missing tool skips its own checks (with a note); with none of mandoc,
# groff and man the test is skipped.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
MANDOC=${MANDOC:-}
GROFF=${GROFF:-}
MAN=${MAN:-}
usable() { [ -n "$1" ] && [ -x "$1" ]; }
if ! usable "$MANDOC" && ! usable "$GROFF" && ! usable "$MAN"; then
	echo "SKIP: none of mandoc, groff, man found (Debian packages mandoc, groff-base, man-db)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
pages="perfmond.8 perfmond.conf.5 perfmonctl.1 perfmon.h.3 perfmon.hpp.3"
# The mdoc macros (mdoc(7)), as a regular expression.
mdoc_macros='%[A-Z]|A[cdnopqrt]|B[cdfkloqtx]|Br[coq]|C[dm]|D[1bcdlotqvx]|E[cdfkmnorvx]'
mdoc_macros="$mdoc_macros|F[acdlnort]|Hf|Ic|In|It|L[bikp]|M[st]|N[dmosx]|O[copstx]"
mdoc_macros="$mdoc_macros|P[acfopq]|Q[cloq]|R[esv]|S[chmoqstxy]|T[an]|U[dx]|V[at]|X[cor]"

for p in $pages; do
	f=$top_srcdir/man/$p
	[ -f "$f" ] || { bad "man/$p is missing"; continue; }
	if usable "$MANDOC"; then
		out=$("$MANDOC" -Tlint -Wwarning "$f" 2>&1)
		[ $? -eq 0 ] && [ -z "$out" ] && echo "ok: mandoc -Tlint $p" ||
			{ printf '%s\n' "$out"; bad "mandoc -Tlint $p"; }
	fi
	if usable "$GROFF"; then
		out=$("$GROFF" -mandoc -ww -z "$f" 2>&1)
		[ $? -eq 0 ] && [ -z "$out" ] && echo "ok: groff -ww $p" ||
			{ printf '%s\n' "$out"; bad "groff -ww $p"; }
	fi
	if usable "$MAN"; then
		LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat MAN_KEEP_FORMATTING= \
			"$MAN" --warnings -E UTF-8 -l "$f" > "$tmp/out" 2> "$tmp/err"
		rc=$?
		if [ $rc -ne 0 ] || [ -s "$tmp/err" ] || ! grep -q '^NAME' "$tmp/out"; then
			cat "$tmp/err"
			bad "man -l $p: rc=$rc, warnings above or no NAME section"
		else
			echo "ok: man -l $p renders ($(wc -l < "$tmp/out") lines)"
		fi
	fi
	if command -v lexgrog >/dev/null 2>&1; then
		lexgrog "$f" > /dev/null 2>&1 || bad "lexgrog cannot parse the NAME section of $p"
	fi
	# A macro as text: "..Xx" in the source (a sentence's full stop run
	# into the next macro), or ".Xx" in the rendered page.
	if grep -n '\.\.[A-Z][a-z]' "$f" > "$tmp/dots"; then
		cat "$tmp/dots"
		bad "$p: a macro run into the previous line's text (\"..Xx\" above)"
	fi
	rendered=
	if usable "$MANDOC"; then
		"$MANDOC" -Tutf8 "$f" 2>/dev/null | sed 's/.\x08//g' > "$tmp/text" && rendered=mandoc
	elif usable "$GROFF"; then
		"$GROFF" -mandoc -Tutf8 "$f" 2>/dev/null | sed 's/.\x08//g' > "$tmp/text" && rendered=groff
	fi
	if [ -n "$rendered" ]; then
		if grep -n -E "(^|[^A-Za-z0-9_])\.($mdoc_macros)([^A-Za-z0-9_]|\$)" "$tmp/text" > "$tmp/macros"; then
			cat "$tmp/macros"
			bad "$p: $rendered shows a macro name as text (above)"
		else
			echo "ok: no macro name in the text of $p ($rendered)"
		fi
	fi
done

# Whether page $2 has a tagged-list entry for long option $1:
# ".It Fl \-name ..." or ".It Fl x , Fl \-name ...".
documented() {
	grep -q "^\.It .*Fl \\\\-${1#--}\( \|\$\)" "$2"
}

# ---- perfmond: options and keys --------------------------------------------
daemon=$top_builddir/src/perfmond
if [ -x "$daemon" ]; then
	"$daemon" --help | grep -o -- '--[a-z][a-z-]*' | sort -u > "$tmp/opts"
	[ -s "$tmp/opts" ] || bad "perfmond --help lists no options"
	while IFS= read -r opt; do
		documented "$opt" "$top_srcdir/man/perfmond.8" ||
			bad "perfmond.8 has no entry for $opt"
	done < "$tmp/opts"
	echo "ok: perfmond.8 documents all $(wc -l < "$tmp/opts") options of --help"

	"$daemon" --check-config > "$tmp/effective" 2>/dev/null ||
		bad "perfmond --check-config on defaults failed"
	sed -n 's/^\([a-z_]*\) = .*/\1/p' "$tmp/effective" > "$tmp/keys"
	[ "$(wc -l < "$tmp/keys")" -ge 20 ] || bad "too few keys in --check-config output"
	while IFS= read -r key; do
		grep -q "^\.It Cm $key No = " "$top_srcdir/man/perfmond.conf.5" ||
			bad "perfmond.conf.5 does not document key $key"
	done < "$tmp/keys"
	echo "ok: perfmond.conf.5 documents all $(wc -l < "$tmp/keys") keys"

	# The EXAMPLES block of perfmond.conf(5) is a valid file.  What only
	# the target machine can tell (group, CPU) is a warning, not an error.
	sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$top_srcdir/man/perfmond.conf.5" |
		sed -n '/^\.Bd -literal/,/^\.Ed/p' | sed -e '1d' -e '$d' -e 's/\\&//g' \
		> "$tmp/example.conf"
	if ! [ -s "$tmp/example.conf" ]; then
		bad "no example configuration in perfmond.conf.5"
	elif "$daemon" --check-config "$tmp/example.conf" > /dev/null 2> "$tmp/err"; then
		echo "ok: the example of perfmond.conf.5 is a valid configuration"
	else
		cat "$tmp/err"
		bad "the example of perfmond.conf.5 is refused"
	fi
else
	echo "note: $daemon not built: options and keys not compared"
fi

# ---- perfmonctl: commands and options ----------------------------------------
ctl=$top_builddir/src/perfmonctl
if [ -x "$ctl" ]; then
	"$ctl" --help > "$tmp/ctlhelp" 2>&1
	grep -o -- '--[a-z][a-z-]*' "$tmp/ctlhelp" | sort -u > "$tmp/opts"
	while IFS= read -r opt; do
		documented "$opt" "$top_srcdir/man/perfmonctl.1" ||
			bad "perfmonctl.1 has no entry for $opt"
	done < "$tmp/opts"
	for cmd in status names remove summary top report plot compare doctor; do
		grep -q "^\.It Cm $cmd" "$top_srcdir/man/perfmonctl.1" ||
			bad "perfmonctl.1 does not document command $cmd"
		grep -q -w "$cmd" "$tmp/ctlhelp" || bad "perfmonctl --help does not mention $cmd"
	done
	echo "ok: perfmonctl.1 documents the commands and options of --help"
else
	echo "note: $ctl not built: its options not compared"
fi

# ---- perfmon.h: every public call ----------------------------------------------
grep -o 'perfmon_[a-z][a-z_]*(' "$top_srcdir/include/perfmon.h" | tr -d '(' | sort -u > "$tmp/calls"
grep -o 'PERFMON_SCOPE[A-Z_]*(' "$top_srcdir/include/perfmon.h" | tr -d '(' | sort -u >> "$tmp/calls"
[ "$(wc -l < "$tmp/calls")" -ge 10 ] || bad "too few calls found in perfmon.h"
while IFS= read -r call; do
	grep -q "^\.Nm $call\( ,\)\{0,1\}$" "$top_srcdir/man/perfmon.h.3" ||
		bad "perfmon.h.3 does not list $call in NAME"
	grep -q "^\.Fn $call\|^\.Fo $call" "$top_srcdir/man/perfmon.h.3" ||
		bad "perfmon.h.3 has no synopsis for $call"
done < "$tmp/calls"
echo "ok: perfmon.h.3 names and shows all $(wc -l < "$tmp/calls") calls of perfmon.h"
# Every alias link the build installs names a call of the page.
sed -n '/^PERFMON_MAN3_LINKS/,/^$/p' "$top_srcdir/mk/dist.am" | grep -o '[A-Za-z_]*\.3' |
	sed 's/\.3$//' | while IFS= read -r l; do
		grep -q "^\.Nm $l\( ,\)\{0,1\}$" "$top_srcdir/man/perfmon.h.3" ||
			{ echo "FAIL: link $l.3 is not a name of perfmon.h.3"; exit 1; }
	done || fail=1

# ---- perfmon.hpp: every function and class of namespace perfmon ----------------
sed -n '/^namespace perfmon {/,/^} \/\* namespace perfmon/p' "$top_srcdir/include/perfmon.hpp" |
	sed -n 's/^\(PERFMON__CXX_INLINE\|inline\|constexpr\)[^(]* \**\([a-z_]*\)(.*/\2/p; s/^class \([a-z_]*\) {.*/\1/p
		s/^using perfmon__cxx::\([a-z_]*\);.*/\1/p; s/^using \([a-z_]*\) = perfmon__cxx::.*/\1/p' |
	sort -u > "$tmp/cxx"
[ "$(wc -l < "$tmp/cxx")" -ge 12 ] || bad "too few functions found in perfmon.hpp"
while IFS= read -r fn; do
	grep -q "^\.Nm perfmon::$fn\( ,\)\{0,1\}$" "$top_srcdir/man/perfmon.hpp.3" ||
		bad "perfmon.hpp.3 does not list perfmon::$fn in NAME"
	grep -q "^\.Fn perfmon::$fn" "$top_srcdir/man/perfmon.hpp.3" ||
		bad "perfmon.hpp.3 has no synopsis for perfmon::$fn"
done < "$tmp/cxx"
echo "ok: perfmon.hpp.3 names and shows all $(wc -l < "$tmp/cxx") functions and classes of perfmon.hpp"

# ---- cross references ----------------------------------------------------------
for p in $pages; do
	grep -o '^\.Xr perf[a-z._]* [1-9]' "$top_srcdir/man/$p" | while read -r _ name sec; do
		[ -f "$top_srcdir/man/$name.$sec" ] ||
			{ echo "FAIL: $p refers to $name($sec), which does not exist"; exit 1; }
	done || fail=1
done
echo "ok: cross references between the pages resolve"
# The installed copies: "perfmond VERSION" in the footer, no "BSD".
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile" 2>/dev/null)
for p in $pages; do
	g=$top_builddir/mangen/$p
	[ -n "$version" ] && [ -f "$g" ] || continue
	if usable "$MANDOC"; then
		"$MANDOC" -Tascii "$g" > "$tmp/out" 2>&1
		tail -n 1 "$tmp/out" | grep -q "^perfmond $version " &&
			! grep -q BSD "$tmp/out" && echo "ok: mandoc footer of $p: perfmond $version" ||
			{ tail -n 1 "$tmp/out"; bad "mandoc footer of the installed $p"; }
	fi
	if usable "$GROFF"; then
		"$GROFF" -mandoc -Tutf8 "$g" 2>/dev/null | sed 's/.\x08//g' > "$tmp/out"
		grep -q "perfmond $version" "$tmp/out" && ! grep -q BSD "$tmp/out" &&
			echo "ok: groff header and footer of $p" ||
			{ grep -a -m2 'Manual\|perfmond' "$tmp/out"; bad "groff header/footer of the installed $p"; }
	fi
done
exit $fail
