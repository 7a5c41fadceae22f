/*
 * conf.c - load, validate, print and reload perfmond's configuration.
 *
 * Flow: beside the data path.  main() calls conf_load() before it creates
 * anything, so a bad setting costs an exit 78 and nothing else; the drain,
 * report and writer modules then read the struct pm_config built here.
 *
 * inih does the INI tokenising, but reads through conf_reader(), which sees
 * every physical line first.  That is how this module knows the line number
 * of each key (the Debian build of inih does not pass it to the handler),
 * reports over-long lines instead of letting inih split them, reports every
 * syntax error rather than only the first, and decides what indentation
 * means: an indented key is a key, and only the list keys (percentiles,
 * buckets) may go on over indented lines, which is how conf_print() writes
 * a list too long for inih's line limit.
 *
 * Values are parsed exactly, in integers: "1.5ms" is 1500000 ns, "1.3K"
 * bytes is an error rather than a rounded guess, and nothing wraps.
 * Floating-point text (percentiles) is read and written in the C locale
 * whatever LC_NUMERIC says.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <locale.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>
#include <perfmon.h>

#include "cmdline.h"
#include "conf.h"

_Static_assert(CONF_NAME_MAX == PERFMON_NAME_MAX, "shm name limits disagree");
_Static_assert(CONF_KEY_COUNT <= 64, "key bit masks are 64 bits wide");

#define NS_PER_US  UINT64_C(1000)
#define NS_PER_MS  UINT64_C(1000000)
#define NS_PER_S   UINT64_C(1000000000)
#define NS_PER_MIN (60 * NS_PER_S)
#define NS_PER_H   (3600 * NS_PER_S)
#define NS_PER_DAY (86400 * NS_PER_S)
#define KIB        UINT64_C(1024)

#define DEFAULT_STEM "perfmon"
#define PRINT_LINE_MAX 199      /* the longest line inih reads whole */
#define DEFAULT_BUCKET_FIRST_NS 16
#define DEFAULT_BUCKET_COUNT    27   /* 16ns doubling to 1073741824ns (~1.07s) */

/* ================================================== */
/* Message lists */

void conf_msgs_init(struct conf_msgs *m)
{
	m->count = 0;
	m->dropped = 0;
	m->len = 0;
	m->text[0] = '\0';
}

void conf_msgs_add(struct conf_msgs *m, const char *fmt, ...)
{
	size_t room = sizeof(m->text) - m->len;
	va_list ap;
	int n;

	m->count++;
	va_start(ap, fmt);
	n = vsnprintf(m->text + m->len, room, fmt, ap);
	va_end(ap);
	/* Keep whole lines only: a cut-off message would mislead. */
	if (n < 0 || (size_t)n + 2 > room) {
		m->text[m->len] = '\0';
		m->dropped++;
		return;
	}
	m->len += (size_t)n;
	m->text[m->len++] = '\n';
	m->text[m->len] = '\0';
}

void conf_msgs_print(FILE *f, const struct conf_msgs *m, const char *prefix)
{
	const char *s = m->text;

	if (!prefix)
		prefix = "";
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);

		fprintf(f, "%s%.*s\n", prefix, (int)n, s);
		s += n + (nl ? 1 : 0);
	}
	if (m->dropped)
		fprintf(f, "%s(%u more not shown)\n", prefix, m->dropped);
}

/* ================================================== */
/* Exact number parsing */

struct conf_suffix {
	const char *name;
	uint64_t mult;
};

static const struct conf_suffix duration_units[] = {
	{ "ns", 1 }, { "us", NS_PER_US }, { "\xc2\xb5s", NS_PER_US },
	{ "ms", NS_PER_MS }, { "s", NS_PER_S }, { "m", NS_PER_MIN },
	{ "h", NS_PER_H }, { "d", NS_PER_DAY }, { NULL, 0 },
};

/* Sizes are binary; matched case-insensitively. */
static const struct conf_suffix size_units[] = {
	{ "B", 1 }, { "K", KIB }, { "KiB", KIB }, { "M", KIB * KIB },
	{ "MiB", KIB * KIB }, { "G", KIB * KIB * KIB }, { "GiB", KIB * KIB * KIB },
	{ "T", KIB * KIB * KIB * KIB }, { "TiB", KIB * KIB * KIB * KIB },
	{ NULL, 0 },
};

