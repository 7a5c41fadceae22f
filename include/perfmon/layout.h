/*
 * perfmon/layout.h - the shared-memory layout of perfmond, defined once.
 *
 * The event encoding, the two segments of an instance (the ring and its
 * control block), and the sizes and offsets both sides derive from a
 * geometry.  Producers get it through <perfmon.h>; the daemon, perfmonctl
 * and the tests that only read or forge segments include it alone.
 * docs/shm-layout.md describes it field by field.
 *
 * Declarations only: types, constants, macros and compile-time checks; no
 * function, no object, and nothing that depends on how the including
 * program is built.  Names beginning with perfmon__ or PERFMON__ are
 * internal.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_LAYOUT_H
#define PERFMON_LAYOUT_H

#include <stdint.h>
#include <stddef.h>

/* ---- Event encoding (docs/shm-layout.md, the slot's event field) ----- */

#define PERFMON_BEGIN_STEP    0x00u
#define PERFMON_END_STEP      0xFFu
#define PERFMON_VALUE_STEP    0xFEu
#define PERFMON_MAX_SPAN_STEP 0xFDu
#define PERFMON_NO_SEQ        0u
#define PERFMON_MAX_SEQ       0xFFFFFFu

/* (seq << 8) | step; seq keeps its low 24 bits and never touches the step. */
#define PERFMON_EVENT(step, seq) \
	((uint32_t)(((uint32_t)(seq) & PERFMON_MAX_SEQ) << 8) | ((uint32_t)(step) & 0xFFu))
#define PERFMON_EVENT_STEP(ev) ((uint8_t)((ev) & 0xFFu))
#define PERFMON_EVENT_SEQ(ev)  ((uint32_t)(ev) >> 8)

/* The 16-byte event as the daemon sees it after draining. */
struct perfmon_event {
	uint64_t tsc;    /* raw timestamp, or the value of a value sample */
	uint32_t point;
	uint32_t event;  /* PERFMON_EVENT(step, seq) */
};

/* ---- Shared-memory layout (docs/shm-layout.md) ------------------------ */

#define PERFMON_LAYOUT_VERSION   3u
#define PERFMON_RING_MAGIC       UINT64_C(0x474e495250464d50)  /* "PMFPRING" */
#define PERFMON_META_MAGIC       UINT64_C(0x4154454d50464d50)  /* "PMFPMETA" */
#define PERFMON_NAME_MAX         200    /* segment name, without the '/' */
#define PERFMON_LABEL_SIZE       64     /* label bytes including the NUL */
#define PERFMON_PATH_SIZE        256    /* output paths in the status block */
#define PERFMON_RING_HEADER_SIZE 256u   /* sub-ring control blocks start here */
#define PERFMON_SUBRING_SIZE     128u   /* one control block per sub-ring */
#define PERFMON_MAX_SUBRINGS     4096u  /* sub-rings, a power of two */
#define PERFMON_META_NAMES_OFFSET 4096u /* name entries start here */
#define PERFMON_META_PRODUCERS_OFFSET 2048u /* producer registry starts here */
#define PERFMON_MAX_PRODUCERS    64     /* registry entries */
#define PERFMON_COMM_SIZE        16     /* command name bytes including the NUL */

/* Clock that produced the timestamps (perfmon_ring_header.clock). */
#define PERFMON_CLOCK_TSC        1u
#define PERFMON_CLOCK_MONOTONIC  2u

/*
 * Ring segment, /dev/shm/<name>: one sub-ring per possible CPU, so that
 * producers on different cores share no cache line.  The header is written
 * once by the daemon; magic is stored last (release) so an attacher never
 * sees a half-initialised header as valid.  Then `subrings` control blocks
 * (struct perfmon_subring, 128 bytes each), then the slots: sub-ring k owns
 * slots [k * capacity, (k + 1) * capacity) of the slot area.
 */
