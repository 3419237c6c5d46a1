// linecapd's /status: the daemon's state as one JSON document, built from the same
// snapshot as /metrics (snapshot.hpp) so that both say the same, for the retrieval API's
// /api/v1/status (api/status.hpp), which adds the store's side and the rates:
//
//   {"collected_ns": N,
//    "ports": [{"port", "link_up", "received_packets", "received_bytes", "written_packets",
//               "filtered_packets", "dropped_packets", "dropped": {REASON: N, ...}}, ...],
//    "retention": {"horizon_seconds", "files", "bytes"},
//    "index_queued_files": N,            only with output.index
//    "scrub_damaged_files": N,           only with output.scrub
//    "filesystem": {"size_bytes", "free_bytes"}}   once the store's file system was measured
//
// Per port, received/written/filtered are the sums over its queues' streams, dropped the
// per-queue and per-port reasons of the drop accounting (snapshot.hpp).
#pragma once

#include <string>

#include "metrics/snapshot.hpp"

namespace linecap {

std::string status_document(const MetricsSnapshot& snapshot);

}  // namespace linecap
