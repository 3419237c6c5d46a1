// Micro benchmarks of the per-packet pieces of the capture hot path (Google Benchmark):
// record header encoding, appending a record to a write block, a whole burst as the worker
// handles it (prefetch + append, no rx), duplicate suppression and per-flow caps on vs off,
// filter execution (JIT and interpreter), TSC → UTC nanoseconds, per-packet port timestamps
// vs one TSC stamp per burst, and plain memcpy into a block (the memory-bandwidth floor).
//
//   linecap_micro [--benchmark_filter=REGEX] [--benchmark_format=json] ...
//
// Rates are per packet ("items_per_second") and per byte of record ("bytes_per_second");
// each run also reports cycles per packet measured with the TSC ("tsc_per_item").
#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <concepts>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "capture/dedup.hpp"
#include "capture/flow_cap.hpp"
// bench/policy_cost.sh builds this file against earlier trees too: the port timestamp
// benchmark only where the tree has them.
#if __has_include("capture/packet_stamps.hpp")
#include "capture/packet_stamps.hpp"
#define LINECAP_BENCH_PORT_STAMPS 1
#endif
#include "capture/record_copy.hpp"
#include "capture/tsc_clock.hpp"
#include "filter/bpf_filter.hpp"
#include "format/pcap_format.hpp"

namespace linecap {
namespace {

constexpr size_t kBlockBytes = 1 << 20;  // the default write block
constexpr unsigned kBurst = 64;

struct AlignedFree {
    void operator()(void* p) const { std::free(p); }
};
using BlockMem = std::unique_ptr<uint8_t, AlignedFree>;
BlockMem block_memory(size_t bytes) {
    void* p = std::aligned_alloc(4096, bytes);
    std::memset(p, 0, bytes);  // fault it in: the daemon's blocks are hugepage memory, never faulted
    return BlockMem(static_cast<uint8_t*>(p));
}

// A minimal UDP/IPv4 frame of `size` bytes (the filter benchmarks look into it).
std::vector<uint8_t> udp_frame(size_t size, uint16_t dport) {
    std::vector<uint8_t> f(std::max<size_t>(size, 60), 0);
    const uint8_t hdr[] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00,  // eth
                           0x45, 0, 0, 0, 0, 1, 0, 0, 64, 17, 0, 0,                // ipv4
                           198, 18, 0, 1, 198, 19, 0, 1,                          // src, dst
                           0x30, 0x39, 0, 0, 0, 0, 0, 0};                          // udp
    std::memcpy(f.data(), hdr, sizeof hdr);
    f[36] = uint8_t(dport >> 8);
    f[37] = uint8_t(dport);
    const uint16_t ip_len = uint16_t(f.size() - 14);
    f[16] = uint8_t(ip_len >> 8);
    f[17] = uint8_t(ip_len);
    return f;
}

// Fake single-segment mbufs over plain memory (what copy and JIT read: buf_addr, buf_len,
// data_off, data_len, pkt_len, next). Laid out 2 KiB apart like a mempool's, so a burst
// touches as many distinct lines as a real one.
struct FakeBurst {
    std::vector<rte_mbuf> mbufs;
    BlockMem data;
    std::vector<rte_mbuf*> ptrs;
    FakeBurst(size_t n, size_t size) : FakeBurst(n, [size](size_t) { return size; }) {}
    // size_of(i): the size of frame i.
    template <std::invocable<size_t> SizeOf>
    FakeBurst(size_t n, SizeOf size_of) : mbufs(n), data(block_memory(n * 2048)), ptrs(n) {
        for (size_t i = 0; i < n; ++i) {
            std::memset(&mbufs[i], 0, sizeof(rte_mbuf));
            const auto frame = udp_frame(size_of(i), uint16_t(i % 2 ? 53 : 443));
            uint8_t* buf = data.get() + i * 2048;
            std::memcpy(buf + RTE_PKTMBUF_HEADROOM, frame.data(), std::min<size_t>(frame.size(), 2048 - RTE_PKTMBUF_HEADROOM));
            mbufs[i].buf_addr = buf;
            mbufs[i].buf_len = 2048;
            mbufs[i].data_off = RTE_PKTMBUF_HEADROOM;
            mbufs[i].data_len = uint16_t(frame.size());
            mbufs[i].pkt_len = uint32_t(frame.size());
            mbufs[i].nb_segs = 1;
            mbufs[i].next = nullptr;
            ptrs[i] = &mbufs[i];
        }
    }
};

void set_tsc_per_item(benchmark::State& state, uint64_t tsc_start, uint64_t items) {
    const uint64_t cycles = rte_rdtsc() - tsc_start;
    state.counters["tsc_per_item"] = items ? double(cycles) / double(items) : 0.0;
}

// TSC cycles, packets and record bytes per second of a benchmark over `size`-byte frames.
void set_record_rates(benchmark::State& state, uint64_t tsc_start, uint64_t items, size_t size) {
    set_tsc_per_item(state, tsc_start, items);
    state.SetItemsProcessed(int64_t(items));
    state.SetBytesProcessed(int64_t(items * pcap::record_size(uint32_t(size))));
}

// --- record encoding ----------------------------------------------------------------------

void BM_EncodeRecordHeader(benchmark::State& state) {
    alignas(64) uint8_t buf[64 * 16];
    uint64_t ts = 1'700'000'000'123'456'789ull;
    unsigned i = 0;
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        pcap::encode_record_header(buf + (i & 63) * 16, ts, 60, 60);
        ts += 67;
        ++i;
        benchmark::ClobberMemory();
        ++items;
    }
    set_tsc_per_item(state, t0, items);
    state.SetItemsProcessed(int64_t(items));
}
BENCHMARK(BM_EncodeRecordHeader);

