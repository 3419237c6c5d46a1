// The host clock's quality, sampled on the control thread once a second and published on
// a ClockQualityBoard (util/clock_quality.hpp) for the writer (each file's manifest and
// pcapng statistics) and the metrics (linecap_clock_*):
//
//   sync and errors  adjtimex(2) read-only: STA_UNSYNC (or TIME_ERROR) = unsynchronised,
//                    esterror and maxerror (µs). ntpd, chronyd and phc2sys keep these up
//                    to date while they discipline the clock; nothing else is asked.
//   steps            CLOCK_REALTIME - CLOCK_MONOTONIC changing by more than kStepNs between
//                    two samples: a slew moves both clocks alike, a step (settimeofday,
//                    chronyc makestep, ntpd -g) moves only CLOCK_REALTIME.
//
// The test double: LINECAP_TEST_CLOCK_STATUS=FILE makes the daemon read the state from
// FILE instead of adjtimex (parse_clock_status below), so a test can show an unsynchronised
// clock without touching the machine's. It is chosen once at start, logged as a warning,
// and every file and metric it touches names it (status_source "test-file:FILE"), so its
// state is never taken for a real clock's. Steps are always the real clocks'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/clock_quality.hpp"
#include "util/result.hpp"

namespace linecap {

inline constexpr int64_t kStepNs = 1'000'000;

// adjtimex's answer → a sample (pure).
ClockSample clock_sample_from_timex(int state, int status, long esterror_us, long maxerror_us);

// The test double's file: lines "KEY VALUE" with keys sync (synced | unsynchronised |
// unknown), est_error_ns, max_error_ns; "#" starts a comment. Errors name the line.
Result<ClockSample> parse_clock_status(std::string_view text);

// Whether CLOCK_REALTIME - CLOCK_MONOTONIC moved from `before` to `now` by a step.
inline bool is_clock_step(int64_t before, int64_t now) {
    const int64_t moved = now - before;
    return moved > kStepNs || moved < -kStepNs;
}

class ClockMonitor {
public:
    // adjtimex, or the test double when LINECAP_TEST_CLOCK_STATUS names a file.
    static ClockMonitor from_environment();

    ClockQualityBoard& board() { return board_; }
    // Control thread, about once a second.
    void sample();

private:
    explicit ClockMonitor(std::string test_file);
    ClockSample read_status();

    const std::string test_file_;  // "": adjtimex
    ClockQualityBoard board_;
    std::optional<int64_t> last_offset_ns_;
    bool status_error_logged_ = false;
};

}  // namespace linecap
