// The control thread's loop (the main lcore): signals, clock anchoring, metrics
// collection, systemd readiness/watchdog/status, reload. Never on a capture core.
#pragma once

#include <functional>
#include <string>

#include "metrics/snapshot.hpp"
#include "util/result.hpp"

namespace linecap {

class CaptureEngine;
class SignalFd;
class SystemdNotifier;

struct ControlHooks {
    std::function<void()> collect_metrics;   // about once a second, and once at the end
    std::function<MetricsSnapshot()> snapshot;  // the last collection (status line)
    std::function<void()> sample_clock;      // the host clock's quality (ClockMonitor), once a second
};

// Runs until SIGINT/SIGTERM. SIGHUP re-reads config_path: new filters/snap lengths are
// swapped in (an invalid file keeps the old ones, with a logged error) and the current
// files are finalised (rotation on demand).
void run_control_loop(CaptureEngine& engine, SignalFd& signals, SystemdNotifier& notifier,
                      const std::string& config_path, const ControlHooks& hooks);

// Per-port summary (received, written, filtered, dropped by reason) at shutdown, from the
// final collection (after CaptureEngine::stop(), so exact).
void log_capture_summary(const MetricsSnapshot& snapshot);

}  // namespace linecap
