/*
 * Unit tests of the frozen-value check's test of one value
 * (capture/frozen_values.h), the part of the check that says whether a
 * graph may be replayed: equal bytes of any size; changed scalars (a step
 * count, a learning rate); addresses into each capture's own allocations,
 * matched by order and only inside their ranges; addresses in the two
 * capturing threads' stacks and the edges of those stacks, and the real
 * stacks of the main thread and of others; values of several
 * words, each judged alone, and of a size that is not whole words, judged
 * byte for byte; the message's rendering of a value, never past its
 * buffer. Last, random values against a model of the rule.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frozen_values.h"
#include "test.h"

#define TEST_RNG_SEED 0xBF58476D1CE4E5B9ull
#include "xorshift.h"

#define MIB ((uintptr_t)1 << 20)

/* Two captures: a's allocations at 0x7f00_0000_0000 + k MiB, b's 1 GiB higher; stacks apart. */
static const cgr__alloc_range alloc_a[] = {{0x7f0000000000u, 4096}, {0x7f0000100000u, 256}};
static const cgr__alloc_range alloc_b[] = {{0x7f0040000000u, 4096}, {0x7f0040100000u, 256},
                                           {0x7f0040200000u, 64}};
static const cgr__stack_range stack_a = {0x7ffd00000000u, 0x7ffd00800000u},
                              stack_b = {0x7ffc00000000u, 0x7ffc00020000u};

static cgr__frozen_spaces spaces(void)
{
    return (cgr__frozen_spaces){{alloc_a, 2, stack_a}, {alloc_b, 3, stack_b}};
}

static int same_words(uint64_t a, uint64_t b)
{
    cgr__frozen_spaces s = spaces();
    return cgr__frozen_same_bytes(&s, (const unsigned char *)&a, (const unsigned char *)&b,
                                  sizeof a);
}

static void test_scalars(void)
{
    cgr__frozen_spaces s = spaces();
    const unsigned char x[3] = {1, 2, 3}, y[3] = {1, 2, 4};
    ASSERT(cgr__frozen_same_bytes(&s, x, x, 3));
    ASSERT(!cgr__frozen_same_bytes(&s, x, y, 3));
    ASSERT(cgr__frozen_same_bytes(&s, x, y, 0));
    int32_t step_a = 7, step_b = 8;
    ASSERT(!cgr__frozen_same_bytes(&s, (const unsigned char *)&step_a,
                                   (const unsigned char *)&step_b, 4));
    float lr_a = 0.1f, lr_b = 0.09f;
    ASSERT(!cgr__frozen_same_bytes(&s, (const unsigned char *)&lr_a, (const unsigned char *)&lr_b,
                                   4));
    ASSERT(same_words(12345, 12345));
    ASSERT(!same_words(12345, 12346));
    ASSERT(same_words(0, 0));
}

static void test_allocations(void)
{
    cgr__frozen_spaces s = spaces();
    /* In b's k-th allocation: a's k-th, at the same offset. */
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[0].base), alloc_a[0].base);
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[0].base + 4095), alloc_a[0].base + 4095);
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[1].base + 17), alloc_a[1].base + 17);
    /* Just outside a range, and in an allocation a does not have: unchanged. */
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[0].base + 4096), alloc_b[0].base + 4096);
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[0].base - 1), alloc_b[0].base - 1);
    ASSERT_U64_EQ(cgr__frozen_in_a(&s, alloc_b[2].base + 8), alloc_b[2].base + 8);

    ASSERT(same_words(alloc_a[0].base + 64, alloc_b[0].base + 64));
    ASSERT(same_words(alloc_a[1].base, alloc_b[1].base));
    ASSERT(!same_words(alloc_a[0].base + 64, alloc_b[0].base + 72)); /* another offset */
    ASSERT(!same_words(alloc_a[0].base, alloc_b[1].base));           /* another allocation */
    ASSERT(!same_words(alloc_a[1].base + 256, alloc_b[1].base + 256)); /* past its end */
    ASSERT(!same_words(alloc_b[2].base, alloc_b[2].base + 8));
    ASSERT(same_words(alloc_b[2].base, alloc_b[2].base)); /* equal bytes stay equal */

    /* b with fewer allocations than a: only b's are looked up (ASan sees a read past them). */
    static const cgr__alloc_range one_b[1] = {{0x7f0040000000u, 4096}};
    cgr__frozen_spaces fewer = {{alloc_a, 2, stack_a}, {one_b, 1, stack_b}};
    ASSERT_U64_EQ(cgr__frozen_in_a(&fewer, one_b[0].base + 5), alloc_a[0].base + 5);
    ASSERT_U64_EQ(cgr__frozen_in_a(&fewer, alloc_b[1].base), alloc_b[1].base);

    /* No allocation in one of the graphs: addresses must be equal. */
    cgr__frozen_spaces none = {{NULL, 0, stack_a}, {alloc_b, 3, stack_b}};
    ASSERT_U64_EQ(cgr__frozen_in_a(&none, alloc_b[0].base), alloc_b[0].base);
}

