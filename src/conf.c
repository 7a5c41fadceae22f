/*
 * conf.c - read, load, validate, print and reload perfmond's configuration.
 * A load lays the file and the command line over the table's defaults,
 * derives what depends on other settings and checks across keys; only a
 * configuration without a single problem reaches the caller, so a bad
 * setting costs an exit 78 and nothing else.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>
#include <perfmon/layout.h>

#include "conf_keys.h"
#include "cpus.h"
#include "csv_out.h"

_Static_assert(CONF_NAME_MAX == PERFMON_NAME_MAX, "shm name limits disagree");
_Static_assert(CONF_KEY_COUNT <= 64, "key bit masks are 64 bits wide");
_Static_assert(CONF_OUTPUT_SUMMARY == CONF_OUTPUT_CSV + 1, "derived paths are csv, summary");

#define PRINT_LINE_MAX 199      /* the longest line inih reads whole */
/* percentiles and buckets: values that may go on over indented lines. */
#define IS_LIST(k) ((k)->type == CONF_T_PERCENTILES || (k)->type == CONF_T_BUCKETS)

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

/* A pin that would fail fails at start, before anything is created. */
int conf_check_machine(const struct pm_config *c, struct msgs *errs)
{
	char why[512];
	gid_t gid;
	int rc = conf_resolve_group(c->group, &gid);

	msgs_init(errs);
	if (rc) {
		snprintf(why, sizeof(why), rc == -ENOENT ? "no such group" :
			 "cannot look up the group: %s", strerror(-rc));
		conf_keys_report(errs, c, CONF_SHM_GROUP, why, true);
	}
	if (cpus_check_allowed(c->cpu, why, sizeof(why)) == 0)
		return rc;
	conf_keys_report(errs, c, CONF_COLLECTOR_CPU, why, true);
	return rc ? rc : -EINVAL;
}

int conf_warnings(const struct pm_config *c, struct msgs *warns)
{
	size_t n = strlen(c->prom_textfile);

	msgs_init(warns);
	if (n && (n < 5 || strcmp(c->prom_textfile + n - 5, ".prom")))
		conf_keys_report(warns, c, CONF_PROMETHEUS_TEXTFILE, "does not end in \".prom\": "
				 "node_exporter's textfile collector reads only *.prom files and "
				 "will ignore it", false);
	if (c->outliers && !c->csv[0])
		conf_keys_report(warns, c, CONF_OUTPUT_OUTLIERS, "no outliers will be written: "
				 "their file goes beside the CSV, and [output] csv is empty",
				 false);
	return (int)warns->count;
}

/*
 * The INI file.  inih finds sections, keys and continuation lines, reading
 * through line_reader(), which counts lines for each key's FILE:LINE.  The
 * reader reports every line that inih would get wrong or pass over in
 * silence and hands inih an empty line instead.  Indentation reaches inih
 * only on a line with no key in it, which it gives the handler as more of
 * the value above: an indented key is a key, and only a list goes on over
 * indented lines.
 */
struct reader {
	struct pm_config *cfg;
	struct msgs *errs;
	const char *path;
	FILE *f;
	char *line;             /* getline()'s buffer */
	size_t cap;
	unsigned lineno, set_line[CONF_KEY_COUNT];
	int read_err;
	bool section_ok;        /* false inside an unknown or malformed section */
	bool keyed;             /* inih has a key that an indented line continues */
	bool cont;              /* the line handed to inih continues that key */
	bool cont_ok;           /* ... and that key was read without a problem */
	int list;               /* the list key being gathered, or -1 */
	char list_text[CONF_VALUE_MAX];
};

static bool set_value(struct reader *r, int ki, const char *v, unsigned line)
{
	return !conf_keys_set(r->cfg, ki, v, &(struct conf_origin){ CONF_SRC_FILE, line, NULL },
			      r->errs);
}

/* A list is parsed whole once a key or section follows it, or the file ends. */
static void finish_list(struct reader *r)
{
	if (r->list >= 0)
		set_value(r, r->list, r->list_text, r->set_line[r->list]);
	r->list = -1;
}

