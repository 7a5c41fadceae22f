/*
 * capture.c - encode and decode the event capture file (capture.h,
 * docs/capture-format.md).
 *
 * Encoding writes every field explicitly little-endian, so the file means
 * the same on any machine.  Decoding copies the whole file into checked
 * arrays first; nothing after capture_parse() looks at raw bytes again.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "names.h"

static const char magic[8] = { 'P', 'M', 'C', 'A', 'P', 'T', 'U', 'R' };
static const char end_magic[8] = { 'P', 'M', 'C', 'A', 'P', 'E', 'N', 'D' };

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void capture_encode_header(uint8_t buf[CAPTURE_HEADER_SIZE], const struct capture_header *h)
{
	memset(buf, 0, CAPTURE_HEADER_SIZE);
	memcpy(buf, magic, 8);
	put32(buf + 8, CAPTURE_VERSION);
	put32(buf + 12, CAPTURE_HEADER_SIZE);
	put64(buf + 16, h->tsc_hz_milli);
	put64(buf + 24, h->start_tsc);
	put64(buf + 32, h->start_realtime_ns);
	put32(buf + 40, h->name_count);
	put32(buf + 44, h->flags);
	put32(buf + 48, h->ring_count);
	put32(buf + 52, h->max_open_spans);
	put32(buf + 56, h->max_stages);
	put64(buf + 64, h->stall_ticks);
	put64(buf + 72, h->flush_ticks);
	put64(buf + 80, h->overhead_ticks);
}

size_t capture_encode_name(uint8_t *buf, uint32_t point, uint8_t step, const char *label)
{
	size_t n = strnlen(label, CAPTURE_LABEL_MAX + 1);

	if (n == 0 || n > CAPTURE_LABEL_MAX)
		return 0;
	put32(buf, point);
	buf[4] = step;
	buf[5] = (uint8_t)n;
	memcpy(buf + CAPTURE_NAME_FIXED, label, n);
	return CAPTURE_NAME_FIXED + n;
}

void capture_encode_event(uint8_t buf[CAPTURE_EVENT_SIZE], const struct capture_event *e)
{
	put64(buf, e->tsc);
	put32(buf + 8, e->point);
	put32(buf + 12, e->event);
	put16(buf + 16, e->ring);
	put16(buf + 18, 0);
}

void capture_encode_trailer(uint8_t buf[CAPTURE_TRAILER_SIZE], const struct capture_trailer *t)
{
	memset(buf, 0, CAPTURE_TRAILER_SIZE);
	memcpy(buf, end_magic, 8);
	put64(buf + 8, t->events);
	put64(buf + 16, t->lost_buffer);
	put64(buf + 24, t->lost_cap);
	put64(buf + 32, t->dropped);
	put64(buf + 40, t->end_tsc);
	put32(buf + 48, t->flags);
	put32(buf + 52, t->name_count);
}

/* ---- decoding -------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

static int name_cmp(const void *a, const void *b)
{
	const struct capture_name *x = a, *y = b;

	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	return (x->step > y->step) - (x->step < y->step);
}

/* Decode `count` name entries from *off (up to `end`) into a sorted,
 * duplicate-free array (*ret, free it). */
static int parse_names(const uint8_t *buf, size_t *off, size_t end, uint32_t count,
		       const char *what, struct capture_name **ret, char *err, size_t errlen)
{
	struct capture_name *names = calloc(count ? count : 1, sizeof(*names));
	size_t o = *off;

	if (!names)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct capture_name *n = &names[i];

		if (end - o < CAPTURE_NAME_FIXED) {
			free(names);
			return refuse(err, errlen, "corrupt capture: %s %u of %u cut off at offset %zu",
				      what, i + 1, count, o);
		}
		n->point = get32(buf + o);
		n->step = buf[o + 4];
		n->len = buf[o + 5];
		if (n->len == 0 || n->len > CAPTURE_LABEL_MAX ||
		    end - o - CAPTURE_NAME_FIXED < n->len) {
			unsigned l = n->len;

			free(names);
			return refuse(err, errlen, "corrupt capture: %s %u has length %u at offset "
				      "%zu (labels are 1 to %u bytes and lie inside the file)",
				      what, i + 1, l, o + 5, CAPTURE_LABEL_MAX);
		}
		memcpy(n->label, buf + o + CAPTURE_NAME_FIXED, n->len);
		n->label[n->len] = '\0';
		o += CAPTURE_NAME_FIXED + n->len;
	}
	qsort(names, count, sizeof(*names), name_cmp);
	for (uint32_t i = 1; i < count; i++)
		if (!name_cmp(&names[i - 1], &names[i])) {
			uint32_t point = names[i].point;
			unsigned step = names[i].step;

			free(names);
			return refuse(err, errlen, "corrupt capture: two labels for point %u step %u",
				      point, step);
		}
	*off = o;
	*ret = names;
	return 0;
}

