/*
 * ASSERT_DIES(statement): runs the statement in a child process and checks
 * that it aborts there, as a failed assert() does. It tests the internal
 * preconditions that cgr asserts instead of reporting (a NULL where cgr's
 * own code always passes an object). Where assertions are compiled out
 * (NDEBUG, a release build) such a call is undefined behaviour, so the
 * statement is not run at all; CI's sanitizer build has them compiled in.
 * The including file must define _POSIX_C_SOURCE before any header.
 */
#ifndef CGR_TEST_DEATH_H
#define CGR_TEST_DEATH_H

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#ifndef NDEBUG
#define ASSERT_DIES(statement)                                                             \
    do {                                                                                   \
        fflush(NULL);                                                                      \
        pid_t pid_ = fork();                                                               \
        ASSERT(pid_ >= 0);                                                                 \
        if (pid_ == 0) {                                                                   \
            /* The child's assert message would only clutter the test's log. */            \
            if (freopen("/dev/null", "w", stderr) == NULL)                                 \
                _exit(2);                                                                  \
            statement;                                                                     \
            _exit(0);                                                                      \
        }                                                                                  \
        int ws_ = 0;                                                                       \
        ASSERT(waitpid(pid_, &ws_, 0) == pid_);                                            \
        if (!WIFSIGNALED(ws_) || WTERMSIG(ws_) != SIGABRT)                                 \
            TEST_FAIL_("%s did not abort (wait status %d)", #statement, ws_);              \
    } while (0)
#else
/* Compiled, so that it keeps its arguments used and type-checked, but never run. */
#define ASSERT_DIES(statement)                                                             \
    do {                                                                                   \
        if (0) {                                                                           \
            statement;                                                                     \
        }                                                                                  \
    } while (0)
#endif

#endif