// --- one record into a block (header + data copy), block recycled when full ----------------

void BM_AppendRecord(benchmark::State& state) {
    const size_t size = size_t(state.range(0));
    FakeBurst burst(kBurst, size);
    BlockMem mem = block_memory(kBlockBytes);
    WriteBlock block;
    block.data = mem.get();
    block.capacity = kBlockBytes;
    uint64_t ts = 1'700'000'000'000'000'000ull;
    unsigned i = 0;
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        const rte_mbuf* m = burst.ptrs[i++ % kBurst];
        const uint32_t caplen = record_caplen(m, 262144);
        if (block.room() < pcap::record_size(caplen)) block.reset();
        append_record(block, m, caplen, ts);
        ++items;
    }
    benchmark::DoNotOptimize(block.used);
    set_record_rates(state, t0, items, size);
}
BENCHMARK(BM_AppendRecord)->Arg(64)->Arg(128)->Arg(512)->Arg(1024)->Arg(1514);

// --- a burst as the worker handles it after rx: prefetch next, caplen, room check, append ----
// Block size cycles through a window larger than L2 so stores miss as they do in the daemon
// (32 blocks x 1 MiB per queue); range(1) = bytes of block memory cycled through.

// A write block that moves on through `window` bytes of block memory each time it fills.
struct CycledBlock {
    explicit CycledBlock(size_t window) : mem(block_memory(window)), count(window / kBlockBytes) { next(); }
    void next() {
        block.data = mem.get() + index * kBlockBytes;
        block.capacity = kBlockBytes;
        block.reset();
        index = (index + 1) % count;
    }
    BlockMem mem;
    size_t count;
    size_t index = 0;
    WriteBlock block;
};

