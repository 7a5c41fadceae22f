/*
 * shm.c - create, reopen, validate and remove an instance's segments.
 *
 * The daemon owns the segments: it creates them exclusively with an
 * explicit mode and group (umask does not apply), reserves their space with
 * posix_fallocate so a full /dev/shm fails at start instead of raising
 * SIGBUS later, and never unlinks them on exit so producers survive a
 * restart.  A segment that is not ours (another owner, another layout, a
 * symlink, a different geometry) is refused, never adopted.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/clock.h>
#include <perfmon/segment.h>

#include "clocks.h"
#include "errmsg.h"
#include "shm.h"
#include "shm_guard.h"

int shm_object_name(const char *name, const char *suffix, char *out, size_t outlen)
{
	return perfmon__shm_path(name, suffix, out, outlen);
}

void shm_ring_geometry(uint64_t capacity, unsigned cpus, uint64_t *ret_capacity,
		       uint32_t *ret_subrings)
{
	uint32_t n = 1;
	uint64_t c;

	if (cpus > PERFMON_MAX_SUBRINGS)
		cpus = PERFMON_MAX_SUBRINGS;
	while (n < cpus)
		n <<= 1;
	c = capacity / (n < 8 ? n : 8);
	*ret_capacity = c < 2 ? 2 : c;
	*ret_subrings = n;
}

unsigned shm_cpu_list_count(const char *text)
{
	/* "0-63" or "0,2-5": the last number is the highest CPU (the kernel
	 * lists them in ascending order). */
	size_t n = strlen(text);
	unsigned long last;

	while (n > 0 && (text[n - 1] < '0' || text[n - 1] > '9'))
		n--;
	if (!n)
		return 0;
	while (n > 0 && text[n - 1] >= '0' && text[n - 1] <= '9')
		n--;
	last = strtoul(text + n, NULL, 10);
	return last >= PERFMON_MAX_SUBRINGS ? PERFMON_MAX_SUBRINGS : (unsigned)last + 1;
}

unsigned shm_possible_cpus(void)
{
	char buf[256];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	size_t n = 0;
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned cpus;

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	cpus = shm_cpu_list_count(buf);
	if (conf > 0 && (unsigned long)conf > cpus)
		cpus = conf > PERFMON_MAX_SUBRINGS ? PERFMON_MAX_SUBRINGS : (unsigned)conf;
	return cpus ? cpus : 1;
}

static const char *user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd *pw = getpwuid(uid);
	if (pw)
		snprintf(buf, n, "%s", pw->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)uid);
	return buf;
}

/* Open one existing segment and check it is a regular file we may use. */
static int open_segment(const char *obj, bool writable, bool must_own, struct stat *st,
			char *err, size_t errlen)
{
	int fd = shm_open(obj, writable ? O_RDWR : O_RDONLY, 0);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP)
			return errmsg(err, errlen, -ELOOP,
				      "/dev/shm%s is a symbolic link; refusing to follow it "
				      "(remove it and let perfmond create the segment)", obj);
		if (e == EACCES || e == EPERM)
			return errmsg(err, errlen, -EACCES,
				      "/dev/shm%s: permission denied (the segment belongs to "
				      "another user or group; run as its owner or join its group)", obj);
		return errmsg(err, errlen, -e, "/dev/shm%s: %s", obj, strerror(e));
	}
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return errmsg(err, errlen, -e, "/dev/shm%s: fstat: %s", obj, strerror(e));
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return errmsg(err, errlen, -EPROTO, "/dev/shm%s is not a regular file", obj);
	}
	if (must_own && st->st_uid != geteuid()) {
		char who[64];
		close(fd);
		return errmsg(err, errlen, -EPERM,
			      "/dev/shm%s is owned by %s, not by this user; refusing to adopt a "
			      "segment someone else created (remove it, e.g. perfmonctl remove "
			      "--force, or run perfmond as its owner)",
			      obj, user_name(st->st_uid, who, sizeof(who)));
	}
	return fd;
}

