/* cgr_version.h compiles on its own and matches the library's version. */
#include "cgr/cgr_version.h"

#if !defined(CGR_VERSION_MAJOR) || !defined(CGR_VERSION_MINOR) || !defined(CGR_VERSION_PATCH) || \
    !defined(CGR_VERSION_NUMBER) || !defined(CGR_HAVE_CUDNN)
#error "cgr_version.h lacks a version macro"
#endif

int main(void)
{
    return CGR_VERSION_MAJOR >= 0 && CGR_VERSION_STRING[0] != '\0' ? 0 : 1;
}
