// A metric's declaration: the name, help text and type Prometheus shows. Each metric is
// declared once, next to the counters it reads (capture/counters.hpp, output/writer.hpp,
// archive/scrub.hpp, archive/index_service.hpp, archive/compress.hpp, metrics/port_stats.hpp,
// metrics/filesystem_usage.hpp, metrics/snapshot.hpp), and names the field it reads;
// metrics/exposition.cpp only arranges the declarations into families and series, and the
// shutdown summary and status line read the same snapshot.
#pragma once

#include <cstddef>
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
    double per_unit = 1;  // the field's units in one of the metric's (1e9: ns counted, seconds shown)

    double value(const Counts& counts) const { return static_cast<double>(counts.*field) / per_unit; }
};

// One series of a labelled family: its label value and the field it reads.
template <class Counts>
struct LabelledField {
    std::string_view label_value;
    uint64_t Counts::*field;
};

// A family of N series, one per value of `label` (e.g. result="built"), each one field
// of the same counter group's snapshot.
template <class Counts, size_t N>
struct FamilyMetric {
    MetricDecl decl;
    std::string_view label;
    LabelledField<Counts> series[N];
};

// A series of linecap_dropped_packets_total (metrics/snapshot.hpp): the `reason` label
// value and the field that counts it.
template <class Counts>
struct DropReason {
    std::string_view reason;
    uint64_t Counts::*field;
};

}  // namespace linecap
