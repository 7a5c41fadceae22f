/*
 * late_producer.c - a producer attached only through SLICK_PERFMON_SHM at
 * load time, driven line by line from stdin so a test can order it against
 * the daemon:
 *
 *   wait-attached     wait (30 s at most) until the stamps go into a ring
 *                     other than the last one reported; prints
 *                     "attached CAPACITY" or "timeout"
 *   spans N           stamp N begin -> step 1 -> end spans at point 5
 *   fork N            fork a child that stamps N spans and exits; prints
 *                     "child PID spans N" once it is done
 *   quit
 *
 * Before reading stdin it publishes the label "late" for point 5 and
 * "late.s1" for its first stage, whether or not a ring exists yet.
 */
#include "build-config.h"

#include <perfmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define POINT 5u

static uint32_t seq;

static void stamp(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++, seq++) {
		perfmon_begin(POINT, seq);
		perfmon_step(POINT, 1, seq);
		perfmon_end(POINT, seq);
	}
}

/* The instance the stamps currently go to (0: none).  Test code may look
 * at the header's internal state; producers never need to. */
static uint64_t current_instance(uint64_t *ret_capacity)
{
	uint64_t id = 0;
	perfmon__lock();
	if (perfmon__g.ring && perfmon_enabled()) {
		id = perfmon__g.ring->instance_id;
		/* slots in all: capacity is per sub-ring */
		*ret_capacity = perfmon__g.ring->capacity * perfmon__g.ring->subrings;
	}
	perfmon__unlock();
	return id;
}

int main(void)
{
	char line[128];
	uint64_t last = 0;

	perfmon_name(POINT, 0, "late");
	perfmon_name(POINT, 1, "late.s1");
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long n;
		if (!strncmp(line, "wait-attached", 13)) {
			uint64_t cap = 0, id = 0;
			for (int i = 0; i < 3000; i++) {
				id = current_instance(&cap);
				if (id && id != last)
					break;
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
			}
			if (id && id != last) {
				last = id;
				printf("attached %llu\n", (unsigned long long)cap);
			} else {
				printf("timeout\n");
			}
		} else if (sscanf(line, "spans %lu", &n) == 1) {
			stamp(n);
			printf("spans %lu\n", n);
		} else if (sscanf(line, "fork %lu", &n) == 1) {
			pid_t pid = fork();
			int st = 0;
			if (pid == 0) {
				stamp(n);
				exit(0);
			}
			if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
				printf("fork failed\n");
			else
				printf("child %ld spans %lu\n", (long)pid, n);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
