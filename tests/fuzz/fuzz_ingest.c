/*
 * fuzz_ingest.c - libFuzzer harness for everything the daemon does with
 * bytes a producer wrote: the ring (slots, markers, head) and the control
 * block's name table, through the ring reader, pairing, the name cache,
 * the interval and lifetime reports, the CSV writer and the summary.
 *
 * Flow: [fuzz input as producer writes] -> ring -> ring_reader -> pairing
 * -> report (labels from names) -> csv_out / summary -> checked here.
 *
 * The input is a small program run against a private ring and control
 * block laid out exactly as in shared memory (docs/shm-layout.md):
 *
 *   8 setup bytes   capacity and sub-rings (1 to 16), name-table size,
 *                   table sizes, unit and percentiles, stall timeout,
 *                   hole grace, start index
 *   then opcodes    raw slot bytes, any head, a well-formed publish, a
 *                   reservation never published, raw or well-formed name
 *                   entries, a generation bump, a drain after some time, a
 *                   clock jump, an interval flip with its CSV rows
 *
 * Raw opcodes let the fuzzer write anything a hostile producer could;
 * the well-formed ones let it reach deep pairing states quickly.  After
 * every step the harness checks what must hold whatever was written:
 *   - every index the reader passed is read, dropped, stalled or a watched
 *     hole, exactly once (while the head never went backwards);
 *   - the open-span table never exceeds its capacity;
 *   - the CSV parses strictly, every record has the header's width, one
 *     record per line (no label can add a row), and it holds no control
 *     character or invalid UTF-8;
 *   - the summary holds no control character other than the line breaks.
 * AddressSanitizer and UBSan (built in by tests/fuzz/run.sh) catch every
 * out-of-bounds access or undefined operation on the way.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfmon/layout.h>

#include "csv_out.h"
#include "fuzz_text.h"
#include "names.h"
#include "pairing.h"
#include "report.h"
#include "ring_reader.h"
#include "summary.h"

#define BATCH_MAX 64
#define TSC_HZ 2.5e9

enum op {
	OP_RAW_SLOT,     /* u16 index, 32 bytes: a slot as anyone could write it */
	OP_SET_HEAD,     /* u64: the shared reservation counter */
	OP_PUBLISH,      /* u32 point, u32 event, u64 tsc: producer protocol */
	OP_STAMP,        /* u8 point, u8 step, u8 seq, u16 dt: a plausible event */
	OP_RESERVE,      /* reserve a slot and never publish it (a dead producer) */
	OP_DRAIN,        /* u16 dt: advance the clock, drain one batch, pair it */
	OP_NAME_RAW,     /* u8 entry, u64 key, 64 bytes label: a raw table entry */
	OP_NAME,         /* u8 point, u8 step, u8 len, bytes: a well-formed entry */
	OP_GENERATION,   /* bump name_generation so the cache reloads */
	OP_FLIP,         /* end the interval: sweep, flip, report, CSV rows */
	OP_CLOCK,        /* u64: set the reader's clock (jumps, wrap-around) */
	OP_COUNT
};

struct input {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct input *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		uint8_t b = 0;
		if (in->n) {
			b = *in->p++;
			in->n--;
		}
		v |= (uint64_t)b << (8 * i);
	}
	return v;
}

static void take_bytes(struct input *in, void *dst, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memcpy(dst, in->p, k);
	memset((char *)dst + k, 0, len - k);
	in->p += k;
	in->n -= k;
}

struct world {
	struct perfmon_ring_header *ring;
	uint32_t nsub;
	uint64_t capacity;
	struct perfmon_meta_header *meta;
	struct perfmon_name_entry *names;
	uint32_t max_names;

	struct ring_reader reader;
	uint64_t start_tail;
	uint64_t now;
	uint64_t last_tsc;
	bool head_moved_back;
	uint32_t max_open_spans;