static void *map_fd(int fd, size_t len, bool writable)
{
	void *p = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
		       fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Layouts 1 and 2 had one ring shared by every producer (2 added the
 * producer registry); 3 split it into per-CPU sub-rings. */
#define SHM_FIRST_PERCPU_VERSION 3u

/*
 * Validate a mapped pair.  Returns 0 and the trusted geometry, or -EPROTO
 * with a message.  Only the values checked here are ever used afterwards.
 */
static int validate_pair(const char *name, const struct perfmon_ring_header *r, size_t rlen,
			 const struct perfmon_meta_header *m, size_t mlen,
			 uint64_t *ret_cap, uint32_t *ret_subrings, uint32_t *ret_names,
			 char *err, size_t errlen)
{
	uint64_t cap;
	uint32_t names, nsub;

	if (r->magic != PERFMON_RING_MAGIC)
		return errmsg(err, errlen, -EPROTO,
			      "/dev/shm/%s is not a perfmon ring (bad magic); remove it "
			      "with 'perfmonctl remove %s'", name, name);
	if (m->magic != PERFMON_META_MAGIC)
		return errmsg(err, errlen, -EPROTO,
			      "/dev/shm/%s.meta is not a perfmon control block (bad magic); "
			      "remove it with 'perfmonctl remove %s'", name, name);
	if (r->version != PERFMON_LAYOUT_VERSION || m->version != PERFMON_LAYOUT_VERSION)
		return errmsg(err, errlen, -EPROTO,
			      "segments of '%s' have layout version %u/%u, this build speaks %u%s; "
			      "remove them with 'perfmonctl remove %s' (producers built against "
			      "this perfmon.h and attached through SLICK_PERFMON_SHM then follow the "
			      "new ones)", name, r->version, m->version, PERFMON_LAYOUT_VERSION,
			      r->version < SHM_FIRST_PERCPU_VERSION ? " (an older layout (shared "
			      "ring): made by a perfmond from before per-CPU sub-rings)" :
			      r->version < PERFMON_LAYOUT_VERSION ? " (an older layout)" : "", name);
	cap = r->capacity;
	nsub = r->subrings;
	names = m->max_names;
	if (r->header_size != PERFMON_RING_HEADER_SIZE ||
	    r->slot_size != sizeof(struct perfmon_slot) || cap < 2 || (cap & (cap - 1)) ||
	    nsub < 1 || nsub > PERFMON_MAX_SUBRINGS || (nsub & (nsub - 1)) ||
	    r->slots_offset != PERFMON_RING_SLOTS_OFFSET(nsub) ||
	    rlen < PERFMON_RING_SLOTS_OFFSET(nsub) ||
	    cap > (rlen - PERFMON_RING_SLOTS_OFFSET(nsub)) / sizeof(struct perfmon_slot) / nsub ||
	    m->header_size != PERFMON_META_NAMES_OFFSET || m->label_size != PERFMON_LABEL_SIZE ||
	    names > (mlen - PERFMON_META_NAMES_OFFSET) / sizeof(struct perfmon_name_entry))
		return errmsg(err, errlen, -EPROTO,
			      "segments of '%s' are corrupt (header fields disagree with their "
			      "size); remove them with 'perfmonctl remove %s'", name, name);
	if (m->ring_capacity != cap || m->instance_id != r->instance_id)
		return errmsg(err, errlen, -EPROTO,
			      "/dev/shm/%s and /dev/shm/%s.meta do not belong together; remove "
			      "them with 'perfmonctl remove %s'", name, name, name);
	if (r->clock != PERFMON_CLOCK)
		return errmsg(err, errlen, -EPROTO,
			      "segments of '%s' were made for another timestamp clock", name);
	*ret_cap = cap;
	*ret_subrings = nsub;
	*ret_names = names;
	return 0;
}

static int apply_owner_mode(int fd, const char *obj, const struct shm_geometry *g,
			    char *err, size_t errlen)
{
	if (fchmod(fd, g->mode) < 0)
		return errmsg(err, errlen, -errno, "/dev/shm%s: chmod %04o: %s", obj,
			      (unsigned)g->mode, strerror(errno));
	if (g->gid != (gid_t)-1 && fchown(fd, (uid_t)-1, g->gid) < 0) {
		int e = errno;
		struct group *gr = getgrgid(g->gid);
		return errmsg(err, errlen, -e,
			      "/dev/shm%s: cannot give the segment to group %s: %s (the daemon's "
			      "user must be a member of that group)", obj,
			      gr ? gr->gr_name : "?", strerror(e));
	}
	return 0;
}

/*
 * Fault every page of the ring's slots in now, writable: a fresh segment's
 * pages are zeroed (and, in a VM, backed by the host) on their first
 * touch, some microseconds each, which should happen here rather than
 * inside a producer's stamp or a drain pass.  Only `len` bytes, checked
 * against the geometry, however large the file.  Best effort (Linux 5.14+).
 */
static void populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	(void)madvise(p, len, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)len;
#endif
}

