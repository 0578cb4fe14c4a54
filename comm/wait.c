/*
 * Bounded waits on peers (docs/multigpu.md, "Nothing hangs").
 *
 * A rank that crashed, hangs or never reaches the matching call would keep
 * a blocking NCCL call, or a stream synchronize behind a collective,
 * waiting forever. cgr therefore only waits on its private communicator,
 * which is non-blocking: calls return ncclInProgress at once, and cgr
 * polls ncclCommGetAsyncError (for the host side) and a CUDA event (for
 * the device side) until the work is done, NCCL reports an error, or the
 * deadline passes. Past the deadline the private communicator is aborted,
 * which also makes its kernels still waiting on a peer exit.
 *
 * Polling: a few thousand sched_yield()s first (an agreement between
 * healthy ranks takes tens of microseconds), then 50 us sleeps, so a long
 * wait for a slow peer does not burn a core.
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "comm.h"

#if CGR_HAVE_NCCL

void cgr__comm_pause(unsigned *spins)
{
    if (*spins < 4096) {
        ++*spins;
        sched_yield();
        return;
    }
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
}

double cgr__comm_deadline(unsigned timeout_ms)
{
    return cgr__now_us() + 1000.0 * (double)timeout_ms;
}

cgr_status cgr__comm_wait(ncclComm_t comm, cudaEvent_t done, double deadline,
                          unsigned timeout_ms, const char *what)
{
    unsigned spins = 0;
    for (;;) {
        if (done) {
            cudaError_t e = cudaEventQuery(done);
            if (e == cudaSuccess)
                return CGR_STATUS_OK;
            if (e != cudaErrorNotReady)
                return cgr__cuda_fail((int)e, "cudaEventQuery (NCCL agreement)");
        }
        /* A peer that went away shows up here too (ncclRemoteError, a system error). */
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = cgr__nccl()->ncclCommGetAsyncError(comm, &async);
        if (r != ncclSuccess)
            return cgr__nccl_fail(r, "ncclCommGetAsyncError");
        if (!done && async == ncclSuccess)
            return CGR_STATUS_OK;
        if (async != ncclSuccess && async != ncclInProgress)
            return cgr__nccl_fail(async, what);
        if (cgr__now_us() > deadline)
            return CGR_FAIL(CGR_STATUS_TIMEOUT,
                            "NCCL: %s did not complete within %u ms (cgr_nccl_options.timeout_ms): "
                            "a peer rank may have failed, exited, or not made the matching call",
                            what, timeout_ms);
        cgr__comm_pause(&spins);
    }
}

#endif /* CGR_HAVE_NCCL */
