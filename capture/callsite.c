#include <pthread.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "callsite.h"
#include "cgr_config.h"

static _Thread_local struct {
    int watching;
    int err;
    char name[64];
} tl;

#if CGR_HAVE_CUPTI
/* cupti.h would pull in cupti_activity.h, whose enums are not -Wpedantic clean. */
#include <cupti_callbacks.h>
#include <cupti_result.h>

/*
 * One subscriber for the process (CUPTI allows one), held only while some
 * thread is capturing, so that a user's own CUPTI tool can subscribe at
 * other times.
 */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;
static int watchers; /* captures in progress that hold the subscription */

static void CUPTIAPI on_api(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                            const void *data)
{
    (void)user;
    (void)domain;
    (void)id;
    const CUpti_CallbackData *cb = data;
    if (!tl.watching || tl.err || cb->callbackSite != CUPTI_API_EXIT || !cb->functionReturnValue)
        return;
    cudaError_t e = *(const cudaError_t *)cb->functionReturnValue;
    if (e == cudaSuccess || !cb->functionName)
        return;
    /* cudaGetLastError only repeats an earlier error; it is not the culprit. */
    if (strncmp(cb->functionName, "cudaGetLastError", 16) == 0 ||
        strncmp(cb->functionName, "cudaPeekAtLastError", 19) == 0)
        return;
    tl.err = (int)e;
    strncpy(tl.name, cb->functionName, sizeof tl.name - 1);
    char *v = strstr(tl.name, "_v");
    if (v)
        *v = '\0';
}

void cgr__watch_begin(void)
{
    tl.err = 0;
    tl.name[0] = '\0';
    pthread_mutex_lock(&mu);
    int on = 1;
    if (watchers == 0) {
        on = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_api, NULL) == CUPTI_SUCCESS;
        if (on && cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
            cuptiUnsubscribe(subscriber);
            on = 0;
        }
    }
    if (on)
        watchers++;
    pthread_mutex_unlock(&mu);
    tl.watching = on;
}

int cgr__watch_end(char *name, size_t n)
{
    if (tl.watching) {
        tl.watching = 0;
        pthread_mutex_lock(&mu);
        if (--watchers == 0)
            cuptiUnsubscribe(subscriber);
        pthread_mutex_unlock(&mu);
    }
    if (n) {
        strncpy(name, tl.name, n - 1);
        name[n - 1] = '\0';
    }
    return tl.err;
}

#else /* no CUPTI: nothing to watch with */

void cgr__watch_begin(void)
{
    tl.err = 0;
    tl.name[0] = '\0';
}

int cgr__watch_end(char *name, size_t n)
{
    if (n)
        name[0] = '\0';
    return 0;
}
#endif
