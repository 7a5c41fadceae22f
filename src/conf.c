/*
 * conf.c - load, validate, print and reload perfmond's configuration.
 *
 * Flow: beside the data path.  main() calls conf_load() before it creates
 * anything, so a bad setting costs an exit 78 and nothing else; the drain,
 * report and writer modules then read the struct pm_config built here.
 *
 * A load starts from the built-in defaults, reads the file through
 * conf_file.c, applies the command line, derives what depends on other
 * settings (shm name and output paths from the instance name and
 * $LOGS_DIRECTORY) and checks across keys; only a configuration without a
 * single problem reaches the caller.  Keys are described once, in
 * conf_keys.c, and values parsed exactly by conf_value.c.  Also here: the
 * machine-dependent checks (group, CPU), --check-config's printout and the
 * SIGHUP classification of what may change live.
 */
#include "build-config.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon/layout.h>

#include "cmdline.h"
#include "conf.h"
#include "conf_file.h"
#include "conf_keys.h"
#include "conf_value.h"

_Static_assert(CONF_NAME_MAX == PERFMON_NAME_MAX, "shm name limits disagree");
_Static_assert(CONF_KEY_COUNT <= 64, "key bit masks are 64 bits wide");

#define DEFAULT_STEM "perfmon"
#define PRINT_LINE_MAX 199      /* the longest line inih reads whole */
/*
 * The default Prometheus buckets: 39 ns to 1.1 s on two-digit mantissas
 * (1.0 1.1 ... 2.0 2.2 ... 3.0 3.3 ... 9.2 times a power of ten) chosen so
 * that no bucket is more than 10% wider than its lower bound.  Within a
 * bucket histogram_quantile() interpolates linearly, so its estimate of any
 * quantile between 50 ns and 1 s is then within 10% of the true one.
 */
static const unsigned default_mantissa[] = { 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22,
					     24, 26, 28, 30, 33, 36, 39, 42, 46, 50, 55, 60,
					     65, 70, 77, 84, 92 };
#define DEFAULT_BUCKET_FIRST_NS 39
#define DEFAULT_BUCKET_LAST_NS  1100000000u

void conf_default_buckets(struct conf_buckets *ret)
{
	ret->n = 0;
	for (uint64_t decade = 1; decade <= 100000000; decade *= 10)
		for (unsigned i = 0; i < sizeof(default_mantissa) / sizeof(default_mantissa[0]);
		     i++) {
			uint64_t ns = default_mantissa[i] * decade;

			if (ns >= DEFAULT_BUCKET_FIRST_NS && ns <= DEFAULT_BUCKET_LAST_NS)
				ret->le_ns[ret->n++] = ns;
		}
}

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
/* Groups and CPUs: what only this machine can tell */

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
	if (conf_value_check_group_syntax(group, NULL, 0))
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

		if (conf_value_parse_count(group, &v, NULL, 0) ||
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
	if (k->type == CONF_T_GROUP) {
		gid_t gid;
		int rc = conf_resolve_group(c->group, &gid);

		if (rc == -ENOENT)
			return conf_value_why(why, whylen, rc, "no such group");
		if (rc)
			return conf_value_why(why, whylen, rc, "cannot look up the group: %s",
					      strerror(-rc));
	} else if (k->type == CONF_T_CPU && c->cpu >= 0) {
		cpu_set_t set;
		char list[256];

		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set))
			return 0;       /* nothing to check against */
		if (!CPU_ISSET(c->cpu, &set)) {
			format_cpu_set(&set, list, sizeof(list));
			return conf_value_why(why, whylen, -EINVAL,
					      "CPU %d is not available to this process, "
					      "which may run on CPUs %s", c->cpu, list);
		}
	}
	return 0;
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
	c->poll_interval_ns = CONF_NS_PER_MS;
	c->flush_interval_ns = CONF_NS_PER_S;
	c->stalled_sample_timeout_ns = 5 * CONF_NS_PER_S;
	c->max_open_spans = 4096;
	c->max_stages = 1024;
	c->unit = CONF_UNIT_NS;
	c->percentiles = (struct conf_percentiles){ 4, { 50, 90, 99, 99.9 } };
	c->rotate_keep = 10;
	conf_default_buckets(&c->buckets);
	for (i = 0; i < CONF_KEY_COUNT; i++)
		c->origin[i] = (struct conf_origin){ CONF_SRC_DEFAULT, 0, NULL };
	c->origin[CONF_SHM_GROUP].detail = "the daemon's own group";
	c->origin[CONF_PROMETHEUS_BUCKETS].detail = "39ns to 1.1s, at most 10% apart";
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
	char *field = CONF_FIELD(c, &conf_keys[ki], char);
	int w;

	if (c->origin[ki].source != CONF_SRC_DEFAULT)
		return;
	if (!strcmp(dir, "."))
		w = snprintf(field, conf_keys[ki].size, "%s%s", stem, suffix);
	else
		w = snprintf(field, conf_keys[ki].size, "%s%s%s%s", dir,
			     strcmp(dir, "/") ? "/" : "", stem, suffix);
	if (w < 0 || (size_t)w >= conf_keys[ki].size) {
		field[0] = '\0';
		conf_msgs_add(errs, "built-in default: [%s] %s: the path under %s "
			      "is too long; set [%s] %s explicitly", conf_keys[ki].section,
			      conf_keys[ki].name, detail, conf_keys[ki].section,
			      conf_keys[ki].name);
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
		const char *a = CONF_FIELD(c, &conf_keys[files[i]], char);

		for (j = 0; j < i && a[0]; j++) {
			const char *b = CONF_FIELD(c, &conf_keys[files[j]], char);

			if (!strcmp(a, b)) {
				snprintf(why, sizeof(why), "the same file as [%s] %s",
					 conf_keys[files[j]].section, conf_keys[files[j]].name);
				conf_keys_add_merged_problem(errs, c, files[i], why);
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
				      conf_keys_shown(cl->instance), why, CONF_NAME_RULE);
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
			rc = conf_file_read(c, c->config_path, errs);
		}
	}
	for (ki = 0; cl && ki < CONF_KEY_COUNT; ki++) {
		const char *opt = cl->opt[ki] ? cl->opt[ki] : "option";

		if (!cl->value[ki])
			continue;
		if (conf_keys_parse(&conf_keys[ki], cl->value[ki], c, why, sizeof(why))) {
			conf_keys_add_problem(errs, NULL, 0, opt, &conf_keys[ki], cl->value[ki],
					      why);
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
	rc = conf_keys_parse(&conf_keys[k], value, c, why, sizeof(why));
	if (rc)
		conf_keys_format_problem(err, errlen, NULL, 0, opt, &conf_keys[k], value, why);
	free(c);
	return rc;
}

int conf_check_machine(const struct pm_config *c, struct conf_msgs *errs)
{
	char why[512];
	int ki, rc = 0;

	conf_msgs_init(errs);
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		int r = check_environment(&conf_keys[ki], c, why, sizeof(why));

		if (r) {
			conf_keys_add_merged_problem(errs, c, (enum conf_key)ki, why);
			if (!rc)
				rc = r;
		}
	}
	return rc;
}

