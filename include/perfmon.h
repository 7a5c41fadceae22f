/*
 * perfmon.h - the producer side of perfmond.
 *
 * An instrumented thread includes this header and nothing else.  Each stamp
 * reads the TSC and publishes one 16-byte event (timestamp, point, seq/step)
 * into a lock-free ring in POSIX shared memory created by the perfmond
 * daemon.  Pairing, statistics and I/O all happen in the daemon; the stamp
 * does one acquire load (the enabled check), one thread-local load (the
 * CPU, which picks that CPU's sub-ring), one atomic reservation on the
 * sub-ring's own cache line, the timestamp, and four stores into a single
 * cache line.  Threads on different cores share no cache line.
 *
 * The header is self-contained: every translation unit and shared library
 * of a process that includes it stamps into the same attached ring, with no
 * library to link.  The process-wide state is one weak symbol, so the linker
 * and the dynamic loader fold every copy into one.
 *
 * It is built from pieces under perfmon/ beside it, one per audience; the
 * daemon and perfmonctl include the ones they need, never this header:
 *   perfmon/layout.h   the binary layout of the two segments (ring and
 *                      control block), defined once (docs/shm-layout.md);
 *   perfmon/clock.h    the timestamp clock and the pause hint;
 *   perfmon/stamp.h    a stamp's publish path into a given ring;
 *   perfmon/segment.h  the names of the segments.
 * What is left here is the producer's own: the process-wide state, the
 * stamps through it, attach and detach, names, and the load-time attach
 * from the environment.  A producer includes <perfmon.h> and nothing else.
 * Names beginning with perfmon__ or PERFMON__ are internal.
 *
 * Compile-time switches:
 *   PERFMON_ENABLED=0    every call compiles to nothing (arguments are not
 *                        evaluated, no symbol of ours in the object file).
 *   PERFMON_SERIALIZE=0  plain rdtsc, no fences around the timestamp.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_H
#define PERFMON_H

#include <stdint.h>
#include <stddef.h>
#include <errno.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifndef PERFMON_ENABLED
#define PERFMON_ENABLED 1
#endif
#ifndef PERFMON_SERIALIZE
#define PERFMON_SERIALIZE 1
#endif

#include "perfmon/layout.h"

/* ---- Producer API ----------------------------------------------------- */

#if PERFMON_ENABLED

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "perfmon/stamp.h"
#include "perfmon/segment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A label kept in process memory while a load-time attach is watching for
 * the segments, so it can be published into every ring attached later. */
struct perfmon__kept {
	uint32_t point;
	uint8_t  step;
	char     label[PERFMON_LABEL_SIZE];
};
#define PERFMON__KEEP_MAX 4096u  /* labels kept; about 300 KiB at most */

/*
 * Process-wide state.  `hot` is what every stamp loads: 0 while detached or
 * disabled, else the attached ring's address (page-aligned) with
 * log2(capacity per sub-ring) in bits 0-5 and log2(sub-rings) in bits 6-11
 * (perfmon/stamp.h).  Address and geometry travel in one word, so a stamp
 * racing with a re-attach always indexes the ring it loaded, never another
 * ring's size.  Weak, so every translation unit and shared object that
 * includes this header shares one instance.
 */
struct perfmon__state {
	uintptr_t hot;                        /* acquire-loaded by stamps */
	struct perfmon_ring_header *ring;     /* attached mapping, or NULL */
	size_t ring_len;
	unsigned hot_bits;                    /* geometry bits of `hot`, from attach */
	struct perfmon_meta_header *meta;
	size_t meta_len;
	int lock;                             /* attach/detach/name spin lock */
	int enabled;                          /* runtime switch (default on) */
	int auto_done;                        /* load-time attach attempted */
	int explicit_attach;                  /* the application attached or
						 detached itself: the segment
						 watcher stands down */
	int watching;                         /* the segment watcher runs, so
						 labels are kept for replay */
	int reg_slot;                         /* our registry entry + 1; 0 none */
	struct perfmon__kept *kept;           /* labels published, for replay */
	unsigned kept_n, kept_cap;
};

__attribute__((weak)) struct perfmon__state perfmon__g = {
	0, NULL, 0, 0, NULL, 0, 0, 1, 0, 0, 0, 0, NULL, 0, 0
};

/* ---- Stamps: one load of `hot`, then perfmon/stamp.h ------------------- */

PERFMON__INLINE void perfmon_begin(uint32_t point, uint32_t seq)
{
	uintptr_t h = __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(h != 0, 0))   /* the disabled path falls through */
		perfmon__publish_hot(h, PERFMON__TS_BEGIN, 0, point,
				     PERFMON_EVENT(PERFMON_BEGIN_STEP, seq));
}

