#include "capture/engine.hpp"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <map>
#include <thread>

#include "archive/recovery.hpp"
#include "capture/plan.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/mempool.hpp"
#include "dpdk/port.hpp"
#include "dpdk/rx_timestamp.hpp"
#include "util/utc_time.hpp"

namespace linecap {

namespace {

BlockMemory hugepage_block_memory() {
    return BlockMemory{
        [](size_t bytes, size_t align, int socket) { return rte_malloc_socket("linecap_block", bytes, align, socket); },
        [](void* p) { rte_free(p); },
    };
}

}  // namespace

CaptureEngine::CaptureEngine(const Config& config, FileFinishedHook file_finished,
                             const ClockQualityBoard* clock_quality, Writer::BlockWrittenHook block_written)
    : config_(config),
      file_finished_(std::move(file_finished)),
      block_written_(std::move(block_written)),
      clock_quality_(clock_quality) {}

Result<std::unique_ptr<CaptureEngine>> CaptureEngine::start(const Config& config, FileFinishedHook file_finished,
                                                            const ClockQualityBoard* clock_quality,
                                                            Writer::BlockWrittenHook block_written) {
    std::unique_ptr<CaptureEngine> engine(
        new CaptureEngine(config, std::move(file_finished), clock_quality, std::move(block_written)));
    Status status = engine->init();
    if (!status) return status.error();
    return engine;
}

namespace {

// The writer threads' CPUs and priority (output.writer_cpus, output.writer_priority):
// "workers" = the worker lcores' CPUs; "control" = as inherited from the control lcore.
ThreadPlacement writer_placement(const Config& config) {
    ThreadPlacement placement{{}, config.output.writer_priority};
    if (config.output.writer_cpus == WriterCpus::workers) placement.cpus = worker_cpus(config.eal);
    return placement;
}

}  // namespace

Status CaptureEngine::init() {
    // Before EAL: the plan with assumed device capabilities catches a bad lcore map before
    // anything is touched.
    std::vector<PortInfo> assumed;
    for (const PortConfig& pc : config_.ports) assumed.push_back(assumed_port_info(pc, -1));
    if (auto early = plan_capture(config_, assumed); !early) return early.error();

    auto eal = Eal::init(config_);
    if (!eal) return eal.error();
    eal_ = std::move(eal.value());
    tsc_hz_ = rte_get_tsc_hz();
    clock_ = std::make_unique<TscClock>(tsc_hz_, rte_rdtsc(), utc_now_ns());
    clock_started_ = std::chrono::steady_clock::now();

    // Every port first: the plan sizes the pools per NUMA socket from all of them, with
    // what the probed devices really offer.
    std::vector<PortInfo> infos;
    for (const PortConfig& pc : config_.ports) {
        auto info = find_port(pc);
        if (!info) return info.error().context("port " + pc.name);
        infos.push_back(info.value());
    }
    auto planned = plan_capture(config_, infos);
    if (!planned) return planned.error();
    CapturePlan& plan = planned.value();
    if (Status s = plan_timestamps(infos, plan); !s) return s;
    for (const std::string& adjustment : plan.adjustments) spdlog::warn("device limits: {}", adjustment);

    std::map<int, Mempool*> pool_by_socket;
    for (const auto& [socket, s] : plan.sockets) {
        auto pool = Mempool::create("linecap_mbuf_s" + std::to_string(socket), s.mbufs, config_.capture.mbuf_cache,
                                    s.mbuf_data_room, socket);
        if (!pool) return pool.error();
        spdlog::info("mempool socket {}: {} mbufs × {} bytes ({} MiB)", socket, s.mbufs, s.mbuf_data_room,
                     s.pool_bytes() >> 20);
        pool_by_socket[socket] = pool.value().get();
        pools_.push_back(std::move(pool.value()));
    }

    // Filters first: they need only EAL, and a program that fails to load must stop the
    // start before any port receives a packet.
    if (Status s = build_policies(); !s) return s;

    for (size_t p = 0; p < config_.ports.size(); ++p) {
        const PortConfig& pc = config_.ports[p];
        auto port = Port::open(pc, infos[p], plan.ports[p], pool_by_socket[infos[p].socket]->get(),
                               config_.capture.mbufs);
        if (!port) return port.error();
        port_views_.push_back(PortView{pc.name, pc.device, infos[p].port_id, pc.rx_queues, stamp_plans_[p].source,
                                       port.value()->xdp_sockets()});
        ports_.push_back(std::move(port.value()));
    }
    if (Status s = start_port_clocks(); !s) return s;

    if (Status s = build_writer(writer_placement(config_)); !s) return s;
    std::vector<int> port_sockets;
    for (const PortInfo& info : infos) port_sockets.push_back(info.socket);
    if (Status s = build_stream_tables(port_sockets); !s) return s;

    // Streams are numbered port-major: stream index of (p, q) = first[p] + q.
    std::vector<size_t> first_stream(config_.ports.size());
    for (size_t p = 1; p < config_.ports.size(); ++p) first_stream[p] = first_stream[p - 1] + config_.ports[p - 1].rx_queues;

    const size_t nworkers = plan.workers.size();
    lcore_counters_ = std::make_unique<LcoreCounters[]>(nworkers);
    worker_controls_ = std::make_unique<WorkerControl[]>(nworkers);
    for (size_t w = 0; w < nworkers; ++w) {
        const WorkerAssignment& a = plan.workers[w];
        auto ctx = std::make_unique<WorkerContext>();
        ctx->lcore = a.lcore;
        ctx->counters = &lcore_counters_[w];
        ctx->clock = clock_.get();
        ctx->control = &worker_controls_[w];
        ctx->tsc_hz = tsc_hz_;
        ctx->rotate_interval_ns = uint64_t(config_.output.rotate_interval_s) * 1000000000ull;
        ctx->flush_interval_tsc = tsc_hz_ * config_.output.flush_interval_ms / 1000;
        ctx->burst = static_cast<uint16_t>(config_.capture.burst_size);
        ctx->idle_sleep_us = config_.capture.idle_sleep_us;
        ctx->sleep_below = config_.capture.sleep_below;
        ctx->format = config_.output.format;
        const int lcore_socket = static_cast<int>(rte_lcore_to_socket_id(a.lcore));
        for (const QueueRef& ref : a.queues) {
            const size_t s = first_stream[ref.port_index] + ref.queue;
            WorkerQueue q;
            q.port_id = infos[ref.port_index].port_id;
            q.queue = static_cast<uint16_t>(ref.queue);
            q.stream = &writer_->stream(s);
            q.counters = &queue_counters_[s];
            q.policy = policy_slots_[ref.port_index].get();
            q.flow_cap = flow_caps_[s].get();
            q.dedup = dedups_[s].get();
            const RxTimestampPlan& stamps = stamp_plans_[ref.port_index];
            q.stamps = stamps.source;
            q.port_stamps = PortStamps{stamp_field_.offset, stamp_field_.flag, stamps.ns_per_unit,
                                       port_clocks_[ref.port_index].get()};
            ctx->queues.push_back(q);
            stream_views_[s].lcore = a.lcore;
            if (lcore_socket != infos[ref.port_index].socket) {
                spdlog::warn("worker lcore {} is on socket {} but port {} is on socket {}: every packet crosses "
                             "the socket interconnect; pick an lcore on socket {}",
                             a.lcore, lcore_socket, config_.ports[ref.port_index].name, infos[ref.port_index].socket,
                             infos[ref.port_index].socket);
            }
        }
        worker_views_.push_back(WorkerView{a.lcore, &lcore_counters_[w], &worker_controls_[w]});
        worker_contexts_.push_back(std::move(ctx));
    }
    calibrate_clocks();
    return launch_workers();
}

// capture.timestamps per port, after the probe: what each driver's rx timestamp means
// (dpdk/rx_timestamp.hpp); the ports ask for the offload where it is used.
Status CaptureEngine::plan_timestamps(const std::vector<PortInfo>& infos, CapturePlan& plan) {
    bool any_port_stamps = false;
    for (size_t p = 0; p < config_.ports.size(); ++p) {
        auto stamps = plan_rx_timestamps(config_.capture.timestamps, config_.ports[p].name, infos[p]);
        if (!stamps) return stamps.error();
        plan.ports[p].rx_timestamp = stamps->request_offload;
        any_port_stamps |= stamps->source != StampSource::tsc;
        stamp_plans_.push_back(stamps.value());
    }
    port_clocks_.resize(config_.ports.size());
    if (!any_port_stamps) return {};
    auto field = register_rx_timestamp_field();
    if (!field) return field.error().context("capture.timestamps");
    stamp_field_ = field.value();
    return {};
}

// A port stamping with its NIC clock needs that clock readable (rte_eth_read_clock) to map
// its ticks to UTC; without it, auto falls back to the TSC and port refuses.
Status CaptureEngine::start_port_clocks() {
    for (size_t p = 0; p < config_.ports.size(); ++p) {
        RxTimestampPlan& stamps = stamp_plans_[p];
        if (stamps.source == StampSource::port_clock) {
            auto ticks = read_port_clock(port_views_[p].port_id);
            if (!ticks) {
                const std::string why = "port " + config_.ports[p].name + ": its rx timestamps cannot be mapped to UTC: " +
                                        ticks.error().message;
                if (config_.capture.timestamps == TimestampMode::port) return config_error("capture.timestamps: port: " + why);
                spdlog::warn("{}; stamping with the TSC", why);
                stamps.source = StampSource::tsc;
                stamps.note = "TSC per burst (the NIC clock is not readable)";
                port_views_[p].stamps = StampSource::tsc;
            } else {
                // Nanosecond ticks until measured (ice, mlx5 and idpf stamp in ns).
                port_clocks_[p] = std::make_unique<TscClock>(1'000'000'000, ticks.value(), utc_now_ns());
            }
        }
        spdlog::info("port {}: timestamps {}", config_.ports[p].name, stamps.note);
    }
    return {};
}

Status CaptureEngine::build_policies() {
    for (const PortConfig& pc : config_.ports) {
        auto policy = std::make_unique<CapturePolicy>();
        policy->snaplen = pc.snaplen;
        if (!pc.filter.empty()) {
            auto filter = BpfFilter::compile(pc.filter, pc.snaplen);
            if (!filter) return filter.error().context("port " + pc.name);
            spdlog::info("port {}: filter '{}' ({})", pc.name, pc.filter, filter.value()->jitted() ? "JIT" : "interpreted");
            policy->filter = std::move(filter.value());
        }
        policy_slots_.push_back(std::make_unique<PolicySlot>(policy.get()));
        policies_.push_back(std::move(policy));
    }
    const FlowCapConfig& cap = config_.capture.flow_cap;
    if (cap.enabled && !cap.filter.empty()) {
        auto filter = BpfFilter::compile(cap.filter, kFlowCapFilterSnaplen);
        if (!filter) return filter.error().context("capture.flow_cap");
        spdlog::info("flow cap: filter '{}' ({})", cap.filter, filter.value()->jitted() ? "JIT" : "interpreted");
        flow_cap_filter_ = std::move(filter.value());
    }
    return {};
}

void CaptureEngine::RteFree::operator()(void* p) const { rte_free(p); }

// Every table is allocated here, before the workers start, on the NUMA socket of its port:
// the worker never allocates. The capture plan counted them in the hugepages it asks for.
Status CaptureEngine::build_stream_tables(const std::vector<int>& port_sockets) {
    const FlowCapConfig& cap = config_.capture.flow_cap;
    const DedupConfig& dedup = config_.capture.dedup;
    const auto allocate = [this](const char* what, uint64_t bytes, int socket) -> Result<void*> {
        void* memory = rte_zmalloc_socket(what, bytes, RTE_CACHE_LINE_SIZE, socket);
        if (memory == nullptr) {
            return runtime_error(std::string(what) + ": cannot allocate " + std::to_string(bytes) +
                                 " bytes of hugepage memory on socket " + std::to_string(socket) +
                                 " (linecapd --print-plan shows what the capture needs)");
        }
        table_memory_.emplace_back(memory);
        return memory;
    };
    FlowCapRule rule;
    rule.count_bytes = cap.bytes != 0;
    rule.limit = static_cast<uint32_t>(rule.count_bytes ? cap.bytes : cap.packets);
    rule.snaplen_after = cap.snaplen_after;
    rule.idle_ticks = FlowTable::ticks(cap.idle_timeout_s * 1'000'000'000ull);
    for (size_t p = 0; p < config_.ports.size(); ++p) {
        const PortConfig& pc = config_.ports[p];
        for (unsigned queue = 0; queue < pc.rx_queues; ++queue) {
            std::unique_ptr<FlowCapQueue> flow_cap;
            if (cap.applies_to(pc.name)) {
                auto memory = allocate("linecap_flow_table", flow_table_bytes(cap), port_sockets[p]);
                if (!memory) return memory.error();
                flow_cap = std::make_unique<FlowCapQueue>();
                flow_cap->table =
                    FlowTable({static_cast<FlowTable::Bucket*>(memory.value()), cap.flows / FlowTable::kWays});
                flow_cap->rule = rule;
                flow_cap->filter = flow_cap_filter_.get();
            }
            std::unique_ptr<DedupQueue> dedup_queue;
            if (dedup.applies_to(pc.name)) {
                auto memory = allocate("linecap_dedup_table", dedup_table_bytes(dedup), port_sockets[p]);
                if (!memory) return memory.error();
                dedup_queue = std::make_unique<DedupQueue>(memory.value(), dedup.entries, uint64_t{dedup.window_us} * 1000);
            }
            flow_caps_.push_back(std::move(flow_cap));
            dedups_.push_back(std::move(dedup_queue));
        }
        if (cap.applies_to(pc.name))
            spdlog::info("port {}: flow cap after {} {} per flow, then {}{}", pc.name, rule.limit,
                         rule.count_bytes ? "bytes" : "packets",
                         rule.snaplen_after ? std::to_string(rule.snaplen_after) + " bytes per packet" : "drop",
                         cap.filter.empty() ? "" : " (filter '" + cap.filter + "')");
        if (dedup.applies_to(pc.name))
            spdlog::info("port {}: duplicate suppression within {} us", pc.name, dedup.window_us);
    }
    return {};
}

Status CaptureEngine::build_writer(const ThreadPlacement& placement) {
    // A crash leaves hidden in-progress files; they become normal, valid files (with a
    // manifest marked "recovered") before new ones are written next to them.
    RecoveryOptions recovery;
    recovery.write_manifests = config_.output.manifest;
    for (const VolumeConfig& volume : config_.output.volume_list()) {
        auto recovered = recover_in_progress(volume.directory, recovery);
        if (!recovered) return recovered.error();
    }

    size_t streams = 0;
    for (const PortConfig& pc : config_.ports) streams += pc.rx_queues;
    // Before the writer: each stream's spec reads its worker counters (file statistics).
    queue_counters_ = std::make_unique<QueueCounters[]>(streams);

    std::vector<StreamSpec> specs;
    for (size_t p = 0; p < config_.ports.size(); ++p) {
        const PortConfig& pc = config_.ports[p];
        for (unsigned q = 0; q < pc.rx_queues; ++q) {
            StreamSpec spec;
            spec.id = StreamId{pc.name, port_views_[p].port_id, static_cast<uint16_t>(q)};
            spec.socket = ports_[p]->socket();
            spec.snaplen = pc.snaplen;
            spec.device = pc.device;
            const QueueCounters* counters = &queue_counters_[specs.size()];
            spec.capture_counts = [counters] {
                return CaptureCounts{counters->filtered_packets.get(),        counters->writer_full_packets.get(),
                                     counters->flow_cap_cut_packets.get(),    counters->flow_cap_dropped_packets.get(),
                                     counters->dedup_packets.get()};
            };
            const FlowCapConfig& cap = config_.capture.flow_cap;
            if (cap.applies_to(pc.name))
                spec.flow_cap = ManifestFlowCap{cap.bytes, cap.packets, cap.snaplen_after, cap.filter, 0, 0};
            if (config_.capture.dedup.applies_to(pc.name))
                spec.dedup = ManifestDedup{config_.capture.dedup.window_us, 0};
            spec.clock.source = source_name(stamp_plans_[p].source);
            spec.clock.port_clock = port_detail(stamp_plans_[p].source);
            spec.clock_quality = clock_quality_;
            specs.push_back(spec);
        }
    }
    auto writer = Writer::create(config_.output, specs, hugepage_block_memory());
    if (!writer) return writer.error();
    writer_ = std::move(writer.value());

    for (size_t s = 0; s < specs.size(); ++s) {
        stream_views_.push_back(StreamView{specs[s].id.port, specs[s].id.port_id, specs[s].id.queue, 0,
                                           &queue_counters_[s], &writer_->counters(s)});
    }
    if (file_finished_) writer_->on_file_finished(file_finished_);
    if (block_written_) writer_->on_block_written(block_written_);
    if (Status started = writer_->start(placement); !started) {
        return config_error("output.writer_cpus " + std::string(to_string(config_.output.writer_cpus)) +
                            ", output.writer_priority " + to_string(config_.output.writer_priority) + ": " +
                            started.error().message);
    }
    std::string directories;
    for (const VolumeConfig& volume : config_.output.volume_list())
        directories += (directories.empty() ? "" : ", ") + volume.directory;
    spdlog::info("output {}: {} streams × {} blocks of {} KiB, rotate at {} MiB / {} s, format {}; writer on the {} "
                 "CPUs {}, priority {}",
                 directories, specs.size(), config_.output.blocks_per_queue,
                 config_.output.block_size_kb, config_.output.rotate_size_bytes >> 20,
                 config_.output.rotate_interval_s, to_string(config_.output.format),
                 config_.output.writer_cpus == WriterCpus::workers ? "workers'" : "control lcore's",
                 placement.cpus.empty() ? "(as inherited)" : format_cpu_list(placement.cpus),
                 to_string(placement.priority));
    return {};
}

namespace {

struct PrioritySetting {
    ThreadPriority priority;
    Status applied;
};

// Runs on the lcore itself: policy and nice value belong to a thread, and EAL does not
// publish its lcore threads' ids.
int apply_priority_on_lcore(void* arg) {
    auto* setting = static_cast<PrioritySetting*>(arg);
    setting->applied = apply_to_this_thread(setting->priority);
    return setting->applied ? 0 : -1;
}

}  // namespace

Status CaptureEngine::launch_workers() {
    const ThreadPriority priority = config_.capture.worker_priority;
    for (auto& ctx : worker_contexts_) {
        PrioritySetting setting{priority, {}};
        int rc = rte_eal_remote_launch(apply_priority_on_lcore, &setting, ctx->lcore);
        if (rc == 0) rte_eal_wait_lcore(ctx->lcore);
        if (rc != 0) {
            return runtime_error("rte_eal_remote_launch on lcore " + std::to_string(ctx->lcore) + ": " +
                                 rte_strerror(-rc));
        }
        if (!setting.applied) {
            return config_error("capture.worker_priority " + to_string(priority) + ": worker lcore " +
                                std::to_string(ctx->lcore) + ": " + setting.applied.error().message);
        }
    }
    for (auto& ctx : worker_contexts_) {
        int rc = rte_eal_remote_launch(worker_main, ctx.get(), ctx->lcore);
        if (rc != 0) {
            return runtime_error("rte_eal_remote_launch on lcore " + std::to_string(ctx->lcore) + ": " +
                                 rte_strerror(-rc));
        }
        std::string queues;
        for (const auto& q : ctx->queues) {
            for (const auto& pv : port_views_) {
                if (pv.port_id != q.port_id) continue;
                if (!queues.empty()) queues += ", ";
                queues += pv.name;
            }
            queues += ":" + std::to_string(q.queue);
        }
        spdlog::info("worker lcore {} (socket {}) polls {}, priority {}, idle sleep {} us{}", ctx->lcore,
                     rte_lcore_to_socket_id(ctx->lcore), queues, to_string(priority), ctx->idle_sleep_us,
                     ctx->sleep_below > 1 ? " (also after fewer than " + std::to_string(ctx->sleep_below) + " packets)"
                                          : std::string());
    }
    workers_running_ = true;
    return {};
}

bool CaptureEngine::all_workers_polling() const {
    if (!workers_running_) return false;
    for (const auto& w : worker_views_) {
        if (!w.control->polling.load(std::memory_order_acquire)) return false;
    }
    return true;
}

void CaptureEngine::rotate_files() {
    // Only this (control) thread writes rotate_requests: load + store, no RMW needed.
    for (size_t w = 0; w < worker_views_.size(); ++w) {
        std::atomic<uint64_t>& requests = worker_controls_[w].rotate_requests;
        requests.store(requests.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
}

Status CaptureEngine::reload_policies(const std::vector<PortConfig>& ports) {
    if (ports.size() != config_.ports.size()) {
        return config_error("reload: the set of ports changed; restart the daemon to add or remove ports");
    }
    std::vector<std::unique_ptr<CapturePolicy>> fresh;
    for (size_t p = 0; p < ports.size(); ++p) {
        if (ports[p].name != config_.ports[p].name || ports[p].device != config_.ports[p].device) {
            return config_error("reload: port " + config_.ports[p].name +
                                " changed name or device; restart the daemon for that");
        }
        auto policy = std::make_unique<CapturePolicy>();
        policy->snaplen = ports[p].snaplen;
        if (!ports[p].filter.empty()) {
            auto filter = BpfFilter::compile(ports[p].filter, ports[p].snaplen);
            if (!filter) return filter.error().context("port " + ports[p].name);
            policy->filter = std::move(filter.value());
        }
        fresh.push_back(std::move(policy));
    }

    // Publish, then wait until every worker has published a new heartbeat: the burst that
    // might still have used an old policy has then finished, and the old ones can go.
    std::vector<std::unique_ptr<CapturePolicy>> retired;
    for (size_t p = 0; p < fresh.size(); ++p) {
        // The writer learns a larger snap length before any record cut to it can reach a
        // file, so no file ever holds a record longer than its header declares.
        for (size_t s = 0; s < stream_views_.size(); ++s) {
            if (stream_views_[s].port_id == port_views_[p].port_id) writer_->set_snaplen(s, ports[p].snaplen);
        }
        policy_slots_[p]->store(fresh[p].get(), std::memory_order_release);
        config_.ports[p].filter = ports[p].filter;
        config_.ports[p].snaplen = ports[p].snaplen;
        spdlog::info("port {}: filter now '{}', snaplen {}", ports[p].name, ports[p].filter, ports[p].snaplen);
    }
    for (auto& policy : policies_) retired.push_back(std::move(policy));
    policies_ = std::move(fresh);

    // Heartbeats read only now, after every store: a worker publishes `loops` at the end of
    // an iteration, so a value different from this one proves it finished the iteration
    // that may have loaded an old pointer, and every later iteration loads a new one.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::vector<uint64_t> seen;
    for (const auto& w : worker_views_) seen.push_back(w.counters->loops.get());

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    bool quiescent = false;
    while (!quiescent && std::chrono::steady_clock::now() < deadline) {
        quiescent = true;
        for (size_t w = 0; w < worker_views_.size(); ++w) {
            if (worker_views_[w].counters->loops.get() == seen[w]) quiescent = false;
        }
        if (!quiescent) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!quiescent) {
        // A stalled worker might still hold a pointer: keep the old policies alive.
        spdlog::warn("reload: a worker did not advance; keeping the previous filters in memory");
        for (auto& policy : retired) policies_.push_back(std::move(policy));
    }
    return {};
}

// The first packets are not stamped with DPDK's nominal TSC rate (rounded to 10 MHz, up
// to 0.2 % off): each clock's rate is measured over the set-up, for at least
// TscClock::kMinRateSpanNs, before a worker runs.
void CaptureEngine::calibrate_clocks() {
    std::this_thread::sleep_until(clock_started_ + std::chrono::nanoseconds(TscClock::kMinRateSpanNs + 1'000'000));
    clock_->calibrate(rte_rdtsc(), utc_now_ns());
    for (size_t p = 0; p < port_clocks_.size(); ++p) {
        if (!port_clocks_[p]) continue;
        if (auto ticks = read_port_clock(port_views_[p].port_id)) port_clocks_[p]->calibrate(ticks.value(), utc_now_ns());
    }
}

void CaptureEngine::tick_clock() {
    clock_->discipline(rte_rdtsc(), utc_now_ns());
    for (size_t p = 0; p < port_clocks_.size(); ++p) {
        TscClock* clock = port_clocks_[p].get();
        if (clock == nullptr) continue;
        auto ticks = read_port_clock(port_views_[p].port_id);
        if (!ticks) continue;  // keeps the last mapping; the clock runs on at its rate
        clock->discipline(ticks.value(), utc_now_ns());
    }
}

void CaptureEngine::wait_workers() {
    if (!workers_running_) return;
    for (size_t w = 0; w < worker_views_.size(); ++w) worker_controls_[w].stop.store(true, std::memory_order_relaxed);
    rte_eal_mp_wait_lcore();
    workers_running_ = false;
}

void CaptureEngine::stop() {
    if (stopped_) return;
    stopped_ = true;
    wait_workers();
    for (auto& port : ports_) port->stop();
    if (writer_) writer_->stop();
}

CaptureEngine::~CaptureEngine() {
    stop();
    ports_.clear();
    flow_caps_.clear();
    dedups_.clear();
    table_memory_.clear();
    flow_cap_filter_.reset();
    writer_.reset();
    policies_.clear();
    pools_.clear();
    eal_.reset();
}

}  // namespace linecap
