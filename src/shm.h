/*
 * shm.h - the two shared-memory segments of an instance, daemon side.
 *
 * Flow: perfmond creates (or reopens) the ring /dev/shm/<name> and the
 * control block /dev/shm/<name>.meta here; producers attach through
 * <perfmon.h>; perfmonctl opens them read-only to inspect.  The layout
 * itself is defined once, in include/perfmon/layout.h.
 */
#ifndef PERFMOND_SHM_H
#define PERFMOND_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <perfmon/layout.h>

struct shm_geometry {
	uint64_t capacity;     /* slots per sub-ring, power of two */
	uint32_t subrings;     /* sub-rings, power of two (see shm_ring_geometry) */
	uint32_t max_names;    /* name table entries */
	mode_t mode;           /* permission bits, applied regardless of umask */
	gid_t gid;             /* group to give the segments; (gid_t)-1: keep */
};

struct shm_instance {
	char name[PERFMON_NAME_MAX + 1];
	struct perfmon_ring_header *ring;
	size_t ring_len;
	struct perfmon_meta_header *meta;
	size_t meta_len;
	struct perfmon_name_entry *names;
	/* Trusted copies of the geometry: never re-read from shared memory,
	 * which any producer can scribble on. */
	uint64_t capacity;     /* slots per sub-ring */
	uint32_t subrings;
	uint32_t max_names;
	uint64_t instance_id;  /* as validated at open (or made at creation) */
	uint64_t created_ns;
	uid_t owner_uid;       /* of the control block, from fstat */
	gid_t owner_gid;
	int ring_fd, meta_fd;  /* kept by a writable open, else -1 */
	unsigned repaired;     /* SHM_REPAIRED_*: what opening had to restore */
	bool created;          /* this call created the segments (or rewrote
				* their lost headers: a new identity) */
	bool writable;
};

#define SHM_REPAIRED_SIZE   1u   /* a segment had been shrunk: size restored */
#define SHM_REPAIRED_HEADER 2u   /* its header was gone: written again */

/* What shm_restore() did. */
struct shm_restore_report {
	bool ring_restored, meta_restored;
	size_t ring_lost_bytes, meta_lost_bytes;   /* cut off by the shrink */
	size_t ring_cut_at;    /* the ring's bytes from here on are zero now */
};

/* The segments, for shm_restore(). */
#define SHM_PART_RING 1u
#define SHM_PART_META 2u

/*
 * How the configured `capacity` (total ring slots, a power of two) maps onto
 * sub-rings for a host with `cpus` possible CPUs: one sub-ring per CPU,
 * rounded up to a power of two (at most PERFMON_MAX_SUBRINGS); each gets
 * capacity / min(sub-rings, 8) slots, at least 2.  Up to 8 CPUs the ring
 * therefore keeps the configured size; beyond that it grows by capacity/8
 * per CPU, so a lone busy thread on a large host still has an eighth of the
 * configured capacity to itself.
 */
void shm_ring_geometry(uint64_t capacity, unsigned cpus, uint64_t *ret_capacity,
		       uint32_t *ret_subrings);

/* Possible CPUs of this host (the highest possible CPU number + 1): from
 * /sys/devices/system/cpu/possible, or the configured processors if they
 * are more. */
unsigned shm_possible_cpus(void);

/* The highest CPU number + 1 in a kernel CPU list such as "0-63" or
 * "0,2-5\n"; 0 when `text` holds none. */
unsigned shm_cpu_list_count(const char *text);

/*
 * Create the segments of `name` with geometry `g`, or reopen them if they
 * already exist, are owned by this user and match the geometry.  Segments
 * of ours that someone shrank get their size back, and headers lost with
 * it are written again (see `repaired`).  Segments
 * are sized and their space reserved up front, so a full /dev/shm fails
 * here and not later with SIGBUS.  On failure returns a negative errno and
 * writes a message a person can act on into `err`; `*ret` is untouched.
 */
int shm_create_or_open(const char *name, const struct shm_geometry *g,
		       struct shm_instance *ret, char *err, size_t errlen);

/*
 * Open existing segments for inspection (read-only unless `writable`) and
 * validate their layout.  -ENOENT when they do not exist.
 */
int shm_open_existing(const char *name, bool writable, struct shm_instance *ret,
		      char *err, size_t errlen);

/*
 * Rewrite the control block's fixed header (magic, layout, geometry,
 * identity, owner) from the trusted copies in `inst` wherever a producer
 * changed it.  Returns how many fields had to be restored.  Needs a
 * writable instance.
 */
unsigned shm_repair_meta(struct shm_instance *inst);

/* The same for the ring's fixed header (the head and slots are left alone). */
unsigned shm_repair_ring(struct shm_instance *inst);

/*
 * The owner's answer to a shrunk segment (see shm_guard.h): when one of the
 * segments in `parts` (SHM_PART_*) is smaller than mapped, or faults were
 * absorbed in it, give it its size back and map the file again at the same
 * address.  The ring is restored by the thread that drains it, which then
 * rebases its reader (ring_reader_rebase); the control block by the
 * reporter.  Needs a writable instance; 0 or a negative errno.
 */
int shm_restore(struct shm_instance *inst, unsigned parts, struct shm_restore_report *ret);

/* Unmap (never unlinks). */
void shm_close(struct shm_instance *inst);

/* Whether the ring segment of `name` exists (a bad name: false). */
bool shm_exists(const char *name);

/* As shm_remove, and *ret_parts says which segments were unlinked
 * (SHM_PART_RING | SHM_PART_META). */
int shm_remove_parts(const char *name, unsigned *ret_parts);

/* Unlink both segments of `name`.  0 if at least one existed, -ENOENT if
 * neither did, other negative errno on failure. */
int shm_remove(const char *name);

/* Build "/<name><suffix>" after validating `name` (the rule of
 * docs/shm-layout.md, "Names"). */
int shm_object_name(const char *name, const char *suffix, char *out, size_t outlen);

/* Room for any shm_file_path(). */
#define SHM_FILE_PATH_MAX (sizeof("/dev/shm/.meta") + PERFMON_NAME_MAX)

/* The file of segment `part` (SHM_PART_RING or SHM_PART_META) of `name`:
 * /dev/shm/<name> or /dev/shm/<name>.meta, after validating `name`.  0 or
 * a negative errno. */
int shm_file_path(const char *name, unsigned part, char *buf, size_t n);

/*
 * What the kernel records about the segments of `name` (owner, group,
 * mode: producers cannot change them), by lstat: the control block's, or
 * the ring's when only the ring exists.  0, or a negative errno (-ENOENT:
 * neither exists).
 */
int shm_segment_stat(const char *name, struct stat *ret);

#endif
