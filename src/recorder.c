/*
 * recorder.c - copy drained events into a capture file without holding
 * up the drain thread (see recorder.h for the threads and their contract).
 *
 * The hand-over buffer is a power-of-two array of events with two
 * free-running counters: the drain thread writes entries, then publishes
 * `head` with release ordering; the writer reads `head` with acquire, so
 * the entries below it are complete, encodes and writes them, then
 * publishes `tail` with release so the drain thread may reuse the slots.
 * The drain thread re-reads `tail` only when its cached copy says the
 * buffer is full.  The state word orders everything else: the drain
 * thread's counters (lost, dropped, end time) are written before it stores
 * DRAINED (release) and read by the writer after it loads DRAINED
 * (acquire); the writer's result is published the same way with DONE.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

#define WRITE_CHUNK_EVENTS 4096
#define WRITER_IDLE_NS 1000000     /* writer's sleep when the buffer is empty */

struct recorder {
	struct recorder_shared sh;       /* first: recorder_active() reads it */

	/* set by recorder_start before ACTIVE, read-only until DONE */
	struct capture_event *buf;       /* RECORDER_BUFFER_EVENTS, mmap'd */
	int fd;
	uint64_t end_tsc;                /* the deadline on the drain clock */
	uint64_t max_bytes;
	pthread_t writer;
	bool writer_running;

	/* drain thread (the final drain at shutdown: main thread, after the
	 * drain thread has exited) */
	_Atomic uint64_t head;
	uint64_t tail_seen;              /* cached tail */
	bool fed;                        /* dropped0 taken */
	uint64_t dropped0;
	uint64_t lost_buffer;
	uint64_t dropped;                /* during the recording, at DRAINED */
	uint64_t stopped_tsc;
	uint32_t end_flags;              /* CAPTURE_END_SHUTDOWN */

	/* writer thread */
	_Atomic uint64_t tail;
	_Atomic uint32_t stop;           /* writer -> drain: size cap reached */
	uint64_t bytes;
	uint64_t written;                /* events in the file */
	uint64_t lost_cap;
	uint32_t writer_flags;           /* CAPTURE_END_CAPPED, _WRITE_ERROR */
	int error;
	uint8_t io[WRITE_CHUNK_EVENTS * CAPTURE_EVENT_SIZE];
};

struct recorder *recorder_new(void)
{
	struct recorder *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fd = -1;
	atomic_init(&r->sh.state, RECORDER_IDLE);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->stop, 0);
	return r;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* Encode and write buffered events [tail, head); past the cap or after a
 * failed write they are counted, not written. */
static void write_pending(struct recorder *r, uint64_t tail, uint64_t head)
{
	while (tail < head) {
		size_t n = 0;
		uint64_t room;

		while (tail + n < head && n < WRITE_CHUNK_EVENTS) {
			capture_encode_event(r->io + n * CAPTURE_EVENT_SIZE,
					     &r->buf[(tail + n) & (RECORDER_BUFFER_EVENTS - 1)]);
			n++;
		}
		room = r->bytes + CAPTURE_TRAILER_SIZE < r->max_bytes ?
		       (r->max_bytes - r->bytes - CAPTURE_TRAILER_SIZE) / CAPTURE_EVENT_SIZE : 0;
		if (r->error || room < n) {
			size_t k = r->error ? 0 : (size_t)room;

			if (k && write_all(r->fd, r->io, k * CAPTURE_EVENT_SIZE) == 0) {
				r->bytes += k * CAPTURE_EVENT_SIZE;
				r->written += k;
			}
			if (!r->error) {
				r->writer_flags |= CAPTURE_END_CAPPED;
				r->lost_cap += n - k;
			} else {
				r->lost_cap += n;
			}
			atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
		} else {
			int e = write_all(r->fd, r->io, n * CAPTURE_EVENT_SIZE);

			if (e < 0) {
				r->error = e;
				r->writer_flags |= CAPTURE_END_WRITE_ERROR;
				r->lost_cap += n;
				atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
			} else {
				r->bytes += n * CAPTURE_EVENT_SIZE;
				r->written += n;
			}
		}
		tail += n;
		/* Release: the slots are read before the drain thread reuses them. */
		atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
}

static void *writer_main(void *arg)
{
	struct recorder *r = arg;
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	for (;;) {
		/* State before head: once DRAINED is seen, the head read after it
		 * is final. */
		uint32_t st = atomic_load_explicit(&r->sh.state, memory_order_acquire);
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);

		if (head != tail) {
			write_pending(r, tail, head);
			tail = head;
			continue;
		}
		if (st == RECORDER_DRAINED)
			break;
		sleep_ns(WRITER_IDLE_NS);
	}
	/* Release: the result is complete when the main thread sees DONE. */
	atomic_store_explicit(&r->sh.state, RECORDER_DONE, memory_order_release);
	return NULL;
}

