/* sweep_mpi.c — the MPI seam of sweeps; see sweep_mpi.h. The only file that
 * includes mpi.h, and only when built with `make MPI=1` (-DMPSIM_MPI). */
#include "sweep_mpi.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MPSIM_MPI
#include <mpi.h>

/* Rows travel as one message: the metric's 8 bytes, then the text. */
#define ROW_TAG 91

static bool started;

void sweep_mpi_init(void)
{
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    started = true;
}

void sweep_mpi_finalize(void)
{
    if (started) MPI_Finalize();
    started = false;
}

int sweep_mpi_rank(void)
{
    int r = 0;
    if (started) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int sweep_mpi_size(void)
{
    int n = 1;
    if (started) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int sweep_mpi_local_size(void)
{
    if (!started) return 1;
    MPI_Comm node;
    int n = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &n);
        MPI_Comm_free(&node);
    }
    return n > 0 ? n : 1;
}

int sweep_mpi_share_start(int rc, long long *start)
{
    long long msg[2] = { rc, *start };
    if (started) MPI_Bcast(msg, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    *start = msg[1];
    return (int)msg[0];
}

int sweep_mpi_send_row(const char *row, double metric, struct mp_error *err)
{
    size_t len = strlen(row);
    char *buf = mp_xmalloc(sizeof metric + len);
    memcpy(buf, &metric, sizeof metric);
    memcpy(buf + sizeof metric, row, len);
    /* Synchronous: a rank runs at most its window of points ahead of rank
     * 0's writing, so no rank's memory grows with the grid. */
    int e = MPI_Ssend(buf, (int)(sizeof metric + len), MPI_CHAR, 0, ROW_TAG, MPI_COMM_WORLD);
    free(buf);
    if (e != MPI_SUCCESS) return mp_fail(err, MP_ERR_INTERNAL, "sweep: MPI send to rank 0 failed");
    return MP_OK;
}

int sweep_mpi_recv_row(int from, char **row, double *metric, struct mp_error *err)
{
    MPI_Status st;
    int n = 0;
    if (MPI_Probe(from, ROW_TAG, MPI_COMM_WORLD, &st) != MPI_SUCCESS ||
        MPI_Get_count(&st, MPI_CHAR, &n) != MPI_SUCCESS || n < (int)sizeof *metric)
        return mp_fail(err, MP_ERR_INTERNAL, "sweep: MPI receive from rank %d failed", from);
    char *buf = mp_xmalloc((size_t)n + 1);
    if (MPI_Recv(buf, n, MPI_CHAR, from, ROW_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
        free(buf);
        return mp_fail(err, MP_ERR_INTERNAL, "sweep: MPI receive from rank %d failed", from);
    }
    memcpy(metric, buf, sizeof *metric);
    memmove(buf, buf + sizeof *metric, (size_t)n - sizeof *metric);
    buf[(size_t)n - sizeof *metric] = '\0';
    *row = buf;
    return MP_OK;
}

void sweep_mpi_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code); /* MPI_Abort should not return */
}

#else /* one process */

void sweep_mpi_init(void) {}
void sweep_mpi_finalize(void) {}
int sweep_mpi_rank(void) { return 0; }
int sweep_mpi_size(void) { return 1; }
int sweep_mpi_local_size(void) { return 1; }
int sweep_mpi_share_start(int rc, long long *start) { (void)start; return rc; }

int sweep_mpi_send_row(const char *row, double metric, struct mp_error *err)
{
    (void)row, (void)metric, (void)err;
    assert(!"a single process has no rank 0 to send to");
    return MP_ERR_INTERNAL;
}

int sweep_mpi_recv_row(int from, char **row, double *metric, struct mp_error *err)
{
    (void)from, (void)row, (void)metric, (void)err;
    assert(!"a single process receives from no other rank");
    return MP_ERR_INTERNAL;
}

void sweep_mpi_abort(int code)
{
    _exit(code);
}

#endif
