/*
 * fuzz_conf.c - libFuzzer harness for the configuration loader: the INI
 * file reader, every key's value parser, the merge with the command line,
 * and the printer behind `perfmond --check-config`.
 *
 * Flow: [fuzz input as perfmond.conf] -> conf_load() -> struct pm_config
 * -> conf_print() -> conf_load() again.
 *
 * The input is the config file itself.  What must hold for any file:
 *   - conf_load() either succeeds or reports at least one problem, and
 *     its message list stays terminated and within its buffer;
 *   - what conf_print() writes for a loaded configuration loads again to
 *     exactly the same values (conf.h promises it: the printed file is a
 *     valid config that means the same thing);
 *   - each line of the input, given as a command-line value of some key,
 *     is accepted or refused with a message, never anything worse.
 * Sanitizers catch the rest.
 */
#include "build-config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"
#include "conf_keys.h"
#include "fuzz_text.h"

static int file_fd = -1, print_fd = -1;
static char file_path[64], print_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* In-memory files, read back through their /proc/self/fd names, so
	 * the loader opens a path as it does in the daemon. */
	file_fd = memfd_create("fuzz_conf.conf", MFD_CLOEXEC);
	print_fd = memfd_create("fuzz_conf.printed", MFD_CLOEXEC);
	if (file_fd < 0 || print_fd < 0) {
		perror("fuzz_conf: memfd_create");
		exit(1);
	}
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	snprintf(print_path, sizeof(print_path), "/proc/self/fd/%d", print_fd);
	/* Derived output paths must not depend on the caller's environment. */
	unsetenv("LOGS_DIRECTORY");
	return 0;
}

static void set_file(int fd, const void *data, size_t len)
{
	FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
	FUZZ_CHECK(len == 0 || pwrite(fd, data, len, 0) == (ssize_t)len, "pwrite");
}

static void check_msgs(const struct msgs *m)
{
	FUZZ_CHECK(m->len < sizeof(m->text) && m->text[m->len] == '\0' &&
		   strlen(m->text) == m->len, "message list not terminated where it says");
	FUZZ_CHECK(m->dropped <= m->count, "more messages dropped than added");
}

#define SAME(field) FUZZ_CHECK(a->field == b->field, "round trip changed " #field)
#define SAME_STR(field) FUZZ_CHECK(!strcmp(a->field, b->field), "round trip changed " #field)

/* Every value a config file can set (origins and the file's path aside). */
static void check_same_values(const struct pm_config *a, const struct pm_config *b)
{
	SAME_STR(shm_name);
	SAME(capacity);
	SAME(max_names);
	SAME(mode);
	SAME_STR(group);
	SAME(cpu);
	SAME(poll_interval_ns);
	SAME(flush_interval_ns);
	SAME(stalled_sample_timeout_ns);
	SAME(max_open_spans);
	SAME(max_stages);
	SAME(lock_memory);
	SAME_STR(csv);
	SAME_STR(summary);
	SAME(unit);
	SAME(percentiles.n);
	for (unsigned i = 0; i < a->percentiles.n && i < CONF_MAX_PERCENTILES; i++)
		SAME(percentiles.p[i]);
	SAME(subtract_overhead);
	SAME(csv_flush_interval_ns);
	SAME(rotate_size);
	SAME(rotate_interval_ns);
	SAME(rotate_keep);
	SAME_STR(prom_textfile);
	SAME(buckets.n);
	for (unsigned i = 0; i < a->buckets.n && i < CONF_MAX_BUCKETS; i++)
		SAME(buckets.le_ns[i]);
}

/* Each line as the command-line value of one key, and as a duration. */
static void check_option_values(const uint8_t *data, size_t size)
{
	char value[512], err[1024];
	size_t start = 0;
	unsigned line = 0;

	while (start < size && line < 64) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) : size;
		size_t len = end - start < sizeof(value) - 1 ? end - start : sizeof(value) - 1;
		uint64_t ns;
		char why[256];
		int rc;

		memcpy(value, data + start, len);
		value[len] = '\0';
		err[0] = '\0';
		rc = conf_check_option((enum conf_key)(line % CONF_KEY_COUNT), "--option", value,
				       err, sizeof(err));
		FUZZ_CHECK(rc == 0 || (rc < 0 && err[0]), "an option refused without a message");
		why[0] = '\0';
		rc = units_parse(value, &units_duration, &ns, why, sizeof(why));
		FUZZ_CHECK(rc <= 0, "units_parse returned a positive value");
		if (rc == 0) {
			char back[64];
			uint64_t again;
			FUZZ_CHECK(units_format(ns, &units_duration, back, sizeof(back)) >= 0,
				   "a parsed duration cannot be formatted");
			FUZZ_CHECK(units_parse(back, &units_duration, &again, NULL, 0) == 0 &&
				   again == ns, "a formatted duration does not read back");
		}
		start = end + 1;
		line++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pm_config first, second;
	static struct msgs errs;
	struct pm_cmdline cl;
	char *printed = NULL;
	size_t plen = 0;
	FILE *f;
	int rc;

	set_file(file_fd, data, size);
	memset(&cl, 0, sizeof(cl));
	cl.config_path = file_path;
	rc = conf_load(&cl, &first, &errs);
	check_msgs(&errs);
	FUZZ_CHECK(rc <= 0, "conf_load returned a positive value");
	FUZZ_CHECK((rc == 0) == (errs.count == 0), "refused without a message, or the reverse");

	if (rc == 0) {
		f = open_memstream(&printed, &plen);
		FUZZ_CHECK(f != NULL, "open_memstream");
		conf_print(f, &first);
		fclose(f);
		set_file(print_fd, printed, plen);
		cl.config_path = print_path;
		rc = conf_load(&cl, &second, &errs);
		check_msgs(&errs);
		if (rc != 0) {
			fprintf(stderr, "--- printed:\n%s--- errors:\n%s", printed, errs.text);
			FUZZ_CHECK(0, "the printed configuration does not load");
		}
		check_same_values(&first, &second);
		free(printed);
	}
	check_option_values(data, size);
	return 0;
}
