/*
 * sizing.c - the cost of a configuration, checked before anything is
 * created (see sizing.h).
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include "log.h"
#include "pairing.h"
#include "report.h"
#include "ring_reader.h"
#include "shm.h"
#include "sizing.h"

unsigned sizing_cpus(void)
{
	const char *v = getenv("PERFMOND_CPUS");
	char *end;
	unsigned long n;

	if (v && v[0]) {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (!errno && !*end && n >= 1 && n <= PERFMON_MAX_SUBRINGS)
			return (unsigned)n;
		log_warning("PERFMOND_CPUS=%s ignored: not a number from 1 to %u", v,
			    PERFMON_MAX_SUBRINGS);
	}
	return shm_possible_cpus();
}

void sizing_ring(const struct pm_config *c, uint64_t *ret_capacity, uint32_t *ret_subrings)
{
	shm_ring_geometry(c->capacity, sizing_cpus(), ret_capacity, ret_subrings);
}

/* Is `word` one of the comma-separated names in `list`? */
static bool listed(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list;; p++) {
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
		if (!(p = strchr(p, ',')))
			return false;
	}
}

double sizing_memory_limit(const char *self_cgroup, const char *root)
{
	char line[4096], dir[4096], file[4200], val[64];
	double limit = 0;
	FILE *f = fopen(self_cgroup, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/* "ID:CONTROLLERS:PATH"; cgroup v2 has no controllers listed */
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;
		const char *sub, *name;
		size_t base;

		if (!path)
			continue;
		*ctrl++ = *path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (!*ctrl) {
			sub = "";
			name = "memory.max";
		} else if (listed(ctrl, "memory")) {
			sub = "/memory";
			name = "memory.limit_in_bytes";
		} else {
			continue;
		}
		base = (size_t)snprintf(dir, sizeof(dir), "%s%s", root, sub);
		if (snprintf(dir, sizeof(dir), "%s%s%s", root, sub, path) >= (int)sizeof(dir))
			continue;
		/* The cgroup and each of its ancestors: the tightest one binds. */
		for (;;) {
			FILE *v;
			char *slash, *end;
			double x;

			snprintf(file, sizeof(file), "%s/%s", dir, name);
			if ((v = fopen(file, "re"))) {
				/* "max", or v1's "unlimited" (close to 2^63): no limit */
				if (fgets(val, sizeof(val), v) && (x = strtod(val, &end)) > 0 &&
				    end != val && x < 4e18 && (limit == 0 || x < limit))
					limit = x;
				fclose(v);
			}
			slash = strrchr(dir, '/');
			if (!slash || (size_t)(slash - dir) < base)
				break;
			*slash = '\0';
		}
	}
	fclose(f);
	return limit;
}

void sizing_cost(const struct pm_config *c, struct sizing_cost *ret)
{
	struct pairing_config pc = {
		.max_open_spans = c->max_open_spans,
		.max_stages = c->max_stages,
		.stall_ticks = 1,
		.outliers = c->outliers,
	};
	const char *forced = getenv("PERFMOND_CPUS");

	memset(ret, 0, sizeof(*ret));
	ret->cpus = sizing_cpus();
	ret->cpus_forced = forced && forced[0] && ret->cpus == strtoul(forced, NULL, 10);
	shm_ring_geometry(c->capacity, ret->cpus, &ret->slots, &ret->subrings);
	ret->ring_bytes = PERFMON_RING_BYTES(ret->subrings, ret->slots);
	ret->meta_bytes = PERFMON_META_BYTES(c->max_names);
	ret->merge_bytes = ring_reader_memory(ret->subrings, ret->slots);
	ret->table_bytes = pairing_memory_bytes(&pc) +
			   2 * ((2 * (size_t)c->max_stages + 2) *
				(sizeof(struct report_row) + sizeof(struct pairing_row)));
}

/* Bytes for people: "2.0 MiB (2097920 bytes)". */
static void print_bytes(FILE *f, size_t n)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	unsigned u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u)
		fprintf(f, "%.1f %s (%zu bytes)", v, unit[u], n);
	else
		fprintf(f, "%zu bytes", n);
}

