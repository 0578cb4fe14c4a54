/*
 * Shared by the libFuzzer targets: a reader that turns the fuzzer's bytes
 * into values, and the check that reports a broken invariant.
 *
 * The reader never fails. Past the end of the input it yields zeros, so
 * every input decodes to something and a short input is simply a small
 * case; libFuzzer then grows the inputs that reach new code.
 */
#ifndef CGR_FUZZ_INPUT_H
#define CGR_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libFuzzer's entry point; declared here for -Wmissing-prototypes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    size_t pos;
} fuzz_input;

static inline int fuzz_empty(const fuzz_input *in)
{
    return in->pos >= in->size;
}

static inline uint8_t fuzz_u8(fuzz_input *in)
{
    return in->pos < in->size ? in->data[in->pos++] : 0;
}

/* Little-endian, byte by byte: no alignment or endianness assumptions. */
static inline uint64_t fuzz_bytes_le(fuzz_input *in, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)fuzz_u8(in) << (8 * i);
    return v;
}

static inline uint16_t fuzz_u16(fuzz_input *in)
{
    return (uint16_t)fuzz_bytes_le(in, 2);
}

static inline uint32_t fuzz_u32(fuzz_input *in)
{
    return (uint32_t)fuzz_bytes_le(in, 4);
}

static inline uint64_t fuzz_u64(fuzz_input *in)
{
    return fuzz_bytes_le(in, 8);
}

/* Two's complement reinterpretation, spelled out so it is not
 * implementation-defined: values above INT32_MAX map to negatives. */
static inline int32_t fuzz_i32(fuzz_input *in)
{
    uint32_t u = fuzz_u32(in);
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static inline int64_t fuzz_i64(fuzz_input *in)
{
    uint64_t u = fuzz_u64(in);
    return u <= INT64_MAX ? (int64_t)u : (int64_t)(u - 0x8000000000000000u) + INT64_MIN;
}

/* A signed byte: small values on both sides of zero with one input byte. */
static inline int fuzz_s8(fuzz_input *in)
{
    uint8_t u = fuzz_u8(in);
    return u < 128 ? (int)u : (int)u - 256;
}

/*
 * A broken invariant: say which, then abort(). libFuzzer treats the abort
 * as a crash, saves the input and prints the stack, so the message and the
 * saved input are all that is needed to reproduce it.
 */
#define FUZZ_CHECK(cond, ...)                                                              \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant broken: %s\n  ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#endif
