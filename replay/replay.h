/*
 * The replay layer: submitting runs, what each run does by its shape,
 * waiting and outputs. Its pure parts (bucket.h, churn.h, shapes.h,
 * shape_io.h, host_write.h) see none of the runtime's objects.
 */
#ifndef CGR_REPLAY_H
#define CGR_REPLAY_H

#include "capture.h"
#include "comm.h"
#include "shapes.h"

/* Launches g for `slot`, pointing its staging at the slot first where the
 * last launch left it elsewhere; a gated graph's gate is opened first, or
 * closed when `ahead` (an armed run); rt->lock held, device entered. */
cgr_status cgr__launch_graph(cgr_step *s, struct cgr__graph *g, uint32_t slot, int ahead);
/*
 * Carries out, on `slot`, a decision other than REPLAY, or the REPLAY of a
 * graph due for its frozen-value check, and says what the run was in
 * *action (cgr_run_action) and, for an eager run, why in *reason
 * (cgr_eager_reason); rt->lock held, device entered (dispatch.c).
 */
cgr_status cgr__run_miss(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                         uint8_t *action, uint8_t *reason);
/*
 * The profile window (replay/profile.c, cgr_options.profile). attach at
 * step creation (s->profile stays NULL without a profile), detach at
 * destroy; profile_replay carries out a REPLAY decision of a step with
 * s->profile set, eager or graph by the window, and says which in *action.
 * rt->lock held, device entered.
 */
void cgr__profile_attach(cgr_step *s);
void cgr__profile_detach(cgr_step *s);
cgr_status cgr__profile_replay(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                               uint8_t *action);
/* Every tensor's shape for the run (what the step sees) from the bucket, and
 * the slot's packed inputs spread to the bucket, with the true dims stored. */
void cgr__stage_shape(cgr_step *s, uint32_t slot, const int64_t *bucket, const int64_t *true_dims);
/* Packs the outputs of the runs a wait retired, from..to, to their true shape;
 * rt->lock held. */
void cgr__outputs_compact(cgr_step *s, uint64_t from, uint64_t to);
/* Bytes of a tensor with its dynamic axes at vals (the step's n_dyn values;
 * unused when the tensor has none). */
size_t cgr__tensor_bytes_at(const cgr__tensor *t, const int64_t *vals);

#endif
