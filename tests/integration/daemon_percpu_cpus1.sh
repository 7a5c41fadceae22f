#!/bin/sh
# daemon_percpu_cpus1.sh - daemon_percpu.sh with the ring sized as for a
# one-CPU host (PERFMOND_CPUS=1): one sub-ring that every thread shares,
# nothing to merge, with the same counts.
PERFMOND_CPUS=1
export PERFMOND_CPUS
. "$top_srcdir/tests/integration/daemon_percpu.sh"
