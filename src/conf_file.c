/*
 * conf_file.c - read a perfmond.conf(5) file into a struct pm_config, for
 * conf_load(), each value through the key table (conf_keys.c).
 *
 * inih finds sections, keys and continuation lines; it reads through
 * line_reader(), which counts lines so the handler knows each key's
 * FILE:LINE.  The reader reports beforehand every line that inih would
 * get wrong or pass over in silence (too long for its buffer, a NUL byte,
 * a bad section header, no key and nothing to continue) and hands inih an
 * empty line instead.  Indentation reaches inih only on a line with no key
 * in it, which inih then gives the handler as more of the value above: an
 * indented key is a key, and only a list goes on over indented lines.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "conf_keys.h"

struct reader {
	struct pm_config *cfg;
	struct conf_msgs *errs;
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

/* Parse `v` into key `ki`, or report why not. */
static bool set_value(struct reader *r, int ki, const char *v, unsigned line)
{
	struct conf_origin o = { CONF_SRC_FILE, line, NULL };
	char why[512];

	if (conf_keys_parse(ki, v, r->cfg, why, sizeof(why))) {
		conf_keys_report(r->errs, r->path, &o, ki, v, why, true);
		return false;
	}
	r->cfg->origin[ki] = o;
	return true;
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
		conf_msgs_add(r->errs, "%s:%u: [%s] %s: the list is longer than %zu bytes",
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
		conf_msgs_add(r->errs, "%s:%u: %s: %s", r->path, r->lineno, t, !close ?
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
		conf_msgs_add(r->errs, "%s:%u: [%s]: unknown section; allowed: [shm], [collector], "
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
		conf_msgs_add(r->errs, "%s:%u: the line contains a NUL byte; a config file is "
			      "plain text", r->path, r->lineno);
		return str;
	}
	t = s + strspn(s, " \t\v\f");
	if (*t == ';' || *t == '#')
		return str;     /* a comment, however long: inih need not see it */
	if (len >= num) {
		conf_msgs_add(r->errs, "%s:%u: the line is %zd bytes long; lines can be at most "
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
		conf_msgs_add(r->errs, "%s:%u: '%.60s': not a 'key = value' line, a [section] "
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
	conf_msgs_add(r->errs, "%s:%u: %s%s%s%s%.80s = %s: %s%s", r->path, r->lineno,
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
			conf_msgs_add(r->errs, "%s:%u: '%.60s': only percentiles and buckets can "
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
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: duplicate key, already set on line "
			      "%u; each key may appear once", r->path, r->lineno, section, name,
			      CONF_SHOWN(value), r->set_line[ki]);
	} else if (CONF_IS_LIST(&conf_keys[ki])) {
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

int conf_file_read(struct pm_config *c, const char *path, struct conf_msgs *errs)
{
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
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path,
			      strerror(r.read_err));
	if (r.f)
		fclose(r.f);
	free(r.line);
	return r.read_err ? -r.read_err : errs->count > before ? -EINVAL : 0;
}
