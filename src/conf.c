/*
 * conf.c - load, validate, print and reload perfmond's configuration.
 *
 * Flow: beside the data path, at the top of the configuration.  main()
 * calls conf_load() before it creates anything, so a bad setting costs an
 * exit 78 and nothing else.  A load lays the file (conf_file.c) and the
 * command line over the table's defaults, derives what depends on other
 * settings (shm name and output paths from the instance name and
 * $LOGS_DIRECTORY) and checks across keys; only a configuration without a
 * single problem reaches the caller.  Also here: the machine-dependent
 * checks, --check-config's printout and the SIGHUP classification.
 */
#include "build-config.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon/layout.h>

#include "cmdline.h"
#include "conf_file.h"
#include "conf_keys.h"

_Static_assert(CONF_NAME_MAX == PERFMON_NAME_MAX, "shm name limits disagree");
_Static_assert(CONF_KEY_COUNT <= 64, "key bit masks are 64 bits wide");

#define PRINT_LINE_MAX 199      /* the longest line inih reads whole */

/*
 * 39 ns to 1.1 s on two-digit mantissas (1.0 1.1 ... 2.0 2.2 ... 3.0 3.3
 * ... 9.2 times a power of ten) chosen so that no bucket is more than 10%
 * wider than its lower bound.  Within a bucket histogram_quantile()
 * interpolates linearly, so its estimate of any quantile between 50 ns and
 * 1 s is then within 10% of the true one.
 */
void conf_default_buckets(struct conf_buckets *ret)
{
	static const unsigned mantissa[] = { 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24,
					     26, 28, 30, 33, 36, 39, 42, 46, 50, 55, 60, 65, 70,
					     77, 84, 92 };

	ret->n = 0;
	for (uint64_t decade = 1; decade <= 100000000; decade *= 10) {
		for (size_t i = 0; i < sizeof(mantissa) / sizeof(mantissa[0]); i++) {
			if (mantissa[i] * decade >= 39 && mantissa[i] * decade <= 1100000000)
				ret->le_ns[ret->n++] = mantissa[i] * decade;
		}
	}
}

/* Where a value came from: "FILE:LINE", "command line (...)" or "default (...)". */
static void origin_text(const struct pm_config *c, const struct conf_origin *o,
			char *buf, size_t n)
{
	const char *d = o->detail;

	if (o->source == CONF_SRC_FILE)
		snprintf(buf, n, "%s:%u", c->config_path, o->line);
	else
		snprintf(buf, n, "%s%s%s%s", o->source == CONF_SRC_CMDLINE ? "command line" :
			 "default", d ? " (" : "", d ? d : "", d ? ")" : "");
}

/* A problem found on the merged values, worded for where key `ki` came from. */
static void add_merged_problem(struct conf_msgs *errs, const struct pm_config *c, int ki,
			       const char *why)
{
	char value[CONF_VALUE_MAX];

	conf_keys_format(ki, c, value, sizeof(value));
	conf_keys_add_problem(errs, c->config_path, &c->origin[ki], ki, value, why);
}

int conf_resolve_group(const char *group, gid_t *ret_gid)
{
	struct group gr, *res = NULL;
	char *buf = NULL, *nb;
	size_t len = 2048;
	uint64_t v;
	int rc;

	if (!group[0]) {
		*ret_gid = (gid_t)-1;
		return 0;
	}
	if (conf_value_check_group_syntax(group, NULL, 0))
		return -EINVAL;
	do {
		len *= 2;
		if (!(nb = realloc(buf, len))) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		rc = getgrnam_r(group, &gr, buf, len, &res);
	} while (rc == ERANGE && len < (1u << 20));
	free(buf);
	if (res) {
		*ret_gid = gr.gr_gid;
		return 0;
	}
	/* getgrnam_r(3) allows these for "not found". */
	if (rc && rc != ENOENT && rc != ESRCH && rc != EBADF && rc != EPERM)
		return -rc;
	/* A number is a gid, whether or not the database names it. */
	if (group[strspn(group, "0123456789")])
		return -ENOENT;
	if (conf_value_parse_count(group, &v, NULL, 0) || v >= (gid_t)-1)
		return -EINVAL;
	*ret_gid = (gid_t)v;
	return 0;
}

