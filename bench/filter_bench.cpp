// Micro benchmark: what the capture filter costs per packet, as the worker runs it
// (BpfFilter::run on bursts of 64 mbufs), JIT against DPDK's eBPF interpreter.
//
//   linecap_filter_bench [--benchmark_* flags] FILE.pcap
//
// The packets of FILE.pcap (e.g. gen_pcap.py --mix) are loaded once into 2048 mbufs
// (single segment; 2048 × ≤ 9 KiB stays in L2/L3 like freshly received packets) and
// filtered burst after burst. Reported per packet:
//   cycles/pkt   median TSC cycles of one burst / 64 (robust against preemption on a
//                busy machine), and med_ns/pkt the same in ns at the TSC rate
//   ns/pkt       CPU time / packets (Google Benchmark's rate counter, mean)
// "none" is the worker's no-filter path: no call at all, shown as the floor.
#include <benchmark/benchmark.h>
#include <pcap/pcap.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <unistd.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "filter/bpf_filter.hpp"

namespace {

using linecap::BpfFilter;

constexpr uint32_t kBurst = 64;
constexpr uint32_t kPackets = 2048;
std::vector<rte_mbuf*> g_mbufs;

const char* const kLong =
    "(tcp port 80 or tcp port 443 or tcp port 8080 or udp port 53 or udp port 5060) and "
    "(net 198.18.0.0/15 or ip6 net 2001:db8::/32) and not ip[6:2] & 0x1fff != 0 and greater 64 and "
    "not (vlan and (tcp[tcpflags] & tcp-rst != 0)) and not host 198.18.1.1 and not host 198.18.1.2 and "
    "not host 198.18.1.3 and not ip6 host 2001:db8::1";

struct Case {
    const char* name;
    const char* expression;  // nullptr: no filter
};
const Case kCases[] = {
    {"none", nullptr},
    {"accept_all", ""},
    {"tcp443_or_udp53", "tcp port 443 or udp port 53"},
    {"long", kLong},
};

template <bool kJit>
void BM_Filter(benchmark::State& state, const char* expression) {
    std::unique_ptr<BpfFilter> filter;
    if (expression != nullptr) {
        auto compiled = BpfFilter::compile(expression, 262144);
        if (!compiled) {
            state.SkipWithError(compiled.error().message.c_str());
            return;
        }
        filter = std::move(compiled.value());
        if (kJit && !filter->jitted()) {
            state.SkipWithError("no JIT on this machine");
            return;
        }
    }
    uint64_t keep[kBurst];
    uint64_t kept = 0;
    uint32_t next = 0;
    std::vector<uint32_t> samples;
    samples.reserve(1u << 20);
    for (auto _ : state) {
        rte_mbuf* const* burst = &g_mbufs[next];
        next = (next + kBurst) % kPackets;
        const uint64_t t0 = rte_rdtsc_precise();
        if (filter == nullptr) {
            // The worker without a filter: every packet kept, no call.
            for (uint32_t i = 0; i < kBurst; ++i) keep[i] = 1;
        } else if (kJit) {
            filter->run(burst, kBurst, keep);
        } else {
            filter->run_interpreted(burst, kBurst, keep);
        }
        const uint64_t dt = rte_rdtsc_precise() - t0;
        if (samples.size() < samples.capacity()) samples.push_back(uint32_t(std::min<uint64_t>(dt, UINT32_MAX)));
        for (uint32_t i = 0; i < kBurst; ++i) kept += keep[i] != 0;
        benchmark::DoNotOptimize(keep);
    }
    const double packets = double(state.iterations()) * kBurst;
    state.SetItemsProcessed(int64_t(packets));
    state.counters["ns/pkt"] = benchmark::Counter(packets, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    if (!samples.empty()) {
        std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
        const double median = double(samples[samples.size() / 2]) / kBurst;
        state.counters["cycles/pkt"] = median;
        state.counters["med_ns/pkt"] = median * 1e9 / double(rte_get_tsc_hz());
    }
    state.counters["kept%"] = 100.0 * double(kept) / packets;
}

bool load(const char* path, rte_mempool* pool) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(path, err);
    if (p == nullptr) {
        std::fprintf(stderr, "%s: %s\n", path, err);
        return false;
    }
    std::vector<std::vector<uint8_t>> packets;
    pcap_pkthdr* hdr;
    const u_char* data;
    while (pcap_next_ex(p, &hdr, &data) == 1) packets.emplace_back(data, data + hdr->caplen);
    pcap_close(p);
    if (packets.empty()) return false;
    for (uint32_t i = 0; i < kPackets; ++i) {
        const auto& pkt = packets[i % packets.size()];
        rte_mbuf* m = rte_pktmbuf_alloc(pool);
        char* dst = m ? rte_pktmbuf_append(m, uint16_t(pkt.size())) : nullptr;
        if (dst == nullptr) {
            std::fprintf(stderr, "mbuf for a %zu-byte packet: %s\n", pkt.size(), rte_strerror(rte_errno));
            return false;
        }
        std::memcpy(dst, pkt.data(), pkt.size());
        g_mbufs.push_back(m);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s [--benchmark_* flags] FILE.pcap\n", argv[0]);
        return 2;
    }
    const char* eal_args[] = {"filter_bench", "--no-huge", "--no-shconf", "-m", "512", "--no-pci", "-l", "0",
                              "--file-prefix", "lcbench-filter", "--no-telemetry", "--log-level", "lib.*:error"};
    if (rte_eal_init(int(sizeof eal_args / sizeof eal_args[0]), const_cast<char**>(eal_args)) < 0) {
        std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    rte_mempool* pool = rte_pktmbuf_pool_create("bench", kPackets * 2 - 1, 0, 0, RTE_PKTMBUF_HEADROOM + 9216,
                                                SOCKET_ID_ANY);
    if (pool == nullptr || !load(argv[1], pool)) return 1;
    std::printf("TSC %.3f GHz, %u packets from %s, bursts of %u\n", double(rte_get_tsc_hz()) / 1e9, kPackets, argv[1],
                kBurst);
    for (const Case& c : kCases) {
        benchmark::RegisterBenchmark((std::string("jit/") + c.name).c_str(), BM_Filter<true>, c.expression);
        if (c.expression != nullptr) {
            benchmark::RegisterBenchmark((std::string("interpreter/") + c.name).c_str(), BM_Filter<false>,
                                         c.expression);
        }
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    rte_pktmbuf_free_bulk(g_mbufs.data(), unsigned(g_mbufs.size()));
    const std::string runtime_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    ::rmdir(runtime_dir.c_str());
    return 0;
}
