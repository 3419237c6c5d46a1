// What a port keeps of each packet: its filter and snap length. Built on the control
// thread (at start and on SIGHUP) and swapped into the workers through an atomic
// pointer that they load once per burst.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "filter/bpf_filter.hpp"

namespace linecap {

// The largest rx burst a worker takes (capture.burst_size): the size of its per-burst arrays.
inline constexpr uint16_t kMaxBurst = 512;

struct CapturePolicy {
    std::unique_ptr<BpfFilter> filter;  // null: keep every packet
    uint32_t snaplen = 262144;
};

using PolicySlot = std::atomic<const CapturePolicy*>;

}  // namespace linecap