/* One line's elements onto the list: a line break separates like a comma. */
static void append_list(struct reader *r, const char *v)
{
	size_t len = strlen(r->list_text), room = sizeof(r->list_text) - len;
	int w = snprintf(r->list_text + len, room, "%s%s", !len || !*v ? "" :
			 r->list_text[len - 1] == ',' ? " " : ", ", v);

	if (w < 0 || (size_t)w >= room) {
		msgs_add(r->errs, "%s:%u: [%s] %s: the list is longer than %zu bytes",
			 r->path, r->set_line[r->list], conf_keys[r->list].section,
			 conf_keys[r->list].name, sizeof(r->list_text) - 1);
		r->list = -1;
		r->cont_ok = false;     /* the rest of it is not worth reporting */
	}
}

/* A "[name]" line: inih gets the bare header, or nothing when it is malformed. */
static char *section_header(struct reader *r, char *t, char *str, int num)
{
	char *close = strchr(t, ']'), *name = t + 1 + strspn(t + 1, " \t\v\f"), *e = close;
	const char *rest = close ? close + 1 + strspn(close + 1, " \t\v\f") : "";

	finish_list(r);
	r->section_ok = r->keyed = false;
	if (!close || (*rest && *rest != ';' && *rest != '#')) {
		msgs_add(r->errs, "%s:%u: %s: %s", r->path, r->lineno, t, !close ?
			 "the section header has no closing ']'" :
			 "unexpected text after the section header");
		return str;
	}
	while (e > name && isspace((unsigned char)e[-1]))
		e--;
	*e = '\0';
	for (int i = 0; i < CONF_KEY_COUNT && !r->section_ok; i++)
		r->section_ok = !strcmp(conf_keys[i].section, name);
	if (!r->section_ok)
		msgs_add(r->errs, "%s:%u: [%s]: unknown section; allowed: [shm], [collector], "
			 "[output], [prometheus]", r->path, r->lineno, name);
	snprintf(str, (size_t)num, "[%s]", name);
	return str;
}

/* inih's fgets(): one line of the file, counted, as inih should see it. */
static char *line_reader(char *str, int num, void *stream)
{
	struct reader *r = stream;
	ssize_t len;
	char *s, *t, *e;

	errno = 0;
	if ((len = getline(&r->line, &r->cap, r->f)) < 0) {
		if (ferror(r->f))
			r->read_err = errno ? errno : EIO;
		return NULL;
	}
	s = r->line + (++r->lineno == 1 && !strncmp(r->line, "\xef\xbb\xbf", 3) ? 3 : 0);
	len -= s - r->line;
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		s[--len] = '\0';
	str[0] = '\0';          /* what inih gets for a line settled here */
	r->cont = false;
	if (memchr(s, '\0', (size_t)len)) {
		msgs_add(r->errs, "%s:%u: the line contains a NUL byte; a config file is "
			 "plain text", r->path, r->lineno);
		return str;
	}
	t = s + strspn(s, " \t\v\f");
	if (*t == ';' || *t == '#')
		return str;     /* a comment, however long: inih need not see it */
	if (len >= num) {
		msgs_add(r->errs, "%s:%u: the line is %zd bytes long; lines can be at most "
			 "%d bytes", r->path, r->lineno, len, num - 1);
		return str;
	}
	if (*t == '[')
		return section_header(r, t, str, num);
	/* Where inih would end a key's name: '=' or ':', or a ';' after a
	 * blank, which starts a comment. */
	for (e = t; *e && *e != '=' && *e != ':'; e++)
		if (*e == ';' && e > t && isspace((unsigned char)e[-1]))
			break;
	if (!*t || *e == '=' || *e == ':') {
		s = t;
	} else if (t > s && r->keyed) {
		/* inih keeps a continuation's comment: cut it here. */
		while (e > t && isspace((unsigned char)e[-1]))
			e--;
		*e = '\0';
		r->cont = true;
	} else {
		msgs_add(r->errs, "%s:%u: '%.60s': not a 'key = value' line, a [section] "
			 "header or a comment", r->path, r->lineno, t);
		return str;
	}
	snprintf(str, (size_t)num, "%s", s);
	return str;
}

/* A key its section (or the lack of one) does not have: name the key it
 * may have meant, or what the section has. */
