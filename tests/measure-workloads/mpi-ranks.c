/* SPDX-License-Identifier: MIT */
/*
 * mpi-ranks.c: an MPI program whose rank R does R + 1 units of work in each of its 2 threads
 * (the main thread and one more), a unit being UNIT seconds of the thread's own CPU time, so
 * that the ranks' shares are 1:2:3:4 on any machine.  Built with mpicc by t0124.
 */
#include "burn.h"

#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>

#define UNIT 0.15

static volatile double sink;
static int units;

__attribute__((noinline)) void rank_work(void)
{
	sink += burn_cpu(CLOCK_THREAD_CPUTIME_ID, UNIT * units, 1000);
}

static void *worker(void *arg)
{
	(void)arg;
	rank_work();
	return NULL;
}

int main(int argc, char **argv)
{
	int rank;
	pthread_t t;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	units = rank + 1;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	rank_work();
	pthread_join(t, NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