/* The labels of `names` as name-table entries, at most `max_bytes` of
 * them: a malloc'd buffer (free it) of *ret_len bytes holding *ret_count
 * entries.  NULL (and *ret_len 0) when there are none; -ENOMEM. */
static int encode_names(const struct name_cache *names, size_t max_bytes, uint8_t **ret,
			size_t *ret_len, uint32_t *ret_count)
{
	uint8_t *nb = NULL;
	size_t nlen = 0, cap = 0;
	uint32_t pos = 0, point, count = 0;
	uint8_t step;
	const char *label;

	while (names && name_cache_next(names, &pos, &point, &step, &label) &&
	       count < CAPTURE_MAX_NAMES) {
		uint8_t entry[CAPTURE_NAME_FIXED + CAPTURE_LABEL_MAX];
		size_t k = capture_encode_name(entry, point, step, label);

		if (!k)
			continue;
		if (nlen + k > max_bytes)
			break;
		if (nlen + k > cap) {
			uint8_t *nn = realloc(nb, cap ? cap * 2 : 4096);

			if (!nn) {
				free(nb);
				return -ENOMEM;
			}
			nb = nn;
			cap = cap ? cap * 2 : 4096;
		}
		memcpy(nb + nlen, entry, k);
		nlen += k;
		count++;
	}
	*ret = nb;
	*ret_len = nlen;
	*ret_count = count;
	return 0;
}

/* Header and name table, written by the main thread before the writer
 * starts. */
static int write_head(struct recorder *r, const struct capture_header *h,
		      const struct name_cache *names)
{
	struct capture_header hh = *h;
	uint8_t hb[CAPTURE_HEADER_SIZE];
	uint8_t *nb;
	size_t nlen;
	int e;

	/* Half the cap at most, so events always have room. */
	e = encode_names(names, (r->max_bytes - CAPTURE_HEADER_SIZE - CAPTURE_TRAILER_SIZE) / 2,
			 &nb, &nlen, &hh.name_count);
	if (e < 0)
		return e;
	capture_encode_header(hb, &hh);
	e = write_all(r->fd, hb, sizeof(hb));
	if (e == 0 && nlen)
		e = write_all(r->fd, nb, nlen);
	free(nb);
	r->bytes = sizeof(hb) + nlen;
	return e;
}

/* After the events: the labels as they are now (those published during
 * the recording too), as far as the cap allows, then the trailer. */
static void write_tail(struct recorder *r, const struct name_cache *names)
{
	struct capture_trailer t;
	uint8_t tb[CAPTURE_TRAILER_SIZE];
	uint64_t room = r->max_bytes > r->bytes + CAPTURE_TRAILER_SIZE ?
			r->max_bytes - r->bytes - CAPTURE_TRAILER_SIZE : 0;
	uint8_t *nb = NULL;
	size_t nlen = 0;
	int e;

	memset(&t, 0, sizeof(t));
	if (encode_names(names, (size_t)room, &nb, &nlen, &t.name_count) < 0)
		t.name_count = 0;
	t.events = r->written;
	t.lost_buffer = r->lost_buffer;
	t.lost_cap = r->lost_cap;
	t.dropped = r->dropped;
	t.end_tsc = r->stopped_tsc;
	t.flags = r->end_flags | r->writer_flags;
	capture_encode_trailer(tb, &t);
	e = nlen ? write_all(r->fd, nb, nlen) : 0;
	if (e == 0)
		e = write_all(r->fd, tb, sizeof(tb));
	free(nb);
	if (e < 0)
		r->error = e;
}