static void test_stacks(void)
{
    /* A host-mode alpha's address, at other depths of the two threads' stacks. */
    ASSERT(same_words(stack_a.hi - 200, stack_b.lo + 4096));
    ASSERT(same_words(stack_a.lo, stack_b.hi - 1));
    /* Just outside either stack (a buffer mapped next to it): a value. */
    ASSERT(!same_words(stack_a.hi, stack_b.lo + 64));
    ASSERT(!same_words(stack_a.lo - 1, stack_b.lo + 64));
    ASSERT(!same_words(stack_a.lo + 64, stack_b.hi));
    ASSERT(!same_words(stack_a.lo + 64, stack_b.lo - 8));
    /* On a stack in one graph only: a value. */
    ASSERT(!same_words(stack_a.hi - 64, 0x5555deadbeefu));
    ASSERT(!same_words(0x5555deadbeefu, stack_b.hi - 64));
    /* Each graph's own stack counts: b's word in a's stack is a value. */
    ASSERT(!same_words(stack_a.hi - 64, stack_a.hi - 128));
    /* A stack that could not be found holds nothing. */
    cgr__frozen_spaces s = spaces();
    s.b.stack = (cgr__stack_range){0, 0};
    uint64_t a = stack_a.hi - 64, b = 0;
    ASSERT(!cgr__frozen_same_bytes(&s, (const unsigned char *)&a, (const unsigned char *)&b, 8));
}

/* The frame's address, not a local's: AddressSanitizer may keep locals on a fake stack. */
static uintptr_t frame(void)
{
    return (uintptr_t)__builtin_frame_address(0);
}

/* Only the top 64 MiB of a larger stack counts; an empty or inverted range is empty. */
static void test_stack_top(void)
{
    cgr__stack_range r = cgr__stack_top(0x100000, 0x7ffc00000000u);
    ASSERT(r.hi == 0x7ffc00000000u && r.lo == 0x7ffc00000000u - 64 * MIB);
    r = cgr__stack_top(0x7ffc00000000u - 8 * MIB, 0x7ffc00000000u);
    ASSERT(r.lo == 0x7ffc00000000u - 8 * MIB && r.hi == 0x7ffc00000000u);
    r = cgr__stack_top(0x7ffc00000000u - 64 * MIB, 0x7ffc00000000u);
    ASSERT(r.lo == 0x7ffc00000000u - 64 * MIB);
    r = cgr__stack_top(5, 5);
    ASSERT(r.lo == 0 && r.hi == 0);
    r = cgr__stack_top(9, 5);
    ASSERT(r.lo == 0 && r.hi == 0);
}

/*
 * With no limit on the main thread's stack, the C library reports a stack
 * that reaches down to the heap. In a child process, so that no earlier
 * look at the main thread's stack is kept: the range stays at most 64 MiB,
 * and none of 64 heap buffers lies in it. Returns 0 when the limit could not
 * be lifted (the test is then not run).
 */
