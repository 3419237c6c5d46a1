// Follows a source counter that may restart from zero (some PMDs clear their stats when
// a port is stopped and started again) and presents a total that never decreases, as a
// Prometheus counter must: a drop in the source is taken as a reset, and everything the
// source counts after it is added on top.
#pragma once

#include <cstdint>

namespace linecap {

class MonotonicCounter {
public:
    uint64_t observe(uint64_t source) {
        total_ += source >= last_ ? source - last_ : source;
        last_ = source;
        return total_;
    }
    uint64_t total() const { return total_; }

private:
    uint64_t last_ = 0;
    uint64_t total_ = 0;
};

}  // namespace linecap