void BM_CaptureBurst(benchmark::State& state) {
    const size_t size = size_t(state.range(0));
    FakeBurst burst(kBurst, size);
    CycledBlock cycled(size_t(state.range(1)) << 20);
    WriteBlock& block = cycled.block;
    uint64_t ts = 1'700'000'000'000'000'000ull;
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        rte_mbuf** pkts = burst.ptrs.data();
        for (unsigned i = 0; i < kBurst; ++i) {
            const rte_mbuf* m = pkts[i];
            if (i + 1 < kBurst) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
            const uint32_t caplen = record_caplen(m, 262144);
            if (unlikely(block.room() < pcap::record_size(caplen))) cycled.next();
            if (block.packets == 0) block.first_ts_ns = ts;
            block.last_ts_ns = ts;
            append_record(block, m, caplen, ts);
        }
        ts += 1000;
        items += kBurst;
    }
    benchmark::DoNotOptimize(block.used);
    set_record_rates(state, t0, items, size);
}
BENCHMARK(BM_CaptureBurst)->Args({64, 1})->Args({64, 32})->Args({1514, 32})->Args({64, 256});

// The same burst through the worker's fast path (measure_burst + append_burst): one room
// check, one timestamp split and one bookkeeping update per burst.
void BM_AppendBurst(benchmark::State& state) {
    const size_t size = size_t(state.range(0));
    FakeBurst burst(kBurst, size);
    CycledBlock cycled(size_t(state.range(1)) << 20);
    WriteBlock& block = cycled.block;
    uint64_t ts = 1'700'000'000'000'000'000ull;
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        rte_mbuf** pkts = burst.ptrs.data();
        const BurstSize s = measure_burst<FileKind::pcap>(pkts, kBurst, nullptr, 262144);
        if (unlikely(block.room() < s.record_bytes)) cycled.next();
        if (block.packets == 0) block.first_ts_ns = ts;
        append_burst<FileKind::pcap>(block, pkts, kBurst, nullptr, 262144, ts, s);
        ts += 1000;
        items += kBurst;
    }
    benchmark::DoNotOptimize(block.used);
    set_record_rates(state, t0, items, size);
}
BENCHMARK(BM_AppendBurst)->Args({64, 1})->Args({64, 32})->Args({1514, 32})->Args({64, 256});

// --- memcpy into a block: the floor the record copy sits on -------------------------------

void BM_MemcpyIntoBlocks(benchmark::State& state) {
    const size_t chunk = size_t(state.range(0));
    const size_t window = size_t(256) << 20;
    BlockMem src = block_memory(kBlockBytes);
    BlockMem dst = block_memory(window);
    size_t off = 0;
    for (auto _ : state) {
        std::memcpy(dst.get() + off, src.get() + (off % kBlockBytes), chunk);
        off += chunk;
        if (off + chunk > window) off = 0;
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(chunk));
}
BENCHMARK(BM_MemcpyIntoBlocks)->Arg(80)->Arg(4096)->Arg(1 << 20);

// --- filter execution, per packet, on a burst ------------------------------------------------

std::unique_ptr<BpfFilter> g_filter;
bool g_eal = false;

void BM_Filter(benchmark::State& state) {
    if (!g_filter) {
        state.SkipWithError("no filter (EAL or rte_bpf unavailable)");
        return;
    }
    const bool jit = state.range(0) != 0;
    if (jit && !g_filter->jitted()) {
        state.SkipWithError("rte_bpf has no JIT here");
        return;
    }
    FakeBurst burst(kBurst, 64);
    uint64_t keep[kBurst];
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        if (jit)
            g_filter->run(burst.ptrs.data(), kBurst, keep);
        else
            g_filter->run_interpreted(burst.ptrs.data(), kBurst, keep);
        benchmark::DoNotOptimize(keep);
        items += kBurst;
    }
    set_tsc_per_item(state, t0, items);
    state.SetItemsProcessed(int64_t(items));
    state.SetLabel(jit ? "JIT" : "interpreter");
}
BENCHMARK(BM_Filter)->Arg(1)->Arg(0);

