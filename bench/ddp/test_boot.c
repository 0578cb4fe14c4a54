/*
 * The W-ddp launcher and id bootstrap (boot.h), without a GPU: forked
 * ranks all receive rank 0's unique id through their pipes; a failing rank
 * stops the others at once; the job timeout kills ranks that never end;
 * RANK/WORLD_SIZE/LOCAL_RANK parsing; the id from CGR_NCCL_ID (hex) and
 * through CGR_NCCL_ID_FILE (written by rank 0, read by a peer, removed).
 * NCCL's ncclGetUniqueId needs no GPU, only a network interface.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "boot.h"
#include "test.h"

#define N 3

typedef struct seen {
    ncclUniqueId id[N];
    int rank[N], world[N], local[N];
} seen;

static int record(const ddp_rank_info *who, const ncclUniqueId *id, void *user)
{
    seen *s = user;
    s->id[who->rank] = *id;
    s->rank[who->rank] = who->rank;
    s->world[who->rank] = who->world;
    s->local[who->rank] = who->local_rank;
    return 0;
}

static int one_fails(const ddp_rank_info *who, const ncclUniqueId *id, void *user)
{
    (void)id;
    (void)user;
    if (who->rank == 1)
        return 3;
    sleep(60); /* killed by the launcher long before */
    return 0;
}

static int never_ends(const ddp_rank_info *who, const ncclUniqueId *id, void *user)
{
    (void)who;
    (void)id;
    (void)user;
    sleep(60);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int nonzero(const ncclUniqueId *id)
{
    const unsigned char *p = (const unsigned char *)id;
    for (size_t i = 0; i < sizeof *id; i++)
        if (p[i])
            return 1;
    return 0;
}

int main(void)
{
    alarm(120);
    seen *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT(s != MAP_FAILED);
    memset(s, 0, sizeof *s);

    /* Every rank gets rank 0's id. */
    int rc = ddp_launch_local(N, 60, record, s);
    if (rc != 0) {
        /* ncclGetUniqueId needs a usable network interface; a sandbox may have none. */
        printf("SKIP: the launch failed (status %d); see the messages above\n", rc);
        return TEST_SKIP;
    }
    ASSERT(nonzero(&s->id[0]));
    for (int r = 0; r < N; r++) {
        ASSERT_EQ(memcmp(&s->id[r], &s->id[0], sizeof s->id[0]), 0);
        ASSERT_EQ(s->rank[r], r);
        ASSERT_EQ(s->world[r], N);
        ASSERT_EQ(s->local[r], r);
    }

    /* A failing rank ends the job with its status, and quickly. */
    double t0 = now_s();
    ASSERT_EQ(ddp_launch_local(N, 60, one_fails, NULL), 3);
    ASSERT_LT(now_s() - t0, 20.0);

    /* The job timeout ends ranks that never finish. */
    t0 = now_s();
    ASSERT_EQ(ddp_launch_local(2, 1, never_ends, NULL), 124);
    ASSERT_LT(now_s() - t0, 20.0);
    ASSERT_EQ(ddp_launch_local(0, 1, never_ends, NULL), -1);

    /* torchrun-style variables. */
    ddp_rank_info who;
    unsetenv("RANK");
    ASSERT_EQ(ddp_rank_from_env(&who), 0);
    setenv("RANK", "2", 1);
    setenv("WORLD_SIZE", "2", 1);
    ASSERT_EQ(ddp_rank_from_env(&who), -1); /* RANK >= WORLD_SIZE */
    setenv("WORLD_SIZE", "4", 1);
    ASSERT_EQ(ddp_rank_from_env(&who), 1);
    ASSERT_EQ(who.rank, 2);
    ASSERT_EQ(who.world, 4);
    ASSERT_EQ(who.local_rank, 2);
    setenv("LOCAL_RANK", "0", 1);
    ASSERT_EQ(ddp_rank_from_env(&who), 1);
    ASSERT_EQ(who.local_rank, 0);
    setenv("LOCAL_RANK", "x", 1);
    ASSERT_EQ(ddp_rank_from_env(&who), -1);
    unsetenv("LOCAL_RANK");

    /* The id as hex. */
    char hex[2 * sizeof(ncclUniqueId) + 1];
    for (size_t i = 0; i < sizeof(ncclUniqueId); i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned)((i * 37 + 11) & 0xff));
    setenv("CGR_NCCL_ID", hex, 1);
    memset(s, 0, sizeof *s);
    ddp_rank_info r1 = {1, 2, 1, NULL};
    ASSERT_EQ(ddp_run_from_env(&r1, 5, record, s), 0);
    const unsigned char *b = (const unsigned char *)&s->id[1];
    for (size_t i = 0; i < sizeof(ncclUniqueId); i++)
        ASSERT_EQ(b[i], (i * 37 + 11) & 0xff);
    setenv("CGR_NCCL_ID", "abc", 1);
    ASSERT_EQ(ddp_run_from_env(&r1, 5, record, s), 1);
    unsetenv("CGR_NCCL_ID");

    /* The id through a file: rank 0 writes it, a peer reads the same bytes, rank 0 removes it. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/cgr-test-boot-%ld.id", (long)getpid());
    unlink(path);
    setenv("CGR_NCCL_ID_FILE", path, 1);
    memset(s, 0, sizeof *s);
    ddp_rank_info r0 = {0, 2, 0, NULL};
    ASSERT_EQ(ddp_run_from_env(&r0, 5, record, s), 0);
    ASSERT(nonzero(&s->id[0]));
    ASSERT_EQ(ddp_run_from_env(&r1, 5, record, s), 0);
    ASSERT_EQ(memcmp(&s->id[0], &s->id[1], sizeof s->id[0]), 0);
    ddp_rank_info done = {0, 2, 0, path};
    ddp_id_done(&done);
    ASSERT(access(path, F_OK) != 0);
    /* No file and nobody to write it: the peer gives up after its timeout. */
    t0 = now_s();
    ASSERT_EQ(ddp_run_from_env(&r1, 1, record, s), 1);
    ASSERT_LT(now_s() - t0, 10.0);
    unsetenv("CGR_NCCL_ID_FILE");
    printf("launcher and id bootstrap: all checks passed\n");
    return 0;
}