/* Counts may be written 64K: a multiplier, not a byte unit. */
static const struct conf_suffix count_units[] = {
	{ "K", KIB }, { "M", KIB * KIB }, { "G", KIB * KIB * KIB }, { NULL, 0 },
};

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static int why_set(char *why, size_t n, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int why_set(char *why, size_t n, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/*
 * Parse "<digits>[.<digits>][ ]<suffix>" into an integer count of the base
 * unit.  A fraction is fine as long as the result is whole: 1.5ms is
 * 1500000 ns, 0.5K is 512, but 1.5ns has no exact value and is refused.
 * `what` names the base unit in messages ("nanoseconds").
 */
static int parse_scaled(const char *s, const struct conf_suffix *units,
			bool case_insensitive, bool unit_required,
			const char *what, uint64_t *ret,
			char *why, size_t whylen)
{
	uint64_t ip = 0, frac = 0, mult = 1, total;
	const char *p = s, *fstart = NULL, *unit;
	size_t ndig = 0, nfrac = 0, k;
	const struct conf_suffix *u;
	char unitbuf[16];
	size_t ulen;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-')
		return why_set(why, whylen, -ERANGE, "must not be negative");
	for (; isdigit((unsigned char)*p); p++, ndig++) {
		if (__builtin_mul_overflow(ip, 10, &ip) ||
		    __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
			return why_set(why, whylen, -ERANGE, "number is too large");
	}
	if (*p == '.') {
		fstart = ++p;
		for (; isdigit((unsigned char)*p); p++)
			nfrac++;
	}
	if (ndig + nfrac == 0)
		return why_set(why, whylen, -EINVAL, "not a number");

	/* Trailing zeros of the fraction carry nothing. */
	while (nfrac && fstart[nfrac - 1] == '0')
		nfrac--;
	if (nfrac > 18)
		return why_set(why, whylen, -EINVAL, "too many decimal places");
	for (k = 0; k < nfrac; k++)
		frac = frac * 10 + (uint64_t)(fstart[k] - '0');

	while (isspace((unsigned char)*p))
		p++;
	unit = p;
	ulen = strlen(unit);
	while (ulen && isspace((unsigned char)unit[ulen - 1]))
		ulen--;
	if (ulen) {
		if (ulen >= sizeof(unitbuf))
			return why_set(why, whylen, -EINVAL, "unknown unit '%.*s'",
				       (int)ulen, unit);
		memcpy(unitbuf, unit, ulen);
		unitbuf[ulen] = '\0';
		for (u = units; u->name; u++) {
			if (case_insensitive ? !strcasecmp(u->name, unitbuf)
					     : !strcmp(u->name, unitbuf))
				break;
		}
		if (!u->name)
			return why_set(why, whylen, -EINVAL, "unknown unit '%s'",
				       unitbuf);
		mult = u->mult;
	} else if (unit_required && (ip || frac)) {
		return why_set(why, whylen, -EINVAL,
			       "a unit is required (for example 5ms)");
	}

	if (__builtin_mul_overflow(ip, mult, &total))
		return why_set(why, whylen, -ERANGE, "value is too large");
	if (nfrac) {
		/* frac / 10^nfrac * mult must be whole: divide out the
		 * common factor first so nothing can overflow. */
		uint64_t p10 = 1, g, m;

		for (k = 0; k < nfrac; k++)
			p10 *= 10;
		g = gcd_u64(mult, p10);
		m = p10 / g;
		if (frac % m)
			return why_set(why, whylen, -EINVAL, "not a whole number%s%s",
				       *what ? " of " : "", what);
		if (__builtin_add_overflow(total, (frac / m) * (mult / g), &total))
			return why_set(why, whylen, -ERANGE, "value is too large");
	}
	*ret = total;
	return 0;
}

int conf_parse_duration(const char *s, uint64_t *ret_ns, char *why, size_t whylen)
{
	return parse_scaled(s, duration_units, false, true, "nanoseconds",
			    ret_ns, why, whylen);
}

int conf_format_duration(uint64_t ns, char *buf, size_t n)
{
	static const struct conf_suffix big_first[] = {
		{ "d", NS_PER_DAY }, { "h", NS_PER_H }, { "m", NS_PER_MIN },
		{ "s", NS_PER_S }, { "ms", NS_PER_MS }, { "us", NS_PER_US },
		{ "ns", 1 },
	};
	size_t i;
	int w;

	if (ns == 0) {
		w = snprintf(buf, n, "0");
	} else {
		for (i = 0; ns % big_first[i].mult; i++)
			;
		w = snprintf(buf, n, "%llu%s",
			     (unsigned long long)(ns / big_first[i].mult),
			     big_first[i].name);
	}
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

static int format_size(uint64_t bytes, char *buf, size_t n)
{
	static const struct conf_suffix big_first[] = {
		{ "T", KIB * KIB * KIB * KIB }, { "G", KIB * KIB * KIB },
		{ "M", KIB * KIB }, { "K", KIB },
	};
	size_t i;
	int w;

	for (i = 0; i < sizeof(big_first) / sizeof(big_first[0]); i++) {
		if (bytes && bytes % big_first[i].mult == 0)
			break;
	}
	if (i < sizeof(big_first) / sizeof(big_first[0]))
		w = snprintf(buf, n, "%llu%s",
			     (unsigned long long)(bytes / big_first[i].mult),
			     big_first[i].name);
	else
		w = snprintf(buf, n, "%llu", (unsigned long long)bytes);
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

/*
 * Read one decimal number in the C locale.  A daemon started under a
 * comma-decimal LC_NUMERIC must read "99.9" the same as anywhere else.
 */
static int parse_double_c(const char *s, size_t len, double *ret)
{
	char buf[64], *end;
	locale_t c;
	double v;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c)
		return -ENOMEM;
	errno = 0;
	v = strtod_l(buf, &end, c);
	freelocale(c);
	if (end == buf || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * The shortest fixed-point decimal that reads back as exactly `v`, in the C
 * locale: 99.9 -> "99.9", 50 -> "50".  Used for labels and for printing, so
 * a printed config reads back bit for bit.
 */
static int format_shortest(double v, char *buf, size_t n)
{
	char tmp[512];
	locale_t c, old;
	int d, rc = -ERANGE, w = 0;

	if (!isfinite(v))
		return -EINVAL;
	if (v == 0)
		v = 0;          /* -0 prints as 0 */
	c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c)
		return -ENOMEM;
	old = uselocale(c);
	for (d = 0; d <= 400; d++) {
		w = snprintf(tmp, sizeof(tmp), "%.*f", d, v);
		if (w < 0 || (size_t)w >= sizeof(tmp))
			break;
		if (strtod_l(tmp, NULL, c) == v) {
			rc = 0;
			break;
		}
	}
	uselocale(old);
	freelocale(c);
	if (rc)
		return rc;
	if ((size_t)w >= n)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)w + 1);
	return 0;
}

int conf_percentile_label(double p, char *buf, size_t n)
{
	char num[512], *s;
	int rc;

	if (!isfinite(p) || p < 0)
		return -EINVAL;
	rc = format_shortest(p, num, sizeof(num));
	if (rc)
		return rc;
	for (s = num; *s; s++) {
		if (*s == '.')
			*s = '_';
	}
	if (strlen(num) + 2 > n)
		return -ENOSPC;
	buf[0] = 'p';
	memcpy(buf + 1, num, strlen(num) + 1);
	return 0;
}

/* ================================================== */
/* The keys */

enum conf_type {
	T_NAME,         /* shm name, SPEC section 3 */
	T_COUNT,        /* uint32_t in [min, max] */
	T_POW2,         /* uint32_t power of two in [min, max] */
	T_MODE,         /* mode_t, octal */
	T_GROUP,        /* group name or number */
	T_CPU,          /* int, -1 for none */
	T_DURATION,     /* uint64_t ns; 0 allowed when `zero` is set */
	T_SIZE,         /* uint64_t bytes; 0 allowed when `zero` is set */
	T_BOOL,
	T_PATH,         /* "" : no file */
	T_UNIT,
	T_PERCENTILES,
	T_BUCKETS,
};

struct conf_keydef {
	const char *section;
	const char *name;
	enum conf_type type;
	size_t off, size;
	uint64_t min, max;
	const char *zero;       /* what 0 means, when 0 is allowed */
	bool live;              /* can change on SIGHUP */
};

#define FIELD_SIZE(f) sizeof(((struct pm_config *)0)->f)
#define KEY(sec, nm, ty, f, mn, mx, z, lv) \
	{ sec, nm, ty, offsetof(struct pm_config, f), FIELD_SIZE(f), mn, mx, z, lv }

/*
 * Every key, its range and whether a reload may change it.  The ranges
 * stop typos rather than second-guess tuning: 2^30 ring slots is already
 * 16 GiB of shared memory, a poll interval under 1us is a busy loop, and a
 * rotation more often than every 100ms would rotate on every interval.
 * Live keys are those the daemon can re-apply in place (re-pin, reopen,
 * retime); the rest fix the segment geometry, preallocated tables or the
 * CSV header.
 */
static const struct conf_keydef keys[CONF_KEY_COUNT] = {
	[CONF_SHM_NAME] = KEY("shm", "name", T_NAME, shm_name, 0, 0, NULL, false),
	[CONF_SHM_CAPACITY] = KEY("shm", "capacity", T_POW2, capacity,
				  64, UINT64_C(1) << 30, NULL, false),
	[CONF_SHM_MAX_NAMES] = KEY("shm", "max_names", T_COUNT, max_names,
				   1, 65536, NULL, false),
	[CONF_SHM_MODE] = KEY("shm", "mode", T_MODE, mode, 0, 0, NULL, false),
	[CONF_SHM_GROUP] = KEY("shm", "group", T_GROUP, group, 0, 0, NULL, false),
	[CONF_COLLECTOR_CPU] = KEY("collector", "cpu", T_CPU, cpu,
				   0, CPU_SETSIZE - 1, NULL, true),
	[CONF_COLLECTOR_POLL_INTERVAL] = KEY("collector", "poll_interval",
		T_DURATION, poll_interval_ns, NS_PER_US, NS_PER_S, NULL, true),
	[CONF_COLLECTOR_FLUSH_INTERVAL] = KEY("collector", "flush_interval",
		T_DURATION, flush_interval_ns, NS_PER_MS, NS_PER_DAY, NULL, true),
	[CONF_COLLECTOR_STALLED_SAMPLE_TIMEOUT] = KEY("collector",
		"stalled_sample_timeout", T_DURATION, stalled_sample_timeout_ns,
		NS_PER_MS, NS_PER_H, NULL, true),
	[CONF_COLLECTOR_MAX_OPEN_SPANS] = KEY("collector", "max_open_spans",
		T_COUNT, max_open_spans, 1, UINT64_C(1) << 24, NULL, false),
	[CONF_COLLECTOR_MAX_STAGES] = KEY("collector", "max_stages", T_COUNT,
		max_stages, 1, UINT64_C(1) << 20, NULL, false),
	[CONF_COLLECTOR_LOCK_MEMORY] = KEY("collector", "lock_memory", T_BOOL,
		lock_memory, 0, 0, NULL, false),
	[CONF_OUTPUT_CSV] = KEY("output", "csv", T_PATH, csv, 0, 0, NULL, true),
	[CONF_OUTPUT_SUMMARY] = KEY("output", "summary", T_PATH, summary,
				    0, 0, NULL, true),
	[CONF_OUTPUT_UNIT] = KEY("output", "unit", T_UNIT, unit, 0, 0, NULL, false),
	[CONF_OUTPUT_PERCENTILES] = KEY("output", "percentiles", T_PERCENTILES,
		percentiles, 0, 100, NULL, false),
	[CONF_OUTPUT_SUBTRACT_OVERHEAD] = KEY("output", "subtract_overhead",
		T_BOOL, subtract_overhead, 0, 0, NULL, false),
	[CONF_OUTPUT_CSV_FLUSH_INTERVAL] = KEY("output", "csv_flush_interval",
		T_DURATION, csv_flush_interval_ns, NS_PER_MS, NS_PER_DAY,
		"push every interval", true),
	[CONF_OUTPUT_ROTATE_SIZE] = KEY("output", "rotate_size", T_SIZE,
		rotate_size, KIB, KIB * KIB * KIB * KIB, "never", true),
	[CONF_OUTPUT_ROTATE_INTERVAL] = KEY("output", "rotate_interval",
		T_DURATION, rotate_interval_ns, 100 * NS_PER_MS, 366 * NS_PER_DAY,
		"never", true),
	[CONF_OUTPUT_ROTATE_KEEP] = KEY("output", "rotate_keep", T_COUNT,
		rotate_keep, 0, 10000, NULL, true),
	[CONF_PROMETHEUS_TEXTFILE] = KEY("prometheus", "textfile", T_PATH,
		prom_textfile, 0, 0, NULL, true),
	[CONF_PROMETHEUS_BUCKETS] = KEY("prometheus", "buckets", T_BUCKETS,
		buckets, 1, NS_PER_DAY, NULL, true),
};

static const char *const sections[] = { "shm", "collector", "output", "prometheus" };

#define FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))
#define CFIELD(c, k, type) ((const type *)((const char *)(c) + (k)->off))

static int find_section(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (!strcmp(sections[i], name))
			return (int)i;
	}
	return -1;
}

static int find_key(const char *section, const char *name)
{
	int i;

	for (i = 0; i < CONF_KEY_COUNT; i++) {
		if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
			return i;
	}
	return -1;
}

bool conf_key_is_live(enum conf_key k)
{
	return (unsigned)k < CONF_KEY_COUNT && keys[k].live;
}

const char *conf_key_name(enum conf_key k, const char **ret_section)
{
	if ((unsigned)k >= CONF_KEY_COUNT)
		return NULL;
	if (ret_section)
		*ret_section = keys[k].section;
	return keys[k].name;
}

const char *conf_unit_name(enum conf_unit u)
{
	switch (u) {
	case CONF_UNIT_NS:
		return "ns";
	case CONF_UNIT_US:
		return "us";
	case CONF_UNIT_CYCLES:
		return "cycles";
	}
	return "ns";
}

/* ================================================== */
/* Names, groups, CPUs */

int conf_check_name(const char *name, char *why, size_t whylen)
{
	size_t i, n = strlen(name);

	if (n == 0)
		return why_set(why, whylen, -EINVAL, "name is empty");
	if (n > CONF_NAME_MAX)
		return why_set(why, whylen, -ENAMETOOLONG,
			       "name is %zu characters long", n);
	if (name[0] == '.')
		return why_set(why, whylen, -EINVAL, "name starts with '.'");
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!isascii(ch) || !(isalnum(ch) || ch == '.' || ch == '_' || ch == '-'))
			return why_set(why, whylen, -EINVAL,
				       "character %zu is not allowed in a name", i + 1);
	}
	return 0;
}

