/*
 * conf_file.c - read a perfmond.conf(5) file into a struct pm_config.
 *
 * Flow: beside the data path; conf_load() calls it between the built-in
 * defaults and the command line.
 *
 * inih does the INI tokenising, but reads through conf_reader(), which sees
 * every physical line first.  That is how this module knows the line number
 * of each key (the Debian build of inih does not pass it to the handler),
 * reports over-long lines instead of letting inih split them, reports every
 * syntax error rather than only the first, and decides what indentation
 * means: an indented key is a key, and only the list keys (percentiles,
 * buckets) may go on over indented lines, which is how conf_print() writes
 * a list too long for inih's line limit.
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
	struct conf_origin o = { CONF_SRC_FILE, ld->pending_line, NULL };
	const struct conf_keydef *k;
	char why[512];
	int ki = ld->pending;

	if (ki < 0)
		return;
	ld->pending = -1;
	k = &conf_keys[ki];
	if (ld->pending_overflow) {
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s: the list is longer than %zu "
			      "bytes", ld->path, ld->pending_line, k->section, k->name,
			      sizeof(ld->pending_text) - 1);
		return;
	}
	if (conf_keys_parse(ki, ld->pending_text, ld->cfg, why, sizeof(why))) {
		conf_keys_add_problem(ld->errs, ld->path, &o, ki, ld->pending_text, why);
		return;
	}
	ld->cfg->origin[ki] = o;
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
		ld->section_ok = false;
		for (int i = 0; i < CONF_KEY_COUNT && !ld->section_ok; i++)
			ld->section_ok = !strcmp(conf_keys[i].section, name);
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
		if (!strcmp(conf_keys[i].section, section)) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s",
					 len ? ", " : "", conf_keys[i].name);

			if (w > 0 && (size_t)w < sizeof(list) - len)
				len += (size_t)w;
			if (!strcasecmp(conf_keys[i].name, name))
				nearly = conf_keys[i].name;
		} else if (!strcmp(conf_keys[i].name, name)) {
			elsewhere = conf_keys[i].section;
		}
	}
	if (!name[0])
		conf_msgs_add(ld->errs, "%s:%u: [%s] = %s: the key name is missing; "
			      "allowed in [%s]: %s", ld->path, ld->lineno, section,
			      CONF_SHOWN(value), section, list);
	else if (elsewhere)
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key in [%s]; "
			      "'%s' belongs in [%s]", ld->path, ld->lineno, section,
			      name, CONF_SHOWN(value), section, name, elsewhere);
	else if (nearly)
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key (keys are "
			      "lower case: did you mean '%s'?)", ld->path, ld->lineno,
			      section, name, CONF_SHOWN(value), nearly);
	else
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: unknown key; allowed "
			      "in [%s]: %s", ld->path, ld->lineno, section, name,
			      CONF_SHOWN(value), section, list);
}

static int conf_handler(void *user, const char *section, const char *name,
			const char *value)
{
	struct conf_loader *ld = user;
	struct conf_origin o = { CONF_SRC_FILE, ld->lineno, NULL };
	char why[512];
	int ki, i;

	if (ld->continuation) {
		append_pending(ld, value);
		return 1;
	}
	if (!ld->section_ok)
		return 1;       /* the section header was reported */
	if (!section[0]) {
		i = conf_keys_find(NULL, name);
		if (i >= 0)
			conf_msgs_add(ld->errs, "%s:%u: %s = %s: the key is outside any "
				      "section; it belongs in [%s]", ld->path,
				      ld->lineno, name, CONF_SHOWN(value),
				      conf_keys[i].section);
		else
			conf_msgs_add(ld->errs, "%s:%u: %s = %s: the key is outside any "
				      "section, and no section has it", ld->path,
				      ld->lineno, name, CONF_SHOWN(value));
		return 1;
	}

	ki = conf_keys_find(section, name);
	if (ki < 0) {
		unknown_key(ld, section, name, value);
		return 1;
	}
	if (ld->set_line[ki]) {
		conf_msgs_add(ld->errs, "%s:%u: [%s] %s = %s: duplicate key, already "
			      "set on line %u; each key may appear once", ld->path,
			      ld->lineno, section, name, CONF_SHOWN(value),
			      ld->set_line[ki]);
		return 1;
	}
	ld->set_line[ki] = ld->lineno;
	if (conf_keys[ki].type == CONF_T_PERCENTILES ||
	    conf_keys[ki].type == CONF_T_BUCKETS) {
		ld->pending = ki;
		ld->pending_line = ld->lineno;
		ld->pending_overflow = false;
		ld->pending_text[0] = '\0';
		append_pending(ld, value);
		ld->cont = CONT_LIST;
		return 1;
	}
	ld->cont = CONT_REJECT;
	if (conf_keys_parse(ki, value, ld->cfg, why, sizeof(why))) {
		conf_keys_add_problem(ld->errs, ld->path, &o, ki, value, why);
		ld->cont = CONT_SWALLOW;
		return 1;
	}
	ld->cfg->origin[ki] = o;
	return 1;
}

int conf_file_read(struct pm_config *c, const char *path, struct conf_msgs *errs)
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