static int test_unlimited_stack(void)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_max != RLIM_INFINITY)
            _exit(77);
        rl.rlim_cur = RLIM_INFINITY;
        if (setrlimit(RLIMIT_STACK, &rl) != 0)
            _exit(77);
        cgr__stack_range r = cgr__thread_stack();
        if (r.hi <= r.lo || r.hi - r.lo > 64 * MIB || frame() < r.lo || frame() >= r.hi)
            _exit(1);
        for (int k = 0; k < 64; k++) {
            uintptr_t b = (uintptr_t)malloc(64 << 10);
            if (!b || (b + (64 << 10) > r.lo && b < r.hi))
                _exit(2);
        }
        _exit(0);
    }
    int status = 0;
    ASSERT(waitpid(pid, &status, 0) == pid);
    ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        return 0;
    if (WEXITSTATUS(status) != 0)
        TEST_FAIL_("with an unlimited stack: check %d failed", WEXITSTATUS(status));
    return 1;
}

/* What a thread finds of its own stack, and a host buffer allocated before the thread. */
typedef struct thread_view {
    cgr__stack_range stack, again;
    uintptr_t local;
} thread_view;

static void *look(void *arg)
{
    thread_view *v = arg;
    v->stack = cgr__thread_stack();
    v->again = cgr__thread_stack();
    v->local = frame();
    return NULL;
}

/*
 * The real stacks: each thread's own holds its local variables, and a host
 * buffer the program allocated just before starting a thread lies outside
 * it, however close the mappings are.
 */
static void test_thread_stacks(void)
{
    uintptr_t local = frame();
    cgr__stack_range main_stack = cgr__thread_stack();
    ASSERT(main_stack.lo < main_stack.hi);
    ASSERT(local >= main_stack.lo && local < main_stack.hi);
    for (int k = 0; k < 4; k++) {
        char *buf = malloc(MIB);
        ASSERT(buf != NULL);
        thread_view v;
        pthread_t t;
        ASSERT(pthread_create(&t, NULL, look, &v) == 0);
        ASSERT(pthread_join(t, NULL) == 0);
        ASSERT(v.stack.lo < v.stack.hi);
        ASSERT(v.again.lo == v.stack.lo && v.again.hi == v.stack.hi);
        ASSERT(v.local >= v.stack.lo && v.local < v.stack.hi);
        ASSERT((uintptr_t)buf + MIB <= v.stack.lo || (uintptr_t)buf >= v.stack.hi);
        ASSERT(v.stack.hi <= main_stack.lo || v.stack.lo >= main_stack.hi);
        free(buf);
    }
}

static void test_words(void)
{
    cgr__frozen_spaces s = spaces();
    /* A struct of an allocation's address and a count: each word is judged alone. */
    uint64_t a[2] = {alloc_a[0].base + 8, 100}, b[2] = {alloc_b[0].base + 8, 100};
    ASSERT(cgr__frozen_same_bytes(&s, (const unsigned char *)a, (const unsigned char *)b, 16));
    b[1] = 101;
    ASSERT(!cgr__frozen_same_bytes(&s, (const unsigned char *)a, (const unsigned char *)b, 16));
    /* 12 bytes (an address and an int): not whole words, so byte for byte. The 4 bytes
     * after them are alike, so reading a word past the value would pass it. */
    unsigned char a12[16] = {0}, b12[16] = {0};
    uint64_t pa = alloc_a[0].base, pb = alloc_b[0].base;
    memcpy(a12, &pa, 8);
    memcpy(b12, &pb, 8);
    memset(a12 + 8, 1, 4);
    memset(b12 + 8, 1, 4);
    ASSERT(!cgr__frozen_same_bytes(&s, a12, b12, 12));
    memcpy(b12, &pa, 8);
    ASSERT(cgr__frozen_same_bytes(&s, a12, b12, 12));
}