static int check_group_syntax(const char *g, char *why, size_t whylen)
{
	size_t n = strlen(g);
	const char *s;

	if (n > CONF_GROUP_MAX)
		return why_set(why, whylen, -ENAMETOOLONG,
			       "group name is %zu characters long", n);
	for (s = g; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isspace(ch) || iscntrl(ch) || ch == ':' || ch == ',' || ch == '/')
			return why_set(why, whylen, -EINVAL,
				       "a group name cannot contain '%c'",
				       isprint(ch) ? ch : '?');
	}
	return 0;
}

int conf_resolve_group(const char *group, gid_t *ret_gid)
{
	struct group gr, *res = NULL;
	size_t buflen = 4096;
	char *buf = NULL;
	int rc;

	if (!group[0]) {
		*ret_gid = (gid_t)-1;
		return 0;
	}
	if (check_group_syntax(group, NULL, 0))
		return -EINVAL;
	for (;;) {
		char *nb = realloc(buf, buflen);

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		rc = getgrnam_r(group, &gr, buf, buflen, &res);
		if (rc != ERANGE || buflen >= (1u << 20))
			break;
		buflen *= 2;
	}
	if (res) {
		*ret_gid = res->gr_gid;
		free(buf);
		return 0;
	}
	free(buf);
	/* getgrnam_r(3) allows these for "not found". */
	if (rc && rc != ENOENT && rc != ESRCH && rc != EBADF && rc != EPERM)
		return -rc;
	if (group[strspn(group, "0123456789")] == '\0') {
		/* A number is a gid, whether or not the database names it. */
		uint64_t v;

		if (parse_scaled(group, count_units, false, false, "", &v, NULL, 0) ||
		    v >= (gid_t)-1)
			return -EINVAL;
		*ret_gid = (gid_t)v;
		return 0;
	}
	return -ENOENT;
}

/* The CPUs this thread may run on, as "0-3,6". */
static void format_cpu_set(const cpu_set_t *set, char *buf, size_t n)
{
	size_t len = 0;
	int cpu, first = -1;

	buf[0] = '\0';
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, set);

		if (in && first < 0)
			first = cpu;
		if (!in && first >= 0) {
			int w;

			if (cpu - 1 == first)
				w = snprintf(buf + len, n - len, "%s%d",
					     len ? "," : "", first);
			else
				w = snprintf(buf + len, n - len, "%s%d-%d",
					     len ? "," : "", first, cpu - 1);
			if (w < 0 || (size_t)w >= n - len)
				return;
			len += (size_t)w;
			first = -1;
		}
	}
}

/*
 * Checks that depend on the machine rather than the text: the group must
 * exist and the CPU must be one this thread may run on (the systemd unit's
 * CPUAffinity=), so a pin that would fail fails at start, before anything
 * is created.
 */
static int check_environment(const struct conf_keydef *k, const struct pm_config *c,
			     char *why, size_t whylen)
{
	if (k->type == T_GROUP) {
		gid_t gid;
		int rc = conf_resolve_group(c->group, &gid);

		if (rc == -ENOENT)
			return why_set(why, whylen, rc, "no such group");
		if (rc)
			return why_set(why, whylen, rc, "cannot look up the group: %s",
				       strerror(-rc));
	} else if (k->type == T_CPU && c->cpu >= 0) {
		cpu_set_t set;
		char list[256];

		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set))
			return 0;       /* nothing to check against */
		if (!CPU_ISSET(c->cpu, &set)) {
			format_cpu_set(&set, list, sizeof(list));
			return why_set(why, whylen, -EINVAL,
				       "CPU %d is not available to this process, "
				       "which may run on CPUs %s", c->cpu, list);
		}
	}
	return 0;
}

/* ================================================== */
/* Values: text -> field, field -> text */

static const char *allowed_text(const struct conf_keydef *k, char *buf, size_t n)
{
	char lo[32], hi[32], zero[96] = "";

	switch (k->type) {
	case T_NAME:
		return CONF_NAME_RULE;
	case T_COUNT:
		snprintf(buf, n, "a whole number from %llu to %llu "
			 "(K, M, G multiply by 1024)",
			 (unsigned long long)k->min, (unsigned long long)k->max);
		return buf;
	case T_POW2:
		snprintf(buf, n, "a power of two from %llu to %llu, "
			 "for example 65536 or 64K",
			 (unsigned long long)k->min, (unsigned long long)k->max);
		return buf;
	case T_MODE:
		return "octal permission bits from 0600 to 0777 that keep the "
		       "owner's read and write, for example 0660";
	case T_GROUP:
		return "the name or number of an existing group; "
		       "empty: the daemon's own group";
	case T_CPU:
		return "'none' or the number of a CPU this process may run on";
	case T_DURATION:
		conf_format_duration(k->min, lo, sizeof(lo));
		conf_format_duration(k->max, hi, sizeof(hi));
		if (k->zero)
			snprintf(zero, sizeof(zero), "0 (%s) or ", k->zero);
		snprintf(buf, n, "%sa duration from %s to %s with a unit "
			 "(ns, us, ms, s, m, h, d)", zero, lo, hi);
		return buf;
	case T_SIZE:
		format_size(k->min, lo, sizeof(lo));
		format_size(k->max, hi, sizeof(hi));
		if (k->zero)
			snprintf(zero, sizeof(zero), "0 (%s) or ", k->zero);
		snprintf(buf, n, "%sa size from %s to %s, in bytes or with "
			 "K, M, G, T (powers of 1024)", zero, lo, hi);
		return buf;
	case T_BOOL:
		return "yes or no (also true/false, on/off, 1/0)";
	case T_PATH:
		return "a file path; empty: no file";
	case T_UNIT:
		return "ns, us or cycles";
	case T_PERCENTILES:
		return "up to 16 distinct numbers from 0 to 100, comma-separated, "
		       "for example 50, 90, 99, 99.9";
	case T_BUCKETS:
		return "1 to 64 durations from 1ns to 1d, strictly increasing, "
		       "comma-separated, for example 100ns, 1us, 10us, 1ms";
	}
	return "";
}

