/*
 * Status names and strings come from one list and cover every status; the
 * last-error message is led by the public function once, grows by "; "
 * parts, may wrap itself, and is cut, never overrun, when it fills its
 * buffer; a failed CUDA
 * call and cgr's own bug are reported as docs/errors.md says.
 */
#define _POSIX_C_SOURCE 200809L /* fork, for death.h */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cgr/cgr.h"
#include "check.h"
#include "death.h"
#include "test.h"

/* The message's length limit, as cgr_last_error() shows it: the buffer less its NUL. */
static size_t message_limit(void)
{
    char big[4096];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    (void)cgr__fail(CGR_STATUS_INTERNAL, "%s", big);
    return strlen(cgr_last_error());
}

static void test_message(void)
{
    ASSERT_EQ(cgr__fail(CGR_STATUS_BUSY, "step '%s': slot %d", "s", 3), CGR_STATUS_BUSY);
    ASSERT_STR_EQ(cgr_last_error(), "step 's': slot 3");
    cgr__error_append("waited %d us", 5);
    ASSERT_STR_EQ(cgr_last_error(), "step 's': slot 3; waited 5 us");
    cgr__error_lead("cgr_step_wait");
    ASSERT_STR_EQ(cgr_last_error(), "cgr_step_wait: step 's': slot 3; waited 5 us");
    cgr__error_lead("cgr_step_wait"); /* led once, however often a path leads it */
    ASSERT_STR_EQ(cgr_last_error(), "cgr_step_wait: step 's': slot 3; waited 5 us");
    cgr__clear_error();
    cgr__error_append("alone");
    ASSERT_STR_EQ(cgr_last_error(), "alone"); /* no "; " before the first part */
    /* A failure that wraps the message below it, by cgr_last_error() itself. */
    (void)cgr__fail(CGR_STATUS_CUDA_ERROR, "a");
    (void)cgr__fail(CGR_STATUS_CAPTURE_FAILED, "b (%s)", cgr_last_error());
    ASSERT_STR_EQ(cgr_last_error(), "b (a)");
    cgr__error_append("again: %s", cgr_last_error());
    ASSERT_STR_EQ(cgr_last_error(), "b (a); again: b (a)");

    /* A full message: the lead still comes first, the text is cut to fit, and nothing
     * is appended past the end. */
    const size_t limit = message_limit();
    ASSERT_GE(limit, 1000);
    ASSERT(limit < 4095);
    cgr__error_lead("cgr_step_run");
    const char *m = cgr_last_error();
    ASSERT_EQ(strlen(m), limit);
    ASSERT(strncmp(m, "cgr_step_run: zzz", 17) == 0);
    cgr__error_append("lost");
    ASSERT_EQ(strlen(cgr_last_error()), limit);
    ASSERT(strstr(cgr_last_error(), "lost") == NULL);
    /*
     * One to five bytes short of full: an append cuts its part and never
     * overruns, and leaves nothing when not even the part's first
     * character fits after its "; ".
     */
    char most[4096], want[4096];
    for (size_t s = 1; s <= 5; s++) {
        memset(most, 'y', limit - s);
        most[limit - s] = '\0';
        (void)cgr__fail(CGR_STATUS_INTERNAL, "%s", most);
        cgr__error_append("abcdef");
        size_t k = limit - s;
        memcpy(want, most, k);
        if (s > 2) {
            memcpy(want + k, "; abcdef", s);
            k += s;
        }
        want[k] = '\0';
        ASSERT_STR_EQ(cgr_last_error(), want);
    }
    cgr__clear_error();
}

/* A failed CUDA call: the status its error maps to (docs/errors.md), and a message that
 * names the call and the error. cudart's name table needs no GPU. */
static void test_cuda_fail(void)
{
    static const struct {
        cudaError_t e;
        cgr_status want;
    } map[] = {
        {cudaErrorMemoryAllocation, CGR_STATUS_OUT_OF_MEMORY},
        {cudaErrorNoDevice, CGR_STATUS_NO_DEVICE},
        {cudaErrorInsufficientDriver, CGR_STATUS_NO_DEVICE},
        {cudaErrorDevicesUnavailable, CGR_STATUS_NO_DEVICE},
        {cudaErrorStreamCaptureUnsupported, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureInvalidated, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureImplicit, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureUnjoined, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureIsolation, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureMerge, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureUnmatched, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorStreamCaptureWrongThread, CGR_STATUS_CAPTURE_FAILED},
        {cudaErrorInvalidValue, CGR_STATUS_CUDA_ERROR},
        {cudaErrorIllegalAddress, CGR_STATUS_CUDA_ERROR},
        {cudaErrorLaunchFailure, CGR_STATUS_CUDA_ERROR},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        cgr__clear_error();
        ASSERT_STATUS(cgr__cuda_fail((int)map[i].e, "cudaDoThing(x)"), map[i].want);
        char want[256];
        snprintf(want, sizeof want, "cudaDoThing(x) failed: %s (%s)",
                 cudaGetErrorName(map[i].e), cudaGetErrorString(map[i].e));
        ASSERT_STR_EQ(cgr_last_error(), want);
    }
}

