// CaptureEngine: everything between the configuration and the running capture — EAL,
// mempools, ports, the writer, worker lcores — owned in one place so that teardown
// happens in the one safe order: stop lcores → stop ports → drain writer → close ports →
// free pools → rte_eal_cleanup.
//
// The control thread drives it (start, rotate, reload, stop) and reads its counters
// through view(); workers never see the engine, only their WorkerContext.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture/counters.hpp"
#include "capture/policy.hpp"
#include "capture/tsc_clock.hpp"
#include "capture/views.hpp"
#include "capture/worker.hpp"
#include "config/config.hpp"
#include "output/writer.hpp"
#include "util/result.hpp"

namespace linecap {

class Eal;
class Mempool;
class Port;
struct PortInfo;
struct CapturePlan;

class CaptureEngine {
public:
    // Called on a writer thread with the volume and the name (in the volume's directory)
    // of every file the writer finished; main wires the volume's pipeline to it.
    using FileFinishedHook = Writer::FileFinishedHook;

    // Initialises EAL and everything below it, launches the workers. On error, whatever
    // was built is torn down in order before returning. The hook is in place before the
    // writer starts, so that no finished file is missed.
    // `clock_quality` (may be null: "unknown"): the host clock's state, folded into each
    // file's manifest and pcapng statistics; it must outlive the engine.
    // `block_written` (may be empty): given every block the writer has written, on a writer
    // thread (Writer::on_block_written); main wires the live feed to it.
    static Result<std::unique_ptr<CaptureEngine>> start(const Config& config, FileFinishedHook file_finished = {},
                                                        const ClockQualityBoard* clock_quality = nullptr,
                                                        Writer::BlockWrittenHook block_written = {});
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

    // Disciplines the TSC clock and the ports' NIC clocks to CLOCK_REALTIME (control
    // thread, about once a second).
    void tick_clock();

    bool all_workers_polling() const;
    const std::vector<StreamView>& streams() const { return stream_views_; }
    const std::vector<PortView>& ports() const { return port_views_; }
    const std::vector<WorkerView>& workers() const { return worker_views_; }
    const Writer& writer() const { return *writer_; }
    // A sidecar (an index) of the finished file `name` on `volume` was written: retention
    // counts it. Any thread.
    void sidecar_changed(size_t volume, const std::string& name) { writer_->sidecar_changed(volume, name); }
    // SIGHUP: failed capture volumes are probed now (Writer::probe_failed_volumes).
    void probe_failed_volumes() { writer_->probe_failed_volumes(); }
    const Config& config() const { return config_; }
    uint64_t tsc_hz() const { return tsc_hz_; }
    const ClockQualityBoard* clock_quality() const { return clock_quality_; }

private:
    CaptureEngine(const Config& config, FileFinishedHook file_finished, const ClockQualityBoard* clock_quality,
                  Writer::BlockWrittenHook block_written);
    Status init();
    Status build_policies();
    Status build_writer(const ThreadPlacement& placement);
    Status build_stream_tables(const std::vector<int>& port_sockets);
    Status launch_workers();
    void wait_workers();

    Config config_;
    FileFinishedHook file_finished_;
    Writer::BlockWrittenHook block_written_;
    const ClockQualityBoard* const clock_quality_;
    uint64_t tsc_hz_ = 0;
    std::chrono::steady_clock::time_point clock_started_;
    std::unique_ptr<Eal> eal_;
    std::vector<std::unique_ptr<Mempool>> pools_;
    std::vector<std::unique_ptr<Port>> ports_;
    std::unique_ptr<Writer> writer_;
    std::unique_ptr<TscClock> clock_;
    // Per port: where its stamps come from, and for a NIC clock its mapping to UTC with
    // the last (ticks, realtime) anchor, from which the clock's rate is measured.
    std::vector<RxTimestampPlan> stamp_plans_;
    std::vector<std::unique_ptr<TscClock>> port_clocks_;  // per port; null: stamped with the TSC
    RxTimestampField stamp_field_;
    Status plan_timestamps(const std::vector<PortInfo>& infos, CapturePlan& plan);
    Status start_port_clocks();
    void calibrate_clocks();

    // One policy slot per port; policies_ keeps every policy ever published alive until
    // the workers have provably moved past it (see reload_policies).
    std::vector<std::unique_ptr<PolicySlot>> policy_slots_;
    std::vector<std::unique_ptr<CapturePolicy>> policies_;

    // capture.flow_cap and capture.dedup: per stream (null where off), their tables in
    // hugepages allocated once here, and the cap's filter shared by every stream.
    struct RteFree {
        void operator()(void* p) const;
    };
    std::unique_ptr<BpfFilter> flow_cap_filter_;
    std::vector<std::unique_ptr<void, RteFree>> table_memory_;
    std::vector<std::unique_ptr<FlowCapQueue>> flow_caps_;
    std::vector<std::unique_ptr<DedupQueue>> dedups_;

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
