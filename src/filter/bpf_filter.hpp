// A capture filter: a libpcap expression compiled once (pcap_compile for DLT_EN10MB at
// the port's snap length), converted to eBPF (rte_bpf_convert), loaded (rte_bpf_load)
// and run JIT-compiled on whole bursts on the worker lcore. Shared by the daemon and the
// extractor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/result.hpp"

struct rte_bpf;
struct rte_mbuf;

namespace linecap {

class BpfFilter {
public:
    // Errors are configuration errors quoting the expression and libpcap's own message.
    // Needs EAL (rte_bpf_convert allocates with rte_malloc). The converted program is
    // patched around two DPDK 22.11 bugs before loading (see bpf_filter.cpp).
    static Result<std::unique_ptr<BpfFilter>> compile(const std::string& expression, uint32_t snaplen);
    // No EAL: for configuration checks before anything is started. Rejects what libpcap
    // rejects and what rte_bpf_convert cannot translate (`protochain`: backward jumps), with
    // the same message compile() would give.
    static Status validate(const std::string& expression, uint32_t snaplen);
    ~BpfFilter();
    BpfFilter(const BpfFilter&) = delete;
    BpfFilter& operator=(const BpfFilter&) = delete;

    // keep[i] = non-zero when pkts[i] matches. Hot path: no allocation, no syscall.
    void run(rte_mbuf* const* pkts, uint32_t n, uint64_t* keep) const {
        if (jit_func_) {
            for (uint32_t i = 0; i < n; ++i) keep[i] = jit_func_(pkts[i]);
        } else {
            run_interpreted(pkts, n, keep);
        }
    }

    // The same program on DPDK's eBPF interpreter: what run() falls back to without a JIT.
    // Public for tests and benchmarks (JIT vs interpreter).
    void run_interpreted(rte_mbuf* const* pkts, uint32_t n, uint64_t* keep) const;

    const std::string& expression() const { return expression_; }
    bool jitted() const { return jit_func_ != nullptr; }

private:
    BpfFilter(std::string expression, rte_bpf* bpf);

    std::string expression_;
    rte_bpf* bpf_ = nullptr;
    uint64_t (*jit_func_)(void*) = nullptr;
};

}  // namespace linecap