// --- capture policies: duplicate suppression and per-flow caps, on vs off ------------------
//
// The worker's per-burst work after rx (no filter), four ways: off = measure_burst +
// append_burst; dedup, flow cap, both = the same after apply_dedup and/or apply_flow_cap,
// as capture_burst runs them (each way with its own tables). Each burst is timed with the
// TSC and each way's median reported, and the policies' rows as the difference from and
// the ratio to the off row of the same run: the machine these run on is shared, absolute
// numbers move with its load, same-run differences much less. The ways take turns of
// kStretch bursts: a worker runs one of them, so its tables alone share the caches with
// its blocks (when the four ran on every burst, each way's table misses were largely the
// other ways' doing: the flow cap of e95cf9d with its table full cost +43 to +47 cycles
// per packet that way, +29 to +34 in turns), and a turn lasts about a millisecond, short
// beside the machine's drifts in speed.
// Each packet goes one way or the other at random (a queue sees both directions of its
// flows interleaved: symmetric RSS). Frames are unique (a counter in the payload: dedup
// finds no copy) and the allowance is never reached (nothing is cut): what is measured is
// the price of looking, which every packet pays. With copies, every other frame is the one
// before with another TTL (a SPAN port's duplicate): dedup compares and does not write it,
// off writes both. The tables are in (transparent) huge pages, as the daemon's are in
// hugepages. Only apply_dedup / apply_flow_cap and their tables are used, so this file
// also builds against older trees' headers (bench/policy_cost.sh: before/after in one
// run), back to 6c5924c.
// args: traffic (frame sizes as the mbuf holds them, without the FCS the NIC strips: 0: 60
// bytes, the smallest frame, 64 on the wire; 1: IMIX-like 7:4:1 of 60, 590 and 1514 bytes,
// mean 358; 2: 1514 bytes), flows (distinct client addresses cycled through, each seen
// once per `flows` packets, in a table of 65536 entries: 2 stay in cache, 32768 fill half
// of it (the sizing config/linecap.yaml advises), 65536 all of it: about one flow in five
// finds its bucket full and is evicted each time it comes back), copies (1: every other
// frame a copy).

// Memory in huge pages where the kernel gives them (THP), zeroed.
template <typename T>
struct HugeArray {
    explicit HugeArray(size_t n) : count(n) {
        const size_t huge = size_t(2) << 20;
        const size_t bytes = (n * sizeof(T) + huge - 1) / huge * huge;
        mem.reset(static_cast<uint8_t*>(std::aligned_alloc(huge, bytes)));
        ::madvise(mem.get(), bytes, MADV_HUGEPAGE);
        std::memset(mem.get(), 0, bytes);
    }
    std::span<T> span() const { return {reinterpret_cast<T*>(mem.get()), count}; }
    BlockMem mem;
    size_t count;
};

// A policy table's memory as the code under test lays it out: bench/policy_cost.sh builds
// this file against earlier revisions too (16-byte entries, before the buckets were laid
// out by field).
template <class Table>
auto table_memory(size_t entries) {
    if constexpr (requires { typename Table::Bucket; })
        return HugeArray<typename Table::Bucket>(entries / Table::kWays);
    else
        return HugeArray<typename Table::Entry>(entries);
}

// Dedup as the tree under test builds it: since the originals are compared in the write
// block, a queue over one piece of memory (table and records) whose burst's records are
// noted after the append; before, a table alone (bench/policy_cost.sh --baseline).
template <class Queue>
constexpr bool kDedupHasRecords = requires { Queue::memory_bytes(1u); };

template <class Queue>
auto dedup_memory(uint32_t entries) {
    if constexpr (kDedupHasRecords<Queue>)
        return HugeArray<uint8_t>(Queue::memory_bytes(entries));
    else
        return table_memory<DedupTable>(entries);
}

template <class Queue, class Memory>
Queue make_dedup(Memory& memory, uint32_t entries, uint64_t window_ns) {
    if constexpr (kDedupHasRecords<Queue>)
        return Queue(memory.span().data(), entries, window_ns);
    else
        return Queue{DedupTable(memory.span()), window_ns};
}