/* Split a comma-separated list; the callback sees each trimmed element. */
static int for_each_element(const char *v, char *why, size_t whylen,
			    int (*fn)(const char *el, size_t len, unsigned idx,
				      void *arg, char *why, size_t whylen),
			    void *arg)
{
	const char *s = v;
	unsigned idx = 0;
	int rc;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s)
		return 0;
	for (;;) {
		const char *end = strchr(s, ',');
		const char *e = end ? end : s + strlen(s);
		const char *b = s;

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e)
			return why_set(why, whylen, -EINVAL,
				       "element %u of the list is empty", idx + 1);
		rc = fn(b, (size_t)(e - b), idx, arg, why, whylen);
		if (rc)
			return rc;
		idx++;
		if (!end)
			return 0;
		s = end + 1;
	}
}

static int add_percentile(const char *el, size_t len, unsigned idx, void *arg,
			  char *why, size_t whylen)
{
	struct conf_percentiles *pl = arg;
	double v;
	unsigned i;
	int rc;

	if (idx >= CONF_MAX_PERCENTILES)
		return why_set(why, whylen, -ERANGE, "more than %d percentiles",
			       CONF_MAX_PERCENTILES);
	rc = parse_double_c(el, len, &v);
	if (rc == -ENOMEM)
		return why_set(why, whylen, rc, "out of memory");
	if (rc)
		return why_set(why, whylen, -EINVAL, "'%.*s' is not a number",
			       (int)len, el);
	if (isnan(v))
		return why_set(why, whylen, -EINVAL, "NaN is not a percentile");
	if (!(v >= 0 && v <= 100))
		return why_set(why, whylen, -ERANGE, "%.*s is outside [0, 100]",
			       (int)len, el);
	for (i = 0; i < pl->n; i++) {
		if (pl->p[i] == v)
			return why_set(why, whylen, -EINVAL,
				       "%.*s is listed twice", (int)len, el);
	}
	pl->p[pl->n++] = v;
	return 0;
}

struct bucket_ctx {
	struct conf_buckets *bl;
	const struct conf_keydef *k;
};

static int add_bucket(const char *el, size_t len, unsigned idx, void *arg,
		      char *why, size_t whylen)
{
	struct bucket_ctx *ctx = arg;
	struct conf_buckets *bl = ctx->bl;
	char tok[64], sub[128];
	uint64_t ns;

	if (idx >= CONF_MAX_BUCKETS)
		return why_set(why, whylen, -ERANGE, "more than %d bounds",
			       CONF_MAX_BUCKETS);
	if (len >= sizeof(tok))
		return why_set(why, whylen, -EINVAL, "element %u is too long", idx + 1);
	memcpy(tok, el, len);
	tok[len] = '\0';
	if (conf_parse_duration(tok, &ns, sub, sizeof(sub)))
		return why_set(why, whylen, -EINVAL, "'%s': %s", tok, sub);
	if (ns < ctx->k->min || ns > ctx->k->max)
		return why_set(why, whylen, -ERANGE, "'%s' is out of range", tok);
	if (bl->n && ns <= bl->le_ns[bl->n - 1])
		return why_set(why, whylen, -EINVAL,
			       "'%s' is not larger than the bound before it", tok);
	bl->le_ns[bl->n++] = ns;
	return 0;
}

static int parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Parse `v` for key `k` into the matching field of `c`.  On failure the
 * field may hold a partial value, which is why callers parse into a
 * staging copy.
 */
static int parse_value(const struct conf_keydef *k, const char *v,
		       struct pm_config *c, char *why, size_t whylen)
{
	uint64_t x;
	int rc;

