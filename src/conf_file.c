/*
 * conf_file.c - read a perfmond.conf(5) file into a struct pm_config, for
 * conf_load(), calling the key table (conf_keys.c) for every value.
 *
 * inih finds the keys; it reads through line_reader(), which counts the
 * lines, so the handler knows each key's FILE:LINE.  The reader also
 * refuses what inih would get wrong silently (a line too long for its
 * buffer, a NUL byte, a malformed or unknown section header), so what inih
 * returns is never needed.  Lines reach inih without their indentation, so
 * an indented key is a key.  A line in which inih found no key is settled
 * as the next is read: indented after percentiles or buckets, it continues
 * the list (as conf_print() writes a long one); after a key already
 * reported, it is ignored; anywhere else it is an error.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <ini.h>

#include "conf_keys.h"

/* What the last key line leaves for an indented line without a key. */
enum prev_key { PREV_NONE, PREV_VALUE, PREV_REPORTED };

struct reader {
	struct pm_config *cfg;
	struct conf_msgs *errs;
	const char *path;
	FILE *f;
	char *line;             /* getline()'s buffer: the line inih had last */
	size_t cap;
	unsigned lineno, set_line[CONF_KEY_COUNT];
	int read_err;
	bool section_ok;        /* false inside an unknown or malformed section */
	char *unkeyed;          /* that line past its indentation, until inih
				 * finds a key in it; NULL: nothing to settle */
	bool indented;
	enum prev_key prev;
	int list;               /* the list key read until its last line, or -1 */
	bool list_overflow;
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

static void finish_list(struct reader *r)
{
	int ki = r->list;

	if (ki < 0)
		return;
	r->list = -1;
	if (r->list_overflow)
		conf_msgs_add(r->errs, "%s:%u: [%s] %s: the list is longer than %zu bytes",
			      r->path, r->set_line[ki], conf_keys[ki].section, conf_keys[ki].name,
			      sizeof(r->list_text) - 1);
	else
		set_value(r, ki, r->list_text, r->set_line[ki]);
}

/* One line's elements onto the list; a line break separates elements like
 * a comma does. */
static void append_list(struct reader *r, const char *v)
{
	size_t len = strlen(r->list_text), room = sizeof(r->list_text) - len;
	int w;

	if (!*v)
		return;
	w = snprintf(r->list_text + len, room, "%s%s",
		     !len ? "" : r->list_text[len - 1] == ',' ? " " : ", ", v);
	if (w < 0 || (size_t)w >= room)
		r->list_overflow = true;
}

/* The line before had no key in it: inih did not call the handler. */
static void settle(struct reader *r)
{
	char *t = r->unkeyed, *e = t;

	if (!t)
		return;
	r->unkeyed = NULL;
	if (r->indented && r->list >= 0) {
		/* inih's inline comment: a ';' after a blank */
		while ((e = strchr(e + 1, ';')) && !isspace((unsigned char)e[-1]))
			;
		for (e = e ? e : t + strlen(t); e > t && isspace((unsigned char)e[-1]); e--)
			;
		*e = '\0';
		append_list(r, t);
	} else if (r->indented && r->prev == PREV_VALUE) {
		conf_msgs_add(r->errs, "%s:%u: '%.60s': only percentiles and buckets can "
			      "continue on an indented line", r->path, r->lineno, t);
	} else if (!r->indented || r->prev == PREV_NONE) {
		finish_list(r);
		r->prev = PREV_NONE;
		conf_msgs_add(r->errs, "%s:%u: '%.60s': not a 'key = value' line, a [section] "
			      "header or a comment", r->path, r->lineno, t);
	}
}

/* A "[name]" line, checked here where its line number is known; inih
 * gets the bare header, or nothing when it is malformed. */
static char *section_header(struct reader *r, char *t, char *str, int num)
{
	char *close = strchr(t, ']'), *name = t + 1, *rest, *e;

	finish_list(r);
	r->prev = PREV_NONE;
	r->section_ok = false;
	rest = close ? close + 1 + strspn(close + 1, " \t\v\f") : NULL;
	if (!close || (*rest && *rest != ';' && *rest != '#')) {
		conf_msgs_add(r->errs, "%s:%u: %s: %s", r->path, r->lineno, t, !close ?
			      "the section header has no closing ']'" :
			      "unexpected text after the section header");
		return str;
	}
	while (isspace((unsigned char)*name))
		name++;
	for (e = close; e > name && isspace((unsigned char)e[-1]); e--)
		;
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
	size_t max = num > 1 ? (size_t)num - 1 : 0;
	ssize_t len;
	char *s, *t;

	settle(r);
	errno = 0;
	if ((len = getline(&r->line, &r->cap, r->f)) < 0) {
		if (ferror(r->f))
			r->read_err = errno ? errno : EIO;
		return NULL;
	}
	r->lineno++;
	s = r->line;
	str[0] = '\0';          /* what inih gets for a line reported here */
	if (len && s[len - 1] == '\n')
		s[--len] = '\0';
	if (len && s[len - 1] == '\r')
		s[--len] = '\0';
	if (r->lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3)) {
		s += 3;
		len -= 3;
	}
	if (memchr(s, '\0', (size_t)len)) {
		conf_msgs_add(r->errs, "%s:%u: the line contains a NUL byte; a config file is "
			      "plain text", r->path, r->lineno);
		r->list = -1;   /* a list missing a piece: its errors would mislead */
		return str;
	}
	if ((size_t)len > max) {
		conf_msgs_add(r->errs, "%s:%u: the line is %zd bytes long; lines can be at most "
			      "%zu bytes", r->path, r->lineno, len, max);
		r->list = -1;
		return str;
	}
	for (t = s; isspace((unsigned char)*t); t++)
		;
	if (*t == '[')
		return section_header(r, t, str, num);
	if (*t && *t != ';' && *t != '#') {
		r->unkeyed = t;
		r->indented = t > s;
	}
	snprintf(str, (size_t)num, "%s", t);
	return str;
}

