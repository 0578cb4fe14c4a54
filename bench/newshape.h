/*
 * cgr-bench newshape (newshape_bench.c): what a new shape of the W-mlp
 * training step costs with a dynamic batch, warm-up excluded: stream
 * capture + instantiate, and stream capture + update in place
 * (cudaGraphExecUpdate of a cached executable).
 */
#ifndef BENCH_NEWSHAPE_H
#define BENCH_NEWSHAPE_H

#include "bench.h"

/*
 * Runs the suite, prints its table and summary lines (and JSON to
 * cfg->json_path). Returns the exit status: 0 when every measurement ran,
 * 1 when a call failed or a loss came back non-finite.
 */
int newshape_suite(const bench_config *cfg, const bench_results *res);

#endif