struct perfmon_ring_header {
	/* line 0: read-only after creation */
	uint64_t magic;          /* PERFMON_RING_MAGIC */
	uint32_t version;        /* PERFMON_LAYOUT_VERSION */
	uint32_t header_size;    /* PERFMON_RING_HEADER_SIZE */
	uint32_t slot_size;      /* sizeof(struct perfmon_slot) */
	uint32_t clock;          /* PERFMON_CLOCK_* the daemon expects */
	uint64_t capacity;       /* slots per sub-ring, a power of two */
	uint64_t instance_id;    /* random, equal in the .meta segment */
	uint64_t created_ns;     /* CLOCK_REALTIME at creation */
	uint32_t subrings;       /* sub-rings, a power of two <= PERFMON_MAX_SUBRINGS */
	uint32_t slots_offset;   /* PERFMON_RING_SLOTS_OFFSET(subrings) */
	uint8_t  pad0[8];
	/* lines 1-3: reserved */
	uint8_t  pad1[192];
};

/*
 * A sub-ring's control block: the producers' reservation counter alone in
 * its cache line, and the daemon's read position in the next one (for
 * perfmonctl status and for a restarted daemon).  Two lines, so the
 * adjacent-line prefetcher never pairs two sub-rings' heads.
 */
struct perfmon_subring {
	uint64_t head;           /* next index to reserve; monotonic */
	uint8_t  pad0[56];
	uint64_t reader_tail;    /* next index the daemon will read (daemon only) */
	uint8_t  pad1[56];
};

/*
 * One slot: the event and its publish marker in one 32-byte, 32-aligned
 * cell, so a stamp dirties a single cache line.  `marker` is 0 before the
 * first use, (index + 1) | PERFMON_SLOT_BUSY while event `index` is being
 * written, and index + 1 once it is published.  The reader copies the event
 * and checks the marker again (a seqlock), so a record overwritten while it
 * is read is detected and never used.
 */
struct perfmon_slot {
	uint64_t marker;
	uint64_t tsc;
	uint64_t point_event;    /* point | (uint64_t)event << 32 */
	uint64_t reserved;
};
#define PERFMON_SLOT_BUSY        (UINT64_C(1) << 63)

/* Name table entry.  key = ((point << 8) | step) + 1; 0 = free. */
struct perfmon_name_entry {
	uint64_t key;            /* PERFMON_NAME_CLAIMED while the label is written */
	char     label[PERFMON_LABEL_SIZE];
};
#define PERFMON_NAME_CLAIMED     (UINT64_C(1) << 63)
#define PERFMON_NAME_KEY(point, step) \
	((((uint64_t)(uint32_t)(point) << 8) | (uint8_t)(step)) + 1)

/* Collector state in the status block. */
#define PERFMON_COLLECTOR_NONE     0u
#define PERFMON_COLLECTOR_RUNNING  1u
#define PERFMON_COLLECTOR_STOPPED  2u

/*
 * Control segment, /dev/shm/<name>.meta: identity, the collector's status
 * (written by the daemon only; read by perfmonctl) and the name table
 * (written by producers).
 */
struct perfmon_meta_header {
	/* line 0: read-only after creation */
	uint64_t magic;          /* PERFMON_META_MAGIC */
	uint32_t version;
	uint32_t header_size;    /* PERFMON_META_NAMES_OFFSET */
	uint32_t max_names;
	uint32_t label_size;     /* PERFMON_LABEL_SIZE */
	uint64_t ring_capacity;  /* equal to the ring's capacity */
	uint64_t instance_id;    /* equal to the ring's instance_id */
	uint64_t created_ns;
	uint32_t owner_uid;
	uint32_t owner_gid;
	uint8_t  pad0[8];
	/* line 1: name table bookkeeping, written by producers */
	uint64_t name_generation;  /* +1 each time a label becomes readable */
	uint64_t name_conflicts;   /* publishes refused: EEXIST, ENOSPC, too long */
	uint8_t  pad1[48];
	/* lines 2..: collector status, written by the daemon */
	uint32_t collector_pid;
	uint32_t collector_state;  /* PERFMON_COLLECTOR_* */
	uint64_t start_ns;         /* CLOCK_REALTIME */
	uint64_t heartbeat_ns;     /* CLOCK_MONOTONIC, drain thread progress */
	uint64_t events_drained;
	uint64_t dropped;
	uint64_t stalled;
	uint64_t misordered;       /* span events handed to pairing out of time order */
	uint64_t open_spans;
	uint64_t tsc_hz_milli;     /* ticks per second x 1000 */
	uint32_t tsc_invariant;
	uint32_t clock;            /* PERFMON_CLOCK_* */
	uint64_t overhead_ticks;   /* per-stamp overhead measured at start */
	uint64_t flush_interval_ns;      /* [collector] flush_interval */
	uint64_t csv_flush_interval_ns;  /* [output] csv_flush_interval; 0: each interval */
	uint64_t reader_tail;      /* next ring index the daemon will read */
	uint64_t summary_request;  /* bumped by perfmonctl summary */
	uint64_t summary_done;     /* set to summary_request once written */
	uint64_t paths_seq;        /* even: paths stable; odd: being rewritten */
	char     csv_path[PERFMON_PATH_SIZE];
	char     summary_path[PERFMON_PATH_SIZE];
};

