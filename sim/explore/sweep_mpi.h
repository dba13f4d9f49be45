/* sweep_mpi.h — a sweep's grid shared over MPI ranks (`make MPI=1`).
 *
 * Every rank parses the same arguments and builds the same grid; rank 0
 * alone touches files (the partial CSV, --resume's reading of it, the
 * rename). It tells the others where the run starts; the points from there
 * are dealt round-robin in grid order (point i to rank (i − start) mod K),
 * so each rank gets every K-th point and a slow corner of the grid is
 * spread over all of them. Ranks send finished rows to rank 0, which writes
 * them in grid order exactly as one process would: the file is byte for
 * byte the same for any K.
 *
 * Built without MPI (the default), every function is the one-rank case and
 * no MPI header is needed; MPSIM_MPI is seen by sweep_mpi.c only. Only the
 * calling (main) thread uses MPI; workers never do. */
#ifndef MPSIM_SWEEP_MPI_H
#define MPSIM_SWEEP_MPI_H

#include <stdbool.h>

#include "sim/common.h"

/* Join the MPI job (MPI_Init_thread, funneled); a process started without
 * mpirun/srun is a job of one. No-op without MPI. Pair with _finalize. */
void sweep_mpi_init(void);
void sweep_mpi_finalize(void);

/* This process's rank and the number of ranks (0 and 1 without MPI). */
int sweep_mpi_rank(void);
int sweep_mpi_size(void);

/* Ranks on this node (1 without MPI): the default --jobs of each rank is
 * the node's cores divided by it, so `mpirun -n cores` does not
 * oversubscribe. */
int sweep_mpi_local_size(void);

/* Rank 0's status and first point to run, to every rank (collective).
 * Returns rank 0's status. */
int sweep_mpi_share_start(int rc, long long *start);

/* A finished row (text with its newline) and its "best so far" metric,
 * from this rank to rank 0; rows of one rank arrive in the order sent. */
int sweep_mpi_send_row(const char *row, double metric, struct mp_error *err);

/* The next row from rank `from`; `*row` is malloc'd. */
int sweep_mpi_recv_row(int from, char **row, double *metric, struct mp_error *err);

/* Stop every rank with exit status `code` (rank 0 failed part-way, and the
 * others would wait for it forever). Does not return with MPI; without MPI
 * it is never called. */
void sweep_mpi_abort(int code);

#endif