static void unknown_key(struct reader *r, const char *section, const char *name,
			const char *value)
{
	const struct conf_keydef *near = NULL;
	char list[256] = "", hint[320] = "";
	size_t len = 0;

	for (int i = 0; i < CONF_KEY_COUNT; i++) {
		const struct conf_keydef *k = &conf_keys[i];

		near = near || strcasecmp(k->name, name) ? near : k;
		if (!strcmp(k->section, section))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						len ? ", " : "", k->name);
	}
	if (near && strcmp(near->name, name))
		snprintf(hint, sizeof(hint), "; did you mean '%s'?", near->name);
	else if (near)
		snprintf(hint, sizeof(hint), "; it belongs in [%s]", near->section);
	else if (section[0])
		snprintf(hint, sizeof(hint), "; allowed in [%s]: %s", section, list);
	msgs_add(r->errs, "%s:%u: %s%s%s%s%.80s = %s: %s%s", r->path, r->lineno,
		 section[0] ? "[" : "", section, section[0] ? "]" : "",
		 section[0] && name[0] ? " " : "", name, CONF_SHOWN(value),
		 !section[0] ? "the key is outside any section" :
		 !name[0] ? "the key name is missing" : "unknown key", hint);
}

static int key_handler(void *user, const char *section, const char *name, const char *value)
{
	struct reader *r = user;
	int ki;

	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		if (!strcmp(conf_keys[ki].section, section) && !strcmp(conf_keys[ki].name, name))
			break;
	}
	if (r->cont) {
		if (r->cont_ok && r->list >= 0)
			append_list(r, value);
		else if (r->cont_ok)
			msgs_add(r->errs, "%s:%u: '%.60s': only percentiles and buckets can "
				 "continue on an indented line", r->path, r->lineno, value);
		return 1;
	}
	finish_list(r);
	r->keyed = name[0];
	r->cont_ok = false;     /* until the key is known good */
	if (!r->section_ok)
		return 1;       /* the section header was reported */
	if (ki == CONF_KEY_COUNT) {
		unknown_key(r, section, name, value);
	} else if (r->set_line[ki]) {
		msgs_add(r->errs, "%s:%u: [%s] %s = %s: duplicate key, already set on line "
			 "%u; each key may appear once", r->path, r->lineno, section, name,
			 CONF_SHOWN(value), r->set_line[ki]);
	} else if (IS_LIST(&conf_keys[ki])) {
		r->set_line[ki] = r->lineno;
		r->list = ki;
		r->list_text[0] = '\0';
		r->cont_ok = true;
		append_list(r, value);
	} else {
		r->set_line[ki] = r->lineno;
		r->cont_ok = set_value(r, ki, value, r->lineno);
	}
	return 1;
}

/* Read c->config_path into `c`, recording each value's FILE:LINE.  Every
 * problem goes to `errs`, and keys that parsed are set even then, so the
 * caller reads into a staging copy.  0, -EINVAL or the open or read error. */
static int read_file(struct pm_config *c, struct msgs *errs)
{
	const char *path = c->config_path;
	struct reader r = { .cfg = c, .errs = errs, .path = path, .section_ok = true, .list = -1 };
	unsigned before = errs->count;

	/* A directory opens, and fails at the first read. */
	if (!(r.f = fopen(path, "re")))
		r.read_err = errno;
	/* inih's own result is only -2, out of memory, when built to allocate. */
	else if (ini_parse_stream(line_reader, &r, key_handler, &r) == -2)
		r.read_err = ENOMEM;
	finish_list(&r);
	if (r.read_err)
		msgs_add(errs, "%s: cannot read the config file: %s", path,
			 strerror(r.read_err));
	if (r.f)
		fclose(r.f);
	free(r.line);
	return r.read_err ? -r.read_err : errs->count > before ? -EINVAL : 0;
}

/*
 * The shm name and output paths left at their defaults take the instance
 * name as stem, under $LOGS_DIRECTORY (systemd's LogsDirectory=; with
 * several directories a colon-separated list, whose first is ours) or else
 * the current directory.
 */
