/*
 * conf_file.c - read a perfmond.conf(5) file into a struct pm_config.
 *
 * Flow: beside the data path; conf_load() calls it between the built-in
 * defaults and the command line.
 *
 * inih finds the keys; it reads through line_reader(), which counts the
 * lines, so the handler knows each key's FILE:LINE (the Debian build of
 * inih does not pass it).  The reader also refuses what inih would get
 * wrong silently: a line too long for its buffer (inih would split it), a
 * NUL byte, a malformed or unknown section header (inih would report only
 * the first error, or none), so what inih returns is never needed.  Every
 * line reaches inih without its indentation, so an indented key is a key.
 * A line in which inih found no key is settled as the next one is read:
 * indented after percentiles or buckets, it continues the list (which is
 * how conf_print() writes a long one); anywhere else it is an error.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "conf_file.h"
#include "conf_keys.h"

/* What an indented line without a key means, given the key before it,
 * when that is not a pending list (whose elements it continues). */
enum cont_mode {
	CONT_NONE,      /* no key before it: a syntax error */
	CONT_REJECT,    /* the key before takes one value: an error */
	CONT_SWALLOW,   /* the key before was already reported: ignore */
};

struct conf_reader {
	struct pm_config *cfg;
	struct conf_msgs *errs;
	const char *path;
	FILE *f;
	char *line;             /* getline()'s buffer: the line inih had last */
	size_t cap;
	unsigned lineno;
	int read_err;
	bool section_ok;        /* false inside an unknown or malformed section */
	char *unkeyed;          /* that line past its indentation, until inih
				 * finds a key in it; NULL: nothing to settle */
	bool indented;
	enum cont_mode cont;
	unsigned set_line[CONF_KEY_COUNT];
	/* A list key is parsed once its last continuation line is read. */
	int pending;            /* key index, or -1 */
	bool pending_overflow;
	char pending_text[CONF_VALUE_MAX];
};

static void finish_pending(struct conf_reader *r)
{
	int ki = r->pending;
	struct conf_origin o = { CONF_SRC_FILE, ki < 0 ? 0 : r->set_line[ki], NULL };
	char why[512];

	if (ki < 0)
		return;
	r->pending = -1;
	if (r->pending_overflow)
		conf_msgs_add(r->errs, "%s:%u: [%s] %s: the list is longer than %zu bytes",
			      r->path, o.line, conf_keys[ki].section, conf_keys[ki].name,
			      sizeof(r->pending_text) - 1);
	else if (conf_keys_parse(ki, r->pending_text, r->cfg, why, sizeof(why)))
		conf_keys_add_problem(r->errs, r->path, &o, ki, r->pending_text, why);
	else
		r->cfg->origin[ki] = o;
}

/* One line's elements onto the pending list; a line break separates
 * elements like a comma does. */
static void append_pending(struct conf_reader *r, const char *v)
{
	size_t len = strlen(r->pending_text), room = sizeof(r->pending_text) - len;
	int w;

	if (!*v)
		return;
	w = snprintf(r->pending_text + len, room, "%s%s",
		     !len ? "" : r->pending_text[len - 1] == ',' ? " " : ", ", v);
	if (w < 0 || (size_t)w >= room)
		r->pending_overflow = true;
}

/* The line before had no key in it: inih did not call the handler. */
static void settle(struct conf_reader *r)
{
	char *t = r->unkeyed, *e = t;

	if (!t)
		return;
	r->unkeyed = NULL;
	if (r->indented && r->pending >= 0) {
		/* inih's inline comment: a ';' after a blank */
		while ((e = strchr(e + 1, ';')) && !isspace((unsigned char)e[-1]))
			;
		for (e = e ? e : t + strlen(t); e > t && isspace((unsigned char)e[-1]); e--)
			;
		*e = '\0';
		append_pending(r, t);
	} else if (r->indented && r->cont == CONT_REJECT) {
		conf_msgs_add(r->errs, "%s:%u: '%.60s': only percentiles and buckets can "
			      "continue on an indented line", r->path, r->lineno, t);
	} else if (!r->indented || r->cont == CONT_NONE) {
		finish_pending(r);
		r->cont = CONT_NONE;
		conf_msgs_add(r->errs, "%s:%u: '%.60s': not a 'key = value' line, a [section] "
			      "header or a comment", r->path, r->lineno, t);
	}
}

/* A "[name]" line, checked here where its line number is known; inih
 * gets the bare header, or nothing when it is malformed. */