int conf_warnings(const struct pm_config *c, struct conf_msgs *warns)
{
	size_t n = strlen(c->prom_textfile);
	int count = 0;

	conf_msgs_init(warns);
	if (n && (n < 5 || strcmp(c->prom_textfile + n - 5, ".prom") != 0)) {
		conf_keys_add_merged_problem(warns, c, CONF_PROMETHEUS_TEXTFILE,
					     "does not end in \".prom\": node_exporter's textfile "
					     "collector reads only *.prom files and will ignore it");
		count++;
	}
	return count;
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
	unsigned i, n = conf_keys_list_length(k, c);
	char line[128], el[64];
	size_t len;
	bool first = true;

	len = (size_t)snprintf(line, sizeof(line), "%s =", k->name);
	for (i = 0; i <= n; i++) {
		size_t ellen = 0;

		if (i < n) {
			conf_keys_format_element(k, c, i, el, sizeof(el) - 1);
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
	conf_keys_origin_text(c, &c->instance_origin, from, sizeof(from));
	fprintf(f, "; instance: %s (from %s)\n",
		c->instance[0] ? c->instance : "none", from);
	conf_format_duration(c->run_duration_ns, value, sizeof(value));
	conf_keys_origin_text(c, &c->duration_origin, from, sizeof(from));
	fprintf(f, "; duration: %s (from %s)\n", value, from);

	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];

		if (!section || strcmp(section, k->section)) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		conf_keys_origin_text(c, &c->origin[ki], from, sizeof(from));
		if (k->type == CONF_T_PERCENTILES || k->type == CONF_T_BUCKETS) {
			print_list(f, k, c, from);
			continue;
		}
		conf_keys_format(k, c, value, sizeof(value));
		/* "key = value" unless that would not read back: a value that
		 * starts with ';' or '#' would become a comment after the blank,
		 * and a line past inih's limit would be cut.  "key=value" keeps
		 * both. */
		snprintf(kv, sizeof(kv), "%s = %s", k->name, value);
		if (value[0] == ';' || value[0] == '#' || strlen(kv) > PRINT_LINE_MAX)
			snprintf(kv, sizeof(kv), "%s=%s", k->name, value);
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
	memcpy((char *)dst + conf_keys[ki].off, (const char *)src + conf_keys[ki].off,
	       conf_keys[ki].size);
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
		const struct conf_keydef *k = &conf_keys[ki];

		conf_keys_format(k, old, a, sizeof(a));
		conf_keys_format(k, new, b, sizeof(b));
		if (!strcmp(a, b))
			continue;
		conf_keys_origin_text(new, &new->origin[ki], from, sizeof(from));
		if (k->live) {
			ret->applied |= CONF_KEY_BIT(ki);
			conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): applied; "
				      "was %s", k->section, k->name, conf_keys_shown(b), from,
				      conf_keys_shown(a));
		} else {
			ret->kept |= CONF_KEY_BIT(ki);
			conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): cannot "
				      "change while perfmond runs; keeping %s until "
				      "it restarts%s", k->section, k->name, conf_keys_shown(b),
				      from, conf_keys_shown(a),
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