static void derive_defaults(struct pm_config *c, struct msgs *errs)
{
	const char *stem = c->instance[0] ? c->instance : "perfmon";
	const char *dir = getenv("LOGS_DIRECTORY"), *sep = "/";
	int len = dir ? (int)strcspn(dir, ":") : 0, dlen;

	if (c->origin[CONF_SHM_NAME].source == CONF_SRC_DEFAULT) {
		snprintf(c->shm_name, sizeof(c->shm_name), "%s", stem);
		c->origin[CONF_SHM_NAME].detail = c->instance[0] ? "instance name" : NULL;
	}
	while (len > 1 && dir[len - 1] == '/')
		len--;
	/* "." adds nothing to a file name, and "/" needs no separator. */
	dlen = len == 1 && dir[0] == '.' ? 0 : len;
	if (!dlen || dir[dlen - 1] == '/')
		sep = "";
	for (int ki = CONF_OUTPUT_CSV; ki <= CONF_OUTPUT_SUMMARY; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];
		char *field = (char *)c + k->off;
		int w;

		if (c->origin[ki].source != CONF_SRC_DEFAULT)
			continue;
		c->origin[ki].detail = len ? "$LOGS_DIRECTORY" : "current directory";
		w = snprintf(field, k->size, "%.*s%s%s%s", dlen, dlen ? dir : "", sep, stem,
			     ki == CONF_OUTPUT_CSV ? ".csv" : CSV_SUMMARY_SUFFIX);
		if (w < 0 || (size_t)w >= k->size) {
			field[0] = '\0';
			msgs_add(errs, "built-in default: [%s] %s: the path under "
				 "$LOGS_DIRECTORY is too long; set it explicitly",
				 k->section, k->name);
		}
	}
}

/* Across keys: two writers on one file would corrupt both. */
static void check_merged(struct pm_config *c, struct msgs *errs)
{
	static const enum conf_key keys[] = {
		CONF_OUTPUT_CSV, CONF_OUTPUT_SUMMARY, CONF_PROMETHEUS_TEXTFILE,
	};
	const char *paths[] = { c->csv, c->summary, c->prom_textfile };
	char why[512];

	for (int i = 1, j; i < 3; i++) {
		for (j = 0; j < i && (!paths[i][0] || strcmp(paths[i], paths[j])); j++)
			;
		if (j == i)
			continue;
		snprintf(why, sizeof(why), "the same file as [%s] %s", conf_keys[keys[j]].section,
			 conf_keys[keys[j]].name);
		conf_keys_report(errs, c, keys[i], why, true);
	}
}

int conf_load(const struct pm_cmdline *cl, struct pm_config *ret, struct msgs *errs)
{
	static const struct pm_cmdline none;
	struct conf_origin o = { CONF_SRC_DEFAULT, 0, NULL };
	struct pm_config *c;
	int rc = 0;

	msgs_init(errs);
	if (!(c = calloc(1, sizeof(*c)))) {     /* every origin: CONF_SRC_DEFAULT */
		msgs_add(errs, "out of memory loading the configuration");
		return -ENOMEM;
	}
	cl = cl ? cl : &none;
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		if (conf_keys[ki].def)
			conf_keys_set(c, ki, conf_keys[ki].def, &o, errs);
	}
	conf_default_buckets(&c->buckets);
	c->origin[CONF_SHM_GROUP].detail = "the daemon's own group";
	c->origin[CONF_PROMETHEUS_BUCKETS].detail = "39ns to 1.1s, at most 10% apart";
	c->duration_origin.detail = "until signalled";
	if (cl->instance) {     /* a valid name: cmdline_parse() checked it */
		snprintf(c->instance, sizeof(c->instance), "%s", cl->instance);
		c->instance_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0, "--instance" };
	}
	if (cl->duration_set) {
		c->run_duration_ns = cl->duration_ns;
		c->duration_origin = (struct conf_origin){ CONF_SRC_CMDLINE, 0, "--duration" };
	}
	if (cl->config_path && strlen(cl->config_path) >= sizeof(c->config_path)) {
		msgs_add(errs, "%.64s...: the config file path is too long", cl->config_path);
		rc = -ENAMETOOLONG;
	} else if (cl->config_path) {
		snprintf(c->config_path, sizeof(c->config_path), "%s", cl->config_path);
		rc = read_file(c, errs);
	}
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		o = (struct conf_origin){ CONF_SRC_CMDLINE, 0, cl->opt[ki] ? cl->opt[ki] : "option" };
		if (cl->value[ki])
			conf_keys_set(c, ki, cl->value[ki], &o, errs);
	}
	derive_defaults(c, errs);
	check_merged(c, errs);
	if (!errs->count)
		memcpy(ret, c, sizeof(*c));
	free(c);
	return !errs->count ? 0 : rc ? rc : -EINVAL;
}

/* A list as conf_keys_format() joins it, `col` columns in, wrapped onto
 * indented lines within 64 columns, which inih reads back as one list.
 * `out` has room: at most 256 elements, each 4 more bytes at most. */