	struct pairing *pairing;
	struct name_cache cache;
	struct report rep, life;
	struct report_settings rs;
	struct csv_out *csv;
	uint64_t last_dropped, last_stalled;
	uint64_t realtime;
	uint64_t csv_checked;        /* CSV bytes already checked */
	size_t csv_width;            /* the header's field count */
};

static char csv_path[256];

/* A scratch directory for the CSV, removed when the fuzzer exits. */
static void remove_scratch(void)
{
	char dir[256];
	char *slash;

	unlink(csv_path);
	snprintf(dir, sizeof(dir), "%s", csv_path);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		rmdir(dir);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	char dir[200];

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/fuzz_ingest.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz_ingest: mkdtemp");
		exit(1);
	}
	snprintf(csv_path, sizeof(csv_path), "%s/out.csv", dir);
	atexit(remove_scratch);
	return 0;
}

/* The reader's books: everything below its tail is accounted for once. */
static void check_accounting(struct world *w)
{
	struct ring_reader *r = &w->reader;
	uint64_t passed = 0, holes = 0;

	for (uint32_t k = 0; k < w->nsub; k++) {
		FUZZ_CHECK(r->sub[k].nholes <= RING_MAX_HOLES, "hole list overflow");
		passed += r->sub[k].tail - w->start_tail;
		holes += r->sub[k].nholes;
	}
	if (r->head_resets || w->head_moved_back)
		return;
	FUZZ_CHECK(r->read + r->dropped + r->stalled + holes == passed,
		   "read + dropped + stalled + holes must equal the indices passed");
}

static uint64_t *head_of(struct world *w, uint32_t sub)
{
	return &PERFMON_SUBRING(w->ring, sub % w->nsub)->head;
}

static struct perfmon_slot *slot_of(struct world *w, uint32_t sub, uint64_t idx)
{
	return PERFMON_SUBRING_SLOTS(w->ring, w->nsub, w->capacity, sub % w->nsub) +
	       (idx & (w->capacity - 1));
}

static void publish(struct world *w, uint32_t sub, uint64_t tsc, uint32_t point,
		    uint32_t event)
{
	uint64_t idx = (*head_of(w, sub))++;
	struct perfmon_slot *s = slot_of(w, sub, idx);

	s->marker = (idx + 1) | PERFMON_SLOT_BUSY;
	s->tsc = tsc;
	s->point_event = (uint64_t)point | (uint64_t)event << 32;
	s->marker = idx + 1;
}

static void feed(struct world *w, const struct ring_batch *b)
{
	for (size_t k = 1; k < b->nspans; k++)
		FUZZ_CHECK(b->spans[k - 1].tsc <= b->spans[k].tsc,
			   "spans released out of timestamp order");
	if (b->nvalues)
		pairing_feed(w->pairing, b->values, b->nvalues);
	if (b->nspans)
		pairing_feed(w->pairing, b->spans, b->nspans);
}

static void drain(struct world *w)
{
	struct ring_batch b;

	ring_drain(&w->reader, w->now, w->now, &b);
	feed(w, &b);
	FUZZ_CHECK(pairing_open_spans(w->pairing) <= w->max_open_spans,
		   "more open spans than the table holds");
	check_accounting(w);
}

/*
 * Check what the CSV writer appended since the last check as a strict
 * reader would: whole rows, clean text, one record per line, each as wide
 * as the header.
 */
