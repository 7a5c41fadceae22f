/*
 * names.c - cached, sanitised copy of the shared name table.
 *
 * The shared table is written by producers and therefore untrusted: a
 * label may lack its terminator, hold escape sequences or invalid UTF-8,
 * or change while we copy it.  Each entry is copied, its key re-checked
 * after the copy (the publisher stores the key last, with release), and
 * the label sanitised before anything else sees it.
 */
#include "build-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

static uint32_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return (uint32_t)k;
}

int name_cache_init(struct name_cache *c, uint32_t max_names)
{
	uint32_t slots = 16;
	while (slots < 2 * (uint64_t)max_names)
		slots <<= 1;
	memset(c, 0, sizeof(*c));
	c->tab = calloc(slots, sizeof(*c->tab));
	c->sorted = calloc(slots, sizeof(*c->sorted));
	if (!c->tab || !c->sorted) {
		name_cache_free(c);
		return -ENOMEM;
	}
	c->mask = slots - 1;
	return 0;
}

void name_cache_free(struct name_cache *c)
{
	free(c->tab);
	free(c->sorted);
	memset(c, 0, sizeof(*c));
}

/* Length of the valid UTF-8 sequence at s (max n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp <= 0x9F))
		return 0;   /* overlong, out of range, surrogate, C1 control */
	return len;
}

size_t name_sanitize(char *dst, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t in = 0, out = 0, end;

	if (n == 0)
		return 0;
	for (end = 0; end < n - 1 && s[end]; end++)
		;
	while (in < end) {
		size_t l = s[in] < 0x20 || s[in] == 0x7F ? 0 : utf8_len(s + in, end - in);
		if (l == 0) {
			dst[out++] = '?';
			in++;
			continue;
		}
		memcpy(dst + out, s + in, l);
		out += l;
		in += l;
	}
	dst[out] = '\0';
	return out;
}

static void insert(struct name_cache *c, uint64_t key, const char *label)
{
	uint32_t i = mix(key) & c->mask;
	while (c->tab[i].key) {
		if (c->tab[i].key == key)
			return;         /* first one wins */
		i = (i + 1) & c->mask;
	}
	c->tab[i].key = key;
	name_sanitize(c->tab[i].label, label, sizeof(c->tab[i].label));
	c->count++;
}

static int by_label(const void *a, const void *b)
{
	return strcmp((*(struct name_cache_entry *const *)a)->label,
		      (*(struct name_cache_entry *const *)b)->label);
}

/* Shared with perfmonctl's capture decoder (names.h). */
bool name_label_made_up(const char *l, uint32_t point)
{
	const char *hash = strrchr(l, '#');
	char *end;
	unsigned long n;

	if (!strcmp(l, "overflow") || !strcmp(l, "collector"))
		return true;
	if (hash && hash[1] >= '0' && hash[1] <= '9') {
		strtoul(hash + 1, &end, 10);
		if (!*end)
			return true;
	}
	if (strncmp(l, "point_", 6) || l[6] < '0' || l[6] > '9')
		return false;
	n = strtoul(l + 6, &end, 10);
	return !*end && n != point;
}

/* Mark the points' labels that another point shows as well. */
static void mark_shared(struct name_cache *c)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= c->mask; i++)
		if (c->tab[i].key && ((c->tab[i].key - 1) & 0xFF) == 0)
			c->sorted[n++] = &c->tab[i];
	qsort(c->sorted, n, sizeof(*c->sorted), by_label);
	for (uint32_t i = 0; i < n; i++) {
		struct name_cache_entry *e = c->sorted[i];
		e->shared = name_label_made_up(e->label, (uint32_t)((e->key - 1) >> 8)) ||
			    (i > 0 && !strcmp(c->sorted[i - 1]->label, e->label)) ||
			    (i + 1 < n && !strcmp(c->sorted[i + 1]->label, e->label));
	}
}

bool name_cache_refresh(struct name_cache *c, const struct perfmon_meta_header *meta,
			const struct perfmon_name_entry *tab, uint32_t max_names)
{
	uint64_t gen = __atomic_load_n(&meta->name_generation, __ATOMIC_ACQUIRE);
	uint32_t i;

	if (c->loaded && gen == c->generation)
		return false;
	memset(c->tab, 0, ((size_t)c->mask + 1) * sizeof(*c->tab));
	c->count = 0;
	for (i = 0; i < max_names && c->count * 2 <= c->mask; i++) {
		char label[PERFMON_LABEL_SIZE];
		uint64_t k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
		if (k == 0 || (k & PERFMON_NAME_CLAIMED) || ((k - 1) >> 40) != 0)
			continue;
		memcpy(label, tab[i].label, sizeof(label));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&tab[i].key, __ATOMIC_RELAXED) != k)
			continue;
		label[sizeof(label) - 1] = '\0';
		if (label[0])
			insert(c, k, label);
	}
	mark_shared(c);
	c->generation = gen;
	c->loaded = true;
	return true;
}

const char *name_cache_point(const struct name_cache *c, uint32_t point, bool *ret_shared)
{
	uint64_t key = PERFMON_NAME_KEY(point, 0);
	uint32_t i = mix(key) & c->mask;

	*ret_shared = false;
	while (c->tab[i].key) {
		if (c->tab[i].key == key) {
			*ret_shared = c->tab[i].shared;
			return c->tab[i].label;
		}
		i = (i + 1) & c->mask;
	}
	return NULL;
}

const char *name_cache_lookup(const struct name_cache *c, uint32_t point, uint8_t step)
{
	uint64_t key = PERFMON_NAME_KEY(point, step);
	uint32_t i = mix(key) & c->mask;
	while (c->tab[i].key) {
		if (c->tab[i].key == key)
			return c->tab[i].label;
		i = (i + 1) & c->mask;
	}
	return NULL;
}

bool name_cache_next(const struct name_cache *c, uint32_t *pos, uint32_t *ret_point,
		     uint8_t *ret_step, const char **ret_label)
{
	if (!c->tab)
		return false;
	for (; *pos <= c->mask; (*pos)++) {
		uint64_t k = c->tab[*pos].key;

		if (!k)
			continue;
		*ret_point = (uint32_t)((k - 1) >> 8);
		*ret_step = (uint8_t)((k - 1) & 0xFF);
		*ret_label = c->tab[*pos].label;
		(*pos)++;
		return true;
	}
	return false;
}