// The append as the worker makes it for a queue with dedup (its records, then the burst's
// end), and the block taken again (the same block memory cycles through every way).
template <class Queue>
void append_with_dedup(WriteBlock& block, rte_mbuf* const* pkts, const uint64_t* keep, uint64_t ts, const BurstSize& s,
                       Queue& dedup) {
    if constexpr (kDedupHasRecords<Queue>) {
        append_burst<FileKind::pcap>(block, pkts, kBurst, keep, 262144, ts, s, dedup.recorder(ts, &block));
        end_dedup_burst(dedup, true);
    } else {
        append_burst<FileKind::pcap>(block, pkts, kBurst, keep, 262144, ts, s);
    }
}

template <class Queue>
void block_taken(Queue& dedup, WriteBlock& block) {
    if constexpr (kDedupHasRecords<Queue>) dedup.block_taken(block);
}

// The median of bursts' TSC cycles, per packet: a burst during which the thread was
// preempted (the machine is shared) counts the other thread's time; the median ignores
// those few.
double median_per_packet(std::vector<uint32_t>& cycles) {
    if (cycles.empty()) return 0.0;
    std::nth_element(cycles.begin(), cycles.begin() + cycles.size() / 2, cycles.end());
    return double(cycles[cycles.size() / 2]) / kBurst;
}

double load_average() {
    double load = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = 0;
        std::fclose(f);
    }
    return load;
}

