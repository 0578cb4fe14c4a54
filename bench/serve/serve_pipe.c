/*
 * W-serve throughput with requests in flight (serve.h, serve_pipe_pass).
 *
 * The closed loop of serve_bench.c submits a request only after the
 * previous one's output was read, so its throughput is 1 / latency: every
 * request pays the launch and the completion signal on top of the GPU
 * work. A serving loop with a queue stages and submits the next request
 * while the GPU runs the current one, as far as cgr's staging slots allow;
 * this pass does that. Everything from the first acquire to the last
 * output is timed, input copies and output reads included. Inputs come
 * from a fixed pool of rows, so generating them is not timed and every
 * mode sees the same values.
 */
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "serve.h"
#include "util.h"

/* FNV-1a over 64-bit words: the rows are multiples of 8 bytes. */
static uint64_t hash_words(uint64_t h, const void *p, size_t bytes)
{
    const unsigned char *b = p;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    return h;
}

typedef struct inflight {
    uint64_t ticket;
    const void *out; /* the slot's output 0 (cgr_slot.outputs) */
    int req;
} inflight;

static int retire(serve_rt *srt, const inflight *f, const int *batch, int classes,
                  uint64_t *hashes, serve_pipe_result *out)
{
    const int B = batch[f->req];
    const void *o = f->out;
    size_t bytes = 0;
    cgr_run_action a;
    CGR_CK(cgr_step_wait(srt->step, f->ticket));
    CGR_CK(cgr_step_output(srt->step, f->ticket, 0, NULL, 0, &bytes));
    CGR_CK(cgr_step_run_action(srt->step, f->ticket, &a));
    const size_t row = (size_t)classes * sizeof(float);
    if (bytes != (size_t)B * row) {
        bench_error("W-serve pipelined request %d (B=%d): output of %zu bytes, expected %zu",
                    f->req, B, bytes, (size_t)B * row);
        return -1;
    }
    out->replays += a == CGR_RUN_REPLAY;
    if (hashes && f->req % SERVE_PIPE_HASH_EVERY == 0) {
        uint64_t h = hash_words(0xcbf29ce484222325ULL, o, row);
        hashes[f->req / SERVE_PIPE_HASH_EVERY] =
            hash_words(h, (const unsigned char *)o + (size_t)(B - 1) * row, row);
    }
    return 0;
}

int serve_pipe_pass(serve_rt *srt, const int *batch, int from, int n, int max_batch,
                    const float *pool, int in_dim, int classes, uint64_t *hashes,
                    serve_pipe_result *out)
{
    memset(out, 0, sizeof *out);
    cgr_step_stats st;
    CGR_CK(cgr_step_get_stats(srt->step, &st));
    inflight q[CGR_MAX_SLOTS];
    int head = 0, count = 0;
    const int depth = srt->slots;
    const double t0 = now_us();
    for (int i = from; i < n; i++) {
        const int B = batch[i];
        if (max_batch > 0 && B > max_batch)
            continue;
        if (count == depth) {
            if (retire(srt, &q[head], batch, classes, hashes, out) != 0)
                return -1;
            head = (head + 1) % depth;
            count--;
        }
        cgr_slot slot;
        TRY(serve_acquire(srt, B, &slot));
        const int first = (int)(((uint64_t)i * 61u) % (SERVE_PIPE_POOL_ROWS - SERVE_MAX_BATCH + 1));
        TRY(serve_write_input(srt, &slot, pool + (size_t)first * in_dim,
                              (size_t)B * in_dim * sizeof(float)));
        CGR_CK(cgr_step_launch(srt->step, &slot));
        q[(head + count) % depth] = (inflight){slot.ticket, slot.outputs[0], i};
        count++;
        out->n++;
        out->rows += B;
    }
    while (count > 0) {
        if (retire(srt, &q[head], batch, classes, hashes, out) != 0)
            return -1;
        head = (head + 1) % depth;
        count--;
    }
    out->wall_us = now_us() - t0;
    return 0;
}