/* Create one segment exclusively, reserve its space and map it. */
static void *create_segment(const char *obj, size_t len, const struct shm_geometry *g,
			    char *err, size_t errlen, int *ret_err, int *ret_fd)
{
	void *p;
	int fd, e;

	fd = shm_open(obj, O_RDWR | O_CREAT | O_EXCL, g->mode & 0600);
	if (fd < 0) {
		e = errno;
		*ret_err = errmsg(err, errlen, -e, "cannot create /dev/shm%s: %s%s", obj,
				  strerror(e), e == EEXIST ? " (created concurrently by another "
				  "process; retry)" : "");
		return NULL;
	}
	if ((*ret_err = apply_owner_mode(fd, obj, g, err, errlen)) < 0)
		goto error_unlink;
	e = posix_fallocate(fd, 0, (off_t)len);
	if (e) {
		struct statvfs vfs;
		unsigned long long avail = 0;
		if (statvfs("/dev/shm", &vfs) == 0)
			avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
		*ret_err = errmsg(err, errlen, -e,
				  "cannot reserve %zu bytes for /dev/shm%s: %s (/dev/shm has %llu "
				  "bytes free; lower the capacity or enlarge /dev/shm)",
				  len, obj, strerror(e), avail);
		goto error_unlink;
	}
	p = map_fd(fd, len, true);
	if (!p) {
		e = errno;
		*ret_err = errmsg(err, errlen, -e, "cannot map /dev/shm%s: %s", obj, strerror(e));
		goto error_unlink;
	}
	*ret_fd = fd;   /* kept: the owner restores the size through it */
	return p;

error_unlink:
	close(fd);
	shm_unlink(obj);
	return NULL;
}

static uint64_t init_headers(struct perfmon_ring_header *r, struct perfmon_meta_header *m,
			     const struct shm_geometry *g);

static int create_pair(const char *name, const char *robj, const char *mobj,
		       const struct shm_geometry *g, struct shm_instance *ret,
		       char *err, size_t errlen)
{
	size_t rlen = PERFMON_RING_BYTES(g->subrings, g->capacity);
	size_t mlen = PERFMON_META_BYTES(g->max_names);
	struct perfmon_ring_header *r;
	struct perfmon_meta_header *m;
	uint64_t id;
	int e = 0, rfd = -1, mfd = -1;

	r = create_segment(robj, rlen, g, err, errlen, &e, &rfd);
	if (!r)
		return e;
	m = create_segment(mobj, mlen, g, err, errlen, &e, &mfd);
	if (!m) {
		munmap(r, rlen);
		close(rfd);
		shm_unlink(robj);
		return e;
	}
	id = init_headers(r, m, g);
	populate(r, rlen);

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->ring = r;
	ret->ring_len = rlen;
	ret->meta = m;
	ret->meta_len = mlen;
	ret->ring_fd = rfd;
	ret->meta_fd = mfd;
	ret->names = (struct perfmon_name_entry *)((char *)m + PERFMON_META_NAMES_OFFSET);
	ret->capacity = g->capacity;
	ret->subrings = g->subrings;
	ret->max_names = g->max_names;
	ret->instance_id = id;
	ret->created_ns = m->created_ns;
	ret->owner_uid = m->owner_uid;
	ret->owner_gid = m->owner_gid;
	ret->created = true;
	ret->writable = true;
	shm_guard_add(r, rlen);
	shm_guard_add(m, mlen);
	return 0;
}

/* Write both headers for geometry `g` with a fresh instance id (which is
 * returned).  The heads and the name table are left alone. */
