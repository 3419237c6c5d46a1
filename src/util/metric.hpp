// A metric's declaration: the name, help text and type Prometheus shows. Each metric is
// declared once, next to the counters it reads (capture/counters.hpp, output/writer.hpp,
// archive/index_service.hpp, metrics/port_stats.hpp, metrics/filesystem_usage.hpp,
// metrics/snapshot.hpp); metrics/exposition.cpp only arranges the declarations into
// families and series, and the shutdown summary and status line read the same snapshot.
#pragma once

#include <cstdint>
#include <string_view>

namespace linecap {

enum class MetricType { counter, gauge, histogram };

struct MetricDecl {
    std::string_view name;
    std::string_view help;
    MetricType type;
};

// A metric whose value is one field of a counter group's snapshot (util/counter.hpp), one
// series per group (e.g. per stream, labels port and queue).
template <class Counts>
struct FieldMetric {
    MetricDecl decl;
    uint64_t Counts::*field;
};

// A series of linecap_dropped_packets_total (metrics/snapshot.hpp): the `reason` label
// value and the field that counts it.
template <class Counts>
struct DropReason {
    std::string_view reason;
    uint64_t Counts::*field;
};

}  // namespace linecap