void sizing_print(FILE *f, const struct pm_config *c)
{
	struct sizing_cost k;

	sizing_cost(c, &k);
	fprintf(f, "\n; what this configuration costs on this host\n");
	fprintf(f, "; ring: %u sub-ring%s x %llu slots (%u CPU%s: %s)\n", k.subrings,
		k.subrings == 1 ? "" : "s", (unsigned long long)k.slots, k.cpus,
		k.cpus == 1 ? "" : "s",
		k.cpus_forced ? "PERFMOND_CPUS" : "this host's possible CPUs");
	fputs("; /dev/shm: ", f);
	print_bytes(f, k.ring_bytes);
	fputs(" for the ring, ", f);
	print_bytes(f, k.meta_bytes);
	fputs(" for the control block\n; memory: ", f);
	print_bytes(f, k.merge_bytes);
	fputs(" for the merge buffers, ", f);
	print_bytes(f, k.table_bytes);
	fputs(" for the collector's tables\n", f);
}

int sizing_check(const struct pm_config *c, bool trial, struct msgs *errs)
{
	struct pairing_config pc = {
		.max_open_spans = c->max_open_spans,
		.max_stages = c->max_stages,
		.stall_ticks = 1,
		.outliers = c->outliers,
	};
	struct sizing_cost k;
	struct report a, b;
	struct pairing *p;
	size_t tables, shm, merge;
	struct sysinfo si;
	struct statvfs vfs;
	bool ok;

	sizing_cost(c, &k);
	tables = k.table_bytes;
	shm = k.ring_bytes + k.meta_bytes;
	merge = k.merge_bytes;
	if (sysinfo(&si) == 0) {
		double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
		/* A unit's MemoryMax= (or a container's limit) binds before the
		 * machine's memory does: a start past it is killed, not refused. */
		double cg = sizing_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
		char where[96];

		if (cg > 0 && cg < have)
			snprintf(where, sizeof(where), "the %.1f GiB this process's cgroup may use "
				 "(memory.max)", (have = cg) / 1073741824.0);
		else
			snprintf(where, sizeof(where), "this machine's %.1f GiB of memory and swap",
				 have / 1073741824.0);
		if ((double)(tables + merge + shm) > have) {
			msgs_add(errs, "%.1f GiB for [collector] max_stages = %u and "
				 "max_open_spans = %u (with [output] outliers = %u) and %.1f GiB "
				 "for [shm] capacity = %llu (the ring and the daemon's merge "
				 "buffers) are more than %s; lower them",
				 (double)tables / 1073741824.0, c->max_stages, c->max_open_spans,
				 c->outliers,
				 (double)(merge + shm) / 1073741824.0,
				 (unsigned long long)c->capacity, where);
			return -ENOMEM;
		}
	}
	/* --check-config only: at start, creating the segments says it more
	 * precisely (exit 1).  Segments that exist already hold their space. */
	if (trial && !shm_exists(c->shm_name) && statvfs("/dev/shm", &vfs) == 0 &&
	    (double)shm > (double)vfs.f_bavail * (double)vfs.f_frsize) {
		msgs_add(errs, "[shm] capacity = %llu and max_names = %u need %zu bytes of "
			 "/dev/shm, which has %.0f bytes free; lower them or enlarge /dev/shm",
			 (unsigned long long)c->capacity, c->max_names, shm,
			 (double)vfs.f_bavail * (double)vfs.f_frsize);
		return -ENOSPC;
	}
	if (!trial)
		return 0;
	errno = 0;
	p = pairing_new(&pc);
	ok = p && report_init(&a, p) == 0;
	if (ok) {
		ok = report_init(&b, p) == 0;
		report_free(&a);
		if (ok)
			report_free(&b);
	}
	pairing_free(p);
	if (!ok) {
		msgs_add(errs, "[collector] max_stages = %u and max_open_spans = %u (with "
			 "[output] outliers = %u) need %.1f GiB of memory, which this machine "
			 "cannot provide (%s); lower them", c->max_stages, c->max_open_spans,
			 c->outliers,
			 (double)tables / 1073741824.0, strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	return 0;
}