static uint64_t init_headers(struct perfmon_ring_header *r, struct perfmon_meta_header *m,
			     const struct shm_geometry *g)
{
	uint64_t id = 0, now = real_ns();

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = now ^ ((uint64_t)getpid() << 32);
	/* Everything but the magic first; the magic, stored with release
	 * semantics, is what tells an attacher the header is complete. */
	r->version = PERFMON_LAYOUT_VERSION;
	r->header_size = PERFMON_RING_HEADER_SIZE;
	r->slot_size = sizeof(struct perfmon_slot);
	r->clock = PERFMON_CLOCK;
	r->capacity = g->capacity;
	r->subrings = g->subrings;
	r->slots_offset = (uint32_t)PERFMON_RING_SLOTS_OFFSET(g->subrings);
	r->instance_id = id;
	r->created_ns = now;
	m->version = PERFMON_LAYOUT_VERSION;
	m->header_size = PERFMON_META_NAMES_OFFSET;
	m->max_names = g->max_names;
	m->label_size = PERFMON_LABEL_SIZE;
	m->ring_capacity = g->capacity;
	m->instance_id = id;
	m->created_ns = now;
	m->owner_uid = geteuid();
	m->owner_gid = g->gid == (gid_t)-1 ? getegid() : g->gid;
	m->clock = PERFMON_CLOCK;
	__atomic_store_n(&m->magic, PERFMON_META_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&r->magic, PERFMON_RING_MAGIC, __ATOMIC_RELEASE);
	return id;
}

/* Give a segment of ours that someone shrank its size back. */
static int regrow(int fd, const char *obj, struct stat *st, size_t want, char *err,
		  size_t errlen)
{
	int e;
	if ((size_t)st->st_size >= want)
		return 0;
	if (ftruncate(fd, (off_t)want) < 0)
		return errmsg(err, errlen, -errno, "/dev/shm%s was shrunk to %lld bytes and cannot "
			      "be restored to %zu: %s", obj, (long long)st->st_size, want,
			      strerror(errno));
	if ((e = posix_fallocate(fd, 0, (off_t)want)) != 0)
		return errmsg(err, errlen, -e, "cannot reserve %zu bytes for /dev/shm%s: %s",
			      want, obj, strerror(e));
	st->st_size = (off_t)want;
	return 1;
}

/*
 * Open both existing segments, map and validate them.  With `repair` (the
 * daemon, owner of the segments, and its geometry) segments shrunk by
 * someone get their size back, and headers lost with it are written
 * again; `ret->repaired` says what was done.
 */
static int open_pair(const char *name, const char *robj, const char *mobj, bool writable,
		     bool must_own, const struct shm_geometry *repair,
		     struct shm_instance *ret, char *err, size_t errlen)
{
	struct stat rst, mst;
	void *r = NULL, *m = NULL;
	uint64_t cap = 0;
	uint32_t names = 0, nsub = 0;
	unsigned repaired = 0;
	int rfd, mfd, e;

