# SPDX-License-Identifier: MIT
# mpi-lib.sh: the MPI run that t0124 and t0459 share.  mpi_setup builds mpi-ranks.c with mpicc
# (skipping everything, with the reason, where Open MPI is missing or cannot start a program)
# and lets mpirun start 4 ranks, oversubscribed on fewer cores, also as root.  mpi_measure
# measures them into m/ (-e task-clock@1000000: a sample per ms of CPU time), measure's
# output in err; mpi_database makes db/ of it with struct and prof.

mpi_setup() {
	command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 ||
		skip_all "no mpicc and mpirun (Debian: apt-get install openmpi-bin libopenmpi-dev)"
	mpicc -g -O1 -I"$top_srcdir/tests/measure-workloads" -o mpi-ranks \
		"$top_srcdir/tests/measure-workloads/mpi-ranks.c" -lpthread 2>mpicc.err ||
		{ cat mpicc.err; skip_all "mpicc cannot build the MPI test program"; }
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	OMPI_MCA_rmaps_base_oversubscribe=1
	export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
	mpirun -n 1 ./mpi-ranks >mpirun.out 2>&1 ||
		{ cat mpirun.out; skip_all "mpirun cannot start an MPI program here"; }
}

mpi_measure() {
	mpirun -n 4 measure -e task-clock@1000000 -o m ./mpi-ranks >out 2>err
}

mpi_database() {
	struct m >struct.out 2>&1 && prof -o db m >prof.out 2>prof.err
}