	switch (k->type) {
	case T_NAME:
		rc = conf_check_name(v, why, whylen);
		if (rc)
			return rc;
		snprintf(FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case T_COUNT:
	case T_POW2:
		rc = parse_scaled(v, count_units, true, false, "", &x,
				  why, whylen);
		if (rc)
			return rc;
		if (x < k->min || x > k->max)
			return why_set(why, whylen, -ERANGE, "out of range");
		if (k->type == T_POW2 && (x & (x - 1))) {
			/* In range, so x > 0 and the next power fits. */
			uint64_t below = UINT64_C(1) << (63 - __builtin_clzll(x));

			return why_set(why, whylen, -EINVAL,
				       "must be a power of two (the nearest are "
				       "%llu and %llu)", (unsigned long long)below,
				       (unsigned long long)below * 2);
		}
		*FIELD(c, k, uint32_t) = (uint32_t)x;
		return 0;

	case T_MODE: {
		const char *s = v;

		x = 0;
		if (!*s)
			return why_set(why, whylen, -EINVAL, "empty mode");
		for (; *s; s++) {
			if (*s < '0' || *s > '7')
				return why_set(why, whylen, -EINVAL,
					       "not an octal number");
			x = x * 8 + (uint64_t)(*s - '0');
			if (x > 07777)
				break;
		}
		if (x > 0777)
			return why_set(why, whylen, -ERANGE,
				       "only permission bits (0777 and below) are allowed");
		if ((x & 0600) != 0600)
			return why_set(why, whylen, -ERANGE,
				       "the owner must keep read and write permission, "
				       "or perfmond cannot reopen its own segments");
		*FIELD(c, k, mode_t) = (mode_t)x;
		return 0;
	}

	case T_GROUP:
		rc = check_group_syntax(v, why, whylen);
		if (rc)
			return rc;
		snprintf(FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case T_CPU:
		if (!strcasecmp(v, "none")) {
			*FIELD(c, k, int) = -1;
			return 0;
		}
		if (!isdigit((unsigned char)*v) || v[strspn(v, "0123456789")])
			return why_set(why, whylen, -EINVAL,
				       "not 'none' or a CPU number");
		rc = parse_scaled(v, count_units, false, false, "", &x, why, whylen);
		if (rc)
			return rc;
		if (x > k->max)
			return why_set(why, whylen, -ERANGE,
				       "CPU numbers go up to %llu",
				       (unsigned long long)k->max);
		*FIELD(c, k, int) = (int)x;
		return 0;

	case T_DURATION:
	case T_SIZE:
		if (k->type == T_DURATION)
			rc = conf_parse_duration(v, &x, why, whylen);
		else
			rc = parse_scaled(v, size_units, true, false, "bytes", &x,
					  why, whylen);
		if (rc)
			return rc;
		if (x == 0 && k->zero) {
			*FIELD(c, k, uint64_t) = 0;
			return 0;
		}
		if (x < k->min)
			return why_set(why, whylen, -ERANGE, "too small");
		if (x > k->max)
			return why_set(why, whylen, -ERANGE, "too large");
		*FIELD(c, k, uint64_t) = x;
		return 0;

	case T_BOOL:
		if (parse_bool(v, FIELD(c, k, bool)))
			return why_set(why, whylen, -EINVAL, "not a yes/no value");
		return 0;

	case T_PATH:
		if (strlen(v) >= k->size)
			return why_set(why, whylen, -ENAMETOOLONG, "path is too long");
		if (strchr(v, '\n'))
			return why_set(why, whylen, -EINVAL,
				       "a path cannot contain a newline");
		snprintf(FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case T_UNIT:
		if (!strcasecmp(v, "ns"))
			*FIELD(c, k, enum conf_unit) = CONF_UNIT_NS;
		else if (!strcasecmp(v, "us"))
			*FIELD(c, k, enum conf_unit) = CONF_UNIT_US;
		else if (!strcasecmp(v, "cycles"))
			*FIELD(c, k, enum conf_unit) = CONF_UNIT_CYCLES;
		else
			return why_set(why, whylen, -EINVAL, "unknown unit");
		return 0;

	case T_PERCENTILES: {
		struct conf_percentiles pl = { 0 };

		rc = for_each_element(v, why, whylen, add_percentile, &pl);
		if (rc)
			return rc;
		*FIELD(c, k, struct conf_percentiles) = pl;
		return 0;
	}

	case T_BUCKETS: {
		struct conf_buckets bl = { 0 };
		struct bucket_ctx ctx = { &bl, k };

		rc = for_each_element(v, why, whylen, add_bucket, &ctx);
		if (rc)
			return rc;
		if (bl.n == 0)
			return why_set(why, whylen, -EINVAL,
				       "at least one bound is needed");
		*FIELD(c, k, struct conf_buckets) = bl;
		return 0;
	}
	}
	return why_set(why, whylen, -EINVAL, "unsupported key");
}

/* Number of elements of a list key (percentiles, buckets); 0 otherwise. */
static unsigned list_length(const struct conf_keydef *k, const struct pm_config *c)
{
	if (k->type == T_PERCENTILES)
		return CFIELD(c, k, struct conf_percentiles)->n;
	if (k->type == T_BUCKETS)
		return CFIELD(c, k, struct conf_buckets)->n;
	return 0;
}

static void format_element(const struct conf_keydef *k, const struct pm_config *c,
			   unsigned i, char *buf, size_t n)
{
	buf[0] = '\0';
	if (k->type == T_PERCENTILES)
		format_shortest(CFIELD(c, k, struct conf_percentiles)->p[i], buf, n);
	else if (k->type == T_BUCKETS)
		conf_format_duration(CFIELD(c, k, struct conf_buckets)->le_ns[i], buf, n);
}

/* Canonical text of a key's value, as conf_print() writes it. */
static void format_value(const struct conf_keydef *k, const struct pm_config *c,
			 char *buf, size_t n)
{
	size_t len = 0;
	unsigned i;

	buf[0] = '\0';
	switch (k->type) {
	case T_NAME:
	case T_GROUP:
	case T_PATH:
		snprintf(buf, n, "%s", CFIELD(c, k, char));
		break;
	case T_COUNT:
	case T_POW2:
		snprintf(buf, n, "%u", *CFIELD(c, k, uint32_t));
		break;
	case T_MODE:
		snprintf(buf, n, "%04o", (unsigned)*CFIELD(c, k, mode_t));
		break;
	case T_CPU:
		if (*CFIELD(c, k, int) < 0)
			snprintf(buf, n, "none");
		else
			snprintf(buf, n, "%d", *CFIELD(c, k, int));
		break;
	case T_DURATION:
		conf_format_duration(*CFIELD(c, k, uint64_t), buf, n);
		break;
	case T_SIZE:
		format_size(*CFIELD(c, k, uint64_t), buf, n);
		break;
	case T_BOOL:
		snprintf(buf, n, "%s", *CFIELD(c, k, bool) ? "yes" : "no");
		break;
	case T_UNIT:
		snprintf(buf, n, "%s", conf_unit_name(*CFIELD(c, k, enum conf_unit)));
		break;
	case T_PERCENTILES:
	case T_BUCKETS:
		for (i = 0; i < list_length(k, c) && len + 3 < n; i++) {
			if (i) {
				memcpy(buf + len, ", ", 3);
				len += 2;
			}
			format_element(k, c, i, buf + len, n - len);
			len += strlen(buf + len);
		}
		break;
	}
}

/* ================================================== */
/* Problem reports */

static const char *shown(const char *v)
{
	return v[0] ? v : "\"\"";
}

/* "FILE:LINE", "command line" or "built-in default" for key k of c. */
static void origin_text(const struct pm_config *c, const struct conf_origin *o,
			char *buf, size_t n)
{
	switch (o->source) {
	case CONF_SRC_FILE:
		snprintf(buf, n, "%s:%u", c->config_path, o->line);
		break;
	case CONF_SRC_CMDLINE:
		snprintf(buf, n, "command line%s%s%s", o->detail ? " (" : "",
			 o->detail ? o->detail : "", o->detail ? ")" : "");
		break;
	default:
		snprintf(buf, n, "default%s%s%s", o->detail ? " (" : "",
			 o->detail ? o->detail : "", o->detail ? ")" : "");
		break;
	}
}

/*
 * One problem with key k, worded for where the value came from:
 *   FILE:LINE: [section] key = value: what is wrong; allowed: ...
 *   command line: --option value: what is wrong; allowed: ...
 */
static void format_problem(char *buf, size_t n, const char *file, unsigned line,
			   const char *opt, const struct conf_keydef *k,
			   const char *value, const char *why)
{
	char abuf[256];
	const char *allowed = allowed_text(k, abuf, sizeof(abuf));

	if (opt)
		snprintf(buf, n, "command line: %s %s: %s; allowed: %s",
			 opt, shown(value), why, allowed);
	else if (file)
		snprintf(buf, n, "%s:%u: [%s] %s = %s: %s; allowed: %s", file, line,
			 k->section, k->name, shown(value), why, allowed);
	else
		snprintf(buf, n, "built-in default: [%s] %s = %s: %s; allowed: %s",
			 k->section, k->name, shown(value), why, allowed);
}

static void add_problem(struct conf_msgs *errs, const char *file, unsigned line,
			const char *opt, const struct conf_keydef *k,
			const char *value, const char *why)
{
	char buf[1024];

	format_problem(buf, sizeof(buf), file, line, opt, k, value, why);
	conf_msgs_add(errs, "%s", buf);
}

/* A problem found after merging: word it for the value's origin. */
static void add_merged_problem(struct conf_msgs *errs, const struct pm_config *c,
			       enum conf_key ki, const char *why)
{
	const struct conf_origin *o = &c->origin[ki];
	char value[CONF_PATH_MAX];

	format_value(&keys[ki], c, value, sizeof(value));
	add_problem(errs, o->source == CONF_SRC_FILE ? c->config_path : NULL,
		    o->line, o->source == CONF_SRC_CMDLINE ? o->detail : NULL,
		    &keys[ki], value, why);
}

/* ================================================== */
/* Reading the file */

/* What an indented line without '=' means, given the line before it. */
enum cont_mode {
	CONT_NONE,      /* no key before it: a syntax error */
	CONT_LIST,      /* more elements of percentiles or buckets */
	CONT_REJECT,    /* the key before takes one value: an error */
	CONT_SWALLOW,   /* the key before was already reported: ignore */
};

struct conf_loader {
	struct pm_config *cfg;
	struct conf_msgs *errs;
	const char *path;
	FILE *f;
	char *line;
	size_t cap;
	unsigned lineno;
	int read_err;
	bool section_ok;        /* false inside an unknown section */
	bool continuation;      /* the line inih is handling continues a list */
	enum cont_mode cont;
	unsigned set_line[CONF_KEY_COUNT];
	/* A list key is parsed once its last continuation line is read. */
	int pending;            /* key index, or -1 */
	unsigned pending_line;
	bool pending_overflow;
	char pending_text[4096];
};

/* Hand inih an empty line in place of one already reported. */
static char *blank_line(char *str)
{
	str[0] = '\0';
	return str;
}

/* Does this line have the '=' or ':' of a key, as inih reads it?  ';'
 * starts a comment only after whitespace. */
static bool has_key_separator(const char *s)
{
	bool was_space = false;

	for (; *s && *s != '=' && *s != ':'; s++) {
		if (was_space && *s == ';')
			return false;
		was_space = isspace((unsigned char)*s);
	}
	return *s == '=' || *s == ':';
}

/* End the text at a ';' that follows whitespace, as inih does for keys. */
static void cut_inline_comment(char *s)
{
	bool was_space = false;

	for (; *s; s++) {
		if (was_space && *s == ';') {
			*s = '\0';
			return;
		}
		was_space = isspace((unsigned char)*s);
	}
}

static void finish_pending(struct conf_loader *ld)
{
	const struct conf_keydef *k;
	char why[512];
	int ki = ld->pending;

	if (ki < 0)
		return;
	ld->pending = -1;
	k = &keys[ki];
	if (ld->pending_overflow) {
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s: the list is longer than %zu "
			      "bytes", ld->path, ld->pending_line, k->section, k->name,
			      sizeof(ld->pending_text) - 1);
		return;
	}
	if (parse_value(k, ld->pending_text, ld->cfg, why, sizeof(why))) {
		add_problem(ld->errs, ld->path, ld->pending_line, NULL, k,
			    ld->pending_text, why);
		return;
	}
	ld->cfg->origin[ki] = (struct conf_origin){ CONF_SRC_FILE, ld->pending_line, NULL };
}

/* Add one line's worth of elements to the pending list; a line break
 * separates elements like a comma does. */
static void append_pending(struct conf_loader *ld, const char *v)
{
	size_t len = strlen(ld->pending_text), room = sizeof(ld->pending_text) - len;
	const char *sep = "";
	int w;

	if (!*v)
		return;
	if (len)
		sep = ld->pending_text[len - 1] == ',' ? " " : ", ";
	w = snprintf(ld->pending_text + len, room, "%s%s", sep, v);
	if (w < 0 || (size_t)w >= room)
		ld->pending_overflow = true;
}

static char *conf_reader(char *str, int num, void *stream)
{
	struct conf_loader *ld = stream;
	size_t max = num > 1 ? (size_t)num - 1 : 0;
	char *s, *t, *close;
	ssize_t len;

	errno = 0;
	len = getline(&ld->line, &ld->cap, ld->f);
	if (len < 0) {
		if (ferror(ld->f))
			ld->read_err = errno ? errno : EIO;
		return NULL;
	}
	ld->lineno++;
	ld->continuation = false;
	s = ld->line;
	if (memchr(s, '\0', (size_t)len)) {
		conf_msgs_add(ld->errs, "%s:%u: the line contains a NUL byte; "
			      "a config file is plain text", ld->path, ld->lineno);
		if (ld->pending >= 0) {
			ld->pending = -1;
			ld->cont = CONT_SWALLOW;
		}
		return blank_line(str);
	}
	if (len && s[len - 1] == '\n')
		s[--len] = '\0';
	if (len && s[len - 1] == '\r')
		s[--len] = '\0';
	if (ld->lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3)) {
		s += 3;
		len -= 3;
	}
	/* inih would silently split a longer line into two. */
	if ((size_t)len > max) {
		conf_msgs_add(ld->errs, "%s:%u: the line is %zd bytes long; lines "
			      "can be at most %zu bytes", ld->path, ld->lineno,
			      len, max);
		/* A list missing a piece would only add a confusing error. */
		if (ld->pending >= 0) {
			ld->pending = -1;
			ld->cont = CONT_SWALLOW;
		}
		return blank_line(str);
	}
	for (t = s; isspace((unsigned char)*t); t++)
		;
	if (*t == '\0' || *t == ';' || *t == '#') {
		snprintf(str, (size_t)num, "%s", t);
		return str;
	}

	/* An indented line without a key continues the key before it;
	 * inih reads it so when it keeps its indentation. */
	if (t > s && *t != '[' && !has_key_separator(t)) {
		switch (ld->cont) {
		case CONT_LIST:
			/* inih leaves inline comments in continuation
			 * lines: cut them here. */
			cut_inline_comment(t);
			ld->continuation = true;
			snprintf(str, (size_t)num, "%s", s);
			return str;
		case CONT_SWALLOW:
			return blank_line(str);
		case CONT_REJECT:
			conf_msgs_add(ld->errs, "%s:%u: '%.60s': only percentiles and "
				      "buckets can continue on an indented line",
				      ld->path, ld->lineno, t);
			return blank_line(str);
		case CONT_NONE:
			break;
		}
	}

	/* Anything else ends a pending list.  Indentation is dropped, or
	 * inih would take an indented key for a continuation. */
	finish_pending(ld);
	ld->cont = CONT_NONE;
	if (*t == '[') {
		char *name = t + 1, *rest, *e;

		close = strchr(t, ']');
		if (!close) {
			conf_msgs_add(ld->errs, "%s:%u: %s: the section header has no "
				      "closing ']'", ld->path, ld->lineno, t);
			ld->section_ok = false;
			return blank_line(str);
		}
		for (rest = close + 1; isspace((unsigned char)*rest); rest++)
			;
		if (*rest && *rest != ';' && *rest != '#') {
			conf_msgs_add(ld->errs, "%s:%u: %s: unexpected text after the "
				      "section header", ld->path, ld->lineno, t);
			ld->section_ok = false;
			return blank_line(str);
		}
		*close = '\0';
		while (isspace((unsigned char)*name))
			name++;
		for (e = close; e > name && isspace((unsigned char)e[-1]); e--)
			;
		*e = '\0';
		ld->section_ok = find_section(name) >= 0;
		if (!ld->section_ok)
			conf_msgs_add(ld->errs, "%s:%u: [%s]: unknown section; allowed: "
				      "[shm], [collector], [output], [prometheus]",
				      ld->path, ld->lineno, name);
		snprintf(str, (size_t)num, "[%s]", name);
		return str;
	}
	if (!has_key_separator(t)) {
		conf_msgs_add(ld->errs, "%s:%u: '%.60s': not a 'key = value' line, "
			      "a [section] header or a comment", ld->path,
			      ld->lineno, t);
		return blank_line(str);
	}
	/* Until the handler says otherwise, what follows is not a list. */
	ld->cont = CONT_SWALLOW;
	snprintf(str, (size_t)num, "%s", t);
	return str;
}

static void unknown_key(struct conf_loader *ld, const char *section,
			const char *name, const char *value)
{
	const char *elsewhere = NULL, *nearly = NULL;
	char list[256] = "";
	size_t len = 0;
	int i;

	for (i = 0; i < CONF_KEY_COUNT; i++) {
		if (!strcmp(keys[i].section, section)) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s",
					 len ? ", " : "", keys[i].name);

			if (w > 0 && (size_t)w < sizeof(list) - len)
				len += (size_t)w;
			if (!strcasecmp(keys[i].name, name))
				nearly = keys[i].name;
		} else if (!strcmp(keys[i].name, name)) {
			elsewhere = keys[i].section;
		}
	}
	if (!name[0])
		conf_msgs_add(ld->errs, "%s:%u: [%s] = %s: the key name is missing; "
			      "allowed in [%s]: %s", ld->path, ld->lineno, section,
			      shown(value), section, list);
	else if (elsewhere)
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key in [%s]; "
			      "'%s' belongs in [%s]", ld->path, ld->lineno, section,
			      name, shown(value), section, name, elsewhere);
	else if (nearly)
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key (keys are "
			      "lower case: did you mean '%s'?)", ld->path, ld->lineno,
			      section, name, shown(value), nearly);
	else
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key; allowed "
			      "in [%s]: %s", ld->path, ld->lineno, section, name,
			      shown(value), section, list);
}