	rfd = open_segment(robj, writable, must_own, &rst, err, errlen);
	mfd = open_segment(mobj, writable, must_own, &mst, err, errlen);
	if (rfd == -ENOENT && mfd == -ENOENT)
		return errmsg(err, errlen, -ENOENT, "no segments named '%s' in /dev/shm", name);
	if (rfd == -ENOENT || mfd == -ENOENT) {
		e = errmsg(err, errlen, -EPROTO,
			   "/dev/shm%s exists but /dev/shm%s does not (an interrupted creation "
			   "or a partial removal); remove it with 'perfmonctl remove %s'",
			   rfd == -ENOENT ? mobj : robj, rfd == -ENOENT ? robj : mobj, name);
		goto out;
	}
	if (rfd < 0 || mfd < 0) {
		e = rfd < 0 ? rfd : mfd;
		goto out;
	}
	if (repair) {
		if ((e = regrow(rfd, robj, &rst,
				PERFMON_RING_BYTES(repair->subrings, repair->capacity), err,
				errlen)) < 0)
			goto out;
		if (e > 0)
			repaired |= SHM_REPAIRED_SIZE;
		if ((e = regrow(mfd, mobj, &mst, PERFMON_META_BYTES(repair->max_names), err,
				errlen)) < 0)
			goto out;
		if (e > 0)
			repaired |= SHM_REPAIRED_SIZE;
	}
	if ((size_t)rst.st_size < PERFMON_RING_BYTES(1, 2) ||
	    (size_t)mst.st_size < PERFMON_META_BYTES(0)) {
		e = errmsg(err, errlen, -EPROTO,
			   "segments of '%s' are too small to be perfmon segments; remove them "
			   "with 'perfmonctl remove %s'", name, name);
		goto out;
	}
	r = map_fd(rfd, (size_t)rst.st_size, writable);
	m = map_fd(mfd, (size_t)mst.st_size, writable);
	if (!r || !m) {
		e = errmsg(err, errlen, -errno, "cannot map the segments of '%s': %s", name,
			   strerror(errno));
		goto out;
	}
	/* A header lost to a truncation reads as zeros: ours to write again
	 * (a fresh identity, so nothing resumes from the old one). */
	if (repair && (((struct perfmon_ring_header *)r)->magic == 0 ||
		       ((struct perfmon_meta_header *)m)->magic == 0)) {
		init_headers(r, m, repair);
		repaired |= SHM_REPAIRED_HEADER;
	}
	e = validate_pair(name, r, (size_t)rst.st_size, m, (size_t)mst.st_size, &cap, &nsub,
			  &names, err, errlen);
	if (e < 0)
		goto out;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->ring = r;
	ret->ring_len = (size_t)rst.st_size;
	ret->meta = m;
	ret->meta_len = (size_t)mst.st_size;
	ret->names = (struct perfmon_name_entry *)((char *)m + PERFMON_META_NAMES_OFFSET);
	ret->capacity = cap;
	ret->subrings = nsub;
	ret->max_names = names;
	ret->instance_id = ((struct perfmon_ring_header *)r)->instance_id;
	ret->created_ns = ((struct perfmon_meta_header *)m)->created_ns;
	ret->owner_uid = mst.st_uid;
	ret->owner_gid = mst.st_gid;
	ret->writable = writable;
	ret->repaired = repaired;
	ret->created = (repaired & SHM_REPAIRED_HEADER) != 0;
	ret->ring_fd = ret->meta_fd = -1;
	if (writable) {        /* the owner keeps them to restore the size */
		populate(r, PERFMON_RING_BYTES(nsub, cap));
		ret->ring_fd = rfd;
		ret->meta_fd = mfd;
		rfd = mfd = -1;
	}
	shm_guard_add(r, ret->ring_len);
	shm_guard_add(m, ret->meta_len);
	r = m = NULL;
	e = 0;
out:
	if (r)
		munmap(r, (size_t)rst.st_size);
	if (m)
		munmap(m, (size_t)mst.st_size);
	if (rfd >= 0)
		close(rfd);
	if (mfd >= 0)
		close(mfd);
	return e;
}

int shm_create_or_open(const char *name, const struct shm_geometry *g,
		       struct shm_instance *ret, char *err, size_t errlen)
{
	char robj[PERFMON_NAME_MAX + 8], mobj[PERFMON_NAME_MAX + 8];
	struct shm_instance inst;
	int e;

	if ((e = shm_object_name(name, "", robj, sizeof(robj))) < 0 ||
	    (e = shm_object_name(name, ".meta", mobj, sizeof(mobj))) < 0)
		return errmsg(err, errlen, e,
			      "invalid shm name '%s': use 1-%d characters of [A-Za-z0-9._-], "
			      "not starting with '.' nor ending in '.meta'", name ? name : "", PERFMON_NAME_MAX);
	if (g->capacity < 2 || (g->capacity & (g->capacity - 1)))
		return errmsg(err, errlen, -EINVAL, "ring capacity %llu is not a power of two",
			      (unsigned long long)g->capacity);
	if (g->subrings < 1 || g->subrings > PERFMON_MAX_SUBRINGS ||
	    (g->subrings & (g->subrings - 1)))
		return errmsg(err, errlen, -EINVAL, "%u sub-rings: not a power of two up to %u",
			      g->subrings, PERFMON_MAX_SUBRINGS);

	e = open_pair(name, robj, mobj, true, true, g, &inst, err, errlen);
	if (e == -ENOENT) {
		e = create_pair(name, robj, mobj, g, &inst, err, errlen);
		if (e == 0)
			*ret = inst;
		return e;
	}
	if (e < 0)
		return e;
	if (inst.capacity != g->capacity || inst.subrings != g->subrings ||
	    inst.max_names != g->max_names) {
		e = errmsg(err, errlen, -EEXIST,
			   "segments of '%s' exist with %u sub-rings of %llu slots and max_names "
			   "%u, but the configuration asks for %u sub-rings of %llu slots and "
			   "max_names %u; a name keeps the geometry it was created with: remove "
			   "it first with 'perfmonctl remove %s' (producers attached through "
			   "SLICK_PERFMON_SHM follow the new ones; one that called perfmon_attach() "
			   "calls it again)",
			   name, inst.subrings, (unsigned long long)inst.capacity, inst.max_names,
			   g->subrings, (unsigned long long)g->capacity, g->max_names, name);
		shm_close(&inst);
		return e;
	}
	*ret = inst;
	return 0;
}

