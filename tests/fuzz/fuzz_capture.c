/*
 * fuzz_capture.c - libFuzzer harness for everything perfmonctl does with a
 * capture file (docs/capture-format.md): the decoder (src/capture.c), the
 * pairing replay and the dump and export commands (src/ctl_capture.c)
 * with the table and JSON writers behind them.
 *
 * Flow: [fuzz input as a capture file] -> capture_parse -> replay ->
 * dump (csv, json) and export (chrome) -> checked here.
 *
 * What must hold for any file:
 *   - the decoder either refuses it with a message or hands out no more
 *     events than the bytes could hold, every event on a ring the header
 *     declares, every label 1..63 bytes and NUL-terminated;
 *   - the replay gives every event an outcome, and a paired end's span
 *     began no later than its last stage (and, with no overhead
 *     subtracted, its total is at least that stage);
 *   - dump and export succeed on what the decoder accepts and fail with
 *     exit 4 on what it refuses, and their output is valid UTF-8 with no
 *     control character but the line break, whatever the labels hold.
 * Sanitizers catch the rest.
 */
#include "build-config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "ctl_capture.h"
#include "ctl_cli.h"
#include "fuzz_text.h"

static char path[4096];

static void check_decoded(const struct capture *c, size_t len)
{
	FUZZ_CHECK(c->nevents <= len / CAPTURE_EVENT_SIZE, "more events than bytes");
	for (size_t i = 0; i < c->nevents; i++)
		FUZZ_CHECK(c->events[i].ring < c->h.ring_count, "an event on an undeclared ring");
	for (uint32_t i = 0; i < c->h.name_count; i++) {
		size_t l = strnlen(c->names[i].label, sizeof(c->names[i].label));

		FUZZ_CHECK(l < sizeof(c->names[i].label), "a label without its NUL");
		FUZZ_CHECK(l <= CAPTURE_LABEL_MAX, "a label too long");
	}
}

static void check_replay(const struct capture *c)
{
	struct ctl_replayed *r = ctl_capture_replay(c);

	FUZZ_CHECK(r != NULL, "replay failed");
	for (size_t i = 0; i < c->nevents; i++) {
		FUZZ_CHECK(r[i].outcome < CTL_OUT_COUNT, "an event without an outcome");
		if ((r[i].outcome == CTL_OUT_PAIRED || r[i].outcome == CTL_OUT_OUT_OF_RANGE) &&
		    PERFMON_EVENT_STEP(c->events[i].event) == PERFMON_END_STEP) {
			FUZZ_CHECK(r[i].start_tsc <= r[i].stage_tsc &&
				   r[i].stage_tsc <= c->events[i].tsc,
				   "a span shorter than its last stage");
			if (!c->h.overhead_ticks)
				FUZZ_CHECK(r[i].total >= r[i].ticks, "a total below its last stage");
		}
	}
	free(r);
}

/* Run one command on the file; its standard output is checked. */
static int run(int argc, char **argv, int (*cmd)(int, char **, FILE *, FILE *))
{
	char *buf = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&buf, &n), *err = fopen("/dev/null", "w");
	int rc;

	FUZZ_CHECK(out && err, "no streams");
	rc = cmd(argc, argv, out, err);
	fclose(out);
	fclose(err);
	FUZZ_CHECK(fuzz_text_clean(buf, n, "\n"), "output with a control character");
	free(buf);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct capture c;
	char msg[512];
	FILE *f;
	int ok, rc;

	if (len > 1 << 20)
		return 0;
	ok = capture_parse(data, len, &c, msg, sizeof(msg)) == 0;
	if (ok) {
		check_decoded(&c, len);
		check_replay(&c);
		capture_free(&c);
	} else {
		FUZZ_CHECK(msg[0] != '\0', "refused without a message");
	}
	if (!path[0]) {
		const char *dir = getenv("TMPDIR");

		snprintf(path, sizeof(path), "%s/fuzz-capture-%d", dir ? dir : "/tmp", (int)getpid());
	}
	f = fopen(path, "wb");
	FUZZ_CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "cannot write input");
	{
		char *dump_csv[] = { "dump", path, "--format", "csv", NULL };
		char *dump_json[] = { "dump", path, "--format", "json", NULL };
		char *export[] = { "export", path, "--format", "chrome", "-o", "-", NULL };

		rc = run(4, dump_csv, ctl_dump_cmd);
		FUZZ_CHECK(rc == (ok ? CTL_EXIT_OK : CTL_EXIT_BAD_FILE), "dump csv: wrong exit");
		rc = run(4, dump_json, ctl_dump_cmd);
		FUZZ_CHECK(rc == (ok ? CTL_EXIT_OK : CTL_EXIT_BAD_FILE), "dump json: wrong exit");
		rc = run(6, export, ctl_export_cmd);
		FUZZ_CHECK(rc == (ok ? CTL_EXIT_OK : CTL_EXIT_BAD_FILE), "export: wrong exit");
	}
	unlink(path);
	return 0;
}
