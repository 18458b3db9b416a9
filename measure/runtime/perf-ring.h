/* SPDX-License-Identifier: MIT */
/*
 * perf-ring.h: what the sources built on perf_events (perf.c, blocktime.c) share: opening an
 * event with its descriptor kept out of the program's way, mapping its ring buffer, and
 * copying records out of the ring.  Async-signal-safe.
 */
#ifndef FATHOM_MEASURE_PERF_RING_H
#define FATHOM_MEASURE_PERF_RING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6 /* si_code of a perf event's SIGTRAP (Linux 5.13) */
/* A perf SIGTRAP's sig_data (the kernel's si_perf_data, which glibc's siginfo_t does not
 * name: the word after si_addr), or 0 for any other SIGTRAP. */
uint64_t rt_perf_sig_data(const siginfo_t *info);

#endif

/* Learn the ring's size (at process start, before any thread: a forked child that lets go of
 * its parent's rings then calls nothing of libc's that it would fault in). */
void rt_ring_init(void);
/* The bytes of a ring mapping: one header page and RT_RING_PAGES data pages. */
size_t rt_ring_bytes(void);
/* Open the event A for the calling thread in the group of GROUP_FD (-1: none), raising the
 * open-file limit once when it runs out; the descriptor is measure's, at 512 or above when it
 * can be.  Returns it, or -1 with errno set. */
int rt_perf_open(struct perf_event_attr *a, int group_fd);
/* Map the ring of event FD (POPULATE: fault its pages in now); NULL with errno set. */
void *rt_ring_map(int fd, bool populate);
/* Copy LEN bytes at position POS of the ring DATA of SIZE bytes (a power of two). */
void rt_ring_copy(const uint8_t *data, uint64_t size, uint64_t pos, void *dst, size_t len);

/* A perf SIGTRAP's sig_data (the kernel's si_perf_data, which glibc's siginfo_t does not
 * name: the word after si_addr), or 0 for any other SIGTRAP. */
uint64_t rt_perf_sig_data(const siginfo_t *info);

#endif