static int conf_handler(void *user, const char *section, const char *name,
			const char *value)
{
	struct conf_loader *ld = user;
	char why[512];
	int ki, i;

	if (ld->continuation) {
		append_pending(ld, value);
		return 1;
	}
	if (!ld->section_ok)
		return 1;       /* the section header was reported */
	if (!section[0]) {
		for (i = 0; i < CONF_KEY_COUNT && strcmp(keys[i].name, name); i++)
			;
		if (i < CONF_KEY_COUNT)
			conf_msgs_add(ld->errs, "%s:%u: %s = %s: the key is outside any "
				      "section; it belongs in [%s]", ld->path,
				      ld->lineno, name, shown(value), keys[i].section);
		else
			conf_msgs_add(ld->errs, "%s:%u: %s = %s: the key is outside any "
				      "section, and no section has it", ld->path,
				      ld->lineno, name, shown(value));
		return 1;
	}

	ki = find_key(section, name);
	if (ki < 0) {
		unknown_key(ld, section, name, value);
		return 1;
	}
	if (ld->set_line[ki]) {
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: duplicate key, already "
			      "set on line %u; each key may appear once", ld->path,
			      ld->lineno, section, name, shown(value),
			      ld->set_line[ki]);
		return 1;
	}
	ld->set_line[ki] = ld->lineno;
	if (keys[ki].type == T_PERCENTILES || keys[ki].type == T_BUCKETS) {
		ld->pending = ki;
		ld->pending_line = ld->lineno;
		ld->pending_overflow = false;
		ld->pending_text[0] = '\0';
		append_pending(ld, value);
		ld->cont = CONT_LIST;
		return 1;
	}
	ld->cont = CONT_REJECT;
	if (parse_value(&keys[ki], value, ld->cfg, why, sizeof(why))) {
		add_problem(ld->errs, ld->path, ld->lineno, NULL, &keys[ki], value, why);
		ld->cont = CONT_SWALLOW;
		return 1;
	}
	ld->cfg->origin[ki] = (struct conf_origin){ CONF_SRC_FILE, ld->lineno, NULL };
	return 1;
}

