/* A second translation unit of the executable. */
#include <perfmon.h>
void tu2_stamp(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		perfmon_value(2, i);
}
