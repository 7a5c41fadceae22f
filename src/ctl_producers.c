/*
 * ctl_producers.c - read the producer registry of an instance and keep
 * only the producers the kernel says are still there (see ctl_producers.h
 * and docs/shm-layout.md for the registry protocol).
 */
#include "build-config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_producers.h"
#include "ctl_text.h"

bool ctl_producer_alive(uint32_t pid, const char *name)
{
	char path[64], want[PERFMON_NAME_MAX + 16], line[1024];
	size_t wlen;
	bool found = false;
	FILE *f;

	if (pid == 0 || pid > INT32_MAX)
		return false;
	if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == EACCES || errno == EPERM;
	/* A mapping line ends with its path: " /dev/shm/NAME".  A ring that
	 * was removed since reads "/dev/shm/NAME (deleted)" and does not match. */
	snprintf(want, sizeof(want), " /dev/shm/%s\n", name);
	wlen = strlen(want);
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		if (n >= wlen && strcmp(line + n - wlen, want) == 0) {
			found = true;
			break;
		}
	}
	/* An empty read means we may not look (maps of another user read as
	 * empty under some kernels' ptrace rules). */
	if (!found && ftell(f) == 0)
		found = true;
	fclose(f);
	return found;
}

static int cmp_attach(const void *a, const void *b)
{
	const struct ctl_producer *x = a, *y = b;
	if (x->attach_s != y->attach_s)
		return x->attach_s < y->attach_s ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

unsigned ctl_producers_read(const struct shm_instance *inst,
			    struct ctl_producer ret[PERFMON_MAX_PRODUCERS])
{
	const struct perfmon_producer_entry *e = (const struct perfmon_producer_entry *)
		((const char *)inst->meta + PERFMON_META_PRODUCERS_OFFSET);
	unsigned n = 0;

	for (unsigned i = 0; i < PERFMON_MAX_PRODUCERS; i++) {
		char raw[PERFMON_COMM_SIZE];
		uint32_t pid = __atomic_load_n(&e[i].pid, __ATOMIC_ACQUIRE);
		uint64_t at;
		if (!pid)
			continue;
		at = __atomic_load_n(&e[i].attach_s, __ATOMIC_ACQUIRE);
		if (!at)
			continue;   /* being written, or cleared */
		memcpy(raw, e[i].comm, sizeof(raw));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e[i].pid, __ATOMIC_RELAXED) != pid ||
		    __atomic_load_n(&e[i].attach_s, __ATOMIC_RELAXED) != at)
			continue;
		raw[sizeof(raw) - 1] = '\0';
		if (!ctl_producer_alive(pid, inst->name))
			continue;
		ret[n].pid = pid;
		ret[n].attach_s = at;
		ctl_text_clean(ret[n].comm, raw, sizeof(ret[n].comm));
		n++;
	}
	qsort(ret, n, sizeof(*ret), cmp_attach);
	return n;
}