/* A pin that would fail fails at start, before anything is created. */
int conf_check_machine(const struct pm_config *c, struct conf_msgs *errs)
{
	char why[512], list[256] = "";
	size_t len = 0;
	cpu_set_t set;
	gid_t gid;
	int rc;

	conf_msgs_init(errs);
	if ((rc = conf_resolve_group(c->group, &gid))) {
		snprintf(why, sizeof(why), rc == -ENOENT ? "no such group" :
			 "cannot look up the group: %s", strerror(-rc));
		add_merged_problem(errs, c, CONF_SHM_GROUP, why);
	}
	CPU_ZERO(&set);
	/* Without the affinity mask there is nothing to check against. */
	if (c->cpu < 0 || sched_getaffinity(0, sizeof(set), &set) || CPU_ISSET(c->cpu, &set))
		return rc;
	/* The CPUs it may run on, as "0-3,6". */
	for (int cpu = 0, first = -1; cpu <= CPU_SETSIZE && len < sizeof(list); cpu++) {
		if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)) {
			first = first < 0 ? cpu : first;
		} else if (first >= 0) {
			int w = snprintf(list + len, sizeof(list) - len, cpu - 1 == first ? "%s%d" :
					 "%s%d-%d", len ? "," : "", first, cpu - 1);

			len = w < 0 || (size_t)w >= sizeof(list) - len ? sizeof(list) : len + (size_t)w;
			first = -1;
		}
	}
	snprintf(why, sizeof(why), "CPU %d is not available to this process, which may run on "
		 "CPUs %s", c->cpu, list);
	add_merged_problem(errs, c, CONF_COLLECTOR_CPU, why);
	return rc ? rc : -EINVAL;
}

int conf_warnings(const struct pm_config *c, struct conf_msgs *warns)
{
	size_t n = strlen(c->prom_textfile);

	conf_msgs_init(warns);
	if (!n || (n >= 5 && !strcmp(c->prom_textfile + n - 5, ".prom")))
		return 0;
	add_merged_problem(warns, c, CONF_PROMETHEUS_TEXTFILE, "does not end in \".prom\": "
			   "node_exporter's textfile collector reads only *.prom files and will "
			   "ignore it");
	return 1;
}

static void set_defaults(struct pm_config *c, struct conf_msgs *errs)
{
	static const struct conf_origin dflt = { CONF_SRC_DEFAULT, 0, NULL };
	char why[512];

	memset(c, 0, sizeof(*c));       /* every origin: CONF_SRC_DEFAULT */
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		if (conf_keys[ki].def && conf_keys_parse(ki, conf_keys[ki].def, c, why, sizeof(why)))
			conf_keys_add_problem(errs, NULL, &dflt, ki, conf_keys[ki].def, why);
	}
	conf_default_buckets(&c->buckets);
	c->origin[CONF_SHM_GROUP].detail = "the daemon's own group";
	c->origin[CONF_PROMETHEUS_BUCKETS].detail = "39ns to 1.1s, at most 10% apart";
	c->duration_origin.detail = "until signalled";
}

/*
 * The shm name and output paths left at their defaults take the instance
 * name as stem, under $LOGS_DIRECTORY (systemd's LogsDirectory=; with
 * several directories a colon-separated list, whose first is ours) or else
 * the current directory.
 */