PERFMON__INLINE void perfmon_step(uint32_t point, uint8_t step, uint32_t seq)
{
	uintptr_t h = __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(h != 0, 0))
		perfmon__publish_hot(h, PERFMON__TS_END, 0, point, PERFMON_EVENT(step, seq));
}

PERFMON__INLINE void perfmon_end(uint32_t point, uint32_t seq)
{
	uintptr_t h = __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(h != 0, 0))
		perfmon__publish_hot(h, PERFMON__TS_END, 0, point,
				     PERFMON_EVENT(PERFMON_END_STEP, seq));
}

PERFMON__INLINE void perfmon_value(uint32_t point, uint64_t v)
{
	uintptr_t h = __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(h != 0, 0))
		perfmon__publish_hot(h, PERFMON__TS_VALUE, v, point,
				     PERFMON_EVENT(PERFMON_VALUE_STEP, PERFMON_NO_SEQ));
}

/* Scope guard: begin now, end when the enclosing block exits by any path. */
struct perfmon__scope {
	uint32_t point;
	uint32_t seq;
};
PERFMON__INLINE struct perfmon__scope perfmon__scope_begin(uint32_t point, uint32_t seq)
{
	struct perfmon__scope s;
	s.point = point;
	s.seq = seq;
	perfmon_begin(point, seq);
	return s;
}
PERFMON__INLINE void perfmon__scope_end(struct perfmon__scope *s)
{
	perfmon_end(s->point, s->seq);
}
#define PERFMON__CAT2(a, b) a##b
#define PERFMON__CAT(a, b) PERFMON__CAT2(a, b)
#define PERFMON_SCOPE_SEQ(point, seq)                                          \
	__attribute__((cleanup(perfmon__scope_end), unused))                   \
	struct perfmon__scope PERFMON__CAT(perfmon__scope_, __COUNTER__) =     \
		perfmon__scope_begin((point), (seq))
#define PERFMON_SCOPE(point) PERFMON_SCOPE_SEQ(point, PERFMON_NO_SEQ)

/* ---- Attach, detach, enable (cold path) -------------------------------- */

/* glibc's shm_open already adds O_NOFOLLOW | O_CLOEXEC; MAP_ANONYMOUS is
 * hidden by strict standard modes, so fall back to the Linux value. */
#if defined(MAP_ANONYMOUS)
#define PERFMON__MAP_ANON MAP_ANONYMOUS
#elif defined(MAP_ANON)
#define PERFMON__MAP_ANON MAP_ANON
#else
#define PERFMON__MAP_ANON 0x20
#endif

static inline void perfmon__lock(void)
{
	while (__atomic_exchange_n(&perfmon__g.lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&perfmon__g.lock, __ATOMIC_RELAXED))
			;
}

static inline void perfmon__unlock(void)
{
	__atomic_store_n(&perfmon__g.lock, 0, __ATOMIC_RELEASE);
}

/*
 * Every wait of a producer on shared memory is bounded by this many pause
 * instructions (microseconds: some 10 to 140 cycles each): anything a
 * legitimate writer does under it (a header, a label) takes far less, and
 * a forged state must not hold the application up -- before main() too,
 * when attaching from the environment.  After it the call fails.
 */
#define PERFMON__WAIT_SPINS 4096

/* Map one segment read-write; wait briefly for its magic if the daemon is
 * still initialising it.  Returns the mapping or NULL with *err set. */
static inline void *perfmon__map(const char *path, uint64_t magic, size_t min_size,
				 size_t *ret_len, int *err)
{
	struct stat st;
	void *p;
	long i;
	int fd;

	fd = shm_open(path, O_RDWR, 0);
	if (fd < 0) {
		*err = errno == ENOENT ? -ENOENT : errno == EACCES || errno == EPERM ? -EACCES : -errno;
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < min_size) {
		close(fd);
		*err = -EPROTO;
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*err = errno == EACCES ? -EACCES : -errno;
		return NULL;
	}
	for (i = 0; i < PERFMON__WAIT_SPINS && __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE) == 0;
	     i++)
		perfmon__relax();
	if (__atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE) != magic) {
		munmap(p, (size_t)st.st_size);
		*err = -EPROTO;
		return NULL;
	}
	*ret_len = (size_t)st.st_size;
	return p;
}

/* Check the pair of mapped segments against each other and against the
 * layout this build was compiled with (perfmon/layout.h). */
