#!/bin/sh
# ctl_plot_width.sh - perfmonctl plot clips and drops nothing at any
# accepted width: a CSV written by the real daemon, with the longest labels
# a producer can publish and a long title, is plotted at the narrowest
# (400), some common and the widest (20000) widths; each SVG is rendered
# with rsvg-convert on a larger canvas and nothing may be drawn outside the
# real one, and every word of the title, the panel headings and the legend
# must be drawn.  A title too long for any heading ends in an ellipsis,
# with a warning.
. "$top_srcdir/tests/integration/daemon_lib.sh"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed"; exit 77; }
RSVG=$(command -v rsvg-convert) || { echo "SKIP: rsvg-convert not found (Debian package librsvg2-bin)"; exit 77; }

long=$(printf 'order_gateway_%.0s' 1 2 3 4 | cut -c1-60)
start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "" --interval 100ms
"$PRODUCER" "$SHM" 3 300 --steps --label "$long" >/dev/null || fail "producer failed"
"$PRODUCER" "$SHM" 4 300 --values --label "queue depth" >/dev/null || fail "producer failed"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "daemon exited $DSTATUS"

title="Latency of the order gateway on the production trading host during last night's \
regression investigation across several interconnected deployments, from $T/out.csv"
# What must be drawn whole: the title, each panel's "point / stage" (the
# long point label heads every panel of its point), the legend.
set -- "$title" "$long / " "queue depth / value" p50 p90 p99 p99.9 max \
	"interval with anomalies or lost events"
for w in 400 401 533 640 800 1200 20000; do
	"$PERFMONCTL" plot "$T/out.csv" -o "$T/p$w.svg" --width "$w" --title "$title" \
		2>"$T/plot.err" || fail "plot --width $w failed"
	[ ! -s "$T/plot.err" ] || fail "--width $w: $(cat "$T/plot.err")"
	python3 "$top_srcdir/tests/integration/plot_overflow.py" "$T/p$w.svg" "$RSVG" "$@" \
		>"$T/check" 2>&1 || fail "--width $w: $(cat "$T/check")"
	ok "--width $w: $(cat "$T/check"), every word drawn"
done
# Beyond what any heading can hold (600 of the widest letter): cut short
# with an ellipsis and a warning, still inside the canvas.
"$PERFMONCTL" plot "$T/out.csv" -o "$T/cut.svg" --width 400 \
	--title "$(printf 'W%.0s' $(seq 1 600))" 2>"$T/plot.err" || fail "plot of a huge title failed"
grep -q 'perfmonctl plot: warning: a heading needs more than .* ends in an ellipsis' \
	"$T/plot.err" || fail "no warning for a title cut short: $(cat "$T/plot.err")"
grep -q 'W…</text>' "$T/cut.svg" || fail "the cut title does not end in an ellipsis"
python3 "$top_srcdir/tests/integration/plot_overflow.py" "$T/cut.svg" "$RSVG" >"$T/check" 2>&1 ||
	fail "cut title: $(cat "$T/check")"
ok "a title beyond any heading ends in an ellipsis, with a warning"
# Without --title the path is the title: a long path still fits.
"$PERFMONCTL" plot "$T/out.csv" -o "$T/path.svg" --width 400 || fail "plot failed"
python3 "$top_srcdir/tests/integration/plot_overflow.py" "$T/path.svg" "$RSVG" >"$T/check" 2>&1 ||
	fail "path title: $(cat "$T/check")"
ok "nothing clipped from 400 to 20000 pixels wide"
