/* The loaded library reports the version of the header it was built with. */
#include <stdio.h>
#include <string.h>

#include "cgr/cgr.h"
#include "test.h"

int main(void)
{
    ASSERT(cgr_version() != NULL);
    ASSERT_STR_EQ(cgr_version(), CGR_VERSION_STRING);
    /* The number is built from the same three parts as the string. */
    char parts[32];
    snprintf(parts, sizeof parts, "%d.%d.%d", CGR_VERSION_MAJOR, CGR_VERSION_MINOR,
             CGR_VERSION_PATCH);
    ASSERT_STR_EQ(cgr_version(), parts);
    ASSERT_EQ(CGR_VERSION_NUMBER,
              CGR_VERSION_MAJOR * 10000 + CGR_VERSION_MINOR * 100 + CGR_VERSION_PATCH);
    printf("PASS: cgr %s (%d)\n", cgr_version(), CGR_VERSION_NUMBER);
    return 0;
}
