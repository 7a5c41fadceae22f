/*
 * check_ctl_plot.c - `perfmonctl plot`: the SVG is well-formed XML (checked
 * here by a small parser, and by xmllint when it is installed), has one
 * panel per stage with exactly one line per series, a legend naming every
 * series, breaks lines across gaps, marks anomalies, thins huge files to
 * the pixel width, escapes hostile labels, and is written atomically.
 */
#include "build-config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_plot.h"

static const char *data(const char *name)
{
	static char p[4][4096];
	static unsigned slot;
	const char *top = getenv("top_srcdir");
	slot = (slot + 1) % 4;
	snprintf(p[slot], sizeof(p[slot]), "%s/tests/data/ctl/%s", top ? top : "..", name);
	return p[slot];
}

static char *plot_to_string(const char *csv, const struct ctl_plot_opts *o, int *ret)
{
	char *buf = NULL, err[1024];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*ret = ctl_plot_file(csv, o, f, err, sizeof(err));
	fclose(f);
	return buf;
}

/* ---- a small XML well-formedness checker ------------------------------ */

static bool valid_entity(const char **p)
{
	static const char *const ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	for (unsigned i = 0; i < 5; i++)
		if (!strncmp(*p, ents[i], strlen(ents[i]))) {
			*p += strlen(ents[i]);
			return true;
		}
	return false;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

/* Returns NULL when well-formed, else what is wrong. */
static const char *xml_check(const char *s)
{
	char stack[64][32];
	int depth = 0, roots = 0;
	const char *p = s;

	if (strncmp(p, "<?xml ", 6))
		return "no XML declaration";
	p = strstr(p, "?>");
	if (!p)
		return "unterminated declaration";
	p += 2;
	while (*p) {
		if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r')
			return "control character";
		if (*p == '&') {
			if (!valid_entity(&p))
				return "bad entity";
			continue;
		}
		if (*p == '>')
			return "stray >";
		if (*p != '<') {
			if (depth == 0 && *p != '\n' && *p != ' ')
				return "text outside the root";
			p++;
			continue;
		}
		p++;
		if (*p == '/') {
			size_t n = 0;
			p++;
			while (name_char(p[n]))
				n++;
			if (depth == 0 || strlen(stack[depth - 1]) != n ||
			    strncmp(stack[depth - 1], p, n))
				return "mismatched end tag";
			depth--;
			p += n;
			if (*p != '>')
				return "bad end tag";
			p++;
			continue;
		}
		{
			size_t n = 0;
			while (name_char(p[n]))
				n++;
			if (n == 0 || n >= 32)
				return "bad tag name";
			if (depth == 0 && ++roots > 1)
				return "two roots";
			if (depth == 64)
				return "too deep";
			snprintf(stack[depth], 32, "%.*s", (int)n, p);
			p += n;
			/* attributes: name="value" */
			for (;;) {
				while (*p == ' ' || *p == '\n')
					p++;
				if (*p == '/' && p[1] == '>') {
					p += 2;
					break;
				}
				if (*p == '>') {
					p++;
					depth++;
					break;
				}
				n = 0;
				while (name_char(p[n]))
					n++;
				if (n == 0 || p[n] != '=' || p[n + 1] != '"')
					return "bad attribute";
				p += n + 2;
				while (*p && *p != '"') {
					if (*p == '<')
						return "< in attribute";
					if (*p == '&' && !valid_entity(&p))
						return "bad entity in attribute";
					else if (*p != '&')
						p++;
				}
				if (!*p)
					return "unterminated attribute";
				p++;
			}
		}
	}
	return depth ? "unclosed element" : roots == 1 ? NULL : "no root";
}

static unsigned count(const char *s, const char *needle)
{
	unsigned n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* xmllint, when installed, must agree. */
static void xmllint_agrees(const char *svg)
{
	char path[] = "/tmp/ctl-plot-XXXXXX";
	char cmd[256];
	int fd;

	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		return;
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, svg, strlen(svg)), (ssize_t)strlen(svg));
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	ck_assert_int_eq(system(cmd), 0);
	unlink(path);
}

