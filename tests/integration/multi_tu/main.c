/* One explicit attach in main() covers every unit and the library. */
#include <perfmon.h>
#include <stdio.h>
#include <string.h>
void tu2_stamp(unsigned n);
void lib_stamp(unsigned n);
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-") != 0) {
		int r = perfmon_attach(argv[1]);
		if (r < 0) {
			fprintf(stderr, "attach: %d\n", r);
			return 1;
		}
	}
	if (!perfmon_enabled())
		return 3;
	for (unsigned i = 0; i < 100; i++)
		perfmon_value(1, i);
	tu2_stamp(200);
	lib_stamp(150);
	return 0;
}
