/*
 * The version of the library that is actually loaded. A program compiled
 * against one cgr_version.h may run with another libcgr.so; comparing
 * cgr_version() with CGR_VERSION_STRING tells it which.
 */
#include "cgr/cgr.h"

CGR_API const char *cgr_version(void)
{
    return CGR_VERSION_STRING;
}