/* Add the names published during the recording that the header's table
 * lacks (a label never changes once published: the first one stays). */
static int merge_names(struct capture *c, const struct capture_name *late, uint32_t n)
{
	uint32_t total = c->h.name_count, k = 0;
	struct capture_name *all;

	all = realloc(c->names, ((size_t)total + n + 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	c->names = all;
	for (uint32_t i = 0; i < n; i++)
		if (!bsearch(&late[i], all, c->h.name_count, sizeof(*all), name_cmp))
			all[total + k++] = late[i];
	total += k;
	if (total > CAPTURE_MAX_NAMES)
		total = CAPTURE_MAX_NAMES;
	qsort(all, total, sizeof(*all), name_cmp);
	c->h.name_count = total;
	return 0;
}

static int by_label(const void *a, const void *b)
{
	return strcmp((*(const struct capture_name *const *)a)->label,
		      (*(const struct capture_name *const *)b)->label);
}

/* Mark the points' labels that another point shows as well. */
static int mark_shared(struct capture *c)
{
	struct capture_name **v = malloc((c->h.name_count + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->h.name_count; i++) {
		struct capture_name *nm = &c->names[i];

		nm->shared = nm->step == 0 && name_label_made_up(nm->label, nm->point);
		if (nm->step == 0)
			v[n++] = nm;
	}
	qsort(v, n, sizeof(*v), by_label);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(v[i - 1]->label, v[i]->label))
			v[i - 1]->shared = v[i]->shared = true;
	free(v);
	return 0;
}

/* An event, the time it sorts at and where it was read. */
struct placed {
	struct capture_event e;
	uint64_t at_tsc;
	size_t at;
};

static int by_time(const void *a, const void *b)
{
	const struct placed *x = a, *y = b;

	if (x->at_tsc != y->at_tsc)
		return x->at_tsc < y->at_tsc ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;   /* stable */
}

/*
 * Events are recorded as each sub-ring was read; put them into timestamp
 * order, as the daemon's merge does with span events before pairing sees
 * them (across sub-rings, and within one where a clock went back), equal
 * timestamps in the order they were read.  A value sample carries no time:
 * it sorts at the latest timestamp read from its ring before it (the
 * spans of its own batch come first), just after that event.
 */
static int order_events(struct capture *c)
{
	struct placed *p;
	uint64_t *latest;

	if (c->nevents < 2)
		return 0;
	p = malloc(c->nevents * sizeof(*p));
	latest = calloc(c->h.ring_count, sizeof(*latest));
	if (!p || !latest) {
		free(p);
		free(latest);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nevents; i++) {
		const struct capture_event *e = &c->events[i];
		uint64_t *l = &latest[e->ring];

		if (PERFMON_EVENT_STEP(e->event) != PERFMON_VALUE_STEP && e->tsc > *l)
			*l = e->tsc;
		p[i] = (struct placed){ *e, PERFMON_EVENT_STEP(e->event) == PERFMON_VALUE_STEP ?
					*l : e->tsc, i };
	}
	qsort(p, c->nevents, sizeof(*p), by_time);
	for (size_t i = 0; i < c->nevents; i++)
		c->events[i] = p[i].e;
	free(p);
	free(latest);
	return 0;
}

int capture_parse(const uint8_t *buf, size_t len, struct capture *ret, char *err,
		  size_t errlen)
{
	struct capture c;
	size_t off, end, body, i;
	uint32_t hsize, version;
	int e;

	memset(&c, 0, sizeof(c));
	if (len < CAPTURE_HEADER_SIZE || memcmp(buf, magic, 8) != 0)
		return refuse(err, errlen, "not a perfmond capture (no PMCAPTUR header)");
	version = get32(buf + 8);
	if (version < 1 || version > CAPTURE_VERSION)
		return refuse(err, errlen, "capture format version %u; this perfmonctl reads "
			      "versions 1 to %u", version, CAPTURE_VERSION);
	hsize = get32(buf + 12);
	if (hsize < (version == 1 ? CAPTURE_HEADER_SIZE_V1 : CAPTURE_HEADER_SIZE) || hsize > len)
		return refuse(err, errlen, "corrupt capture: header size %u at offset 12 (file "
			      "is %zu bytes)", hsize, len);
	c.version = version;
	c.h.tsc_hz_milli = get64(buf + 16);
	c.h.start_tsc = get64(buf + 24);
	c.h.start_realtime_ns = get64(buf + 32);
	c.h.name_count = get32(buf + 40);
	c.h.flags = get32(buf + 44);
	c.h.ring_count = get32(buf + 48);
	if (version >= 2) {
		c.h.max_open_spans = get32(buf + 52);
		c.h.max_stages = get32(buf + 56);
		c.h.stall_ticks = get64(buf + 64);
		c.h.flush_ticks = get64(buf + 72);
		c.h.overhead_ticks = get64(buf + 80);
	}
	if (c.h.name_count > CAPTURE_MAX_NAMES)
		return refuse(err, errlen, "corrupt capture: %u names at offset 40 (at most %u)",
			      c.h.name_count, CAPTURE_MAX_NAMES);
	if (c.h.ring_count == 0 || c.h.ring_count > CAPTURE_MAX_RINGS)
		return refuse(err, errlen, "corrupt capture: %u rings at offset 48", c.h.ring_count);

	/* Where the events end: before a trailer if there is one. */
	end = len;
	if (len - hsize >= CAPTURE_TRAILER_SIZE &&
	    memcmp(buf + len - CAPTURE_TRAILER_SIZE, end_magic, 8) == 0) {
		const uint8_t *t = buf + len - CAPTURE_TRAILER_SIZE;

		c.has_trailer = true;
		c.t.events = get64(t + 8);
		c.t.lost_buffer = get64(t + 16);
		c.t.lost_cap = get64(t + 24);
		c.t.dropped = get64(t + 32);
		c.t.end_tsc = get64(t + 40);
		c.t.flags = get32(t + 48);
		c.t.name_count = get32(t + 52);
		end = len - CAPTURE_TRAILER_SIZE;
	}

	off = hsize;
	e = parse_names(buf, &off, end, c.h.name_count, "name", &c.names, err, errlen);
	if (e < 0)
		return e;

	body = end - off;
	if (c.has_trailer) {
		struct capture_name *late = NULL;
		size_t loff;

		if (c.t.events > body / CAPTURE_EVENT_SIZE) {
			free(c.names);
			return refuse(err, errlen, "corrupt capture: the trailer counts %llu events "
				      "but only %zu bytes follow the name table (offset %zu)",
				      (unsigned long long)c.t.events, body, off);
		}
		loff = off + (size_t)c.t.events * CAPTURE_EVENT_SIZE;
		if (c.t.name_count > CAPTURE_MAX_NAMES) {
			free(c.names);
			return refuse(err, errlen, "corrupt capture: the trailer counts %u names",
				      c.t.name_count);
		}
		e = parse_names(buf, &loff, end, c.t.name_count, "late name", &late, err, errlen);
		if (e == 0 && loff != end)
			e = refuse(err, errlen, "corrupt capture: %zu stray bytes before the trailer "
				   "(offset %zu)", end - loff, loff);
		if (e == 0)
			e = merge_names(&c, late, c.t.name_count);
		free(late);
		if (e < 0) {
			free(c.names);
			return e;
		}
		body = (size_t)c.t.events * CAPTURE_EVENT_SIZE;
	} else {
		c.partial_bytes = body % CAPTURE_EVENT_SIZE;
	}
	c.nevents = body / CAPTURE_EVENT_SIZE;
	c.events = calloc(c.nevents ? c.nevents : 1, sizeof(*c.events));
	if (!c.events) {
		free(c.names);
		return -ENOMEM;
	}
	for (i = 0; i < c.nevents; i++, off += CAPTURE_EVENT_SIZE) {
		c.events[i].tsc = get64(buf + off);
		c.events[i].point = get32(buf + off + 8);
		c.events[i].event = get32(buf + off + 12);
		c.events[i].ring = get16(buf + off + 16);
		if (c.events[i].ring >= c.h.ring_count) {
			unsigned ring = c.events[i].ring;

			free(c.names);
			free(c.events);
			return refuse(err, errlen, "corrupt capture: event %zu names ring %u of %u "
				      "(offset %zu)", i + 1, ring, c.h.ring_count, off);
		}
	}
	if (mark_shared(&c) < 0 || order_events(&c) < 0) {
		free(c.names);
		free(c.events);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int capture_load(const char *path, uint64_t max_bytes, struct capture *ret, char *err,
		 size_t errlen)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	char why[512];
	int fd, e;

	/* Non-blocking, so that a FIFO cannot hold us in open(); a link is
	 * followed, as perfmonctl's other inputs follow it. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file (a FIFO, device or directory cannot "
			 "be a capture)", path);
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((uint64_t)st.st_size > max_bytes) {
		close(fd);
		snprintf(err, errlen, "%s: %lld bytes, more than the %llu a capture may have", path,
			 (long long)st.st_size, (unsigned long long)max_bytes);
		return -EFBIG;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	e = capture_parse(buf, got, ret, why, sizeof(why));
	free(buf);
	if (e == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", path);
	else if (e < 0)
		snprintf(err, errlen, "%s: %s", path, why);
	return e;
}

void capture_free(struct capture *c)
{
	free(c->names);
	free(c->events);
	memset(c, 0, sizeof(*c));
}

const char *capture_label(const struct capture *c, uint32_t point, uint8_t step)
{
	struct capture_name key = { .point = point, .step = step };
	const struct capture_name *n;

	if (!c->h.name_count)
		return NULL;
	n = bsearch(&key, c->names, c->h.name_count, sizeof(*c->names), name_cmp);
	return n ? n->label : NULL;
}

const char *capture_point_label(const struct capture *c, uint32_t point, bool *ret_shared)
{
	struct capture_name key = { .point = point, .step = 0 };
	const struct capture_name *n = c->h.name_count ?
		bsearch(&key, c->names, c->h.name_count, sizeof(*c->names), name_cmp) : NULL;

	*ret_shared = n && n->shared;
	return n ? n->label : NULL;
}

double capture_tsc_hz(const struct capture *c)
{
	if (c->h.flags & CAPTURE_FLAG_MONOTONIC)
		return 1e9;
	return (double)c->h.tsc_hz_milli / 1000.0;
}

uint64_t capture_realtime_of(const struct capture *c, uint64_t tsc)
{
	double hz = capture_tsc_hz(c);
	double d;

	if (hz <= 0)
		return c->h.start_realtime_ns;
	/* The offset is converted alone: the epoch time does not fit a
	 * double's mantissa to the nanosecond. */
	if (tsc >= c->h.start_tsc) {
		d = (double)(tsc - c->h.start_tsc) * 1e9 / hz + 0.5;
		return d >= (double)(UINT64_MAX - c->h.start_realtime_ns) ? UINT64_MAX :
			c->h.start_realtime_ns + (uint64_t)d;
	}
	d = (double)(c->h.start_tsc - tsc) * 1e9 / hz + 0.5;
	return d >= (double)c->h.start_realtime_ns ? 0 : c->h.start_realtime_ns - (uint64_t)d;
}
