// CaptureEngine: everything between the configuration and the running capture — EAL,
// mempools, ports, the writer, worker lcores — owned in one place so that teardown
// happens in the one safe order: stop lcores → stop ports → drain writer → close ports →
// free pools → rte_eal_cleanup.
//
// The control thread drives it (start, rotate, reload, stop) and reads its counters
// through view(); workers never see the engine, only their WorkerContext.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/counters.hpp"
#include "capture/policy.hpp"
#include "capture/tsc_clock.hpp"
#include "capture/worker.hpp"
#include "config/config.hpp"
#include "output/scrub.hpp"
#include "output/writer.hpp"
#include "store/index_service.hpp"
#include "util/result.hpp"

namespace linecap {

class Eal;
class Mempool;
class Port;

// One (port, queue) stream as the metrics side sees it.
struct StreamView {
    std::string port;
    uint16_t port_id = 0;
    uint16_t queue = 0;
    unsigned lcore = 0;
    const QueueCounters* capture = nullptr;   // rx / filtered / writer_full, by the worker
    const StreamCounters* output = nullptr;   // written / write errors, by the writer
};

struct PortView {
    std::string name;
    std::string device;
    uint16_t port_id = 0;
    unsigned rx_queues = 0;
};

struct WorkerView {
    unsigned lcore = 0;
    const LcoreCounters* counters = nullptr;
    const WorkerControl* control = nullptr;
};

class CaptureEngine {
public:
    // Initialises EAL and everything below it, launches the workers. On error, whatever
    // was built is torn down in order before returning.
    static Result<std::unique_ptr<CaptureEngine>> start(const Config& config);
    ~CaptureEngine();  // stop() if still running, then release DPDK resources
    CaptureEngine(const CaptureEngine&) = delete;
    CaptureEngine& operator=(const CaptureEngine&) = delete;

    // Stops the workers, writes and finalises everything queued, stops the ports.
    // Counters stay readable afterwards.
    void stop();

    // SIGHUP part 1: close and finalise the current files now (the workers mark the
    // boundary between bursts, so no packet is lost or split).
    void rotate_files();
    // SIGHUP part 2: swap in new filters/snap lengths. Every new program is compiled first;
    // if any fails nothing changes and the error is returned.
    Status reload_policies(const std::vector<PortConfig>& ports);

    // Re-anchors the TSC clock to CLOCK_REALTIME (control thread, about once a second).
    void tick_clock();

    // Test hook: make one worker's loop stall (watchdog tests).
    void stall_worker(size_t worker_index, uint64_t ns);

    bool all_workers_polling() const;
    const std::vector<StreamView>& streams() const { return stream_views_; }
    const std::vector<PortView>& ports() const { return port_views_; }
    const std::vector<WorkerView>& workers() const { return worker_views_; }
    const Writer& writer() const { return *writer_; }
    // The background indexer's counters; null when output.index is off.
    const store::IndexingCounters* indexing() const { return indexer_ ? &indexing_counters_ : nullptr; }
    // The background scrub's counters; null when output.scrub.enabled is off.
    const ScrubCounters* scrub() const { return scrubber_ ? &scrub_counters_ : nullptr; }
    const Config& config() const { return config_; }
    uint64_t tsc_hz() const { return tsc_hz_; }

private:
    explicit CaptureEngine(const Config& config);
    Status init();
    Status build_policies();
    Status build_writer();
    void start_indexer();
    void start_scrub();
    Status launch_workers();
    void wait_workers();

    Config config_;
    uint64_t tsc_hz_ = 0;
    std::unique_ptr<Eal> eal_;
    std::vector<std::unique_ptr<Mempool>> pools_;
    std::vector<std::unique_ptr<Port>> ports_;
    std::unique_ptr<Writer> writer_;
    store::IndexingCounters indexing_counters_;
    std::unique_ptr<store::IndexService> indexer_;  // after writer_: its hook calls the writer
    ScrubCounters scrub_counters_;
    std::unique_ptr<ScrubService> scrubber_;        // after writer_: its hook calls the writer
    std::unique_ptr<TscClock> clock_;

    // One policy slot per port; policies_ keeps every policy ever published alive until
    // the workers have provably moved past it (see reload_policies).
    std::vector<std::unique_ptr<PolicySlot>> policy_slots_;
    std::vector<std::unique_ptr<CapturePolicy>> policies_;

    std::unique_ptr<QueueCounters[]> queue_counters_;
    std::unique_ptr<LcoreCounters[]> lcore_counters_;
    std::unique_ptr<WorkerControl[]> worker_controls_;
    std::vector<std::unique_ptr<WorkerContext>> worker_contexts_;

    std::vector<StreamView> stream_views_;
    std::vector<PortView> port_views_;
    std::vector<WorkerView> worker_views_;
    bool workers_running_ = false;
    bool stopped_ = false;
};

}  // namespace linecap