/* A file with a gap (stage b), anomalies and many intervals. */
static void write_series(const char *path, unsigned n)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
	      "out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,"
	      "tsc_hz\n", f);
	for (unsigned i = 0; i < n; i++) {
		unsigned s = 1 + i, h = s / 3600, m = s / 60 % 60, sec = s % 60;
		double v = 1000 + (i % 17) * 10;
		fprintf(f, "2024-05-01 %02u:%02u:%02u.000,a,total,latency,100,0,%u,0,0,0,0,"
			"%.0f,%.0f,1,%.0f,%.0f,%.0f,%.0f,%.0f,3e9\n", h, m, sec,
			i == 5 || i == 9 ? 1u : 0u, v / 2, v, v, v * 2, v * 4, v * 8, v * 20);
		if (i < n / 3 || i > n / 2)
			fprintf(f, "2024-05-01 %02u:%02u:%02u.000,b,step_1->2,latency,50,0,0,0,0,0,0,"
				"10,20,1,20,30,40,50,60,3e9\n", h, m, sec);
	}
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_well_formed_with_series)
{
	struct ctl_plot_opts o = { 960, NULL, NULL };
	char *svg;
	int e;

	svg = plot_to_string(data("quoted.csv"), &o, &e);
	ck_assert_int_eq(e, 0);
	ck_assert_msg(xml_check(svg) == NULL, "%s", xml_check(svg));
	xmllint_agrees(svg);
	ck_assert(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	/* self-contained: nothing fetched, nothing run */
	ck_assert_ptr_null(strstr(svg, "<script"));
	ck_assert_ptr_null(strstr(svg, "href"));
	ck_assert_ptr_null(strstr(svg, "@import"));
	/* three stages, each with one line per series (4 percentiles + max) */
	ck_assert_uint_eq(count(svg, "<g class=\"panel\">"), 3);
	ck_assert_uint_eq(count(svg, "class=\"series "), 15);
	ck_assert_uint_eq(count(svg, "class=\"series p50\""), 3);
	ck_assert_uint_eq(count(svg, "class=\"series p99.9\""), 3);
	ck_assert_uint_eq(count(svg, "class=\"series max\""), 3);
	/* legend names every series */
	ck_assert(strstr(svg, ">p50</text>") && strstr(svg, ">p90</text>") &&
		  strstr(svg, ">p99</text>") && strstr(svg, ">p99.9</text>") &&
		  strstr(svg, ">max</text>"));
	/* labels escaped; the y axis says what it shows */
	ck_assert_ptr_nonnull(strstr(svg, "gw, primary / say &quot;hi&quot;"));
	ck_assert_ptr_nonnull(strstr(svg, "latency (log scale)"));
	ck_assert_ptr_nonnull(strstr(svg, "value (linear)"));
	ck_assert_ptr_nonnull(strstr(svg, "time (UTC)"));
	/* the anomaly row of quoted.csv is marked */
	ck_assert_uint_eq(count(svg, "class=\"anomaly\""), 1);
	free(svg);
}
END_TEST

START_TEST(test_gaps_marks_and_thinning)
{
	char path[] = "/tmp/ctl-plot-XXXXXX";
	struct ctl_plot_opts o = { 600, "thinned", NULL };
	char *svg, *b_line, *a_line;
	int fd, e;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	write_series(path, 5000);
	svg = plot_to_string(path, &o, &e);
	unlink(path);
	ck_assert_int_eq(e, 0);
	ck_assert_msg(xml_check(svg) == NULL, "%s", xml_check(svg));
	ck_assert_uint_eq(count(svg, "<g class=\"panel\">"), 2);
	ck_assert_uint_eq(count(svg, "class=\"anomaly\""), 2);
	ck_assert_ptr_nonnull(strstr(svg, ">thinned</text>"));

	/* stage a has no gap: one subpath; no more points than pixel columns */
	a_line = strstr(svg, "class=\"series p50\"");
	ck_assert_ptr_nonnull(a_line);
	{
		char *end = strchr(a_line, '>');
		*end = '\0';
		ck_assert_uint_eq(count(a_line, " M"), 1);
		ck_assert_uint_le(count(a_line, " L"), 600 - 80 - 28);
		*end = '>';
	}
	/* stage b stops and starts again: two subpaths */
	b_line = strstr(a_line + 1, "class=\"series p50\"");
	ck_assert_ptr_nonnull(b_line);
	*strchr(b_line, '>') = '\0';
	ck_assert_uint_eq(count(b_line, " M"), 2);
	free(svg);
}
END_TEST

START_TEST(test_hostile_labels)
{
	struct ctl_plot_opts o = { 800, "<script>alert(1)</script> & co", NULL };
	char *svg;
	int e;

	svg = plot_to_string(data("injection.csv"), &o, &e);
	ck_assert_int_eq(e, 0);
	ck_assert_msg(xml_check(svg) == NULL, "%s", xml_check(svg));
	xmllint_agrees(svg);
	ck_assert_ptr_null(strstr(svg, "<script"));
	ck_assert_ptr_nonnull(strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
	ck_assert_ptr_null(strchr(svg, '\x1b'));
	ck_assert_ptr_null(strchr(svg, '\x07'));
	free(svg);
}
END_TEST

START_TEST(test_filters_and_no_data)
{
	struct ctl_filter f = { 0 };
	struct ctl_plot_opts o = { 960, NULL, &f };
	char *svg;
	int e;

	ctl_filter_add(&f, true, "value");
	svg = plot_to_string(data("quoted.csv"), &o, &e);
	ck_assert_int_eq(e, 0);
	ck_assert_uint_eq(count(svg, "<g class=\"panel\">"), 1);
	free(svg);
	ctl_filter_free(&f);

	ctl_filter_add(&f, false, "nobody");
	svg = plot_to_string(data("quoted.csv"), &o, &e);
	ck_assert_int_eq(e, -ENODATA);
	free(svg);
	ctl_filter_free(&f);
}
END_TEST

static int run(char **out, char **err, int argc, char **argv)
{
	size_t ol = 0, el = 0;
	FILE *fo = open_memstream(out, &ol), *fe = open_memstream(err, &el);
	int rc = ctl_plot_cmd(argc, argv, fo, fe);
	fclose(fo);
	fclose(fe);
	return rc;
}

START_TEST(test_command_writes_atomically)
{
	char dir[] = "/tmp/ctl-plotdir-XXXXXX", dest[128], *out, *err;
	unsigned entries = 0;
	struct dirent *de;
	DIR *d;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(dest, sizeof(dest), "%s/out.svg", dir);
	{
		char *argv[] = { "plot", (char *)data("quoted.csv"), "-o", dest, "--width", "700" };
		ck_assert_int_eq(run(&out, &err, 6, argv), 0);
		free(out);
		free(err);
	}
	ck_assert_int_eq(access(dest, R_OK), 0);
	{
		/* a bad input leaves the earlier picture and no temporary behind */
		char *argv[] = { "plot", (char *)data("bad-quote.csv"), "-o", dest };
		ck_assert_int_eq(run(&out, &err, 4, argv), CTL_EXIT_BAD_FILE);
		ck_assert_ptr_nonnull(strstr(err, "bad-quote.csv:2:"));
		free(out);
		free(err);
	}
	d = opendir(dir);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			entries++;
	closedir(d);
	ck_assert_uint_eq(entries, 1);
	{
		char *argv[] = { "plot", (char *)data("quoted.csv") };   /* no -o */
		ck_assert_int_eq(run(&out, &err, 2, argv), CTL_EXIT_FAILURE);
		free(out);
		free(err);
	}
	{
		char *argv[] = { "plot", (char *)data("quoted.csv"), "-o", "-" };
		ck_assert_int_eq(run(&out, &err, 4, argv), 0);
		ck_assert(xml_check(out) == NULL);
		free(out);
		free(err);
	}
	unlink(dest);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_plot");
	TCase *tc = tcase_create("plot");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_well_formed_with_series);
	tcase_add_test(tc, test_gaps_marks_and_thinning);
	tcase_add_test(tc, test_hostile_labels);
	tcase_add_test(tc, test_filters_and_no_data);
	tcase_add_test(tc, test_command_writes_atomically);
	suite_add_tcase(s, tc);
	return check_run(s);
}