static int read_config_file(struct pm_config *c, const char *path,
			    struct conf_msgs *errs)
{
	struct conf_loader *ld;
	unsigned before = errs->count;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path,
			      strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path,
			      strerror(EISDIR));
		return -EISDIR;
	}
	ld = calloc(1, sizeof(*ld));
	if (!ld) {
		close(fd);
		conf_msgs_add(errs, "%s: out of memory", path);
		return -ENOMEM;
	}
	*ld = (struct conf_loader){
		.cfg = c, .errs = errs, .path = path, .section_ok = true,
		.pending = -1,
	};
	ld->f = fdopen(fd, "r");
	if (!ld->f) {
		rc = -errno;
		close(fd);
		free(ld);
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path,
			      strerror(-rc));
		return rc;
	}
	rc = ini_parse_stream(conf_reader, ld, conf_handler, ld);
	finish_pending(ld);
	if (ld->read_err) {
		conf_msgs_add(errs, "%s:%u: cannot read the config file: %s", path,
			      ld->lineno + 1, strerror(ld->read_err));
		rc = -ld->read_err;
	} else if (rc == -2) {
		conf_msgs_add(errs, "%s: out of memory while parsing", path);
		rc = -ENOMEM;
	} else if (rc != 0) {
		/* conf_reader() hands inih only lines it can parse, so this
		 * is a case it did not foresee: still an error. */
		conf_msgs_add(errs, "%s:%d: cannot parse this line", path, rc);
		rc = -EINVAL;
	} else {
		rc = errs->count > before ? -EINVAL : 0;
	}
	fclose(ld->f);
	free(ld->line);
	free(ld);
	return rc;
}

/* ================================================== */
/* Defaults, merging, loading */

static void set_defaults(struct pm_config *c)
{
	unsigned i;

	memset(c, 0, sizeof(*c));
	c->capacity = 65536;
	c->max_names = 512;
	c->mode = 0660;
	c->cpu = -1;
	c->poll_interval_ns = NS_PER_MS;
	c->flush_interval_ns = NS_PER_S;
	c->stalled_sample_timeout_ns = 5 * NS_PER_S;
	c->max_open_spans = 4096;
	c->max_stages = 1024;
	c->unit = CONF_UNIT_NS;
	c->percentiles = (struct conf_percentiles){ 4, { 50, 90, 99, 99.9 } };
	c->rotate_keep = 10;
	c->buckets.n = DEFAULT_BUCKET_COUNT;
	for (i = 0; i < DEFAULT_BUCKET_COUNT; i++)
		c->buckets.le_ns[i] = (uint64_t)DEFAULT_BUCKET_FIRST_NS << i;
	for (i = 0; i < CONF_KEY_COUNT; i++)
		c->origin[i] = (struct conf_origin){ CONF_SRC_DEFAULT, 0, NULL };
	c->origin[CONF_SHM_GROUP].detail = "the daemon's own group";
	c->origin[CONF_PROMETHEUS_BUCKETS].detail = "doubling from 16ns";
	c->instance_origin = (struct conf_origin){ CONF_SRC_DEFAULT, 0, NULL };
	c->duration_origin = (struct conf_origin){ CONF_SRC_DEFAULT, 0,
						   "until signalled" };
}

/*
 * $LOGS_DIRECTORY is what systemd's LogsDirectory= sets; with several
 * directories it is a colon-separated list and the first is ours.
 */
static void logs_dir(char *buf, size_t n, const char **ret_detail)
{
	const char *env = getenv("LOGS_DIRECTORY");
	size_t len = env ? strcspn(env, ":") : 0;

	if (!len || len >= n) {
		snprintf(buf, n, ".");
		*ret_detail = "current directory";
		return;
	}
	memcpy(buf, env, len);
	while (len > 1 && buf[len - 1] == '/')
		len--;
	buf[len] = '\0';
	*ret_detail = "$LOGS_DIRECTORY";
}

static void derive_path(struct pm_config *c, struct conf_msgs *errs,
			enum conf_key ki, const char *dir, const char *detail,
			const char *stem, const char *suffix)
{
	char *field = FIELD(c, &keys[ki], char);
	int w;

	if (c->origin[ki].source != CONF_SRC_DEFAULT)
		return;
	if (!strcmp(dir, "."))
		w = snprintf(field, keys[ki].size, "%s%s", stem, suffix);
	else
		w = snprintf(field, keys[ki].size, "%s%s%s%s", dir,
			     strcmp(dir, "/") ? "/" : "", stem, suffix);
	if (w < 0 || (size_t)w >= keys[ki].size) {
		field[0] = '\0';
		conf_msgs_add(errs, "built-in default: [%s] %s: the path under %s "
			      "is too long; set [%s] %s explicitly", keys[ki].section,
			      keys[ki].name, detail, keys[ki].section, keys[ki].name);
	}
	c->origin[ki].detail = detail;
}

/* Fill what depends on other settings: names and paths left at default. */
static void derive_defaults(struct pm_config *c, struct conf_msgs *errs)
{
	const char *stem = c->instance[0] ? c->instance : DEFAULT_STEM;
	const char *detail;
	char dir[CONF_PATH_MAX];

	if (c->origin[CONF_SHM_NAME].source == CONF_SRC_DEFAULT) {
		snprintf(c->shm_name, sizeof(c->shm_name), "%s", stem);
		c->origin[CONF_SHM_NAME].detail =
			c->instance[0] ? "instance name" : NULL;
	}
	logs_dir(dir, sizeof(dir), &detail);
	derive_path(c, errs, CONF_OUTPUT_CSV, dir, detail, stem, ".csv");
	derive_path(c, errs, CONF_OUTPUT_SUMMARY, dir, detail, stem, "_summary.txt");
}

/* Checks across keys, on the merged values. */
static void check_merged(struct pm_config *c, struct conf_msgs *errs)
{
	static const enum conf_key files[] = {
		CONF_OUTPUT_CSV, CONF_OUTPUT_SUMMARY, CONF_PROMETHEUS_TEXTFILE,
	};
	char why[512];
	size_t i, j;

	/* Two writers on one file would corrupt both. */
	for (i = 1; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *a = FIELD(c, &keys[files[i]], char);

		for (j = 0; j < i && a[0]; j++) {
			const char *b = FIELD(c, &keys[files[j]], char);

			if (!strcmp(a, b)) {
				snprintf(why, sizeof(why), "the same file as [%s] %s",
					 keys[files[j]].section, keys[files[j]].name);
				add_merged_problem(errs, c, files[i], why);
				break;
			}
		}
	}
}

