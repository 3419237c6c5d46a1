#include "control/control_loop.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/engine.hpp"
#include "config/config.hpp"
#include "control/sd_notify.hpp"
#include "control/signals.hpp"

namespace linecap {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxWaitMs = 50;

// The watchdog is fed only while every worker's heartbeat moves: a wedged lcore then
// makes systemd restart the daemon instead of it silently capturing nothing.
class WatchdogFeeder {
public:
    WatchdogFeeder(const CaptureEngine& engine, SystemdNotifier& notifier) : engine_(engine), notifier_(notifier) {
        if (notifier_.watchdog_usec() == 0) return;
        interval_ = std::chrono::microseconds(notifier_.watchdog_usec() / 2);
        // The first check one interval from now: at once, no worker could have moved yet,
        // and that first ping would be withheld for nothing (a gap of a whole interval
        // more, past WATCHDOG_USEC on a loaded machine).
        next_ = Clock::now() + interval_;
        last_ = heartbeats();
    }

    // When tick() next has work: the control loop wakes for it instead of finding it
    // late, so pings stay interval_ apart rather than interval_ plus the loop's wait.
    Clock::time_point next_due() const { return interval_.count() == 0 ? Clock::time_point::max() : next_; }

    void tick() {
        const Clock::time_point now = Clock::now();
        if (interval_.count() == 0 || now < next_) return;
        // A fixed schedule, not now + interval: a late wake-up must not push every later
        // ping back too. After a long stall (a suspended VM) start afresh from now.
        next_ += interval_;
        if (next_ <= now) next_ = now + interval_;
        std::vector<uint64_t> beats = heartbeats();
        bool all_advanced = true;
        for (size_t i = 0; i < beats.size(); ++i) {
            if (beats[i] == last_[i]) {
                all_advanced = false;
                if (!stalled_logged_) spdlog::error("worker lcore {} heartbeat stopped: withholding watchdog",
                                                    engine_.workers()[i].lcore);
                stalled_logged_ = true;
            }
        }
        last_ = std::move(beats);
        if (all_advanced) {
            notifier_.watchdog();
            stalled_logged_ = false;
        }
    }

private:
    std::vector<uint64_t> heartbeats() const {
        std::vector<uint64_t> v;
        for (const auto& w : engine_.workers()) v.push_back(w.counters->loops.get());
        return v;
    }

    const CaptureEngine& engine_;
    SystemdNotifier& notifier_;
    std::chrono::microseconds interval_{0};
    Clock::time_point next_;
    std::vector<uint64_t> last_;
    bool stalled_logged_ = false;
};

// The status line's numbers, from the metrics snapshot (the same drop accounting as
// /metrics and the shutdown summary).
struct Totals {
    uint64_t rx = 0, written = 0, written_bytes = 0, dropped = 0;
};

Totals totals(const MetricsSnapshot& snapshot) {
    Totals t;
    for (const StreamSample& s : snapshot.streams) {
        t.rx += s.capture.rx_packets;
        t.written += s.output.written_packets;
        t.written_bytes += s.output.written_bytes;
    }
    t.dropped = dropped_packets(snapshot);
    return t;
}

void reload(CaptureEngine& engine, SystemdNotifier& notifier, const std::string& config_path) {
    notifier.reloading();
    spdlog::info("SIGHUP: reloading filters from {}, rotating files, probing failed volumes", config_path);
    auto config = load_config(config_path);
    if (!config) {
        spdlog::error("reload rejected, keeping the running configuration: {}", config.error().message);
    } else if (Status s = engine.reload_policies(config->ports); !s) {
        spdlog::error("reload rejected, keeping the running filters: {}", s.error().message);
    }
    engine.rotate_files();
    engine.probe_failed_volumes();  // a failed volume fixed by hand comes back now
    notifier.ready();
}

}  // namespace

void run_control_loop(CaptureEngine& engine, SignalFd& signals, SystemdNotifier& notifier,
                      const std::string& config_path, const ControlHooks& hooks) {
    WatchdogFeeder watchdog(engine, notifier);
    bool ready_sent = false;
    auto next_second = Clock::now() + std::chrono::seconds(1);
    Totals previous = hooks.snapshot ? totals(hooks.snapshot()) : Totals{};

    for (;;) {
        // Wake for whichever comes first: a signal, the next watchdog ping, the next
        // status second, or 50 ms (the readiness check below polls the workers).
        const auto until_due = std::min(watchdog.next_due(), next_second) - Clock::now();
        const auto wait_ms = std::clamp<int64_t>(
            std::chrono::ceil<std::chrono::milliseconds>(until_due).count(), 0, kMaxWaitMs);
        if (auto sig = signals.wait(static_cast<int>(wait_ms))) {
            if (*sig == SIGINT || *sig == SIGTERM) {
                spdlog::info("{}: stopping capture", *sig == SIGINT ? "SIGINT" : "SIGTERM");
                break;
            }
            if (*sig == SIGHUP) reload(engine, notifier, config_path);
        }
        if (!ready_sent && engine.all_workers_polling()) {
            notifier.ready();
            ready_sent = true;
            spdlog::info("capture running: all workers polling");
        }
        watchdog.tick();
        if (Clock::now() >= next_second) {
            next_second += std::chrono::seconds(1);
            engine.tick_clock();
            if (hooks.sample_clock) hooks.sample_clock();
            if (hooks.collect_metrics) hooks.collect_metrics();
            const Totals now = hooks.snapshot ? totals(hooks.snapshot()) : Totals{};
            notifier.status(fmt::format("{} pkt/s received, {} pkt/s written ({:.1f} Mbit/s), {} dropped in total",
                                        now.rx - previous.rx, now.written - previous.written,
                                        (now.written_bytes - previous.written_bytes) * 8 / 1e6, now.dropped));
            previous = now;
        }
    }
    notifier.stopping();
}

void log_capture_summary(const MetricsSnapshot& snapshot) {
    for (const PortSample& port : snapshot.ports) {
        const PortTotals t = port_totals(snapshot, port);
        std::string by_reason;
        for (const auto& [reason, n] : t.drops) by_reason += fmt::format(" {}={}", reason, n);
        // Policies that keep packets out after the filter, only when they did (the line's
        // beginning is what scripts read).
        std::string policies;
        if (t.flow_capped != 0 || t.deduplicated != 0)
            policies = fmt::format("; also not written by policy: flow_cap={} dedup={}", t.flow_capped, t.deduplicated);
        spdlog::info("port {}: {} packets reached the port, {} written, {} filtered, dropped:{}{}", port.name,
                     received_packets(port.counters), t.written, t.filtered, by_reason, policies);
    }
    // The feed's losses are its consumers' own, never capture drops: a line of their own.
    if (const auto& feed = snapshot.feed) {
        uint64_t sent = 0, dropped = 0;
        for (const FeedAddressCounts& a : feed->addresses) {
            sent += a.counts.sent_packets;
            dropped += a.counts.dropped_packets;
        }
        spdlog::info("feed: {} connections ({} refused), {} packets sent, {} dropped from slow consumers' feeds",
                     feed->connections.accepted, feed->connections.refused, sent, dropped);
    }
}

}  // namespace linecap
