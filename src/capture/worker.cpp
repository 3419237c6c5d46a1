#include "capture/worker.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "capture/record_copy.hpp"

namespace linecap {

namespace {

// Housekeeping (flush timers, rotation boundaries, heartbeat-dependent work) runs at most
// this often; it is the only per-iteration cost besides the polls themselves.
constexpr uint64_t kHousekeepingPerSecond = 1000;

// Hands the queue's current block (if any) to the writer.
inline void hand_off(WorkerQueue& q) {
    if (q.block == nullptr) return;
    // The full ring holds every block of the stream, so this push cannot fail.
    q.stream->full_blocks.push(q.block);
    q.block = nullptr;
}

// A block from the writer's free ring, or nullptr when it has none. From here the worker
// writes into it again: what it held is gone, also for dedup.
inline WriteBlock* take_free_block(WorkerQueue& q) {
    WriteBlock* block = q.stream->free_blocks.pop();
    if (block != nullptr && q.dedup != nullptr) q.dedup->block_taken(*block);
    return block;
}

// Delivers a pending rotation mark: on the current block, or on an empty one.
inline void deliver_rotation(WorkerQueue& q) {
    if (q.block == nullptr) {
        q.block = take_free_block(q);
        if (q.block == nullptr) return;  // writer busy: retry at the next housekeeping
    }
    q.block->rotate_after = true;
    hand_off(q);
    q.rotation_pending = false;
}

// Ends the queue's current file: its current block (or an empty one) carries the mark,
// and its next block starts a new file. A queue with neither keeps the mark pending: its
// packets are dropped until the writer frees a block to carry it, so no packet ever lands
// in a file before its mark.
inline void rotate(WorkerQueue& q) {
    q.rotation_pending = true;
    deliver_rotation(q);
}

// Exact rotation: the stream reached its boundary at `ts_ns` (a packet stamped at or after
// it, or the host clock with no packet); the next file takes the following interval, and
// no later stamp of the stream goes below the boundary it crossed.
inline void rotate_at(WorkerQueue& q, uint64_t ts_ns, uint64_t interval_ns) {
    q.last_ts_ns = std::max(q.last_ts_ns, ts_ns / interval_ns * interval_ns);
    q.next_boundary_ns = next_rotation_boundary(ts_ns, interval_ns);
    rotate(q);
}

// A block with room for `need` bytes, or nullptr when the writer has none free.
inline WriteBlock* block_with_room(WorkerQueue& q, uint32_t need) {
    if (likely(q.block != nullptr && q.block->room() >= need)) return q.block;
    hand_off(q);
    if (unlikely(q.rotation_pending)) {
        deliver_rotation(q);
        if (q.rotation_pending) return nullptr;
    }
    q.block = take_free_block(q);
    return q.block;
}

// One burst (or the part of one within a file), stamped `ts` (BurstTime or PacketTimes).
template <FileKind F, class Times>
inline void capture_burst(WorkerQueue& q, rte_mbuf** pkts, uint16_t n, uint64_t now_tsc, Times ts) {
    const CapturePolicy* policy = q.policy->load(std::memory_order_acquire);

    uint64_t keep_mask[kMaxBurst];
    uint64_t* keep = nullptr;  // null: every packet is kept (see kept_snaplen)
    if (policy->filter) {
        policy->filter->run(pkts, n, keep_mask);
        keep = keep_mask;
    }
    // The policies after the filter, each lowering keep[i]: copies first, so that they do
    // not count against their flow's allowance.
    uint32_t not_written_by_policies = 0;
    if (unlikely(q.dedup != nullptr || q.flow_cap != nullptr)) {
        if (keep == nullptr) {
            for (uint16_t i = 0; i < n; ++i) keep_mask[i] = policy->snaplen;
            keep = keep_mask;
        }
        uint64_t scratch[kMaxBurst];
        if (q.dedup != nullptr) {
            const DedupOutcome d = apply_dedup(*q.dedup, pkts, n, keep, ts, scratch);
            if (d.suppressed != 0) {
                q.counters->dedup_packets.add(d.suppressed);
                q.counters->dedup_saved_bytes.add(d.saved_bytes);
                not_written_by_policies += d.suppressed;
            }
        }
        if (q.flow_cap != nullptr) {
            const FlowCapOutcome c = apply_flow_cap(*q.flow_cap, pkts, n, keep, ts, scratch);
            if (c.cut != 0) q.counters->flow_cap_cut_packets.add(c.cut);
            if (c.dropped != 0) q.counters->flow_cap_dropped_packets.add(c.dropped);
            if (c.saved_bytes != 0) q.counters->flow_cap_saved_bytes.add(c.saved_bytes);
            if (c.evicted != 0) q.counters->flow_cap_evicted_flows.add(c.evicted);
            not_written_by_policies += c.dropped;
        }
    }

    const BurstSize size = measure_burst<F>(pkts, n, keep, policy->snaplen);
    uint32_t dropped = 0;
    WriteBlock* const current = q.block;
    bool dedup_recorded = true;  // dedup's recorder saw every packet (not when nothing was appended)
    if (likely(current != nullptr && current->room() >= size.record_bytes)) {
        // Fast path: the whole burst fits the current block (every burst but the one
        // that fills a block).
        if (size.kept != 0) {
            if (current->packets == 0) current->first_tsc = now_tsc;
            if (q.dedup != nullptr)
                append_burst<F>(*current, pkts, n, keep, policy->snaplen, ts, size, q.dedup->recorder(ts, current));
            else
                append_burst<F>(*current, pkts, n, keep, policy->snaplen, ts, size);
        } else {
            dedup_recorded = false;
        }
    } else {
        // The burst that fills a block: packet by packet, into this block and the next.
        for (uint16_t i = 0; i < n; ++i) {
            const rte_mbuf* m = pkts[i];
            if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
            WriteBlock* block = nullptr;
            const uint8_t* bytes = nullptr;
            uint32_t caplen = 0;
            if (keep == nullptr || keep[i] != 0) {
                caplen = record_caplen(m, kept_snaplen(keep, i, policy->snaplen));
                block = block_with_room(q, record_bytes<F>(caplen));
                if (likely(block != nullptr)) {
                    if (block->packets == 0) {
                        block->first_ts_ns = ts[i];
                        block->first_tsc = now_tsc;
                    }
                    block->last_ts_ns = ts[i];
                    bytes = block->tail() + record_data_offset<F>;
                    append_record<F>(*block, m, caplen, ts[i]);
                } else {
                    ++dropped;
                }
            }
            if (q.dedup != nullptr) q.dedup->recorder(ts, block)(i, bytes, caplen, m);
        }
    }
    if (q.dedup != nullptr) end_dedup_burst(*q.dedup, dedup_recorded);  // before the mbufs go
    rte_pktmbuf_free_bulk(pkts, n);

    q.counters->rx_packets.add(n);
    q.counters->rx_bytes.add(size.wire_bytes);
    if (size.kept + not_written_by_policies != n)
        q.counters->filtered_packets.add(n - size.kept - not_written_by_policies);
    if (dropped) q.counters->writer_full_packets.add(dropped);
}

// A burst stamped per packet: split where it crosses the stream's rotation boundary, so
// every packet lands in the file of its own interval.
template <FileKind F>
inline void capture_stamped_burst(WorkerQueue& q, rte_mbuf** pkts, uint16_t n, uint64_t now_tsc, uint64_t burst_ns,
                                  uint64_t interval_ns) {
    uint64_t ts[kMaxBurst];
    const StampOutcome stamped = stamp_packets(q.port_stamps, pkts, n, burst_ns, q.last_ts_ns, ts);
    if (unlikely(stamped.clamped != 0)) q.counters->clock_clamped_packets.add(stamped.clamped);
    if (unlikely(stamped.unstamped != 0)) q.counters->clock_unstamped_packets.add(stamped.unstamped);
    if (unlikely(q.boundary_from_first_packet)) {
        q.boundary_from_first_packet = false;
        if (interval_ns != 0) q.next_boundary_ns = next_rotation_boundary(ts[0], interval_ns);
    }
    uint16_t done = 0;
    while (unlikely(ts[n - 1] >= q.next_boundary_ns)) {
        uint16_t k = done;
        while (ts[k] < q.next_boundary_ns) ++k;
        if (k > done) capture_burst<F>(q, pkts + done, static_cast<uint16_t>(k - done), now_tsc, PacketTimes{ts + done});
        rotate_at(q, ts[k], interval_ns);
        done = k;
    }
    capture_burst<F>(q, pkts + done, static_cast<uint16_t>(n - done), now_tsc, PacketTimes{ts + done});
}

// The poll loop, compiled once per file format so the record encoding is inlined.
template <FileKind F>
int worker_loop(WorkerContext& w) {
    WorkerControl& control = *w.control;
    const uint16_t burst = std::min<uint16_t>(w.burst, kMaxBurst);
    const uint64_t housekeeping_tsc = w.tsc_hz / kHousekeepingPerSecond;
    const uint64_t sleep_below = std::min<uint64_t>(w.sleep_below, burst);

    uint64_t rotate_seen = control.rotate_requests.load(std::memory_order_relaxed);
    uint64_t start_tsc = rte_rdtsc();
    const uint64_t interval_ns = w.rotate_interval_ns;
    const uint64_t start_ns = w.clock->to_ns(start_tsc);
    for (WorkerQueue& q : w.queues) {
        q.last_ts_ns = q.on_host_time() ? start_ns : 0;
        q.boundary_from_first_packet = !q.on_host_time();
        q.next_boundary_ns = interval_ns && q.on_host_time() ? next_rotation_boundary(start_ns, interval_ns) : UINT64_MAX;
    }
    uint64_t next_housekeeping = start_tsc + housekeeping_tsc;
    uint64_t prev_tsc = start_tsc;
    // The longest gap between two polls, published once a second (max_poll_gap_ns).
    uint64_t max_gap = 0;
    uint64_t gap_second_end = start_tsc + w.tsc_hz;
    bool prev_busy = false;
    uint64_t loops = 0, busy_loops = 0, busy_cycles = 0, packets = 0;

    control.polling.store(true, std::memory_order_release);
    rte_mbuf* pkts[kMaxBurst];

    while (likely(!control.stop.load(std::memory_order_relaxed))) {
        const uint64_t now = rte_rdtsc();
        if (prev_busy) busy_cycles += now - prev_tsc;
        if (unlikely(now - prev_tsc > max_gap)) max_gap = now - prev_tsc;
        prev_tsc = now;
        prev_busy = false;
        uint64_t ts_ns = 0;
        const uint64_t packets_before = packets;

        for (WorkerQueue& q : w.queues) {
            const uint16_t n = rte_eth_rx_burst(q.port_id, q.queue, pkts, burst);
            if (n == 0) continue;
            if (!prev_busy) ts_ns = w.clock->to_ns(now);  // one clock read per iteration
            prev_busy = true;
            packets += n;
            if (likely(q.stamps == StampSource::tsc)) {
                // Exact rotation: a burst stamped at or after the boundary belongs to the
                // next file, so the file ends here, before it is appended.
                if (unlikely(ts_ns >= q.next_boundary_ns)) rotate_at(q, ts_ns, interval_ns);
                capture_burst<F>(q, pkts, n, now, BurstTime{ts_ns});
            } else {
                capture_stamped_burst<F>(q, pkts, n, now, ts_ns, interval_ns);
            }
        }
        ++loops;
        busy_loops += prev_busy;
        // Idle path only: nothing arrived on any queue (or, with capture.sleep_below, fewer
        // packets than that). A real-time worker that never sleeps is throttled by the
        // kernel for whole tens of milliseconds each second (sched_rt_runtime_us) and
        // starves the kernel threads of its CPU; sleeping while the rings are (nearly)
        // empty avoids both and costs at most one sleep of latency, far less than the rx
        // ring holds. A trickle of packets would keep a worker from ever sleeping when
        // only an empty loop counts: sleep_below lets it leave its CPU to the writer.
        if (packets - packets_before < sleep_below && w.idle_sleep_us != 0) rte_delay_us_sleep(w.idle_sleep_us);

        if (unlikely(now >= next_housekeeping)) {
            next_housekeeping = now + housekeeping_tsc;
            // Counters are published here rather than per iteration: one store each per
            // millisecond keeps the loop's cache footprint to its own lines.
            w.counters->loops.set(loops);
            w.counters->busy_loops.set(busy_loops);
            w.counters->busy_cycles.set(busy_cycles);
            w.counters->total_cycles.set(now - start_tsc);
            w.counters->packets.set(packets);
            if (now >= gap_second_end) {
                // In double: cycles × 10^9 overflows 64 bits for gaps of a few seconds,
                // the stalls this gauge is for.
                w.counters->max_poll_gap_ns.set(
                    static_cast<uint64_t>(static_cast<double>(max_gap) * 1e9 / static_cast<double>(w.tsc_hz)));
                max_gap = 0;
                gap_second_end = now + w.tsc_hz;
            }

            // Without traffic a file on the host's time still ends at its boundary (and
            // every file on request, SIGHUP); no packet of a later iteration is stamped
            // earlier than now_ns (a NIC clock's stamp that would be is raised to the
            // boundary and counted).
            const uint64_t now_ns = w.clock->to_ns(now);
            const uint64_t requests = control.rotate_requests.load(std::memory_order_relaxed);
            const bool requested = requests != rotate_seen;
            rotate_seen = requests;
            for (WorkerQueue& q : w.queues) {
                if (q.on_host_time() && now_ns >= q.next_boundary_ns)
                    rotate_at(q, now_ns, interval_ns);
                else if (requested)
                    rotate(q);
            }
            for (WorkerQueue& q : w.queues) {
                if (q.rotation_pending) {
                    deliver_rotation(q);
                } else if (q.block != nullptr && q.block->packets != 0 &&
                           now - q.block->first_tsc >= w.flush_interval_tsc) {
                    hand_off(q);
                }
            }
        }
    }

    // Stopping: everything captured so far goes to the writer, which finalises the files.
    for (WorkerQueue& q : w.queues) hand_off(q);
    w.counters->loops.set(loops);
    w.counters->busy_loops.set(busy_loops);
    w.counters->busy_cycles.set(busy_cycles);
    w.counters->total_cycles.set(rte_rdtsc() - start_tsc);
    w.counters->packets.set(packets);
    control.polling.store(false, std::memory_order_release);
    return 0;
}

}  // namespace

int worker_main(void* arg) {
    WorkerContext& w = *static_cast<WorkerContext*>(arg);
    return w.format == FileKind::pcapng ? worker_loop<FileKind::pcapng>(w) : worker_loop<FileKind::pcap>(w);
}

}  // namespace linecap