int recorder_start(struct recorder *r, int fd, uint64_t now_tsc, uint64_t duration_ticks,
		   uint64_t max_bytes, const struct capture_header *h,
		   const struct name_cache *names, char *err, size_t errlen)
{
	struct stat st;
	int fl, e;

	if (atomic_load_explicit(&r->sh.state, memory_order_acquire) != RECORDER_IDLE) {
		close(fd);
		snprintf(err, errlen, "a recording is already running; wait for it to finish");
		return -EBUSY;
	}
	fl = fcntl(fd, F_GETFL);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fl < 0 ||
	    (fl & O_ACCMODE) == O_RDONLY) {
		close(fd);
		snprintf(err, errlen, "the capture must go to a regular file opened for writing");
		return -EINVAL;
	}
	/* Faulted in here, not a page at a time by the drain thread feeding
	 * it (some microseconds each, at a rate the ring may not survive). */
	r->buf = mmap(NULL, RECORDER_BUFFER_EVENTS * sizeof(*r->buf), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (r->buf == MAP_FAILED) {
		r->buf = NULL;
		close(fd);
		snprintf(err, errlen, "cannot allocate the recording buffer: %s", strerror(errno));
		return -ENOMEM;
	}
	r->fd = fd;
	r->max_bytes = max_bytes && max_bytes < RECORDER_MAX_BYTES ? max_bytes : RECORDER_MAX_BYTES;
	if (r->max_bytes < CAPTURE_HEADER_SIZE + CAPTURE_TRAILER_SIZE)
		r->max_bytes = CAPTURE_HEADER_SIZE + CAPTURE_TRAILER_SIZE;
	r->end_tsc = now_tsc + duration_ticks < now_tsc ? UINT64_MAX : now_tsc + duration_ticks;
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&r->stop, 0, memory_order_relaxed);
	r->tail_seen = 0;
	r->fed = false;
	r->dropped0 = r->dropped = r->lost_buffer = r->lost_cap = r->written = 0;
	r->stopped_tsc = 0;
	r->end_flags = r->writer_flags = 0;
	r->error = 0;
	e = write_head(r, h, names);
	if (e < 0) {
		snprintf(err, errlen, "cannot write the capture's header: %s", strerror(-e));
		goto error;
	}
	e = -pthread_create(&r->writer, NULL, writer_main, r);
	if (e < 0) {
		snprintf(err, errlen, "cannot start the capture writer: %s", strerror(-e));
		goto error;
	}
	pthread_setname_np(r->writer, "perfmond-record");
	r->writer_running = true;
	/* Release: the buffer, fd and deadline are set before the drain
	 * thread sees ACTIVE. */
	atomic_store_explicit(&r->sh.state, RECORDER_ACTIVE, memory_order_release);
	return 0;

error:
	munmap(r->buf, RECORDER_BUFFER_EVENTS * sizeof(*r->buf));
	r->buf = NULL;
	close(fd);
	r->fd = -1;
	return e;
}

/* Drain side: stop feeding and let the writer finish. */
static void stop_feeding(struct recorder *r, uint64_t now_tsc, uint64_t dropped)
{
	r->stopped_tsc = now_tsc;
	r->dropped = r->fed && dropped > r->dropped0 ? dropped - r->dropped0 : 0;
	atomic_store_explicit(&r->sh.state, RECORDER_DRAINED, memory_order_release);
}

/* Copy `n` events into the buffer from `head`, as far as `room` goes;
 * returns how many were copied. */
static size_t copy_in(struct recorder *r, uint64_t head, size_t room,
		      const struct perfmon_event *ev, size_t n, uint16_t ring)
{
	if (n > room)
		n = room;
	for (size_t i = 0; i < n; i++) {
		struct capture_event *e = &r->buf[(head + i) & (RECORDER_BUFFER_EVENTS - 1)];

		e->tsc = ev[i].tsc;
		e->point = ev[i].point;
		e->event = ev[i].event;
		e->ring = ring;
	}
	return n;
}