static inline int perfmon__validate(const struct perfmon_ring_header *r, size_t rlen,
				    const struct perfmon_meta_header *m, size_t mlen)
{
	uint64_t cap = r->capacity;
	uint32_t nsub = r->subrings;
	if (r->version != PERFMON_LAYOUT_VERSION || m->version != PERFMON_LAYOUT_VERSION ||
	    r->header_size != PERFMON_RING_HEADER_SIZE ||
	    r->slot_size != sizeof(struct perfmon_slot) || r->clock != PERFMON_CLOCK ||
	    nsub < 1 || nsub > PERFMON_MAX_SUBRINGS || (nsub & (nsub - 1)) != 0 ||
	    r->slots_offset != PERFMON_RING_SLOTS_OFFSET(nsub) ||
	    rlen < PERFMON_RING_SLOTS_OFFSET(nsub) ||
	    cap < 2 || (cap & (cap - 1)) != 0 ||
	    cap > (rlen - PERFMON_RING_SLOTS_OFFSET(nsub)) / sizeof(struct perfmon_slot) / nsub ||
	    m->header_size != PERFMON_META_NAMES_OFFSET ||
	    m->label_size != PERFMON_LABEL_SIZE || m->ring_capacity != cap ||
	    m->instance_id != r->instance_id ||
	    m->max_names > (mlen - PERFMON_META_NAMES_OFFSET) / sizeof(struct perfmon_name_entry))
		return -EPROTO;
	return 0;
}

/* ---- Producer registry (control segment) ------------------------------- */

#ifdef O_CLOEXEC
#define PERFMON__O_CLOEXEC O_CLOEXEC
#else
#define PERFMON__O_CLOEXEC 02000000
#endif

static inline struct perfmon_producer_entry *perfmon__registry(void)
{
	return (struct perfmon_producer_entry *)((char *)perfmon__g.meta +
						 PERFMON_META_PRODUCERS_OFFSET);
}