int conf_load(const struct pm_cmdline *cl, struct pm_config *ret,
	      struct conf_msgs *errs)
{
	struct pm_config *c;
	char why[512];
	int ki, rc = 0;

	conf_msgs_init(errs);
	c = malloc(sizeof(*c));
	if (!c) {
		conf_msgs_add(errs, "out of memory loading the configuration");
		return -ENOMEM;
	}
	set_defaults(c);

	if (cl && cl->instance) {
		if (conf_check_name(cl->instance, why, sizeof(why)))
			conf_msgs_add(errs, "command line: --instance %s: %s; allowed: %s",
				      shown(cl->instance), why, CONF_NAME_RULE);
		else
			snprintf(c->instance, sizeof(c->instance), "%s", cl->instance);
		c->instance_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0,
							   "--instance" };
	}
	if (cl && cl->duration_set) {
		c->run_duration_ns = cl->duration_ns;
		c->duration_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0,
							   "--duration" };
	}
	if (cl && cl->config_path) {
		if (strlen(cl->config_path) >= sizeof(c->config_path)) {
			conf_msgs_add(errs, "%.64s...: the config file path is too long",
				      cl->config_path);
			rc = -ENAMETOOLONG;
		} else {
			snprintf(c->config_path, sizeof(c->config_path), "%s",
				 cl->config_path);
			rc = read_config_file(c, c->config_path, errs);
		}
	}
	for (ki = 0; cl && ki < CONF_KEY_COUNT; ki++) {
		const char *opt = cl->opt[ki] ? cl->opt[ki] : "option";

		if (!cl->value[ki])
			continue;
		if (parse_value(&keys[ki], cl->value[ki], c, why, sizeof(why))) {
			add_problem(errs, NULL, 0, opt, &keys[ki], cl->value[ki], why);
			continue;
		}
		c->origin[ki] = (struct conf_origin){ CONF_SRC_CMDLINE, 0, opt };
	}
	derive_defaults(c, errs);
	check_merged(c, errs);

	if (errs->count) {
		free(c);
		return rc ? rc : -EINVAL;
	}
	memcpy(ret, c, sizeof(*c));
	free(c);
	return 0;
}

int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen)
{
	struct pm_config *c;
	char why[512];
	int rc;

	if ((unsigned)k >= CONF_KEY_COUNT)
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "command line: %s: out of memory", opt);
		return -ENOMEM;
	}
	set_defaults(c);
	rc = parse_value(&keys[k], value, c, why, sizeof(why));
	if (rc)
		format_problem(err, errlen, NULL, 0, opt, &keys[k], value, why);
	free(c);
	return rc;
}

int conf_check_machine(const struct pm_config *c, struct conf_msgs *errs)
{
	char why[512];
	int ki, rc = 0;

	conf_msgs_init(errs);
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		int r = check_environment(&keys[ki], c, why, sizeof(why));

		if (r) {
			add_merged_problem(errs, c, (enum conf_key)ki, why);
			if (!rc)
				rc = r;
		}
	}
	return rc;
}

/* ================================================== */
/* Printing */

/*
 * Print a list key over as many lines as it takes: each line must stay
 * within inih's line limit, and indented lines continue the list.
 */
static void print_list(FILE *f, const struct conf_keydef *k,
		       const struct pm_config *c, const char *from)
{
	unsigned i, n = list_length(k, c);
	char line[128], el[64];
	size_t len;
	bool first = true;

	len = (size_t)snprintf(line, sizeof(line), "%s =", k->name);
	for (i = 0; i <= n; i++) {
		size_t ellen = 0;

		if (i < n) {
			format_element(k, c, i, el, sizeof(el) - 1);
			ellen = strlen(el);
			if (i + 1 < n) {
				el[ellen++] = ',';
				el[ellen] = '\0';
			}
		}
		/* Flush before the line grows past 64 columns, and at the end. */
		if (i == n || (len + 1 + ellen > 64 && line[len - 1] != '=')) {
			if (first)
				fprintf(f, "%-38s ; from %s\n", line, from);
			else
				fprintf(f, "%s\n", line);
			first = false;
			len = (size_t)snprintf(line, sizeof(line), "   ");
		}
		if (i < n)
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", el);
	}
}

void conf_print(FILE *f, const struct pm_config *c)
{
	char value[CONF_PATH_MAX + 64], kv[CONF_PATH_MAX + 128], from[CONF_PATH_MAX + 64];
	const char *section = NULL;
	int ki;

	fprintf(f, "; perfmond effective configuration\n");
	fprintf(f, "; config file: %s\n",
		c->config_path[0] ? c->config_path : "none (built-in defaults)");
	origin_text(c, &c->instance_origin, from, sizeof(from));
	fprintf(f, "; instance: %s (from %s)\n",
		c->instance[0] ? c->instance : "none", from);
	conf_format_duration(c->run_duration_ns, value, sizeof(value));
	origin_text(c, &c->duration_origin, from, sizeof(from));
	fprintf(f, "; duration: %s (from %s)\n", value, from);

	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &keys[ki];

		if (!section || strcmp(section, k->section)) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		origin_text(c, &c->origin[ki], from, sizeof(from));
		if (k->type == T_PERCENTILES || k->type == T_BUCKETS) {
			print_list(f, k, c, from);
			continue;
		}
		format_value(k, c, value, sizeof(value));
		snprintf(kv, sizeof(kv), "%s = %s", k->name, value);
		/* The blank before ';' makes it a comment to inih, so this
		 * output reads back as a config file, as long as each line
		 * stays within inih's limit. */
		if ((strlen(kv) < 38 ? 38 : strlen(kv)) + strlen(" ; from ") +
		    strlen(from) > PRINT_LINE_MAX)
			fprintf(f, "; %s: from %s\n%s\n", k->name, from, kv);
		else
			fprintf(f, "%-38s ; from %s\n", kv, from);
	}
}

/* ================================================== */
/* Reload */

static void copy_key(struct pm_config *dst, const struct pm_config *src, int ki)
{
	memcpy((char *)dst + keys[ki].off, (const char *)src + keys[ki].off,
	       keys[ki].size);
	dst->origin[ki] = src->origin[ki];
}

void conf_diff_live(const struct pm_config *old, const struct pm_config *new,
		    struct pm_config *ret_run, struct conf_reload *ret)
{
	char a[CONF_PATH_MAX + 64], b[CONF_PATH_MAX + 64], from[CONF_PATH_MAX + 64];
	int ki;

	ret->applied = 0;
	ret->kept = 0;
	conf_msgs_init(&ret->msgs);
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &keys[ki];

		format_value(k, old, a, sizeof(a));
		format_value(k, new, b, sizeof(b));
		if (!strcmp(a, b))
			continue;
		origin_text(new, &new->origin[ki], from, sizeof(from));
		if (k->live) {
			ret->applied |= CONF_KEY_BIT(ki);
			conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): applied; "
				      "was %s", k->section, k->name, shown(b), from,
				      shown(a));
		} else {
			ret->kept |= CONF_KEY_BIT(ki);
			conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): cannot "
				      "change while perfmond runs; keeping %s until "
				      "it restarts%s", k->section, k->name, shown(b),
				      from, shown(a),
				      ki == CONF_SHM_CAPACITY || ki == CONF_SHM_MAX_NAMES ?
				      " (an existing segment also keeps its size "
				      "until 'perfmonctl remove')" : "");
		}
	}

	/* ret_run may be old or new itself: copy only what must move. */
	if (ret_run == old) {
		for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
			if (!(ret->kept & CONF_KEY_BIT(ki)))
				copy_key(ret_run, new, ki);
		}
	} else {
		if (ret_run != new)
			memcpy(ret_run, new, sizeof(*ret_run));
		for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
			if (ret->kept & CONF_KEY_BIT(ki))
				copy_key(ret_run, old, ki);
		}
		return;
	}
	memcpy(ret_run->instance, new->instance, sizeof(new->instance));
	ret_run->run_duration_ns = new->run_duration_ns;
	ret_run->instance_origin = new->instance_origin;
	ret_run->duration_origin = new->duration_origin;
	memcpy(ret_run->config_path, new->config_path, sizeof(new->config_path));
}