void BM_CapturePolicies(benchmark::State& state) {
    const int traffic = int(state.range(0));
    const uint32_t flows = uint32_t(state.range(1));
    const bool copies = state.range(2) != 0;
    static constexpr size_t kImix[12] = {60, 590, 60, 60, 1514, 60, 590, 60, 60, 590, 60, 590};
    FakeBurst burst(kBurst, [&](size_t i) {
        return traffic == 0 ? 60 : traffic == 2 ? 1514 : kImix[(copies ? i / 2 : i) % 12];
    });
    CycledBlock cycled(32u << 20);
    WriteBlock& block = cycled.block;

    enum Mode { kOff, kDedup, kCap, kBoth, kModes };
    constexpr uint64_t kStretch = 256;  // bursts in a row one way
    struct Tables {
        decltype(dedup_memory<DedupQueue>(0)) dedup_memory = ::linecap::dedup_memory<DedupQueue>(16384);
        decltype(table_memory<FlowTable>(0)) flow_memory = table_memory<FlowTable>(65536);
        DedupQueue dedup = make_dedup<DedupQueue>(dedup_memory, 16384, 1'000'000);
        FlowCapQueue cap;
        Tables() {
            cap.table = FlowTable(flow_memory.span());
            cap.rule = FlowCapRule{UINT32_MAX - 1, true, 128, FlowTable::ticks(60'000'000'000ull)};
        }
    };
    std::vector<std::unique_ptr<Tables>> tables;
    for (int w = 0; w < kModes; ++w) tables.push_back(std::make_unique<Tables>());

    uint64_t ts = 1'700'000'000'000'000'000ull;
    uint64_t items = 0, seq = 0, iteration = 0;
    std::minstd_rand direction(1);
    std::vector<uint32_t> cycles[kModes];  // per burst
    uint64_t keep[kBurst], scratch[kBurst];
    // dedup: the queue of a way with dedup on (its records written, and forgotten when the
    // block cycles, as the worker does).
    const auto append = [&](const uint64_t* k, DedupQueue* dedup = nullptr) {
        rte_mbuf** pkts = burst.ptrs.data();
        const BurstSize s = measure_burst<FileKind::pcap>(pkts, kBurst, k, 262144);
        if (unlikely(block.room() < s.record_bytes)) {
            cycled.next();
            if (dedup != nullptr) block_taken(*dedup, block);
        }
        if (block.packets == 0) block.first_ts_ns = ts;
        if (dedup != nullptr)
            append_with_dedup(block, pkts, k, ts, s, *dedup);
        else
            append_burst<FileKind::pcap>(block, pkts, kBurst, k, 262144, ts, s);
    };
    const double load_before = load_average();
    for (auto _ : state) {
        for (unsigned i = 0; i < kBurst; ++i) {
            uint8_t* f = rte_pktmbuf_mtod(burst.ptrs[i], uint8_t*);
            if (copies && i % 2 == 1) {
                std::memcpy(f, rte_pktmbuf_mtod(burst.ptrs[i - 1], const uint8_t*), burst.ptrs[i]->data_len);
                f[14 + 8] -= 1;  // one router further
                continue;
            }
            // The flow's client end, then its direction: the ends (address and port) swapped
            // for about every other packet, at random.
            const uint32_t client = 0xc6120000u + uint32_t(seq % flows);
            const uint16_t service = i % 2 ? 53 : 443;
            const uint8_t ends[2][6] = {
                {uint8_t(client >> 24), uint8_t(client >> 16), uint8_t(client >> 8), uint8_t(client), 0x30, 0x39},
                {198, 19, 0, 1, uint8_t(service >> 8), uint8_t(service)}};
            const bool reply = direction() & 1;
            std::memcpy(f + 26, ends[reply], 4);
            std::memcpy(f + 30, ends[!reply], 4);
            std::memcpy(f + 34, ends[reply] + 4, 2);
            std::memcpy(f + 36, ends[!reply] + 4, 2);
            std::memcpy(f + 42, &seq, sizeof seq);
            ++seq;
        }
        const int mode = int(iteration / kStretch % kModes);
        Tables& t = *tables[mode];
        const uint64_t t0 = rte_rdtsc();
        if (mode == kOff) {
            append(nullptr);
        } else {
            for (unsigned i = 0; i < kBurst; ++i) keep[i] = 262144;
            if (mode != kCap) benchmark::DoNotOptimize(apply_dedup(t.dedup, burst.ptrs.data(), kBurst, keep, ts, scratch));
            if (mode != kDedup) benchmark::DoNotOptimize(apply_flow_cap(t.cap, burst.ptrs.data(), kBurst, keep, ts, scratch));
            append(keep, mode == kCap ? nullptr : &t.dedup);
        }
        cycles[mode].push_back(uint32_t(std::min<uint64_t>(rte_rdtsc() - t0, UINT32_MAX)));
        ++iteration;
        ts += 1000;
        items += kBurst;
    }
    benchmark::DoNotOptimize(block.used);
    const double off = median_per_packet(cycles[kOff]);
    state.counters["off"] = off;
    const char* names[kModes] = {"off", "dedup", "cap", "both"};
    for (int w = kDedup; w < kModes; ++w) {
        const double on = median_per_packet(cycles[w]);
        state.counters[names[w]] = on;
        state.counters[std::string(names[w]) + "_delta"] = on - off;
        state.counters[std::string(names[w]) + "_ratio"] = off > 0 ? on / off : 0;
    }
    state.counters["load1"] = (load_before + load_average()) / 2;
    state.SetItemsProcessed(int64_t(items));
    state.SetLabel(std::string(traffic == 0 ? "60 B" : traffic == 2 ? "1514 B" : "IMIX") + ", " +
                   std::to_string(flows) + " flows" + (copies ? ", every other a copy" : "") +
                   "; cycles/packet, delta and ratio vs off");
}
BENCHMARK(BM_CapturePolicies)
    ->ArgNames({"traffic", "flows", "copies"})
    ->Args({0, 2, 0})
    ->Args({0, 32768, 0})
    ->Args({0, 65536, 0})
    ->Args({1, 2, 0})
    ->Args({1, 32768, 0})
    ->Args({1, 65536, 0})
    ->Args({2, 32768, 0})
    ->Args({2, 65536, 0})
    ->Args({1, 32768, 1})
    ->Args({2, 32768, 1});

// --- timestamps ----------------------------------------------------------------------------

void BM_TscToNs(benchmark::State& state) {
    const uint64_t hz = rte_get_tsc_hz() ? rte_get_tsc_hz() : 2'000'000'000ull;
    TscClock clock(hz, rte_rdtsc(), 1'700'000'000'000'000'000ull);
    uint64_t tsc = rte_rdtsc();
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        benchmark::DoNotOptimize(clock.to_ns(tsc));
        tsc += 977;
        ++items;
    }
    set_tsc_per_item(state, t0, items);
    state.SetItemsProcessed(int64_t(items));
}
BENCHMARK(BM_TscToNs);

void BM_Rdtsc(benchmark::State& state) {
    uint64_t items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        benchmark::DoNotOptimize(rte_rdtsc());
        ++items;
    }
    set_tsc_per_item(state, t0, items);
    state.SetItemsProcessed(int64_t(items));
}
BENCHMARK(BM_Rdtsc);

