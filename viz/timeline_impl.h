/* timeline_impl.h — the parts of timeline_finish that live in their own
 * files (timeline_lod.c, timeline_query.c); not for the layout. */
#ifndef MPSIM_VIZ_TIMELINE_IMPL_H
#define MPSIM_VIZ_TIMELINE_IMPL_H

#include "timeline.h"

/* The level-of-detail pyramid of every lane long enough (timeline.h). */
void timeline_build_lod(struct timeline *tl);

/* Each row's idle time inside the step by what it waited for (tl_row.wait),
 * and the run's idle, bubble and exposed-communication shares. */
void timeline_classify_idle(struct timeline *tl);

#endif