static void wrap_list(char *out, const char *text, size_t col)
{
	for (const char *el = text; *el; ) {
		size_t w = strcspn(el, ",") + (el[strcspn(el, ",")] == ',');
		bool wrap = el > text && col + 1 + w > 64;

		out += sprintf(out, "%s%.*s", el == text ? "" : wrap ? "\n    " : " ", (int)w, el);
		col = (wrap ? 4 : col + 1) + w;
		el += w + (el[w] == ' ');
	}
	*out = '\0';
}

void conf_print(FILE *f, const struct pm_config *c)
{
	char value[CONF_VALUE_MAX], text[2 * CONF_VALUE_MAX], kv[2 * CONF_VALUE_MAX + 64];
	char from[CONF_PATH_MAX + 64];
	const char *section = "";
	size_t first;

	fprintf(f, "; perfmond effective configuration\n; config file: %s\n",
		c->config_path[0] ? c->config_path : "none (built-in defaults)");
	origin_text(c, &c->instance_origin, from, sizeof(from));
	fprintf(f, "; instance: %s (from %s)\n", c->instance[0] ? c->instance : "none", from);
	units_format(c->run_duration_ns, &units_duration, value, sizeof(value));
	origin_text(c, &c->duration_origin, from, sizeof(from));
	fprintf(f, "; duration: %s (from %s)\n", value, from);

	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];

		if (strcmp(section, k->section))
			fprintf(f, "\n[%s]\n", section = k->section);
		origin_text(c, &c->origin[ki], from, sizeof(from));
		conf_keys_format(ki, c, IS_LIST(k) ? value : text, sizeof(value));
		if (IS_LIST(k))
			wrap_list(text, value, strlen(k->name) + 2);
		/* "key = value" unless that would not read back: a value that
		 * starts with ';' or '#' would become a comment after the blank,
		 * and a line past inih's limit would be cut.  "key=value" keeps
		 * both. */
		snprintf(kv, sizeof(kv), "%s = %s", k->name, text);
		if (text[0] == ';' || text[0] == '#' || strcspn(kv, "\n") > PRINT_LINE_MAX)
			snprintf(kv, sizeof(kv), "%s=%s", k->name, text);
		/* The blank before ';' makes it a comment to inih, as long as the
		 * line stays within inih's limit; else the comment goes above. */
		first = strcspn(kv, "\n");
		if ((first < 38 ? 38 : first) + strlen(" ; from ") + strlen(from) > PRINT_LINE_MAX)
			fprintf(f, "; %s: from %s\n%s\n", k->name, from, kv);
		else
			fprintf(f, "%-38.*s ; from %s%s\n", (int)first, kv, from, kv + first);
	}
}

void conf_diff_live(const struct pm_config *old, const struct pm_config *new,
		    struct pm_config *ret_run, struct conf_reload *ret)
{
	char a[CONF_VALUE_MAX], b[CONF_VALUE_MAX], from[CONF_PATH_MAX + 64];
	struct pm_config run;

	memcpy(&run, new, sizeof(run));         /* apart, as ret_run may be old or new */
	ret->applied = ret->kept = 0;
	msgs_init(&ret->msgs);
	for (int ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const struct conf_keydef *k = &conf_keys[ki];

		/* The text is canonical and whole: equal texts, equal values. */
		conf_keys_format(ki, old, a, sizeof(a));
		conf_keys_format(ki, new, b, sizeof(b));
		if (!strcmp(a, b))
			continue;
		origin_text(new, &new->origin[ki], from, sizeof(from));
		*(k->live ? &ret->applied : &ret->kept) |= CONF_KEY_BIT(ki);
		msgs_add(&ret->msgs, k->live ? "[%s] %s = %s (from %s): applied; was %s%s" :
			 "[%s] %s = %s (from %s): cannot change while perfmond runs; keeping "
			 "%s until it restarts%s", k->section, k->name, CONF_SHOWN(b), from,
			 CONF_SHOWN(a), ki == CONF_SHM_CAPACITY || ki == CONF_SHM_MAX_NAMES ?
			 " (an existing segment also keeps its size until 'perfmonctl "
			 "remove')" : "");
		if (k->live)
			continue;
		memcpy((char *)&run + k->off, (const char *)old + k->off, k->size);
		run.origin[ki] = old->origin[ki];
	}
	memcpy(ret_run, &run, sizeof(run));
}
