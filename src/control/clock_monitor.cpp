#include "control/clock_monitor.hpp"

#include <sys/timex.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "util/errno_text.hpp"

namespace linecap {
namespace {

int64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t us_to_ns(long us) { return us > 0 ? static_cast<uint64_t>(us) * 1000 : 0; }

}  // namespace

ClockSample clock_sample_from_timex(int state, int status, long esterror_us, long maxerror_us) {
    ClockSample s;
    if (state < 0) return s;  // unknown
    s.sync = state == TIME_ERROR || (status & STA_UNSYNC) != 0 ? ClockSync::unsynchronised : ClockSync::synced;
    s.est_error_ns = us_to_ns(esterror_us);
    s.max_error_ns = us_to_ns(maxerror_us);
    return s;
}

Result<ClockSample> parse_clock_status(std::string_view text) {
    ClockSample s;
    bool have_sync = false;
    std::istringstream lines{std::string(text)};
    std::string line;
    for (unsigned n = 1; std::getline(lines, line); ++n) {
        if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string key, value, extra;
        if (!(words >> key)) continue;
        const auto bad = [&](const std::string& why) { return config_error("line " + std::to_string(n) + ": " + why); };
        if (!(words >> value) || (words >> extra)) return bad("expected KEY VALUE");
        if (key == "sync") {
            const auto sync = parse_clock_sync(value);
            if (!sync) return bad("sync must be synced, unsynchronised or unknown, not '" + value + "'");
            s.sync = *sync;
            have_sync = true;
        } else if (key == "est_error_ns" || key == "max_error_ns") {
            uint64_t v = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc{} || end != value.data() + value.size()) return bad(key + " must be a number of ns");
            (key == "est_error_ns" ? s.est_error_ns : s.max_error_ns) = v;
        } else {
            return bad("unknown key '" + key + "' (sync, est_error_ns, max_error_ns)");
        }
    }
    if (!have_sync) return config_error("no 'sync' line");
    return s;
}

ClockMonitor::ClockMonitor(std::string test_file)
    : test_file_(std::move(test_file)), board_(test_file_.empty() ? "adjtimex" : "test-file:" + test_file_) {}

ClockMonitor ClockMonitor::from_environment() {
    const char* file = std::getenv("LINECAP_TEST_CLOCK_STATUS");
    if (file == nullptr || *file == '\0') return ClockMonitor("");
    spdlog::warn("LINECAP_TEST_CLOCK_STATUS: the host clock's sync state is read from the test file {}, not the "
                 "kernel; every file and metric says so (status_source test-file:{})",
                 file, file);
    return ClockMonitor(file);
}

ClockSample ClockMonitor::read_status() {
    if (test_file_.empty()) {
        timex tx{};  // modes 0: read only, no privilege needed
        const int state = adjtimex(&tx);
        if (state < 0 && !status_error_logged_) {
            spdlog::warn("adjtimex: {}: the host clock's sync state is unknown", errno_text(errno));
            status_error_logged_ = true;
        }
        return clock_sample_from_timex(state, tx.status, tx.esterror, tx.maxerror);
    }
    std::ifstream in(test_file_);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = in ? parse_clock_status(text.str()) : Result<ClockSample>(runtime_error("cannot read it"));
    if (!parsed) {
        if (!status_error_logged_) spdlog::warn("LINECAP_TEST_CLOCK_STATUS {}: {}", test_file_, parsed.error().message);
        status_error_logged_ = true;
        return ClockSample{};
    }
    status_error_logged_ = false;
    return parsed.value();
}

void ClockMonitor::sample() {
    board_.publish(read_status());
    const int64_t offset = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
    if (last_offset_ns_ && is_clock_step(*last_offset_ns_, offset)) {
        board_.count_step();
        spdlog::warn("the host clock was stepped by {:+.6f} s (CLOCK_REALTIME against CLOCK_MONOTONIC); files "
                     "written meanwhile count it in their manifest's clock.steps",
                     static_cast<double>(offset - *last_offset_ns_) / 1e9);
    }
    last_offset_ns_ = offset;
}

}  // namespace linecap
