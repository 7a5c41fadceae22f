/* A shared library that stamps: it must share the executable's ring. */
#include <perfmon.h>
void lib_stamp(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		perfmon_begin(3, i);
		perfmon_end(3, i);
	}
}
