#include "filter/bpf_filter.hpp"

#include <bpf_def.h>
#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <vector>

#include "filter/pcap_program.hpp"

namespace linecap {

namespace {

std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

// What rte_bpf_convert (DPDK 22.11) can translate, checked on the classic program so that
// the configuration check (no EAL yet) rejects exactly what compile() would: no backward
// jumps (libpcap emits them for `protochain`, which loops over IPv6/IPv4 extension
// headers; tcpdump runs such programs in user space, DPDK's eBPF cannot loop), no Linux
// ancillary loads (negative offsets), no opcode outside the converter's list, at most
// 4096 instructions.
Status check_convertible(const std::string& expression, const bpf_program& program) {
    auto unsupported = [&](std::string why) {
        return config_error("filter '" + expression + "': cannot run on DPDK's BPF: " + std::move(why));
    };
    const uint32_t len = program.bf_len;
    if (len > 4096) return unsupported("the program has " + std::to_string(len) + " instructions, at most 4096 convert");
    constexpr uint32_t kAncillary = 0xfffff000u;  // SKF_AD_OFF
    for (uint32_t i = 0; i < len; ++i) {
        const bpf_insn& in = program.bf_insns[i];
        const std::string at = "instruction " + std::to_string(i) + " (code " + hex(in.code) + ")";
        switch (in.code) {
        case BPF_LD | BPF_ABS | BPF_W:
        case BPF_LD | BPF_ABS | BPF_H:
        case BPF_LD | BPF_ABS | BPF_B:
            if (in.k >= kAncillary) return unsupported(at + " reads Linux socket metadata");
            break;
        case BPF_JMP | BPF_JA:
            if (in.k >= len - i - 1) {
                return unsupported(at + " jumps backwards (`protochain` loops over extension headers; use "
                                        "e.g. `ip6 and tcp`, or `ip6[6] = 0 and ip6[40] = 6` for one hop-by-hop header)");
            }
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
        case BPF_JMP | BPF_JEQ | BPF_X:
        case BPF_JMP | BPF_JSET | BPF_K:
        case BPF_JMP | BPF_JSET | BPF_X:
        case BPF_JMP | BPF_JGT | BPF_K:
        case BPF_JMP | BPF_JGT | BPF_X:
        case BPF_JMP | BPF_JGE | BPF_K:
        case BPF_JMP | BPF_JGE | BPF_X:
            if (i + 1u + in.jt >= len || i + 1u + in.jf >= len) return unsupported(at + " jumps out of the program");
            break;
        case BPF_ALU | BPF_ADD | BPF_X: case BPF_ALU | BPF_ADD | BPF_K:
        case BPF_ALU | BPF_SUB | BPF_X: case BPF_ALU | BPF_SUB | BPF_K:
        case BPF_ALU | BPF_AND | BPF_X: case BPF_ALU | BPF_AND | BPF_K:
        case BPF_ALU | BPF_OR | BPF_X:  case BPF_ALU | BPF_OR | BPF_K:
        case BPF_ALU | BPF_LSH | BPF_X: case BPF_ALU | BPF_LSH | BPF_K:
        case BPF_ALU | BPF_RSH | BPF_X: case BPF_ALU | BPF_RSH | BPF_K:
        case BPF_ALU | BPF_XOR | BPF_X: case BPF_ALU | BPF_XOR | BPF_K:
        case BPF_ALU | BPF_MUL | BPF_X: case BPF_ALU | BPF_MUL | BPF_K:
        case BPF_ALU | BPF_DIV | BPF_X: case BPF_ALU | BPF_DIV | BPF_K:
        case BPF_ALU | BPF_MOD | BPF_X: case BPF_ALU | BPF_MOD | BPF_K:
        case BPF_ALU | BPF_NEG:
        case BPF_LD | BPF_IND | BPF_W:
        case BPF_LD | BPF_IND | BPF_H:
        case BPF_LD | BPF_IND | BPF_B:
        case BPF_LDX | BPF_MSH | BPF_B:
        case BPF_RET | BPF_A:
        case BPF_RET | BPF_K:
        case BPF_ST:
        case BPF_STX:
        case BPF_LD | BPF_MEM:
        case BPF_LDX | BPF_MEM:
        case BPF_LD | BPF_IMM:
        case BPF_LDX | BPF_IMM:
        case BPF_MISC | BPF_TAX:
        case BPF_MISC | BPF_TXA:
        case BPF_LD | BPF_W | BPF_LEN:
        case BPF_LDX | BPF_W | BPF_LEN:
            break;
        default:
            return unsupported(at + " is not supported by rte_bpf_convert");
        }
    }
    return {};
}

bool is_jump(const ebpf_insn& in) {
    return BPF_CLASS(in.code) == BPF_JMP && BPF_OP(in.code) != EBPF_CALL && BPF_OP(in.code) != EBPF_EXIT;
}

// Rewrites rte_bpf_convert's output around two DPDK 22.11 bugs (both still present in
// later releases at the time of writing):
//
//  1. BPF_LD|BPF_IND|{B,W} get src_reg = A (r0) instead of X: the converter derives the
//     source register from BPF_SRC(code), and BPF_SRC of an IND load is 0x08 only for
//     BPF_H (0x48), so `ldb [x + 27]` (tcp[13], tcp[tcpflags]) and `ld [x + 22]`
//     (udp[8:4]) index with A. Fixed by setting src_reg to X.
//  2. The x86-64 JIT encodes `jset dst, #imm` with TEST r/m64, imm32 (0xF7 /0) but emits
//     only one immediate byte when imm fits in int8, so the next bytes are taken as the
//     rest of the immediate and the code after it is garbage (`ether multicast`,
//     `tcp[tcpflags] & (tcp-syn|tcp-fin) != 0` return random values). Fixed by loading
//     the immediate into the register the converter never uses (r9) and testing with
//     `jset dst, r9` (TEST r/m64, r64), with jump offsets recomputed.
//
// The converter's register use is checked first (prologue `xor r0,r0; xor X,X; mov r6,r1`,
// no r9 anywhere), so a future converter that differs fails loudly instead of producing
// wrong filters; the unit tests compare every result with libpcap's.
Result<std::vector<ebpf_insn>> fix_converted(const std::string& expression, const ebpf_insn* ins, uint32_t n) {
    auto unexpected = [&](const std::string& why) {
        return runtime_error("filter '" + expression + "': unexpected rte_bpf_convert output (" + why +
                             "); this linecap build knows DPDK 22.11's converter");
    };
    if (n < 3 || ins[0].code != (EBPF_ALU64 | BPF_XOR | BPF_X) || ins[0].dst_reg != EBPF_REG_0 ||
        ins[0].src_reg != EBPF_REG_0 || ins[1].code != (EBPF_ALU64 | BPF_XOR | BPF_X) ||
        ins[1].dst_reg != ins[1].src_reg || ins[2].code != (EBPF_ALU64 | EBPF_MOV | BPF_X) ||
        ins[2].dst_reg != EBPF_REG_6 || ins[2].src_reg != EBPF_REG_1) {
        return unexpected("prologue");
    }
    const uint8_t reg_x = ins[1].dst_reg;
    constexpr uint8_t kFree = EBPF_REG_9;
    for (uint32_t i = 0; i < n; ++i) {
        if (ins[i].dst_reg == kFree || ins[i].src_reg == kFree) return unexpected("r9 in use");
        if (ins[i].code == (BPF_LD | BPF_IMM | EBPF_DW)) return unexpected("64-bit immediate");
    }

    auto small_jset = [](const ebpf_insn& in) {
        return in.code == (BPF_JMP | BPF_JSET | BPF_K) && in.imm == static_cast<int8_t>(in.imm);
    };
    // first[i]: index in the new program of old instruction i's first instruction.
    std::vector<uint32_t> first(n + 1);
    uint32_t out_len = 0;
    for (uint32_t i = 0; i < n; ++i) {
        first[i] = out_len;
        out_len += small_jset(ins[i]) ? 2 : 1;
    }
    first[n] = out_len;

    std::vector<ebpf_insn> out;
    out.reserve(out_len);
    for (uint32_t i = 0; i < n; ++i) {
        ebpf_insn in = ins[i];
        if (BPF_CLASS(in.code) == BPF_LD && BPF_MODE(in.code) == BPF_IND) in.src_reg = reg_x;
        if (small_jset(in)) {
            ebpf_insn mov{};
            mov.code = EBPF_ALU64 | EBPF_MOV | BPF_K;  // sign-extends imm, as jset #imm does
            mov.dst_reg = kFree;
            mov.imm = in.imm;
            out.push_back(mov);
            in.code = BPF_JMP | BPF_JSET | BPF_X;
            in.src_reg = kFree;
            in.imm = 0;
        }
        if (is_jump(in)) {
            const int64_t target = int64_t(i) + 1 + ins[i].off;
            if (target < 0 || target > int64_t(n)) return unexpected("jump out of the program");
            const int64_t off = int64_t(first[target]) - (int64_t(out.size()) + 1);
            if (off < INT16_MIN || off > INT16_MAX) return unexpected("jump too far after rewriting");
            in.off = static_cast<int16_t>(off);
        }
        out.push_back(in);
    }
    return out;
}

}  // namespace

Result<std::unique_ptr<BpfFilter>> BpfFilter::compile(const std::string& expression, uint32_t snaplen) {
    auto classic = PcapProgram::compile(expression, snaplen);
    if (!classic) return classic.error();
    if (Status s = check_convertible(expression, classic->program()); !s) return s.error();

    // rte_bpf_convert returns a parameter block (rte_malloc'd) for an mbuf argument, with
    // BPF_ABS/IND loads reading packet data through the mbuf (multi-segment aware).
    rte_bpf_prm* prm = rte_bpf_convert(&classic->program());
    if (prm == nullptr) {
        return config_error("filter '" + expression + "': rte_bpf_convert: " + rte_strerror(rte_errno));
    }
    auto fixed = fix_converted(expression, prm->ins, prm->nb_ins);
    if (!fixed) {
        rte_free(prm);
        return fixed.error();
    }
    rte_bpf_prm load_prm = *prm;  // rte_bpf_load copies the instructions
    load_prm.ins = fixed.value().data();
    load_prm.nb_ins = static_cast<uint32_t>(fixed.value().size());
    rte_bpf* bpf = rte_bpf_load(&load_prm);
    const int load_errno = rte_errno;
    rte_free(prm);
    if (bpf == nullptr) {
        return config_error("filter '" + expression + "': rte_bpf_load: " + rte_strerror(load_errno));
    }
    std::unique_ptr<BpfFilter> filter(new BpfFilter(expression, bpf));
    if (!filter->jitted()) {
        spdlog::warn("filter '{}': JIT not available, running the eBPF interpreter (slower)", expression);
    }
    return filter;
}

Status BpfFilter::validate(const std::string& expression, uint32_t snaplen) {
    auto classic = PcapProgram::compile(expression, snaplen);
    if (!classic) return classic.error();
    return check_convertible(expression, classic->program());
}

BpfFilter::BpfFilter(std::string expression, rte_bpf* bpf) : expression_(std::move(expression)), bpf_(bpf) {
    rte_bpf_jit jit{};
    if (rte_bpf_get_jit(bpf_, &jit) == 0 && jit.func != nullptr) jit_func_ = jit.func;
}

BpfFilter::~BpfFilter() { rte_bpf_destroy(bpf_); }

void BpfFilter::run_interpreted(rte_mbuf* const* pkts, uint32_t n, uint64_t* keep) const {
    rte_bpf_exec_burst(bpf_, reinterpret_cast<void**>(const_cast<rte_mbuf**>(pkts)), keep, n);
}

}  // namespace linecap