static char *section_header(struct conf_reader *r, char *t, char *str, int num)
{
	char *close = strchr(t, ']'), *name = t + 1, *rest, *e;

	finish_pending(r);
	r->cont = CONT_NONE;
	r->section_ok = false;
	if (!close) {
		conf_msgs_add(r->errs, "%s:%u: %s: the section header has no closing ']'",
			      r->path, r->lineno, t);
		return str;
	}
	for (rest = close + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest && *rest != ';' && *rest != '#') {
		conf_msgs_add(r->errs, "%s:%u: %s: unexpected text after the section header",
			      r->path, r->lineno, t);
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
	struct conf_reader *r = stream;
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
	if (memchr(s, '\0', (size_t)len)) {
		conf_msgs_add(r->errs, "%s:%u: the line contains a NUL byte; a config file is "
			      "plain text", r->path, r->lineno);
		r->pending = -1;        /* a list missing a piece: its errors would mislead */
		return str;
	}
	if (len && s[len - 1] == '\n')
		s[--len] = '\0';
	if (len && s[len - 1] == '\r')
		s[--len] = '\0';
	if (r->lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3)) {
		s += 3;
		len -= 3;
	}
	if ((size_t)len > max) {
		conf_msgs_add(r->errs, "%s:%u: the line is %zd bytes long; lines can be at most "
			      "%zu bytes", r->path, r->lineno, len, max);
		r->pending = -1;        /* a list missing a piece: its errors would mislead */
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
static void unknown_key(struct conf_reader *r, const char *section, const char *name,
			const char *value)
{
	const char *elsewhere = NULL, *nearly = NULL, *at = r->path;
	char list[256] = "";
	size_t len = 0;

	for (int i = 0; i < CONF_KEY_COUNT; i++) {
		if (!strcmp(conf_keys[i].section, section)) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
					 conf_keys[i].name);

			if (w > 0 && (size_t)w < sizeof(list) - len)
				len += (size_t)w;
			if (!strcasecmp(conf_keys[i].name, name))
				nearly = conf_keys[i].name;
		} else if (!strcmp(conf_keys[i].name, name)) {
			elsewhere = conf_keys[i].section;
		}
	}
	value = CONF_SHOWN(value);
	if (!section[0] && elsewhere)
		conf_msgs_add(r->errs, "%s:%u: %s = %s: the key is outside any section; it belongs "
			      "in [%s]", at, r->lineno, name, value, elsewhere);
	else if (!section[0])
		conf_msgs_add(r->errs, "%s:%u: %s = %s: the key is outside any section, and no "
			      "section has it", at, r->lineno, name, value);
	else if (!name[0])
		conf_msgs_add(r->errs, "%s:%u: [%s] = %s: the key name is missing; allowed in "
			      "[%s]: %s", at, r->lineno, section, value, section, list);
	else if (elsewhere)
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: unknown key in [%s]; '%s' belongs in "
			      "[%s]", at, r->lineno, section, name, value, section, name, elsewhere);
	else if (nearly)
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: unknown key (keys are lower case: "
			      "did you mean '%s'?)", at, r->lineno, section, name, value, nearly);
	else
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: unknown key; allowed in [%s]: %s",
			      at, r->lineno, section, name, value, section, list);
}

static int key_handler(void *user, const char *section, const char *name, const char *value)
{
	struct conf_reader *r = user;
	struct conf_origin o = { CONF_SRC_FILE, r->lineno, NULL };
	char why[512];
	int ki;

	r->unkeyed = NULL;
	finish_pending(r);
	/* Until the key is known good, what follows is not its continuation. */
	r->cont = CONT_SWALLOW;
	if (!r->section_ok)
		return 1;       /* the section header was reported */
	if ((ki = conf_keys_find(section, name)) < 0) {
		unknown_key(r, section, name, value);
	} else if (r->set_line[ki]) {
		conf_msgs_add(r->errs, "%s:%u: [%s] %s = %s: duplicate key, already set on line "
			      "%u; each key may appear once", r->path, o.line, section, name,
			      CONF_SHOWN(value), r->set_line[ki]);
	} else if (CONF_IS_LIST(&conf_keys[ki])) {
		r->set_line[ki] = o.line;
		r->pending = ki;
		r->pending_overflow = false;
		r->pending_text[0] = '\0';
		append_pending(r, value);
	} else {
		r->set_line[ki] = o.line;
		if (conf_keys_parse(ki, value, r->cfg, why, sizeof(why))) {
			conf_keys_add_problem(r->errs, r->path, &o, ki, value, why);
		} else {
			r->cfg->origin[ki] = o;
			r->cont = CONT_REJECT;
		}
	}
	return 1;
}

int conf_file_read(struct pm_config *c, const char *path, struct conf_msgs *errs)
{
	struct conf_reader r = {
		.cfg = c, .errs = errs, .path = path, .section_ok = true, .pending = -1,
	};
	unsigned before = errs->count;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	rc = fd < 0 ? -errno : fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) ? -EISDIR : 0;
	if (!rc && !(r.f = fdopen(fd, "r")))
		rc = -errno;
	if (rc) {
		if (fd >= 0)
			close(fd);
		conf_msgs_add(errs, "%s: cannot read the config file: %s", path, strerror(-rc));
		return rc;
	}
	rc = ini_parse_stream(line_reader, &r, key_handler, &r);
	settle(&r);
	finish_pending(&r);
	if (r.read_err) {
		conf_msgs_add(errs, "%s:%u: cannot read the config file: %s", path, r.lineno + 1,
			      strerror(r.read_err));
		rc = -r.read_err;
	} else if (rc == -2) {
		conf_msgs_add(errs, "%s: out of memory while parsing", path);
		rc = -ENOMEM;
	} else {
		rc = errs->count > before ? -EINVAL : 0;
	}
	fclose(r.f);
	free(r.line);
	return rc;
}
