/* Status names and strings come from one list and cover every status. */
#include <string.h>

#include "cgr/cgr.h"
#include "check.h"
#include "test.h"

int main(void)
{
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
    printf("PASS: %d statuses\n", (int)CGR_STATUS_COUNT_);
    return 0;
}
