/*
 * names.h - the daemon's view of the name table in the control segment.
 *
 * Flow: producers publish labels into the shared name table
 * (perfmon_name() in include/perfmon.h); the report code asks this cache
 * for the label of a point or stage.  The cache copies and sanitises every
 * label out of shared memory, so nothing a producer writes there can reach
 * a CSV row or a terminal unescaped, and it reloads only when the table's
 * generation counter moves.
 */
#ifndef PERFMOND_NAMES_H
#define PERFMOND_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfmon/layout.h>

struct name_cache_entry {
	uint64_t key;                      /* PERFMON_NAME_KEY; 0 = empty */
	bool shared;                       /* a point's label another point also
					    * shows (see name_cache_point) */
	char label[PERFMON_LABEL_SIZE];
};

struct name_cache {
	struct name_cache_entry *tab;      /* open addressing, power of two */
	struct name_cache_entry **sorted;  /* scratch for finding shared labels */
	uint32_t mask;
	uint32_t count;
	uint64_t generation;
	bool loaded;
};

/* Allocate room for `max_names` labels.  0 or -ENOMEM. */
int name_cache_init(struct name_cache *c, uint32_t max_names);
void name_cache_free(struct name_cache *c);

/*
 * Reload from the shared table (`max_names` entries at `tab`, the trusted
 * count) if `generation` moved since the last load.  Returns true when it
 * reloaded.  Entries being written, malformed keys and duplicate keys (only
 * the first counts) are skipped.
 */
bool name_cache_refresh(struct name_cache *c, const struct perfmon_meta_header *meta,
			const struct perfmon_name_entry *tab, uint32_t max_names);

/* The label of (point, step), or NULL when none was published. */
const char *name_cache_lookup(const struct name_cache *c, uint32_t point, uint8_t step);

/*
 * The label of `point` (its step-0 name), or NULL; *ret_shared tells
 * whether another point shows the same one: another point published it
 * too, or it is a label the reports give themselves ("point_N" of another
 * N, "overflow", "collector").  Reports then add "#point" so that no two
 * points' rows can be mistaken for each other.
 */
const char *name_cache_point(const struct name_cache *c, uint32_t point, bool *ret_shared);

/* Is `label` one the reports make up themselves for a point other than
 * `point` ("point_N" of another N, "overflow", "collector", or ending in
 * "#N" as told-apart labels do)?  A point that publishes it is told apart
 * with "#point" too; perfmonctl's captures use the same rule. */
bool name_label_made_up(const char *label, uint32_t point);

/* Walk the cached labels: start with *pos = 0; each call gives the next
 * (point, step, label) and returns false when there are no more. */
bool name_cache_next(const struct name_cache *c, uint32_t *pos, uint32_t *ret_point,
		     uint8_t *ret_step, const char **ret_label);

/*
 * Copy at most `n - 1` bytes of `src` (which need not be terminated) into
 * `dst` as valid UTF-8 with no control characters: C0 controls, DEL, C1
 * controls and invalid sequences each become '?'.  Returns the length.
 */
size_t name_sanitize(char *dst, const char *src, size_t n);

#endif