static void test_show(void)
{
    char out[96];
    int32_t seven = 7;
    cgr__frozen_show(out, sizeof out, (const unsigned char *)&seven, 4);
    ASSERT(strncmp(out, "7 (0x00000007, as float ", 24) == 0);
    float half = 0.5f;
    cgr__frozen_show(out, sizeof out, (const unsigned char *)&half, 4);
    ASSERT_STR_EQ(out, "1056964608 (0x3f000000, as float 0.5)");
    double two = 2.0;
    cgr__frozen_show(out, sizeof out, (const unsigned char *)&two, 8);
    ASSERT_STR_EQ(out, "4611686018427387904 (0x4000000000000000, as double 2)");
    unsigned char bytes[20];
    for (int i = 0; i < 20; i++)
        bytes[i] = (unsigned char)(0xa0 + i);
    cgr__frozen_show(out, sizeof out, bytes, 3);
    ASSERT_STR_EQ(out, "0xa0a1a2");
    cgr__frozen_show(out, sizeof out, bytes, 16);
    ASSERT_STR_EQ(out, "0xa0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
    cgr__frozen_show(out, sizeof out, bytes, 20);
    ASSERT_STR_EQ(out, "0xa0a1a2a3a4a5a6a7a8a9aaabacadaeaf...");
    /* Small buffers: cut, terminated, and nothing written past them (the canary). */
    for (size_t cap = 1; cap < 40; cap++) {
        char small[48];
        memset(small, 'Z', sizeof small);
        cgr__frozen_show(small, cap, bytes, 20);
        ASSERT_LT(strlen(small), cap);
        /* Whole bytes, "0x" once it fits, the ellipsis only after all 16. */
        size_t len = strlen(small);
        if (len > 3 && strcmp(small + len - 3, "...") == 0) {
            ASSERT_EQ(len, 37);
            len -= 3;
        }
        ASSERT(len % 2 == 0 || cap < 3);
        for (size_t k = cap; k < sizeof small; k++)
            ASSERT(small[k] == 'Z');
        memset(small, 'Z', sizeof small);
        cgr__frozen_show(small, cap, (const unsigned char *)&two, 8);
        ASSERT_LT(strlen(small), cap);
        for (size_t k = cap; k < sizeof small; k++)
            ASSERT(small[k] == 'Z');
    }
}

/* The rule, word by word, written out again for random values. */
static int model_same(uint64_t a, uint64_t b)
{
    if (a == b)
        return 1;
    for (int k = 0; k < 2; k++)
        if (b >= alloc_b[k].base && b < alloc_b[k].base + alloc_b[k].bytes)
            return a == alloc_a[k].base + (b - alloc_b[k].base);
    int on_a = a >= stack_a.lo && a < stack_a.hi;
    int on_b = b >= stack_b.lo && b < stack_b.hi;
    return on_a && on_b;
}

/* A word near one of the interesting places, or anywhere. */
static uint64_t pick(int graph_b)
{
    const cgr__alloc_range *al = graph_b ? alloc_b : alloc_a;
    uint64_t r = rng_next();
    switch (r % 5) {
    case 0:
    case 1:
        return al[r % 3 % 2].base + (rng_next() % 5000) - 400;
    case 2:
        return (graph_b ? stack_b.lo : stack_a.lo) + (rng_next() % (20 * MIB)) - 10 * MIB;
    case 3:
        return rng_next() % 1000;
    default:
        return rng_next();
    }
}

static void test_random(void)
{
    for (int i = 0; i < 200000; i++) {
        uint64_t a = pick(0), b = pick(1);
        if (rng_next() % 8 == 0)
            a = b;
        if (same_words(a, b) != model_same(a, b))
            TEST_FAIL_("a 0x%llx, b 0x%llx: same_bytes says %d", (unsigned long long)a,
                       (unsigned long long)b, same_words(a, b));
    }
}

int main(void)
{
    test_scalars();
    test_allocations();
    test_stacks();
    test_stack_top();
    if (!test_unlimited_stack())
        printf("frozen_values: the stack limit could not be lifted; not checked unlimited\n");
    test_thread_stacks();
    test_words();
    test_show();
    test_random();
    printf("frozen_values: all tests passed\n");
    return 0;
}