/* cgr's own bug: the report's lead and the place without its directories; a build with
 * assertions stops there instead. */
static void test_bug(void)
{
#ifdef NDEBUG
    ASSERT_STATUS(cgr__bug("/home/me/src/file.c", 12, "slot %d lost", 3), CGR_STATUS_INTERNAL);
    ASSERT_STR_EQ(cgr_last_error(),
                  "internal error in cgr (please report it): slot 3 lost; at file.c:12");
    ASSERT_STATUS(cgr__bug("plain.c", 7, "x"), CGR_STATUS_INTERNAL);
    ASSERT(strstr(cgr_last_error(), "; at plain.c:7") != NULL);
#else
    ASSERT_DIES(cgr__bug("/home/me/src/file.c", 12, "slot %d lost", 3));
#endif
}

int main(void)
{
    test_cuda_fail();
    test_bug();
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_OK), "CGR_STATUS_OK");
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_CAPTURE_FAILED), "CGR_STATUS_CAPTURE_FAILED");
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_BUSY), "CGR_STATUS_BUSY");
    /* Statuses keep their numbers: new ones are only added at the end. */
    ASSERT_EQ(CGR_STATUS_WRONG_STATE, 14);
    ASSERT_EQ(CGR_STATUS_INTERNAL, 15);
    ASSERT_EQ(CGR_STATUS_TIMEOUT, 16);
    ASSERT_EQ(CGR_STATUS_COMM_ERROR, 17);
    ASSERT_EQ(CGR_STATUS_COUNT_, 18);
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_INTERNAL), "CGR_STATUS_INTERNAL");
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_TIMEOUT), "CGR_STATUS_TIMEOUT");
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_COMM_ERROR), "CGR_STATUS_COMM_ERROR");
    ASSERT(strstr(cgr_status_string(CGR_STATUS_INTERNAL), "report") != NULL);
    ASSERT(strstr(cgr_status_string(CGR_STATUS_TIMEOUT), "time") != NULL);
    ASSERT(strstr(cgr_status_string(CGR_STATUS_COMM_ERROR), "NCCL") != NULL);
    ASSERT_STR_EQ(cgr_status_name((cgr_status)-1), "CGR_STATUS_UNKNOWN");
    ASSERT_STR_EQ(cgr_status_name(CGR_STATUS_COUNT_), "CGR_STATUS_UNKNOWN");
    ASSERT_STR_EQ(cgr_status_string((cgr_status)1000), "unknown status");
    ASSERT_STR_EQ(cgr_status_string(CGR_STATUS_COUNT_), "unknown status");
    for (int i = 0; i < CGR_STATUS_COUNT_; i++) {
        const char *n = cgr_status_name((cgr_status)i);
        const char *s = cgr_status_string((cgr_status)i);
        ASSERT(n != NULL && s != NULL);
        ASSERT(strncmp(n, "CGR_STATUS_", 11) == 0);
        ASSERT(strlen(s) > 5);
        for (int j = 0; j < i; j++) {
            /* Distinct names and texts: a copy-paste slip in the list would show here. */
            ASSERT(strcmp(n, cgr_status_name((cgr_status)j)) != 0);
            ASSERT(strcmp(s, cgr_status_string((cgr_status)j)) != 0);
        }
    }
    /* The last-error message starts empty and can be cleared. */
    cgr__clear_error();
    ASSERT_STR_EQ(cgr_last_error(), "");
    cgr_options o;
    ASSERT_STATUS(cgr_options_init(NULL), CGR_STATUS_INVALID_ARGUMENT);
    /* Led by the public function; no source position of cgr's. */
    ASSERT(strncmp(cgr_last_error(), "cgr_options_init", 16) == 0);
    ASSERT(strstr(cgr_last_error(), ".c:") == NULL);
    cgr__clear_error();
    ASSERT_STR_EQ(cgr_last_error(), "");
    ASSERT_OK(cgr_options_init(&o));
    test_message();
    printf("PASS: %d statuses\n", (int)CGR_STATUS_COUNT_);
    return 0;
}
