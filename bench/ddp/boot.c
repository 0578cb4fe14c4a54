/* Launching ranks and sharing the unique id (boot.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cuda_runtime_api.h>

#include "boot.h"

#define MAX_RANKS 64
/* How long a peer waits for rank 0's id through its pipe. */
#define PIPE_WAIT_MS 120000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#ifdef CGR_COVERAGE
void __gcov_dump(void); /* gcc's and clang's coverage runtimes */
#endif

/*
 * Exits the child with fn's status, flushing only this process's stdio.
 * _exit skips the parent's atexit handlers, and with them the one that
 * writes coverage counts, so a coverage build (tests/coverage.sh) writes
 * the rank's counts first: the library's comm/ code runs only in ranks.
 */
static void child_exit(int status)
{
    fflush(NULL);
#ifdef CGR_COVERAGE
    __gcov_dump();
#endif
    _exit(status);
}

/* A child dies with its parent (a killed launcher leaves no rank behind). */
static void die_with_parent(void)
{
#if defined(__linux__)
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
}

int ddp_probe_gpus(void)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess)
            n = 0; /* "insufficient driver" and the like all mean no GPU */
        ssize_t w = write(fd[1], &n, sizeof n);
        _exit(w == (ssize_t)sizeof n ? 0 : 1);
    }
    close(fd[1]);
    int n = -1;
    ssize_t r;
    do
        r = read(fd[0], &n, sizeof n);
    while (r < 0 && errno == EINTR);
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return r == (ssize_t)sizeof n ? n : -1;
}

/* Reads exactly n bytes within timeout_ms; 0 on success. */
static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
    unsigned char *p = buf;
    double end = now_s() + timeout_ms / 1000.0;
    while (n > 0) {
        int left = (int)((end - now_s()) * 1000.0);
        if (left <= 0)
            return -1;
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1; /* EOF: rank 0 is gone */
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Kills every rank still running; reaps them. */
static void kill_all(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
    double end = now_s() + 5.0;
    for (int i = 0; i < n; i++) {
        while (pids[i] > 0) {
            int st;
            pid_t w = waitpid(pids[i], &st, WNOHANG);
            if (w == pids[i] || (w < 0 && errno != EINTR)) {
                pids[i] = 0;
            } else if (now_s() > end) {
                kill(pids[i], SIGKILL);
                while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
                    ;
                pids[i] = 0;
            } else {
                sleep_ms(10);
            }
        }
    }
}

static int exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

int ddp_launch_local(int nproc, unsigned timeout_s, ddp_rank_fn fn, void *user)
{
    if (nproc < 1 || nproc > MAX_RANKS) {
        fprintf(stderr, "ddp: --nproc %d is outside 1..%d\n", nproc, MAX_RANKS);
        return -1;
    }
    int pipes[MAX_RANKS][2];
    for (int i = 1; i < nproc; i++) {
        if (pipe(pipes[i]) != 0) {
            fprintf(stderr, "ddp: pipe: %s\n", strerror(errno));
            for (int j = 1; j < i; j++) {
                close(pipes[j][0]);
                close(pipes[j][1]);
            }
            return -1;
        }
    }
    fflush(NULL); /* nothing buffered here may be printed twice by the children */
    pid_t pids[MAX_RANKS] = {0};
    int started = 0;
    for (int i = 0; i < nproc; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "ddp: fork: %s\n", strerror(errno));
            break;
        }
        if (pid == 0) {
            die_with_parent();
            ddp_rank_info who = {i, nproc, i, NULL};
            ncclUniqueId id;
            memset(&id, 0, sizeof id);
            if (i == 0) {
                for (int j = 1; j < nproc; j++)
                    close(pipes[j][0]);
                ncclResult_t r = ncclGetUniqueId(&id);
                if (r != ncclSuccess) {
                    fprintf(stderr, "ddp: rank 0: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
                    child_exit(1);
                }
                for (int j = 1; j < nproc; j++) {
                    if (write_full(pipes[j][1], &id, sizeof id) != 0) {
                        fprintf(stderr, "ddp: rank 0: sending the id to rank %d failed\n", j);
                        child_exit(1);
                    }
                    close(pipes[j][1]);
                }
            } else {
                for (int j = 1; j < nproc; j++) {
                    close(pipes[j][1]);
                    if (j != i)
                        close(pipes[j][0]);
                }
                if (read_full(pipes[i][0], &id, sizeof id, PIPE_WAIT_MS) != 0) {
                    fprintf(stderr, "ddp: rank %d: no unique id from rank 0\n", i);
                    child_exit(1);
                }
                close(pipes[i][0]);
            }
            child_exit(fn(&who, &id, user));
        }
        pids[i] = pid;
        started++;
    }
    for (int j = 1; j < nproc; j++) {
        close(pipes[j][0]);
        close(pipes[j][1]);
    }
    if (started < nproc) {
        kill_all(pids, nproc);
        return -1;
    }

    /* Wait for all; the first failure (or the timeout) ends the others. */
    int result = 0, running = nproc;
    double end = timeout_s ? now_s() + timeout_s : 0.0;
    while (running > 0) {
        int status = 0;
        pid_t w = waitpid(-1, &status, WNOHANG);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            break;
        if (w == 0) {
            if (end > 0.0 && now_s() > end) {
                fprintf(stderr, "ddp: the ranks did not finish within %u s; killing them\n",
                        timeout_s);
                kill_all(pids, nproc);
                return 124;
            }
            sleep_ms(10);
            continue;
        }
        for (int i = 0; i < nproc; i++) {
            if (pids[i] != w)
                continue;
            pids[i] = 0;
            running--;
            int code = exit_code(status);
            if (code != 0 && result == 0) {
                fprintf(stderr, "ddp: rank %d exited with status %d; stopping the others\n", i,
                        code);
                result = code;
                kill_all(pids, nproc);
                running = 0;
            }
        }
    }
    return result;
}