void recorder_tick(struct recorder *r, uint64_t now_tsc, uint64_t dropped)
{
	/* Not ACTIVE: stopped by an earlier tick, perhaps already collected
	 * and idle again; storing DRAINED now would wedge the recorder. */
	if (!recorder_active(r))
		return;
	if (!r->fed) {
		r->fed = true;
		r->dropped0 = dropped;
	}
	if (now_tsc >= r->end_tsc || atomic_load_explicit(&r->stop, memory_order_relaxed))
		stop_feeding(r, now_tsc, dropped);
}

void recorder_feed(struct recorder *r, uint16_t ring, const struct perfmon_event *spans,
		   size_t nspans, const struct perfmon_event *values, size_t nvalues)
{
	uint64_t head;
	size_t room, n = nspans + nvalues, done;

	/* Started between a tick and this read: the read's drops were counted
	 * before the baseline, so its events are not the recording's. */
	if (!recorder_active(r) || !r->fed || !n)
		return;
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	room = RECORDER_BUFFER_EVENTS - (size_t)(head - r->tail_seen);
	if (room < n) {
		/* Acquire: the writer has read the slots it gave back. */
		r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
		room = RECORDER_BUFFER_EVENTS - (size_t)(head - r->tail_seen);
	}
	if (room < n)
		r->lost_buffer += n - room;
	done = copy_in(r, head, room, spans, nspans, ring);
	done += copy_in(r, head + done, room - done, values, nvalues, ring);
	/* Release: the entries are written before the writer sees them. */
	atomic_store_explicit(&r->head, head + done, memory_order_release);
}

static void collect(struct recorder *r, const struct name_cache *names,
		    struct recorder_result *ret)
{
	pthread_join(r->writer, NULL);
	r->writer_running = false;
	if (!r->error)
		write_tail(r, names);
	if (fsync(r->fd) < 0 && errno != EINVAL && !r->error)
		r->error = -errno;
	if (close(r->fd) < 0 && !r->error)
		r->error = -errno;
	r->fd = -1;
	if (ret) {
		memset(ret, 0, sizeof(*ret));
		ret->t.events = r->written;
		ret->t.lost_buffer = r->lost_buffer;
		ret->t.lost_cap = r->lost_cap;
		ret->t.dropped = r->dropped;
		ret->t.end_tsc = r->stopped_tsc;
		ret->t.flags = r->end_flags | r->writer_flags;
		ret->error = r->error;
	}
	munmap(r->buf, RECORDER_BUFFER_EVENTS * sizeof(*r->buf));
	r->buf = NULL;
	atomic_store_explicit(&r->sh.state, RECORDER_IDLE, memory_order_release);
}

bool recorder_finished(struct recorder *r)
{
	return atomic_load_explicit(&r->sh.state, memory_order_acquire) == RECORDER_DONE;
}

bool recorder_idle(struct recorder *r)
{
	return atomic_load_explicit(&r->sh.state, memory_order_acquire) == RECORDER_IDLE;
}

bool recorder_poll(struct recorder *r, const struct name_cache *names,
		   struct recorder_result *ret)
{
	if (atomic_load_explicit(&r->sh.state, memory_order_acquire) != RECORDER_DONE)
		return false;
	collect(r, names, ret);
	return true;
}

bool recorder_shutdown(struct recorder *r, uint64_t now_tsc, uint64_t dropped,
		       const struct name_cache *names, struct recorder_result *ret)
{
	uint32_t st = atomic_load_explicit(&r->sh.state, memory_order_acquire);

	if (st == RECORDER_IDLE)
		return false;
	if (st == RECORDER_ACTIVE) {
		/* The drain thread has exited: this thread is the feeder now. */
		r->end_flags |= CAPTURE_END_SHUTDOWN;
		stop_feeding(r, now_tsc, dropped);
	}
	while (atomic_load_explicit(&r->sh.state, memory_order_acquire) != RECORDER_DONE)
		sleep_ns(WRITER_IDLE_NS);
	collect(r, names, ret);
	return true;
}

void recorder_free(struct recorder *r)
{
	if (!r)
		return;
	recorder_shutdown(r, 0, 0, NULL, NULL);
	free(r);
}
