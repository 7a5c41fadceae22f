#!/bin/sh
# daemon_percpu_cpus64.sh - daemon_percpu.sh with the ring sized as for a
# 64-CPU host (PERFMOND_CPUS=64): 64 sub-rings, of which the threads on
# this machine's CPUs keep two busy and the rest idle, with the same counts;
# and one pass with all 64 busy (spread).
PERFMOND_CPUS=64
export PERFMOND_CPUS
. "$top_srcdir/tests/integration/daemon_percpu.sh"