/* A key its section (or the lack of one) does not have: say where it
 * belongs, or what the section has. */
static void unknown_key(struct reader *r, const char *section, const char *name,
			const char *value)
{
	const char *elsewhere = NULL, *nearly = NULL;
	char list[256] = "", head[128], hint[320];
	size_t len = 0;

	for (int i = 0; i < CONF_KEY_COUNT; i++) {
		const struct conf_keydef *k = &conf_keys[i];

		if (strcmp(k->section, section)) {
			elsewhere = strcmp(k->name, name) ? elsewhere : k->section;
			continue;
		}
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
					k->name);
		nearly = strcasecmp(k->name, name) ? nearly : k->name;
	}
	snprintf(head, sizeof(head), "%s%s%s%s%.80s", section[0] ? "[" : "", section,
		 section[0] ? "]" : "", section[0] && name[0] ? " " : "", name);
	if (nearly)
		snprintf(hint, sizeof(hint), " (keys are lower case: did you mean '%s'?)", nearly);
	else if (elsewhere)
		snprintf(hint, sizeof(hint), "; it belongs in [%s]", elsewhere);
	else if (section[0])
		snprintf(hint, sizeof(hint), "; allowed in [%s]: %s", section, list);
	else
		snprintf(hint, sizeof(hint), "; no section has it");
	conf_msgs_add(r->errs, "%s:%u: %s = %s: %s%s", r->path, r->lineno, head,
		      CONF_SHOWN(value), !section[0] ? "the key is outside any section" :
		      !name[0] ? "the key name is missing" : "unknown key", hint);
}

static int key_handler(void *user, const char *section, const char *name, const char *value)
{
	struct reader *r = user;
	int ki;

	r->unkeyed = NULL;
	finish_list(r);
	/* Until the key is known good, what follows is not its continuation. */
	r->prev = PREV_REPORTED;
	if (!r->section_ok)
		return 1;       /* the section header was reported */
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		if (!strcmp(conf_keys[ki].section, section) && !strcmp(conf_keys[ki].name, name))
			break;
	}
	if (ki == CONF_KEY_COUNT) {
		unknown_key(r, section, name, value);
	} else if (r->set_line[ki]) {
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: duplicate key, already set on line "
			      "%u; each key may appear once", r->path, r->lineno, section, name,
			      CONF_SHOWN(value), r->set_line[ki]);
	} else if (CONF_IS_LIST(&conf_keys[ki])) {
		r->set_line[ki] = r->lineno;
		r->list = ki;
		r->list_overflow = false;
		r->list_text[0] = '\0';
		append_list(r, value);
	} else {
		r->set_line[ki] = r->lineno;
		if (set_value(r, ki, value, r->lineno))
			r->prev = PREV_VALUE;
	}
	return 1;
}

int conf_file_read(struct pm_config *c, const char *path, struct conf_msgs *errs)
{
	struct reader r = { .cfg = c, .errs = errs, .path = path, .section_ok = true, .list = -1 };
	unsigned before = errs->count;
	struct stat st;
	int rc = 0;

	if (!(r.f = fopen(path, "re")))
		rc = -errno;
	else if (fstat(fileno(r.f), &st) == 0 && S_ISDIR(st.st_mode))
		rc = -EISDIR;
	if (rc) {
		if (r.f)
			fclose(r.f);
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path, strerror(-rc));
		return rc;
	}
	/* inih's own result is only -2, out of memory, when built to allocate. */
	if (ini_parse_stream(line_reader, &r, key_handler, &r) == -2)
		r.read_err = ENOMEM;
	settle(&r);
	finish_list(&r);
	if (r.read_err)
		conf_msgs_add(errs, "%s:%u: cannot read the config file: %s", path, r.lineno + 1,
			      strerror(r.read_err));
	rc = r.read_err ? -r.read_err : errs->count > before ? -EINVAL : 0;
	fclose(r.f);
	free(r.line);
	return rc;
}