/*
 * Producer registry, PERFMON_MAX_PRODUCERS entries at
 * PERFMON_META_PRODUCERS_OFFSET in the control segment.  A producer claims
 * a free entry (pid 0) with a compare-and-swap of its pid, writes `comm`,
 * then stores `attach_s` (release): an entry is complete once attach_s is
 * non-zero.  It clears attach_s, then pid, when it detaches or exits.  An
 * entry left behind by a process that died is reclaimed by the next
 * producer that finds no free entry; perfmonctl checks every pid against
 * the kernel before it shows one.
 */
struct perfmon_producer_entry {
	uint32_t pid;            /* 0 = free */
	uint32_t reserved;
	uint64_t attach_s;       /* CLOCK_REALTIME seconds; 0 while written */
	char     comm[PERFMON_COMM_SIZE];  /* /proc/PID/comm at attach */
};

/* Offsets and total sizes of the segments for a given geometry. */
#define PERFMON_RING_SLOTS_OFFSET(subrings) \
	((size_t)PERFMON_RING_HEADER_SIZE + (size_t)(subrings) * PERFMON_SUBRING_SIZE)
#define PERFMON_RING_BYTES(subrings, capacity) \
	(PERFMON_RING_SLOTS_OFFSET(subrings) + \
	 (size_t)(subrings) * (size_t)(capacity) * sizeof(struct perfmon_slot))
#define PERFMON_META_BYTES(max_names) \
	((size_t)PERFMON_META_NAMES_OFFSET + (size_t)(max_names) * sizeof(struct perfmon_name_entry))

/* Sub-ring `k` of a ring whose geometry the caller trusts. */
#define PERFMON_SUBRING(ring, k) ((struct perfmon_subring *)(void *) \
	((char *)(ring) + PERFMON_RING_HEADER_SIZE + (size_t)(k) * PERFMON_SUBRING_SIZE))
#define PERFMON_SUBRING_SLOTS(ring, subrings, capacity, k) ((struct perfmon_slot *)(void *) \
	((char *)(ring) + PERFMON_RING_SLOTS_OFFSET(subrings) + \
	 (size_t)(k) * (size_t)(capacity) * sizeof(struct perfmon_slot)))

#ifdef __cplusplus
#define PERFMON__STATIC_ASSERT(c, m) static_assert(c, #m)
#else
#define PERFMON__STATIC_ASSERT(c, m) \
	typedef char perfmon__static_assert_##m[(c) ? 1 : -1]
#endif

PERFMON__STATIC_ASSERT(sizeof(struct perfmon_event) == 16, event_is_16_bytes);
PERFMON__STATIC_ASSERT(sizeof(struct perfmon_slot) == 32, slot_is_32_bytes);
PERFMON__STATIC_ASSERT(sizeof(struct perfmon_ring_header) == PERFMON_RING_HEADER_SIZE,
		       ring_header_size);
PERFMON__STATIC_ASSERT(sizeof(struct perfmon_subring) == PERFMON_SUBRING_SIZE,
		       subring_size);
PERFMON__STATIC_ASSERT(sizeof(struct perfmon_meta_header) <= PERFMON_META_PRODUCERS_OFFSET,
		       meta_header_fits);
PERFMON__STATIC_ASSERT(sizeof(struct perfmon_producer_entry) == 32, producer_entry_size);
PERFMON__STATIC_ASSERT(PERFMON_META_PRODUCERS_OFFSET + PERFMON_MAX_PRODUCERS *
		       sizeof(struct perfmon_producer_entry) <= PERFMON_META_NAMES_OFFSET,
		       producer_registry_fits);

#endif /* PERFMON_LAYOUT_H */