static void check_csv_file(struct world *w)
{
	static char buf[1 << 20];
	size_t width = 0, lines = 0;
	ssize_t n;
	long records;
	int fd = open(csv_path, O_RDONLY | O_CLOEXEC);

	FUZZ_CHECK(fd >= 0, "the CSV was not created");
	n = pread(fd, buf, sizeof(buf), (off_t)w->csv_checked);
	close(fd);
	FUZZ_CHECK(n >= 0 && (size_t)n < sizeof(buf), "CSV unreadable, or an interval too large");
	if (n == 0)
		return;
	FUZZ_CHECK(buf[n - 1] == '\n', "the CSV must end with a whole row");
	FUZZ_CHECK(fuzz_text_clean(buf, (size_t)n, "\n"),
		   "control character or invalid UTF-8 in the CSV");
	for (ssize_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	records = fuzz_csv_records(buf, (size_t)n, &width);
	FUZZ_CHECK(records >= 1, "the CSV does not parse, or a row's width differs");
	FUZZ_CHECK((size_t)records == lines, "a label spread a row over several lines");
	if (!w->csv_width) {
		/* timestamp ... stddev, the percentiles, max, tsc_hz [, overhead] */
		FUZZ_CHECK(width == 16 + w->rs.npct + (w->rs.subtract_overhead ? 1 : 0),
			   "the header does not have the configured columns");
		w->csv_width = width;
	}
	FUZZ_CHECK(width == w->csv_width, "a row's width differs from the header's");
	w->csv_checked += (uint64_t)n;
}

static void flip(struct world *w, bool last)
{
	struct pairing_interval iv;
	struct report_collector coll;

	pairing_sweep(w->pairing, w->now);
	if (!pairing_flip(w->pairing, w->now))
		return;
	FUZZ_CHECK(pairing_collect(w->pairing, &iv), "a flipped interval must be collectable");
	name_cache_refresh(&w->cache, w->meta, w->names, w->max_names);
	coll.dropped = w->reader.dropped - w->last_dropped;
	coll.stalled = w->reader.stalled - w->last_stalled;
	w->last_dropped = w->reader.dropped;
	w->last_stalled = w->reader.stalled;
	w->realtime += 1000000000u;
	report_build_interval(&w->rep, w->pairing, &iv, &w->cache, &w->rs, TSC_HZ, &coll,
			      w->realtime);
	FUZZ_CHECK(w->rep.nrows <= w->rep.cap, "report overrun");
	for (uint32_t i = 0; i < w->rep.nrows; i++) {
		const struct report_row *row = &w->rep.rows[i];
		FUZZ_CHECK(fuzz_text_clean(row->point, strnlen(row->point, sizeof(row->point)), NULL) &&
			   fuzz_text_clean(row->stage, strnlen(row->stage, sizeof(row->stage)), NULL),
			   "a report label holds a control character or invalid UTF-8");
	}
	if (w->csv) {
		csv_out_write(w->csv, &w->rep, 1);
		FUZZ_CHECK(csv_out_lost(w->csv) == 0, "a CSV row was lost");
		check_csv_file(w);
	}
	if (last) {
		struct report_collector total = { w->reader.dropped, w->reader.stalled };
		struct summary_info si = {
			.instance = "fuzz", .tsc_hz = TSC_HZ, .tsc_invariant = true,
			.tsc_clock = true, .run_ns = 1000000000u, .overhead_ticks = 20,
			.subtracting = w->rs.subtract_overhead, .unit = w->rs.unit,
			.drained = w->reader.read, .dropped = w->reader.dropped,
			.stalled = w->reader.stalled,
		};
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		report_build_lifetime(&w->life, w->pairing, &iv, &w->cache, &w->rs, TSC_HZ,
				      &total);
		f = open_memstream(&text, &len);
		FUZZ_CHECK(f != NULL, "open_memstream");
		summary_format(f, &w->life, &si);
		fclose(f);
		FUZZ_CHECK(fuzz_text_clean(text, len, "\n"),
			   "control character or invalid UTF-8 in the summary");
		free(text);
	}
	pairing_release(w->pairing);
}

static void settings(struct report_settings *rs, uint8_t flags)
{
	static const double sets[4][5] = {
		{ 50, 90, 99, 99.9, 0 }, { 0, 100, 0, 0, 0 },
		{ 25, 50, 75, 99.99, 99.999 }, { 1e-9, 99.999999, 0, 0, 0 },
	};
	static const unsigned count[4] = { 4, 2, 5, 2 };
	unsigned which = (flags >> 3) & 3;

	memset(rs, 0, sizeof(*rs));
	rs->unit = (enum report_unit)((flags >> 1) % 3);
	rs->subtract_overhead = flags & 1;
	rs->npct = count[which];
	for (unsigned i = 0; i < rs->npct; i++) {
		rs->pct[i] = sets[which][i];
		snprintf(rs->pct_label[i], sizeof(rs->pct_label[i]), "p%u", i);
	}
}

static bool setup(struct world *w, struct input *in)
{
	uint8_t h[8];
	struct pairing_config pc;
	char err[512];
	size_t rlen, mlen;

	take_bytes(in, h, sizeof(h));
	memset(w, 0, sizeof(*w));
	w->capacity = UINT64_C(1) << (1 + h[0] % 10);
	w->nsub = UINT32_C(1) << (h[0] / 10 % 5);   /* 1 to 16: the radix sort from 9 */
	/* At most 4096 slots in all, which keeps an input as quick to run
	 * with 16 sub-rings as with 4. */
	while (w->capacity > 2 && w->capacity * w->nsub > 4096)
		w->capacity /= 2;
	w->max_names = h[1] % 33;
	w->max_open_spans = 1 + h[2] % 16;
	rlen = PERFMON_RING_BYTES(w->nsub, w->capacity);
	mlen = PERFMON_META_BYTES(w->max_names);
	if (posix_memalign((void **)&w->ring, 64, rlen) ||
	    posix_memalign((void **)&w->meta, 64, mlen))
		return false;
	memset(w->ring, 0, rlen);
	memset(w->meta, 0, mlen);
	w->ring->magic = PERFMON_RING_MAGIC;
	w->ring->version = PERFMON_LAYOUT_VERSION;
	w->ring->header_size = PERFMON_RING_HEADER_SIZE;
	w->ring->slot_size = sizeof(struct perfmon_slot);
	w->ring->capacity = w->capacity;
	w->ring->subrings = w->nsub;
	w->ring->slots_offset = (uint32_t)PERFMON_RING_SLOTS_OFFSET(w->nsub);
	w->meta->magic = PERFMON_META_MAGIC;
	w->meta->version = PERFMON_LAYOUT_VERSION;
	w->meta->header_size = PERFMON_META_NAMES_OFFSET;
	w->meta->max_names = w->max_names;
	w->meta->label_size = PERFMON_LABEL_SIZE;
	w->names = (struct perfmon_name_entry *)((char *)w->meta + PERFMON_META_NAMES_OFFSET);

	/* A start index near 2^64 tests wrap-around in the reader's arithmetic. */
	w->start_tail = h[7] & 0x80 ? UINT64_MAX - (h[7] & 0x7F) : h[7];
	{
		uint64_t tails[16];
		for (uint32_t k = 0; k < w->nsub; k++)
			*head_of(w, k) = tails[k] = w->start_tail;
		w->now = 1000;
		if (ring_reader_init(&w->reader, w->ring, w->nsub, w->capacity, tails, h[6],
				     h[5] ? (uint64_t)h[5] * 64 : UINT64_MAX) < 0)
			return false;
	}

	pc = (struct pairing_config){
		.max_open_spans = w->max_open_spans,
		.max_stages = 1 + h[3] % 24,
		.stall_ticks = (uint64_t)h[5] * 64,
		.overhead_ticks = 20,
		.subtract_overhead = h[4] & 1,
	};
	w->pairing = pairing_new(&pc);
	if (!w->pairing)
		return false;
	if (report_init(&w->rep, w->pairing) < 0 || report_init(&w->life, w->pairing) < 0 ||
	    name_cache_init(&w->cache, w->max_names) < 0)
		return false;
	settings(&w->rs, h[4]);
	w->realtime = UINT64_C(1700000000000000000);
	unlink(csv_path);
	if (csv_out_open(&w->csv, csv_path, &w->rs, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_ingest: %s\n", err);
		abort();
	}
	return true;
}

static void teardown(struct world *w)
{
	csv_out_close(w->csv);
	name_cache_free(&w->cache);
	report_free(&w->rep);
	report_free(&w->life);
	pairing_free(w->pairing);
	ring_reader_free(&w->reader);
	free(w->ring);
	free(w->meta);
}

static void run(struct world *w, struct input *in)
{
	unsigned steps = 0;

	while (in->n && steps++ < 4096) {
		switch (take(in, 1) % OP_COUNT) {
		case OP_RAW_SLOT: {
			uint32_t sub = (uint32_t)take(in, 1);
			struct perfmon_slot *sl = slot_of(w, sub, take(in, 2));
			take_bytes(in, sl, sizeof(*sl));
			break;
		}
		case OP_SET_HEAD: {
			uint64_t *hp = head_of(w, (uint32_t)take(in, 1));
			uint64_t h = take(in, 8);
			if (h < *hp)
				w->head_moved_back = true;
			*hp = h;
			break;
		}
		case OP_PUBLISH: {
			uint32_t sub = (uint32_t)take(in, 1);
			uint32_t point = (uint32_t)take(in, 4);
			uint32_t event = (uint32_t)take(in, 4);
			publish(w, sub, take(in, 8), point, event);
			break;
		}
		case OP_STAMP: {
			uint32_t sub = (uint32_t)take(in, 1);
			uint32_t point = (uint32_t)take(in, 1) % 6;
			uint8_t step = (uint8_t)take(in, 1);
			uint32_t seq = (uint32_t)take(in, 1) % 8;
			/* Mostly forward in time, sometimes backwards. */
			int64_t dt = (int64_t)take(in, 2) - 2048;
			w->last_tsc += (uint64_t)dt;
			publish(w, sub, w->last_tsc, point, PERFMON_EVENT(step, seq));
			break;
		}
		case OP_RESERVE: {
			uint32_t sub = (uint32_t)take(in, 1);
			uint64_t idx = (*head_of(w, sub))++;
			slot_of(w, sub, idx)->marker = (idx + 1) | PERFMON_SLOT_BUSY;
			break;
		}
		case OP_DRAIN:
			w->now += take(in, 2);
			drain(w);
			break;
		case OP_NAME_RAW: {
			uint32_t i = (uint32_t)take(in, 1);
			uint64_t key = take(in, 8);
			char label[PERFMON_LABEL_SIZE];
			take_bytes(in, label, sizeof(label));
			if (w->max_names) {
				i %= w->max_names;
				w->names[i].key = key;
				memcpy(w->names[i].label, label, sizeof(label));
			}
			break;
		}
		case OP_NAME: {
			uint32_t i = (uint32_t)take(in, 1);
			uint32_t point = (uint32_t)take(in, 1) % 6;
			uint8_t step = (uint8_t)take(in, 1);
			size_t len = take(in, 1) % PERFMON_LABEL_SIZE;
			if (w->max_names) {
				struct perfmon_name_entry *e = &w->names[i % w->max_names];
				take_bytes(in, e->label, len);
				e->label[len] = '\0';
				e->key = PERFMON_NAME_KEY(point, step);
				w->meta->name_generation++;
			}
			break;
		}
		case OP_GENERATION:
			w->meta->name_generation++;
			break;
		case OP_FLIP:
			flip(w, false);
			break;
		case OP_CLOCK:
			w->now = take(in, 8);
			break;
		}
	}

	/* Shut down as the daemon does: drain everything reserved, give up
	 * on the holes left, report the last interval and the lifetime. */
	ring_reader_freeze(&w->reader);
	for (unsigned i = 0; i < 64 && !ring_reader_settled(&w->reader); i++) {
		w->now += 1000;
		drain(w);
	}
	ring_reader_abandon_holes(&w->reader);
	for (unsigned i = 0; i < 256 && !ring_reader_settled(&w->reader); i++)
		drain(w);
	FUZZ_CHECK(ring_reader_settled(&w->reader), "the final drain must settle");
	{
		struct ring_batch b;
		ring_reader_release_all(&w->reader, &b);
		feed(w, &b);
	}
	check_accounting(w);
	flip(w, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct world w;
	struct input in = { data, size };

	if (setup(&w, &in))
		run(&w, &in);
	teardown(&w);
	return 0;
}
