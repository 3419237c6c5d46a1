// How good the host's clock is, as the evidence records it (doc/timestamps.md): whether it
// is synchronised (the kernel's adjtimex status: STA_UNSYNC), its estimated and maximum
// error, and how often it was stepped. The control thread samples it once a second
// (control/clock_monitor.hpp) and publishes it here; the writer threads fold it into each
// file's span (ClockSpan: its manifest's "clock" object, its pcapng statistics comment) and
// the metrics read it. Never touched by the workers.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace linecap {

// Ordered from best to worst: a span's state is the worst it saw.
enum class ClockSync : uint8_t { synced, unknown, unsynchronised };

inline const char* to_string(ClockSync sync) {
    switch (sync) {
        case ClockSync::synced: return "synced";
        case ClockSync::unknown: return "unknown";
        case ClockSync::unsynchronised: return "unsynchronised";
    }
    return "unknown";
}

inline std::optional<ClockSync> parse_clock_sync(std::string_view text) {
    for (ClockSync s : {ClockSync::synced, ClockSync::unknown, ClockSync::unsynchronised})
        if (text == to_string(s)) return s;
    return std::nullopt;
}

struct ClockSample {
    ClockSync sync = ClockSync::unknown;
    uint64_t est_error_ns = 0;  // the kernel's estimated error (timex.esterror)
    uint64_t max_error_ns = 0;  // its maximum error (timex.maxerror)
};

// The latest sample and the steps counted so far; one writer (the control thread), any
// number of readers. Fields are read one by one: a reader may combine a sample with the
// one before it, which only matters within the second the state changes.
class ClockQualityBoard {
public:
    // `status_source`: where the samples come from ("adjtimex", or "test-file:PATH" for
    // the test double), recorded with every file so a test's state is never mistaken for
    // a real clock's.
    explicit ClockQualityBoard(std::string status_source) : status_source_(std::move(status_source)) {}

    void publish(const ClockSample& s) {
        est_error_ns_.store(s.est_error_ns, std::memory_order_relaxed);
        max_error_ns_.store(s.max_error_ns, std::memory_order_relaxed);
        sync_.store(static_cast<uint8_t>(s.sync), std::memory_order_release);
    }
    void count_step() { steps_.store(steps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

    ClockSample sample() const {
        ClockSample s;
        s.sync = static_cast<ClockSync>(sync_.load(std::memory_order_acquire));
        s.est_error_ns = est_error_ns_.load(std::memory_order_relaxed);
        s.max_error_ns = max_error_ns_.load(std::memory_order_relaxed);
        return s;
    }
    uint64_t steps() const { return steps_.load(std::memory_order_relaxed); }
    const std::string& status_source() const { return status_source_; }

private:
    const std::string status_source_;
    std::atomic<uint8_t> sync_{static_cast<uint8_t>(ClockSync::unknown)};
    std::atomic<uint64_t> est_error_ns_{0};
    std::atomic<uint64_t> max_error_ns_{0};
    std::atomic<uint64_t> steps_{0};
};

// The clock over one file's span: the worst state and errors sampled while the file was
// written, and the steps counted meanwhile.
struct ClockSpan {
    ClockSync worst = ClockSync::synced;
    uint64_t est_error_ns = 0;
    uint64_t max_error_ns = 0;
    uint64_t steps_at_start = 0;
    uint64_t steps = 0;

    void begin(const ClockQualityBoard& board) {
        *this = ClockSpan{};
        steps_at_start = board.steps();
        add(board);
    }
    void add(const ClockQualityBoard& board) {
        const ClockSample s = board.sample();
        worst = std::max(worst, s.sync);
        est_error_ns = std::max(est_error_ns, s.est_error_ns);
        max_error_ns = std::max(max_error_ns, s.max_error_ns);
        steps = board.steps() - steps_at_start;
    }
};

}  // namespace linecap
