/*
 * shm_guard.c - the SIGBUS handler and the table of watched mappings.
 *
 * The table is a fixed array of slots written only outside the handler
 * (add/remove) and read by the handler with atomic loads: a slot is
 * published by storing its length last (release), and retired by storing
 * 0 there first.  The handler does only async-signal-safe work: loads, an
 * mmap() system call and atomic increments.
 */
#include "build-config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm_guard.h"

struct guard_slot {
	uintptr_t addr;
	size_t len;               /* 0: slot free */
	uint64_t faults;          /* absorbed since the last shm_guard_take() */
};

static struct guard_slot slots[SHM_GUARD_MAX];
static uint64_t total_faults;
static int installed;
static struct sigaction previous;

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	long page = sysconf(_SC_PAGESIZE);
	int saved = errno;

	(void)uctx;
	for (int i = 0; i < SHM_GUARD_MAX; i++) {
		size_t len = __atomic_load_n(&slots[i].len, __ATOMIC_ACQUIRE);
		uintptr_t base = __atomic_load_n(&slots[i].addr, __ATOMIC_RELAXED);
		uintptr_t from;
		if (!len || a < base || a >= base + len)
			continue;
		/* Zeros from the faulting page to the end of the mapping: the
		 * file ends somewhere before the fault, and every later page
		 * would fault too. */
		from = a & ~((uintptr_t)page - 1);
		if (mmap((void *)from, base + len - from, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			break;
		__atomic_fetch_add(&slots[i].faults, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&total_faults, 1, __ATOMIC_RELAXED);
		errno = saved;
		return;   /* the faulting access runs again and reads zeros */
	}
	/* Not ours: the default action, as if we had never been here. */
	sigaction(SIGBUS, &previous, NULL);
	raise(sig);
}

int shm_guard_install(void)
{
	struct sigaction sa;

	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) < 0) {
		__atomic_store_n(&installed, 0, __ATOMIC_RELEASE);
		return -errno;
	}
	return 0;
}

int shm_guard_add(void *addr, size_t len)
{
	for (int i = 0; i < SHM_GUARD_MAX; i++) {
		size_t expect = 0;
		if (__atomic_load_n(&slots[i].len, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&slots[i].addr, (uintptr_t)addr, __ATOMIC_RELAXED);
		__atomic_store_n(&slots[i].faults, 0, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(&slots[i].len, &expect, len, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
	}
	return -ENOSPC;
}

void shm_guard_remove(void *addr)
{
	for (int i = 0; i < SHM_GUARD_MAX; i++)
		if (__atomic_load_n(&slots[i].len, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&slots[i].addr, __ATOMIC_RELAXED) == (uintptr_t)addr)
			__atomic_store_n(&slots[i].len, 0, __ATOMIC_RELEASE);
}

uint64_t shm_guard_take(void *addr)
{
	for (int i = 0; i < SHM_GUARD_MAX; i++)
		if (__atomic_load_n(&slots[i].len, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&slots[i].addr, __ATOMIC_RELAXED) == (uintptr_t)addr)
			return __atomic_exchange_n(&slots[i].faults, 0, __ATOMIC_RELAXED);
	return 0;
}

uint64_t shm_guard_total(void)
{
	return __atomic_load_n(&total_faults, __ATOMIC_RELAXED);
}

const uint64_t *shm_guard_counter(void)
{
	return &total_faults;
}