/* True when no process `pid` exists (its /proc directory is gone). */
static inline int perfmon__pid_gone(uint32_t pid)
{
	char path[24] = "/proc/";
	char digits[11];
	int n = 0, i = 6;
	do {
		digits[n++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid);
	while (n)
		path[i++] = digits[--n];
	path[i] = '\0';
	return access(path, F_OK) < 0 && errno == ENOENT;
}

/* Claim a registry entry for this process: a free one, else one whose
 * process is gone.  Silently does nothing when the table is full. */
static inline void perfmon__register_locked(void)
{
	struct perfmon_producer_entry *e = perfmon__registry();
	uint32_t me = (uint32_t)getpid();
	char comm[PERFMON_COMM_SIZE];
	int pass, i, fd;

	memset(comm, 0, sizeof(comm));
	fd = open("/proc/self/comm", O_RDONLY | PERFMON__O_CLOEXEC);
	if (fd >= 0) {
		long n = (long)read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = '\0';
		else if (n < 0)
			comm[0] = '\0';
	}
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < PERFMON_MAX_PRODUCERS; i++) {
			uint32_t old = __atomic_load_n(&e[i].pid, __ATOMIC_RELAXED);
			if (pass == 0 ? old != 0 : old == 0 || !perfmon__pid_gone(old))
				continue;
			if (!__atomic_compare_exchange_n(&e[i].pid, &old, me, 0,
							 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				continue;
			__atomic_store_n(&e[i].attach_s, (uint64_t)0, __ATOMIC_RELAXED);
			memcpy(e[i].comm, comm, sizeof(comm));
			/* Readers take the entry as complete once attach_s is set. */
			__atomic_store_n(&e[i].attach_s, (uint64_t)time(NULL), __ATOMIC_RELEASE);
			perfmon__g.reg_slot = i + 1;
			return;
		}
}

/* Clear our registry entry, if it is still ours (a child after fork
 * inherits the parent's slot number but not its entry). */
static inline void perfmon__unregister_locked(void)
{
	if (perfmon__g.meta && perfmon__g.reg_slot) {
		struct perfmon_producer_entry *e = perfmon__registry() + (perfmon__g.reg_slot - 1);
		if (__atomic_load_n(&e->pid, __ATOMIC_RELAXED) == (uint32_t)getpid()) {
			__atomic_store_n(&e->attach_s, (uint64_t)0, __ATOMIC_RELAXED);
			__atomic_store_n(&e->pid, (uint32_t)0, __ATOMIC_RELEASE);
		}
	}
	perfmon__g.reg_slot = 0;
}

static inline int perfmon__name_locked(uint32_t point, uint8_t step, const char *label);

/* Publish every kept label into the newly attached name table. */
static inline void perfmon__replay_locked(void)
{
	unsigned i;
	for (i = 0; i < perfmon__g.kept_n; i++)
		(void)perfmon__name_locked(perfmon__g.kept[i].point, perfmon__g.kept[i].step,
					   perfmon__g.kept[i].label);
}

/* Unmap the ring safely: stamps racing with the detach may still hold the
 * old pointer, so the range is replaced by private anonymous memory (they
 * then write harmlessly) instead of being left unmapped. */
static inline void perfmon__retire(void)
{
	perfmon__unregister_locked();
	if (perfmon__g.ring)
		mmap(perfmon__g.ring, perfmon__g.ring_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | PERFMON__MAP_ANON | MAP_FIXED, -1, 0);
	if (perfmon__g.meta)
		munmap(perfmon__g.meta, perfmon__g.meta_len);
	perfmon__g.ring = NULL;
	perfmon__g.meta = NULL;
	perfmon__g.ring_len = perfmon__g.meta_len = 0;
	perfmon__g.hot_bits = 0;
}

/* Publish (or withdraw) the ring to the stamps. */
static inline void perfmon__set_hot(void)
{
	uintptr_t h = 0;
	if (perfmon__g.enabled && perfmon__g.ring)
		h = (uintptr_t)perfmon__g.ring | perfmon__g.hot_bits;
	__atomic_store_n(&perfmon__g.hot, h, __ATOMIC_RELEASE);
}

static inline int perfmon__attach_locked(const char *shm_name)
{
	char rpath[PERFMON_NAME_MAX + 8], mpath[PERFMON_NAME_MAX + 8];
	struct perfmon_ring_header *r;
	struct perfmon_meta_header *m;
	size_t rlen = 0, mlen = 0;
	int err = 0;

	if (!shm_name)
		return -EINVAL;
	if ((err = perfmon__shm_path(shm_name, "", rpath, sizeof(rpath))) < 0 ||
	    (err = perfmon__shm_path(shm_name, ".meta", mpath, sizeof(mpath))) < 0)
		return err;
	r = (struct perfmon_ring_header *)perfmon__map(rpath, PERFMON_RING_MAGIC,
		PERFMON_RING_HEADER_SIZE, &rlen, &err);
	if (!r)
		return err;
	m = (struct perfmon_meta_header *)perfmon__map(mpath, PERFMON_META_MAGIC,
		PERFMON_META_BYTES(0), &mlen, &err);
	if (!m)
		goto error_ring;
	if ((err = perfmon__validate(r, rlen, m, mlen)) < 0)
		goto error_meta;
#ifdef MADV_POPULATE_WRITE
	/* Map every slot writable now (Linux 5.14+; an error changes nothing):
	 * else the first stamp into each page of the ring takes a page fault,
	 * microseconds inside a span being measured, on every page of the
	 * first lap. */
	(void)madvise(r, PERFMON_RING_BYTES(r->subrings, r->capacity), MADV_POPULATE_WRITE);
#endif

	__atomic_store_n(&perfmon__g.hot, (uintptr_t)0, __ATOMIC_RELEASE);
	perfmon__retire();
	perfmon__g.ring = r;
	perfmon__g.ring_len = rlen;
	perfmon__g.meta = m;
	perfmon__g.meta_len = mlen;
	perfmon__g.hot_bits = (unsigned)perfmon__hot_bits(r->capacity, r->subrings);
	perfmon__set_hot();
	perfmon__register_locked();
	perfmon__replay_locked();
	return 0;

error_meta:
	munmap(m, mlen);
error_ring:
	munmap(r, rlen);
	return err;
}

/* SLICK_PERFMON_DISABLE set to anything but "" or "0". */
static inline int perfmon__env_disabled(void)
{
	const char *off = getenv("SLICK_PERFMON_DISABLE");
	return off && off[0] && !(off[0] == '0' && off[1] == '\0');
}

/*
 * Attach to the segments of `shm_name` (NULL: $SLICK_PERFMON_SHM).
 * Returns 0 or -ENOENT, -EACCES, -EPROTO, -EINVAL, -ENAMETOOLONG, or
 * -ECANCELED when SLICK_PERFMON_DISABLE forbids attaching.  Never creates
 * segments.  A failed attach leaves any previous one intact.
 */
static inline int perfmon_attach(const char *shm_name)
{
	int r;
	if (perfmon__env_disabled())
		return -ECANCELED;
	if (!shm_name)
		shm_name = getenv("SLICK_PERFMON_SHM");
	perfmon__lock();
	__atomic_store_n(&perfmon__g.explicit_attach, 1, __ATOMIC_RELEASE);
	r = perfmon__attach_locked(shm_name);
	perfmon__unlock();
	return r;
}

/* Stop stamping and unmap; later stamps are no-ops. */
static inline void perfmon_detach(void)
{
	perfmon__lock();
	__atomic_store_n(&perfmon__g.explicit_attach, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&perfmon__g.hot, (uintptr_t)0, __ATOMIC_RELEASE);
	perfmon__retire();
	perfmon__unlock();
}

/* Runtime switch; disabled stamps cost one load and a branch. */
static inline void perfmon_set_enabled(bool on)
{
	perfmon__lock();
	perfmon__g.enabled = on ? 1 : 0;
	perfmon__set_hot();
	perfmon__unlock();
}

static inline bool perfmon_enabled(void)
{
	return __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE) != 0;
}

/* ---- Names ------------------------------------------------------------- */

static inline int perfmon__label_equal(const struct perfmon_name_entry *e, const char *label,
				       size_t len)
{
	return memcmp(e->label, label, len) == 0 && e->label[len] == '\0';
}

static inline int perfmon__name_locked(uint32_t point, uint8_t step, const char *label)
{
	struct perfmon_meta_header *m = perfmon__g.meta;
	struct perfmon_name_entry *tab;
	uint64_t want = PERFMON_NAME_KEY(point, step);
	size_t len;
	uint32_t i, n;

	if (!m)
		return -ENOTCONN;
	if (!label || !label[0])
		return -EINVAL;
	for (len = 0; len < PERFMON_LABEL_SIZE && label[len]; len++)
		;
	if (len >= PERFMON_LABEL_SIZE) {
		__atomic_fetch_add(&m->name_conflicts, 1, __ATOMIC_RELAXED);
		return -ENAMETOOLONG;
	}
	tab = (struct perfmon_name_entry *)((char *)m + PERFMON_META_NAMES_OFFSET);
	n = m->max_names;
	if (n > (perfmon__g.meta_len - PERFMON_META_NAMES_OFFSET) / sizeof(*tab))
		return -EPROTO;
	for (i = 0; i < n; i++) {
		uint64_t k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
		long spins;
		if (k == 0) {
			if (!__atomic_compare_exchange_n(&tab[i].key, &k, want | PERFMON_NAME_CLAIMED,
							 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
				if (k != want && k != (want | PERFMON_NAME_CLAIMED))
					continue;
			} else {
				memcpy(tab[i].label, label, len + 1);
				__atomic_store_n(&tab[i].key, want, __ATOMIC_RELEASE);
				__atomic_fetch_add(&m->name_generation, 1, __ATOMIC_RELEASE);
				return 0;
			}
		}
		/* Someone else is writing our key: give them a moment. */
		for (spins = 0; k == (want | PERFMON_NAME_CLAIMED) && spins < PERFMON__WAIT_SPINS;
		     spins++) {
			perfmon__relax();
			k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
		}
		if (k == want) {
			if (perfmon__label_equal(&tab[i], label, len))
				return 0;
			__atomic_fetch_add(&m->name_conflicts, 1, __ATOMIC_RELAXED);
			return -EEXIST;
		}
		if (k == (want | PERFMON_NAME_CLAIMED)) {
			__atomic_fetch_add(&m->name_conflicts, 1, __ATOMIC_RELAXED);
			return -EEXIST;
		}
	}
	__atomic_fetch_add(&m->name_conflicts, 1, __ATOMIC_RELAXED);
	return -ENOSPC;
}

/* Remember an accepted label for replay.  0, -EEXIST (another label was
 * kept for the key), -ENOSPC (PERFMON__KEEP_MAX reached), -ENOMEM. */
static inline int perfmon__keep_locked(uint32_t point, uint8_t step, const char *label,
				       size_t len)
{
	struct perfmon__kept *k;
	unsigned i;

	for (i = 0; i < perfmon__g.kept_n; i++) {
		k = &perfmon__g.kept[i];
		if (k->point == point && k->step == step)
			return strcmp(k->label, label) == 0 ? 0 : -EEXIST;
	}
	if (perfmon__g.kept_n == perfmon__g.kept_cap) {
		unsigned cap = perfmon__g.kept_cap ? perfmon__g.kept_cap * 2 : 64;
		if (cap > PERFMON__KEEP_MAX)
			cap = PERFMON__KEEP_MAX;
		if (perfmon__g.kept_n >= cap)
			return -ENOSPC;
		k = (struct perfmon__kept *)realloc(perfmon__g.kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		perfmon__g.kept = k;
		perfmon__g.kept_cap = cap;
	}
	k = &perfmon__g.kept[perfmon__g.kept_n++];
	k->point = point;
	k->step = step;
	memcpy(k->label, label, len + 1);
	return 0;
}

/*
 * perfmon_name() under the lock.  While the segment watcher runs, every
 * accepted label is also kept in process memory and published again into
 * each ring attached later; before the first attach the kept copy is all
 * there is, and its verdict is returned.
 */
static inline int perfmon__name_or_keep_locked(uint32_t point, uint8_t step, const char *label)
{
	size_t len;
	int r;

	if (!perfmon__g.watching)
		return perfmon__name_locked(point, step, label);
	if (!label || !label[0])
		return -EINVAL;
	for (len = 0; len < PERFMON_LABEL_SIZE && label[len]; len++)
		;
	if (len >= PERFMON_LABEL_SIZE)
		return perfmon__g.meta ? perfmon__name_locked(point, step, label) : -ENAMETOOLONG;
	if (perfmon__g.meta) {
		r = perfmon__name_locked(point, step, label);
		if (r == 0)
			(void)perfmon__keep_locked(point, step, label, len);
		return r;
	}
	return perfmon__keep_locked(point, step, label, len);
}

/*
 * Publish `label` for (point, step): step 0 names the point, step s names
 * the stage that ends at s.  Returns 0 (also when the same label is already
 * there), -EEXIST (another label holds the key; the first one wins),
 * -ENOSPC, -ENAMETOOLONG (never truncated), -EINVAL, -ENOTCONN.
 */
static inline int perfmon_name(uint32_t point, uint8_t step, const char *label)
{
	int r;
	perfmon__lock();
	r = perfmon__name_or_keep_locked(point, step, label);
	perfmon__unlock();
	return r;
}

/* Publish every non-empty name_of(p, s) for p < point_count and all 256
 * steps.  Returns the number of labels refused (conflicts), or -ENOTCONN. */
static inline int perfmon_publish_names(uint32_t point_count,
					const char *(*name_of)(uint32_t point, uint8_t step))
{
	uint32_t p;
	int conflicts = 0;
	unsigned s;

	if (!name_of)
		return 0;
	perfmon__lock();
	if (!perfmon__g.meta && !perfmon__g.watching) {
		perfmon__unlock();
		return -ENOTCONN;
	}
	for (p = 0; p < point_count; p++)
		for (s = 0; s < 256; s++) {
			const char *label = name_of(p, (uint8_t)s);
			if (label && label[0] &&
			    perfmon__name_or_keep_locked(p, (uint8_t)s, label) < 0)
				conflicts++;
		}
	perfmon__unlock();
	return conflicts;
}

/* ---- Load-time attach from the environment ----------------------------- */

#include <pthread.h>
#include <signal.h>

/* Fork: the child holds a copy of the mapping and goes on stamping into
 * the same ring, but no thread survives fork(), so it has no watcher; it
 * takes a registry entry of its own.  The lock is held across fork() so
 * the child never inherits it mid-update.  Only async-signal-safe calls
 * (getpid, open, read, close) run in the child. */
static void perfmon__atfork_prepare(void)
{
	perfmon__lock();
}

static void perfmon__atfork_parent(void)
{
	perfmon__unlock();
}

static void perfmon__atfork_child(void)
{
	perfmon__g.watching = 0;
	perfmon__g.reg_slot = 0;
	if (perfmon__g.meta)
		perfmon__register_locked();
	perfmon__unlock();
}

/* The segment watcher needs POSIX.1-2008 declarations (signal masks); a
 * strict ISO build without them gets the one-shot load-time attach. */
#if defined(SIG_SETMASK) && defined(__linux__)
#include <poll.h>
#include <stdio.h>
#include <sys/inotify.h>

/*
 * Segment watcher: a helper thread, started at load time when
 * SLICK_PERFMON_SHM names a ring (unless SLICK_PERFMON_WATCH=0), that
 * sleeps in poll() on an inotify watch of /dev/shm.  When the segments of
 * its name appear, or are replaced by new ones (another instance_id), it
 * maps them, swaps them in for the stamps (perfmon__attach_locked) and
 * replays the kept labels.  Stamps never see it: they load `hot` as
 * always.  Its cost is one thread blocked in the kernel (64 KiB stack, all
 * signals blocked), one close-on-exec inotify descriptor, and a wake-up
 * for each file created in or moved into /dev/shm and each change of a
 * file's mode, owner or times there (what makes segments readable that
 * were not).  Writes and closes are not watched: the daemon writes its
 * headers through a mapping (no event) after the creation, and keeps its
 * descriptors open, so a creation is seen as one, and the segments it
 * finds not usable yet it looks at again with a back-off, from 10 ms up to
 * once a second.  It stands down when the application attaches or
 * detaches explicitly.
 */
struct perfmon__watch {
	int fd;
	char name[PERFMON_NAME_MAX + 1];
};

/* Read the start of segment `path`: 1 and its magic and instance_id,
 * 0 when it does not exist (or may not be read), -1 when too short. */
static inline int perfmon__peek(const char *path, size_t id_off, uint64_t *ret_magic,
				uint64_t *ret_id)
{
	unsigned char buf[64];
	long n;
	int fd = shm_open(path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT || errno == EACCES ? 0 : -1;
	n = (long)read(fd, buf, sizeof(buf));
	close(fd);
	if (n != (long)sizeof(buf))
		return -1;
	memcpy(ret_magic, buf, 8);
	memcpy(ret_id, buf + id_off, 8);
	return 1;
}

/* 1: ready segments of `name` whose ring is not the one we stamp into
 * (attached, or just now failed to attach: -1); 0: nothing to do;
 * -1: present but not complete yet, look again later. */
static inline int perfmon__watch_once(const char *name)
{
	char rpath[PERFMON_NAME_MAX + 8], mpath[PERFMON_NAME_MAX + 8];
	uint64_t rmagic, rid, mmagic, mid;
	int r;

	if (perfmon__shm_path(name, "", rpath, sizeof(rpath)) < 0 ||
	    perfmon__shm_path(name, ".meta", mpath, sizeof(mpath)) < 0)
		return 0;
	r = perfmon__peek(rpath, offsetof(struct perfmon_ring_header, instance_id),
			  &rmagic, &rid);
	if (r <= 0)
		return r;
	if (rmagic != PERFMON_RING_MAGIC)
		return -1;
	r = perfmon__peek(mpath, offsetof(struct perfmon_meta_header, instance_id),
			  &mmagic, &mid);
	if (r <= 0 || mmagic != PERFMON_META_MAGIC || mid != rid)
		return -1;   /* the daemon creates the control block second */
	perfmon__lock();
	if (perfmon__g.explicit_attach)
		r = 0;
	else if (perfmon__g.ring && perfmon__g.ring->instance_id == rid)
		r = 0;
	else
		r = perfmon__attach_locked(name) == 0 ? 1 : -1;
	perfmon__unlock();
	return r;
}

/* True when an inotify record in buf[0..n) concerns `name` or `name.meta`
 * (or the queue overflowed). */
static inline int perfmon__watch_hit(const char *buf, long n, const char *name)
{
	size_t len = strlen(name);
	long off = 0;
	while (off + (long)sizeof(struct inotify_event) <= n) {
		const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
		if (ev->mask & IN_Q_OVERFLOW)
			return 1;
		if (ev->len && strncmp(ev->name, name, len) == 0 &&
		    (ev->name[len] == '\0' || strcmp(ev->name + len, ".meta") == 0))
			return 1;
		off += (long)sizeof(struct inotify_event) + (long)ev->len;
	}
	return 0;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long perfmon__mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *perfmon__watch_main(void *arg)
{
	struct perfmon__watch *w = (struct perfmon__watch *)arg;
	union {
		struct inotify_event ev;
		char buf[4096];
	} u;
	/* backoff: ms between looks at segments not ready yet (0: none
	 * pending); the next look is due at retry_at whatever else wakes the
	 * thread, so other files' events cannot put it off for ever. */
	long long retry_at = 0;
	int backoff = 0, look = 1;

	for (;;) {
		struct pollfd pfd;
		int timeout = -1;
		long n;
		if (look) {
			if (perfmon__watch_once(w->name) < 0) {
				backoff = !backoff ? 10 : backoff * 2 > 1000 ? 1000 : backoff * 2;
				retry_at = perfmon__mono_ms() + backoff;
			} else {
				backoff = 0;
			}
		}
		if (__atomic_load_n(&perfmon__g.explicit_attach, __ATOMIC_ACQUIRE))
			break;
		if (backoff) {
			long long left = retry_at - perfmon__mono_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		pfd.fd = w->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		look = 0;
		if (poll(&pfd, 1, timeout) > 0)
			while ((n = (long)read(w->fd, u.buf, sizeof(u.buf))) > 0)
				look |= perfmon__watch_hit(u.buf, n, w->name);
		if (backoff && perfmon__mono_ms() >= retry_at)
			look = 1;
	}
	perfmon__lock();
	perfmon__g.watching = 0;
	perfmon__unlock();
	close(w->fd);
	free(w);
	return NULL;
}

/* The watcher could not start: the load-time attach was the only one.
 * Said once, on stderr, since nothing else would tell. */
static inline void perfmon__watch_failed(const char *name, const char *what, int e)
{
	fprintf(stderr, "perfmon: late attach to '%s' is off (%s: %s): segments created "
		"after this point are not followed%s\n", name, what, strerror(e),
		e == EMFILE || e == ENOSPC ? "; raise fs.inotify.max_user_instances or "
		"max_user_watches, or the open-file limit" : "");
}

/* Start the watcher for `name` (lock held).  Failing to start it loses
 * the late attach, and says so on stderr. */
static inline void perfmon__watch_start(const char *name)
{
	const char *off = getenv("SLICK_PERFMON_WATCH");
	struct perfmon__watch *w;
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	int e;

	if (off && off[0] == '0' && off[1] == '\0')
		return;
	if (strlen(name) > PERFMON_NAME_MAX)
		return;
	w = (struct perfmon__watch *)malloc(sizeof(*w));
	if (!w) {
		perfmon__watch_failed(name, "malloc", ENOMEM);
		return;
	}
	strcpy(w->name, name);
	w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->fd < 0) {
		perfmon__watch_failed(name, "inotify_init1", errno);
		goto error_free;
	}
	if (inotify_add_watch(w->fd, "/dev/shm", IN_CREATE | IN_MOVED_TO | IN_ATTRIB |
			      IN_ONLYDIR) < 0) {
		perfmon__watch_failed(name, "inotify_add_watch /dev/shm", errno);
		goto error_fd;
	}
	if ((e = pthread_attr_init(&attr)) != 0) {
		perfmon__watch_failed(name, "pthread_attr_init", e);
		goto error_fd;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 65536);
	/* The thread inherits a full mask: no signal is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	perfmon__g.watching = 1;
	if ((e = pthread_create(&tid, &attr, perfmon__watch_main, w)) != 0)
		perfmon__g.watching = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (perfmon__g.watching) {
#if defined(_GNU_SOURCE) && defined(__GLIBC__)
		pthread_setname_np(tid, "perfmon-watch");
#endif
		return;
	}
	perfmon__watch_failed(name, "pthread_create", e);
error_fd:
	close(w->fd);
error_free:
	free(w);
}
#else
#define perfmon__watch_start(name) ((void)(name))
#endif

__attribute__((constructor, unused)) static void perfmon__auto_attach(void)
{
	const char *name;
	if (__atomic_exchange_n(&perfmon__g.auto_done, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_atfork(perfmon__atfork_prepare, perfmon__atfork_parent, perfmon__atfork_child);
	if (perfmon__env_disabled())
		return;
	name = getenv("SLICK_PERFMON_SHM");
	if (!name || !name[0])
		return;
	perfmon__lock();
	if (!perfmon__g.explicit_attach && !perfmon__g.ring) {
		(void)perfmon__attach_locked(name);
		perfmon__watch_start(name);
	}
	perfmon__unlock();
}

/* At exit, give our registry entry back (the mapping stays: other threads
 * may still stamp while the process winds down) and stop the watcher. */
__attribute__((destructor, unused)) static void perfmon__auto_exit(void)
{
	perfmon__lock();
	__atomic_store_n(&perfmon__g.explicit_attach, 1, __ATOMIC_RELEASE);
	perfmon__unregister_locked();
	perfmon__unlock();
}

#ifdef __cplusplus
}
#endif

#else /* !PERFMON_ENABLED: every call is nothing; arguments are not evaluated */

/* sizeof names each argument without evaluating it, so variables used
 * only for stamping raise no "unused" warnings and nothing is emitted. */
#define PERFMON__NOEVAL(x) ((void)sizeof(x))
#define perfmon_attach(shm_name)              (PERFMON__NOEVAL(shm_name), -ENOTSUP)
#define perfmon_detach()                      ((void)0)
#define perfmon_name(point, step, label) \
	(PERFMON__NOEVAL(point), PERFMON__NOEVAL(step), PERFMON__NOEVAL(label), -ENOTCONN)
#define perfmon_publish_names(count, name_of) \
	(PERFMON__NOEVAL(count), PERFMON__NOEVAL(&(name_of)), 0)
#define perfmon_begin(point, seq)     (PERFMON__NOEVAL(point), PERFMON__NOEVAL(seq))
#define perfmon_step(point, step, seq) \
	(PERFMON__NOEVAL(point), PERFMON__NOEVAL(step), PERFMON__NOEVAL(seq))
#define perfmon_end(point, seq)       (PERFMON__NOEVAL(point), PERFMON__NOEVAL(seq))
#define perfmon_value(point, v)       (PERFMON__NOEVAL(point), PERFMON__NOEVAL(v))
#define perfmon_set_enabled(on)       PERFMON__NOEVAL(on)
#define perfmon_enabled()             (0 != 0)
#define PERFMON_SCOPE(point)          PERFMON__NOEVAL(point)
#define PERFMON_SCOPE_SEQ(point, seq) (PERFMON__NOEVAL(point), PERFMON__NOEVAL(seq))

#endif /* PERFMON_ENABLED */

#endif /* PERFMON_H */