static void derive_defaults(struct pm_config *c, struct conf_msgs *errs)
{
	static const struct { enum conf_key ki; const char *suffix; } paths[] = {
		{ CONF_OUTPUT_CSV, ".csv" }, { CONF_OUTPUT_SUMMARY, "_summary.txt" },
	};
	const char *stem = c->instance[0] ? c->instance : "perfmon";
	const char *env = getenv("LOGS_DIRECTORY"), *detail = "current directory", *sep = "";
	size_t len = env ? strcspn(env, ":") : 0;
	int dlen = 0;

	if (c->origin[CONF_SHM_NAME].source == CONF_SRC_DEFAULT) {
		snprintf(c->shm_name, sizeof(c->shm_name), "%s", stem);
		c->origin[CONF_SHM_NAME].detail = c->instance[0] ? "instance name" : NULL;
	}
	if (len && len < CONF_PATH_MAX) {
		while (len > 1 && env[len - 1] == '/')
			len--;
		detail = "$LOGS_DIRECTORY";
		/* "." adds nothing to a file name, and "/" needs no separator. */
		dlen = len == 1 && *env == '.' ? 0 : (int)len;
		sep = len == 1 && (*env == '.' || *env == '/') ? "" : "/";
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct conf_keydef *k = &conf_keys[paths[i].ki];
		char *field = (char *)c + k->off;
		int w;

		if (c->origin[paths[i].ki].source != CONF_SRC_DEFAULT)
			continue;
		c->origin[paths[i].ki].detail = detail;
		w = snprintf(field, k->size, "%.*s%s%s%s", dlen, dlen ? env : "", sep, stem,
			     paths[i].suffix);
		if (w < 0 || (size_t)w >= k->size) {
			field[0] = '\0';
			conf_msgs_add(errs, "built-in default: [%s] %s: the path under %s is too "
				      "long; set [%s] %s explicitly", k->section, k->name, detail,
				      k->section, k->name);
		}
	}
}

/* Across keys: two writers on one file would corrupt both. */
static void check_merged(struct pm_config *c, struct conf_msgs *errs)
{
	static const enum conf_key files[] = {
		CONF_OUTPUT_CSV, CONF_OUTPUT_SUMMARY, CONF_PROMETHEUS_TEXTFILE,
	};
	char why[512];

	for (size_t i = 1; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *a = (char *)c + conf_keys[files[i]].off;

		for (size_t j = 0; j < i && a[0]; j++) {
			const struct conf_keydef *kb = &conf_keys[files[j]];

			if (!strcmp(a, (char *)c + kb->off)) {
				snprintf(why, sizeof(why), "the same file as [%s] %s", kb->section,
					 kb->name);
				add_merged_problem(errs, c, files[i], why);
				break;
			}
		}
	}
}

int conf_load(const struct pm_cmdline *cl, struct pm_config *ret, struct conf_msgs *errs)
{
	static const struct pm_cmdline none;
	struct pm_config *c;
	char why[512];
	int rc = 0;

	conf_msgs_init(errs);
	if (!(c = malloc(sizeof(*c)))) {
		conf_msgs_add(errs, "out of memory loading the configuration");
		return -ENOMEM;
	}
	set_defaults(c, errs);
	cl = cl ? cl : &none;
	if (cl->instance) {
		if (conf_check_name(cl->instance, why, sizeof(why)))
			conf_msgs_add(errs, "command line: --instance %s: %s; allowed: %s",
				      CONF_SHOWN(cl->instance), why, CONF_NAME_RULE);
		else
			snprintf(c->instance, sizeof(c->instance), "%s", cl->instance);
		c->instance_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0, "--instance" };
	}
	if (cl->duration_set) {
		c->run_duration_ns = cl->duration_ns;
		c->duration_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0, "--duration" };
	}
	if (cl->config_path && strlen(cl->config_path) >= sizeof(c->config_path)) {
		conf_msgs_add(errs, "%.64s...: the config file path is too long", cl->config_path);
		rc = -ENAMETOOLONG;
	} else if (cl->config_path) {
		snprintf(c->config_path, sizeof(c->config_path), "%s", cl->config_path);
		rc = conf_file_read(c, c->config_path, errs);
	}
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		struct conf_origin o = { CONF_SRC_CMDLINE, 0, cl->opt[ki] ? cl->opt[ki] : "option" };

		if (!cl->value[ki])
			continue;
		if (conf_keys_parse(ki, cl->value[ki], c, why, sizeof(why)))
			conf_keys_add_problem(errs, NULL, &o, ki, cl->value[ki], why);
		else
			c->origin[ki] = o;
	}
	derive_defaults(c, errs);
	check_merged(c, errs);
	if (!errs->count)
		memcpy(ret, c, sizeof(*c));
	free(c);
	return !errs->count ? 0 : rc ? rc : -EINVAL;
}

/* A list over as many lines as it takes, each within 64 columns; indented
 * lines continue it.  `text` is the list as conf_keys_format() joins it. */