// Per-packet vs per-burst timestamping: what the worker saves by reading the clock once.
void BM_TimestampPerPacket(benchmark::State& state) {
    const uint64_t hz = rte_get_tsc_hz() ? rte_get_tsc_hz() : 2'000'000'000ull;
    TscClock clock(hz, rte_rdtsc(), 1'700'000'000'000'000'000ull);
    const bool per_packet = state.range(0) != 0;
    uint64_t sink = 0, items = 0;
    const uint64_t t0 = rte_rdtsc();
    for (auto _ : state) {
        uint64_t ts = clock.to_ns(rte_rdtsc());
        for (unsigned i = 0; i < kBurst; ++i) {
            if (per_packet) ts = clock.to_ns(rte_rdtsc());
            sink += ts;
        }
        items += kBurst;
    }
    benchmark::DoNotOptimize(sink);
    set_tsc_per_item(state, t0, items);
    state.SetItemsProcessed(int64_t(items));
    state.SetLabel(per_packet ? "rdtsc+convert per packet" : "once per burst of 64");
}
BENCHMARK(BM_TimestampPerPacket)->Arg(0)->Arg(1);

#ifdef LINECAP_BENCH_PORT_STAMPS
// The worker's burst (measure_burst + append_burst) stamped three ways, same run, in turns
// of kStretch bursts as BM_CapturePolicies takes them: tsc = one stamp per burst
// (BurstTime); replayed = each packet's rx timestamp field in µs (net_pcap), read by
// stamp_packets as the worker does and passed as PacketTimes (every record then splits its
// own time); nic = the field in NIC clock ticks through the clock's mapping. The mbufs'
// fields are set outside the timed part, as a PMD writes them. Medians per burst, in TSC
// cycles per packet; the port ways also as the difference from tsc.
void BM_PortTimestamps(benchmark::State& state) {
    const size_t size = size_t(state.range(0));
    FakeBurst burst(kBurst, size);
    CycledBlock cycled(32u << 20);
    WriteBlock& block = cycled.block;
    const TscClock nic_clock(1'000'000'000ull, 5'000'000'000ull, 1'700'000'000'000'000'000ull);  // ns ticks
    constexpr uint64_t kFlag = uint64_t{1} << 40;  // as rte_mbuf_dyn_rx_timestamp_register hands out
    const int offset = int(offsetof(rte_mbuf, dynfield1));
    enum Mode { kTsc, kReplayed, kNic, kModes };
    const PortStamps ports[kModes] = {{}, {offset, kFlag, 1000, nullptr}, {offset, kFlag, 1, &nic_clock}};
    constexpr uint64_t kStretch = 256;
    std::vector<uint32_t> cycles[kModes];
    uint64_t last[kModes] = {};
    uint64_t ts = 1'700'000'000'000'000'000ull, field_us = ts / 1000, ticks = 5'000'000'000ull;
    uint64_t items = 0, iteration = 0;
    uint64_t stamps[kBurst];
    for (auto _ : state) {
        const int mode = int(iteration / kStretch % kModes);
        for (unsigned i = 0; i < kBurst; ++i) {
            rte_mbuf* m = burst.ptrs[i];
            m->ol_flags = mode == kTsc ? 0 : kFlag;
            *RTE_MBUF_DYNFIELD(m, offset, uint64_t*) = mode == kNic ? ticks + i * 67 : field_us + i;
        }
        rte_mbuf** pkts = burst.ptrs.data();
        const uint64_t t0 = rte_rdtsc();
        const BurstSize s = measure_burst<FileKind::pcap>(pkts, kBurst, nullptr, 262144);
        if (unlikely(block.room() < s.record_bytes)) cycled.next();
        if (mode == kTsc) {
            append_burst<FileKind::pcap>(block, pkts, kBurst, nullptr, 262144, BurstTime{ts}, s);
        } else {
            benchmark::DoNotOptimize(stamp_packets(ports[mode], pkts, kBurst, ts, last[mode], stamps));
            append_burst<FileKind::pcap>(block, pkts, kBurst, nullptr, 262144, PacketTimes{stamps}, s);
        }
        cycles[mode].push_back(uint32_t(std::min<uint64_t>(rte_rdtsc() - t0, UINT32_MAX)));
        ++iteration;
        ts += 64'000;
        field_us += 64;
        ticks += 64 * 67;
        items += kBurst;
    }
    benchmark::DoNotOptimize(block.used);
    const double tsc = median_per_packet(cycles[kTsc]);
    const double replayed = median_per_packet(cycles[kReplayed]);
    const double nic = median_per_packet(cycles[kNic]);
    state.counters["tsc"] = tsc;
    state.counters["replayed"] = replayed;
    state.counters["replayed_delta"] = replayed - tsc;
    state.counters["nic"] = nic;
    state.counters["nic_delta"] = nic - tsc;
    state.counters["load1"] = load_average();
    state.SetItemsProcessed(int64_t(items));
    state.SetLabel(std::to_string(size) + " B frames; cycles/packet: one TSC stamp per burst vs port stamps");
}
BENCHMARK(BM_PortTimestamps)->Arg(60)->Arg(1514);
#endif

}  // namespace
}  // namespace linecap

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    // EAL only for the filter (rte_bpf_convert allocates with rte_malloc); everything else
    // runs without it. No hugepages, no files (the runtime directory EAL makes anyway is
    // removed at the end).
    const char* eal_args[] = {"linecap_micro", "--no-huge", "--no-shconf", "-m", "128", "--no-pci", "-l", "0",
                              "--file-prefix", "lcbench-micro", "--no-telemetry", "--log-level", "*:error"};
    if (rte_eal_init(int(sizeof eal_args / sizeof eal_args[0]), const_cast<char**>(eal_args)) >= 0) {
        linecap::g_eal = true;
        // A typical capture filter: two protocols and a port range.
        auto f = linecap::BpfFilter::compile("udp and (port 53 or portrange 400-500) or tcp port 80", 262144);
        if (f) linecap::g_filter = std::move(f.value());
        else std::fprintf(stderr, "filter: %s\n", f.error().message.c_str());
    } else {
        std::fprintf(stderr, "rte_eal_init failed (%s): filter benchmarks skipped\n", rte_strerror(rte_errno));
    }
    benchmark::AddCustomContext("tsc_hz", std::to_string(rte_get_tsc_hz()));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    linecap::g_filter.reset();
    if (linecap::g_eal) {
        const std::string runtime_dir = rte_eal_get_runtime_dir();
        rte_eal_cleanup();
        ::rmdir(runtime_dir.c_str());
    }
    return 0;
}