static int parse_env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        return 0;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < 0 || x > 1000000) {
        fprintf(stderr, "ddp: %s='%s' is not a non-negative integer\n", name, v);
        return -1;
    }
    *out = (int)x;
    return 1;
}

int ddp_rank_from_env(ddp_rank_info *who)
{
    memset(who, 0, sizeof *who);
    int rank = 0, world = 0, local = 0;
    int hr = parse_env_int("RANK", &rank);
    if (hr <= 0)
        return hr;
    if (parse_env_int("WORLD_SIZE", &world) != 1 || world < 1 || rank >= world) {
        fprintf(stderr, "ddp: RANK=%d needs WORLD_SIZE > RANK\n", rank);
        return -1;
    }
    int hl = parse_env_int("LOCAL_RANK", &local);
    if (hl < 0)
        return -1;
    who->rank = rank;
    who->world = world;
    who->local_rank = hl == 1 ? local : rank;
    return 1;
}

static int from_hex(const char *s, ncclUniqueId *id)
{
    unsigned char *p = (unsigned char *)id;
    if (strlen(s) != 2 * sizeof *id)
        return -1;
    for (size_t i = 0; i < sizeof *id; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = s[2 * i + (size_t)k];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0)
                return -1;
            v = v * 16 + (unsigned)d;
        }
        p[i] = (unsigned char)v;
    }
    return 0;
}

/* Rank 0: writes the id to path atomically (a temporary file in the same
 * directory, then rename). */
static int write_id_file(const char *path, const ncclUniqueId *id)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    int ok = write_full(fd, id, sizeof *id) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Other ranks: waits up to timeout_s for a complete id file. */
static int read_id_file(const char *path, unsigned timeout_s, ncclUniqueId *id)
{
    double end = now_s() + (double)timeout_s;
    for (;;) {
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            struct stat sb;
            int ok = fstat(fd, &sb) == 0 && sb.st_size == (off_t)sizeof *id &&
                     read_full(fd, id, sizeof *id, 1000) == 0;
            close(fd);
            if (ok)
                return 0;
        }
        if (now_s() > end)
            return -1;
        sleep_ms(50);
    }
}

int ddp_run_from_env(const ddp_rank_info *who_in, unsigned timeout_s, ddp_rank_fn fn, void *user)
{
    ddp_rank_info who = *who_in;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    const char *hex = getenv("CGR_NCCL_ID");
    const char *file = getenv("CGR_NCCL_ID_FILE");
    ncclResult_t r;
    if (hex && hex[0]) {
        if (from_hex(hex, &id) != 0) {
            fprintf(stderr, "ddp: CGR_NCCL_ID must be %zu hex digits\n", 2 * sizeof id);
            return 1;
        }
    } else if (file && file[0]) {
        who.id_file = file;
        if (who.rank == 0) {
            if ((r = ncclGetUniqueId(&id)) != ncclSuccess) {
                fprintf(stderr, "ddp: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
                return 1;
            }
            if (write_id_file(file, &id) != 0) {
                fprintf(stderr, "ddp: writing the id to %s: %s\n", file, strerror(errno));
                return 1;
            }
        } else if (read_id_file(file, timeout_s, &id) != 0) {
            fprintf(stderr, "ddp: rank %d: no id in %s after %u s (is rank 0 running, and is "
                            "the path shared?)\n", who.rank, file, timeout_s);
            return 1;
        }
    } else if (getenv("NCCL_COMM_ID")) {
        /* NCCL derives the id from the address; rank 0 listens there in ncclCommInitRank. */
        if ((r = ncclGetUniqueId(&id)) != ncclSuccess) {
            fprintf(stderr, "ddp: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
            return 1;
        }
    } else {
        fprintf(stderr, "ddp: RANK is set but none of CGR_NCCL_ID, CGR_NCCL_ID_FILE or "
                        "NCCL_COMM_ID says where the unique id comes from\n");
        return 1;
    }
    return fn(&who, &id, user);
}

void ddp_id_done(const ddp_rank_info *who)
{
    if (who->rank == 0 && who->id_file)
        unlink(who->id_file);
}