static void print_list(FILE *f, const char *name, const char *text, const char *from)
{
	char line[128];
	int len = snprintf(line, sizeof(line), "%s =", name);

	for (const char *el = text; ; ) {
		size_t ellen = strcspn(el, ",");
		bool more = el[ellen] == ',';

		if (!*el || (len + 1 + ellen + more > 64 && line[len - 1] != '=')) {
			fprintf(f, from ? "%-38s ; from %s\n" : "%s\n", line, from);
			from = NULL;
			len = snprintf(line, sizeof(line), "   ");
		}
		if (!*el)
			return;
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %.*s%s", (int)ellen, el,
				more ? "," : "");
		el += ellen + (more ? 2 : 0);
	}
}

void conf_print(FILE *f, const struct pm_config *c)
{
	char value[CONF_VALUE_MAX], kv[CONF_VALUE_MAX + 64], from[CONF_PATH_MAX + 64];
	const char *section = "";

	fprintf(f, "; perfmond effective configuration\n; config file: %s\n",
		c->config_path[0] ? c->config_path : "none (built-in defaults)");
	origin_text(c, &c->instance_origin, from, sizeof(from));
	fprintf(f, "; instance: %s (from %s)\n", c->instance[0] ? c->instance : "none", from);
	conf_format_duration(c->run_duration_ns, value, sizeof(value));
	origin_text(c, &c->duration_origin, from, sizeof(from));
	fprintf(f, "; duration: %s (from %s)\n", value, from);

	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];

		if (strcmp(section, k->section))
			fprintf(f, "\n[%s]\n", section = k->section);
		origin_text(c, &c->origin[ki], from, sizeof(from));
		conf_keys_format(ki, c, value, sizeof(value));
		if (CONF_IS_LIST(k)) {
			print_list(f, k->name, value, from);
			continue;
		}
		/* "key = value" unless that would not read back: a value that
		 * starts with ';' or '#' would become a comment after the blank,
		 * and a line past inih's limit would be cut.  "key=value" keeps
		 * both. */
		snprintf(kv, sizeof(kv), "%s = %s", k->name, value);
		if (value[0] == ';' || value[0] == '#' || strlen(kv) > PRINT_LINE_MAX)
			snprintf(kv, sizeof(kv), "%s=%s", k->name, value);
		/* The blank before ';' makes it a comment to inih, as long as the
		 * line stays within inih's limit; else the comment goes above. */
		if ((strlen(kv) < 38 ? 38 : strlen(kv)) + strlen(" ; from ") + strlen(from) >
		    PRINT_LINE_MAX)
			fprintf(f, "; %s: from %s\n%s\n", k->name, from, kv);
		else
			fprintf(f, "%-38s ; from %s\n", kv, from);
	}
}

void conf_diff_live(const struct pm_config *old, const struct pm_config *new,
		    struct pm_config *ret_run, struct conf_reload *ret)
{
	char a[CONF_VALUE_MAX], b[CONF_VALUE_MAX], from[CONF_PATH_MAX + 64];
	struct pm_config run;

	memcpy(&run, new, sizeof(run));         /* apart, as ret_run may be old or new */
	ret->applied = ret->kept = 0;
	conf_msgs_init(&ret->msgs);
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];

		if (conf_keys_same(ki, old, new))
			continue;
		conf_keys_format(ki, old, a, sizeof(a));
		conf_keys_format(ki, new, b, sizeof(b));
		origin_text(new, &new->origin[ki], from, sizeof(from));
		if (k->live) {
			ret->applied |= CONF_KEY_BIT(ki);
			conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): applied; was %s",
				      k->section, k->name, CONF_SHOWN(b), from, CONF_SHOWN(a));
			continue;
		}
		ret->kept |= CONF_KEY_BIT(ki);
		conf_msgs_add(&ret->msgs, "[%s] %s = %s (from %s): cannot change while perfmond "
			      "runs; keeping %s until it restarts%s", k->section, k->name,
			      CONF_SHOWN(b), from, CONF_SHOWN(a),
			      ki == CONF_SHM_CAPACITY || ki == CONF_SHM_MAX_NAMES ? " (an existing "
			      "segment also keeps its size until 'perfmonctl remove')" : "");
		memcpy((char *)&run + k->off, (const char *)old + k->off, k->size);
		run.origin[ki] = old->origin[ki];
	}
	memcpy(ret_run, &run, sizeof(run));
}
