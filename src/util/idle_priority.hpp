// Background work over finished files (the indexer, the scrub) runs at idle CPU and I/O
// priority: when the control core is saturated by the writer, it waits instead of slowing
// capture, and catches up when traffic drops.
#pragma once

namespace linecap {

// Moves the calling thread to SCHED_IDLE and the idle I/O class. Failures are logged
// (prefixed with `who`) and otherwise ignored: the work still gets done, only sooner.
void lower_to_idle_priority(const char* who);

// Back to the normal CPU and I/O priority: for the work a stopping daemon still owes
// (capture has stopped, and idle priority could starve it on a busy machine). Failures are
// logged at debug level: the work still gets done.
void restore_normal_priority(const char* who);

}  // namespace linecap