int shm_open_existing(const char *name, bool writable, struct shm_instance *ret,
		      char *err, size_t errlen)
{
	char robj[PERFMON_NAME_MAX + 8], mobj[PERFMON_NAME_MAX + 8];
	int e;

	if ((e = shm_object_name(name, "", robj, sizeof(robj))) < 0 ||
	    (e = shm_object_name(name, ".meta", mobj, sizeof(mobj))) < 0)
		return errmsg(err, errlen, e,
			      "invalid shm name '%s': use 1-%d characters of [A-Za-z0-9._-], "
			      "not starting with '.' nor ending in '.meta'", name ? name : "", PERFMON_NAME_MAX);
	return open_pair(name, robj, mobj, writable, false, NULL, ret, err, errlen);
}

#define REPAIR(field, value) do { \
		if (__atomic_load_n(&(field), __ATOMIC_RELAXED) != (value)) { \
			__atomic_store_n(&(field), (value), __ATOMIC_RELAXED); \
			n++; \
		} \
	} while (0)

unsigned shm_repair_meta(struct shm_instance *inst)
{
	struct perfmon_meta_header *m = inst->meta;
	unsigned n = 0;

	if (!inst->writable || !m)
		return 0;
	REPAIR(m->version, (uint32_t)PERFMON_LAYOUT_VERSION);
	REPAIR(m->header_size, (uint32_t)PERFMON_META_NAMES_OFFSET);
	REPAIR(m->max_names, inst->max_names);
	REPAIR(m->label_size, (uint32_t)PERFMON_LABEL_SIZE);
	REPAIR(m->ring_capacity, inst->capacity);
	REPAIR(m->instance_id, inst->instance_id);
	REPAIR(m->created_ns, inst->created_ns);
	REPAIR(m->owner_uid, (uint32_t)inst->owner_uid);
	REPAIR(m->owner_gid, (uint32_t)inst->owner_gid);
	REPAIR(m->clock, (uint32_t)PERFMON_CLOCK);
	/* The magic last, as at creation: it says the rest is whole. */
	if (__atomic_load_n(&m->magic, __ATOMIC_RELAXED) != PERFMON_META_MAGIC) {
		__atomic_store_n(&m->magic, PERFMON_META_MAGIC, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

/* Restore one segment: size back, the file mapped again over whatever the
 * SIGBUS handler put there.  `*ret_cut_at`: the size it had been cut to
 * (`len` when it was whole, or made whole again by someone else). */
static int restore_one(int fd, void *addr, size_t len, bool *ret_done, size_t *ret_cut_at)
{
	struct stat st;
	int e;

	*ret_done = false;
	*ret_cut_at = len;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? 0 : -errno;
	if ((size_t)st.st_size >= len && !shm_guard_take(addr))
		return 0;
	if ((size_t)st.st_size < len) {
		*ret_cut_at = (size_t)st.st_size;
		if (ftruncate(fd, (off_t)len) < 0)
			return -errno;
		if ((e = posix_fallocate(fd, 0, (off_t)len)) != 0)
			return -e;
	}
	if (mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		return -errno;
	shm_guard_take(addr);   /* faults from before the remap are accounted */
	*ret_done = true;
	return 0;
}

int shm_restore(struct shm_instance *inst, unsigned parts, struct shm_restore_report *ret)
{
	size_t cut;
	int e1 = 0, e2 = 0;

	memset(ret, 0, sizeof(*ret));
	ret->ring_cut_at = inst->ring_len;
	if (parts & SHM_PART_RING) {
		e1 = restore_one(inst->ring_fd, inst->ring, inst->ring_len, &ret->ring_restored,
				 &ret->ring_cut_at);
		ret->ring_lost_bytes = inst->ring_len - ret->ring_cut_at;
	}
	if (parts & SHM_PART_META) {
		e2 = restore_one(inst->meta_fd, inst->meta, inst->meta_len, &ret->meta_restored,
				 &cut);
		ret->meta_lost_bytes = inst->meta_len - cut;
	}
	return e1 < 0 ? e1 : e2;
}

unsigned shm_repair_ring(struct shm_instance *inst)
{
	struct perfmon_ring_header *r = inst->ring;
	unsigned n = 0;

	if (!inst->writable || !r)
		return 0;
	REPAIR(r->version, (uint32_t)PERFMON_LAYOUT_VERSION);
	REPAIR(r->header_size, (uint32_t)PERFMON_RING_HEADER_SIZE);
	REPAIR(r->slot_size, (uint32_t)sizeof(struct perfmon_slot));
	REPAIR(r->clock, (uint32_t)PERFMON_CLOCK);
	REPAIR(r->capacity, inst->capacity);
	REPAIR(r->subrings, inst->subrings);
	REPAIR(r->slots_offset, (uint32_t)PERFMON_RING_SLOTS_OFFSET(inst->subrings));
	REPAIR(r->instance_id, inst->instance_id);
	REPAIR(r->created_ns, inst->created_ns);
	if (__atomic_load_n(&r->magic, __ATOMIC_RELAXED) != PERFMON_RING_MAGIC) {
		__atomic_store_n(&r->magic, PERFMON_RING_MAGIC, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

void shm_close(struct shm_instance *inst)
{
	/* The descriptors exist only with the mappings shm.c made. */
	if (inst->ring) {
		shm_guard_remove(inst->ring);
		munmap(inst->ring, inst->ring_len);
		if (inst->ring_fd >= 0)
			close(inst->ring_fd);
	}
	if (inst->meta) {
		shm_guard_remove(inst->meta);
		munmap(inst->meta, inst->meta_len);
		if (inst->meta_fd >= 0)
			close(inst->meta_fd);
	}
	inst->ring_fd = inst->meta_fd = -1;
	inst->ring = NULL;
	inst->meta = NULL;
	inst->names = NULL;
}

int shm_file_path(const char *name, unsigned part, char *buf, size_t n)
{
	static const char dir[] = "/dev/shm";

	if (n < sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(buf, dir, sizeof(dir) - 1);
	return shm_object_name(name, part == SHM_PART_META ? ".meta" : "", buf + sizeof(dir) - 1,
			       n - (sizeof(dir) - 1));
}

int shm_segment_stat(const char *name, struct stat *ret)
{
	char path[SHM_FILE_PATH_MAX];
	int e;

	/* The control block first: it is what an instance is listed by, and
	 * whose owner shm_open_existing() records. */
	if ((e = shm_file_path(name, SHM_PART_META, path, sizeof(path))) < 0)
		return e;
	if (lstat(path, ret) == 0)
		return 0;
	shm_file_path(name, SHM_PART_RING, path, sizeof(path));
	return lstat(path, ret) == 0 ? 0 : -errno;
}

bool shm_exists(const char *name)
{
	char path[SHM_FILE_PATH_MAX];
	struct stat st;

	return shm_file_path(name, SHM_PART_RING, path, sizeof(path)) == 0 &&
	       lstat(path, &st) == 0;
}

int shm_remove_parts(const char *name, unsigned *ret_parts)
{
	char robj[PERFMON_NAME_MAX + 8], mobj[PERFMON_NAME_MAX + 8];
	unsigned found = 0;
	int e, first_err = 0;

	if (ret_parts)
		*ret_parts = 0;
	if ((e = shm_object_name(name, "", robj, sizeof(robj))) < 0 ||
	    (e = shm_object_name(name, ".meta", mobj, sizeof(mobj))) < 0)
		return e;
	if (shm_unlink(robj) == 0)
		found |= SHM_PART_RING;
	else if (errno != ENOENT)
		first_err = -errno;
	if (shm_unlink(mobj) == 0)
		found |= SHM_PART_META;
	else if (errno != ENOENT && !first_err)
		first_err = -errno;
	if (ret_parts)
		*ret_parts = found;
	if (first_err)
		return first_err;
	return found ? 0 : -ENOENT;
}

int shm_remove(const char *name)
{
	return shm_remove_parts(name, NULL);
}
