#include "store/filter_plan.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

#include "packet/packet_keys.hpp"

namespace linecap::store {
namespace {

// What a register or scratch slot holds, symbolically.
struct Sym {
    enum class Kind : uint8_t { unknown, constant, load, msh, masked };
    Kind kind = Kind::unknown;
    uint32_t k = 0;        // constant value; load offset; msh offset
    uint8_t width = 0;     // load width in bytes
    bool indexed = false;  // load at X + k
    int64_t x_msh = -1;    // for indexed loads: X = 4*(P[x_msh]&0xf), or -1 when X is anything else
    uint32_t mask = 0;     // masked: (load & mask)

    static Sym constant(uint32_t v) { return Sym{Kind::constant, v}; }
    // The identity of a load, for facts (ignores mask).
    // Loads relative to an X of unknown value are never "the same" (X may differ).
    bool same_load(const Sym& o) const {
        if (indexed && x_msh < 0) return false;
        return k == o.k && width == o.width && indexed == o.indexed && x_msh == o.x_msh;
    }
};

struct Fact {
    enum class Op : uint8_t { eq, ne, mask_zero };
    Sym load;  // kind == load
    Op op;
    uint32_t value;  // eq/ne: the constant; mask_zero: the mask
};

struct State {
    Sym a, x;
    Sym mem[BPF_MEMWORDS];
};

constexpr uint32_t kMaxSteps = 200000;
constexpr size_t kMaxAlternatives = 4096;

class Analyzer {
public:
    Analyzer(const bpf_insn* insns, size_t count) : insns_(insns), count_(count) {}

    FilterPlan run() {
        FilterPlan plan;
        State st;
        std::vector<Fact> facts;
        walk(0, st, facts);
        if (aborted_) {
            plan.note = abort_reason_;
            return plan;
        }
        if (needs_nothing_) {
            plan.note = "an accepting path of the filter program needs no indexed key";
            return plan;
        }
        if (alternatives_.empty()) {
            // No path accepts: nothing can match. Pruning everything is correct.
            plan.prunable = true;
            plan.note = "the filter accepts no packet";
            return plan;
        }
        // Deduplicate alternatives (sorted key lists).
        for (auto& alt : alternatives_) {
            std::sort(alt.begin(), alt.end(), [](const IndexKey& l, const IndexKey& r) { return less(l, r); });
            alt.erase(std::unique(alt.begin(), alt.end()), alt.end());
        }
        std::sort(alternatives_.begin(), alternatives_.end(), [](const auto& l, const auto& r) {
            return std::lexicographical_compare(l.begin(), l.end(), r.begin(), r.end(),
                                                [](const IndexKey& a, const IndexKey& b) { return less(a, b); });
        });
        alternatives_.erase(std::unique(alternatives_.begin(), alternatives_.end()), alternatives_.end());
        // Absorption: an alternative that includes all keys of another adds nothing.
        auto key_less = [](const IndexKey& a, const IndexKey& b) { return less(a, b); };
        std::vector<bool> absorbed(alternatives_.size(), false);
        for (size_t i = 0; i < alternatives_.size(); ++i)
            for (size_t j = 0; j < alternatives_.size() && !absorbed[i]; ++j)
                absorbed[i] = j != i && alternatives_[j].size() < alternatives_[i].size() &&
                              std::includes(alternatives_[i].begin(), alternatives_[i].end(),
                                            alternatives_[j].begin(), alternatives_[j].end(), key_less);
        std::vector<std::vector<IndexKey>> kept;
        for (size_t i = 0; i < alternatives_.size(); ++i)
            if (!absorbed[i]) kept.push_back(std::move(alternatives_[i]));
        alternatives_ = std::move(kept);
        plan.prunable = true;
        plan.alternatives = std::move(alternatives_);
        return plan;
    }

private:
    static bool less(const IndexKey& a, const IndexKey& b) {
        if (a.kind != b.kind) return a.kind < b.kind;
        if (a.value != b.value) return a.value < b.value;
        return a.addr6 < b.addr6;
    }

    void abort(const std::string& why) {
        if (!aborted_) abort_reason_ = why;
        aborted_ = true;
    }

    // Adds a fact; false when it contradicts one already on the path (infeasible).
    static bool assume(std::vector<Fact>& facts, const Fact& f) {
        for (const Fact& g : facts) {
            if (!g.load.same_load(f.load)) continue;
            if (f.op == Fact::Op::eq && g.op == Fact::Op::eq && f.value != g.value) return false;
            if (f.op == Fact::Op::eq && g.op == Fact::Op::ne && f.value == g.value) return false;
            if (f.op == Fact::Op::ne && g.op == Fact::Op::eq && f.value == g.value) return false;
        }
        facts.push_back(f);
        return true;
    }

    void walk(size_t pc, State st, std::vector<Fact>& facts) {
        while (!aborted_ && !needs_nothing_) {
            if (++steps_ > kMaxSteps) return abort("filter program too complex to analyse (no pruning)");
            if (pc >= count_) return abort("filter program runs off its end");
            const bpf_insn& in = insns_[pc];
            const uint16_t code = in.code;
            switch (BPF_CLASS(code)) {
                case BPF_LD:
                case BPF_LDX: {
                    Sym v;
                    const bool to_x = BPF_CLASS(code) == BPF_LDX;
                    const uint16_t size = BPF_SIZE(code);
                    const uint8_t width = size == BPF_W ? 4 : size == BPF_H ? 2 : 1;
                    switch (BPF_MODE(code)) {
                        case BPF_IMM: v = Sym::constant(in.k); break;
                        case BPF_ABS: v = Sym{Sym::Kind::load, in.k, width, false, -1, 0}; break;
                        case BPF_IND:
                            v = Sym{Sym::Kind::load, in.k, width, true,
                                    st.x.kind == Sym::Kind::msh ? int64_t{st.x.k} : -1, 0};
                            break;
                        case BPF_MEM: v = in.k < BPF_MEMWORDS ? st.mem[in.k] : Sym{}; break;
                        case BPF_MSH: v = Sym{Sym::Kind::msh, in.k}; break;
                        default: v = Sym{}; break;  // BPF_LEN
                    }
                    (to_x ? st.x : st.a) = v;
                    ++pc;
                    break;
                }
                case BPF_ST:
                    if (in.k < BPF_MEMWORDS) st.mem[in.k] = st.a;
                    ++pc;
                    break;
                case BPF_STX:
                    if (in.k < BPF_MEMWORDS) st.mem[in.k] = st.x;
                    ++pc;
                    break;
                case BPF_ALU:
                    if (BPF_OP(code) == BPF_AND && BPF_SRC(code) == BPF_K && st.a.kind == Sym::Kind::load) {
                        Sym m = st.a;
                        m.kind = Sym::Kind::masked;
                        m.mask = in.k;
                        st.a = m;
                    } else {
                        st.a = Sym{};
                    }
                    ++pc;
                    break;
                case BPF_MISC:
                    if (BPF_MISCOP(code) == BPF_TAX) st.x = st.a;
                    else st.a = st.x;  // BPF_TXA
                    ++pc;
                    break;
                case BPF_RET: {
                    bool accept;
                    if (BPF_RVAL(code) == BPF_K) accept = in.k != 0;
                    else accept = !(st.a.kind == Sym::Kind::constant && st.a.k == 0);
                    if (accept) on_accept(facts);
                    return;
                }
                case BPF_JMP: {
                    if (BPF_OP(code) == BPF_JA) {
                        if (in.k >= count_) return abort("filter program jumps off its end");
                        pc += 1 + in.k;
                        break;
                    }
                    const size_t pt = pc + 1 + in.jt, pf = pc + 1 + in.jf;
                    // Which outcomes are possible, and what each asserts.
                    std::optional<Fact> ft, ff;
                    bool t_possible = true, f_possible = true;
                    if (BPF_SRC(code) == BPF_K) {
                        const Sym& a = st.a;
                        if (a.kind == Sym::Kind::constant) {
                            bool r = false;
                            switch (BPF_OP(code)) {
                                case BPF_JEQ: r = a.k == in.k; break;
                                case BPF_JGT: r = a.k > in.k; break;
                                case BPF_JGE: r = a.k >= in.k; break;
                                case BPF_JSET: r = (a.k & in.k) != 0; break;
                            }
                            t_possible = r;
                            f_possible = !r;
                        } else if (a.kind == Sym::Kind::load) {
                            if (BPF_OP(code) == BPF_JEQ) {
                                ft = Fact{a, Fact::Op::eq, in.k};
                                ff = Fact{a, Fact::Op::ne, in.k};
                            } else if (BPF_OP(code) == BPF_JSET) {
                                ff = Fact{a, Fact::Op::mask_zero, in.k};
                            }
                        } else if (a.kind == Sym::Kind::masked && BPF_OP(code) == BPF_JEQ && in.k == 0) {
                            Sym l = a;
                            l.kind = Sym::Kind::load;
                            ft = Fact{l, Fact::Op::mask_zero, a.mask};
                        }
                    }
                    if (t_possible) {
                        const size_t mark = facts.size();
                        if (!ft || assume(facts, *ft)) walk(pt, st, facts);
                        facts.resize(mark);
                    }
                    if (!f_possible) return;
                    if (ff && !assume(facts, *ff)) return;  // (facts restored by the caller's resize)
                    pc = pf;
                    break;
                }
                default: return abort("unknown filter instruction");
            }
        }
    }

    // The keys that the facts of one accepting path prove the packet has.
    void on_accept(const std::vector<Fact>& facts) {
        std::map<std::pair<uint32_t, uint8_t>, uint32_t> eq;  // absolute (offset, width) → value
        for (const Fact& f : facts)
            if (f.op == Fact::Op::eq && !f.load.indexed) eq[{f.load.k, f.load.width}] = f.value;
        auto get = [&](uint32_t off, uint8_t w) -> std::optional<uint32_t> {
            auto it = eq.find({off, w});
            if (it == eq.end()) return std::nullopt;
            return it->second;
        };
        std::vector<IndexKey> keys;
        auto add = [&](IndexKey::Kind kind, uint32_t v) {
            IndexKey k;
            k.kind = kind;
            k.value = v;
            keys.push_back(k);
        };
        auto et = get(12, 2);
        uint32_t l3 = 14;
        for (unsigned tags = 0; et && (*et == 0x8100 || *et == 0x88a8 || *et == 0x9100); ++tags) {
            if (tags == kMaxVlanTags) et.reset();
            else {
                et = get(l3 + 2, 2);
                l3 += 4;
            }
        }
        if (et) {
            if (*et == 0x0800) {
                const auto proto = get(l3 + 9, 1);
                if (proto) add(IndexKey::Kind::proto, *proto);
                if (auto v = get(l3 + 12, 4)) add(IndexKey::Kind::addr4, *v);
                if (auto v = get(l3 + 16, 4)) add(IndexKey::Kind::addr4, *v);
                bool first_fragment = false;
                for (const Fact& f : facts)
                    if (f.op == Fact::Op::mask_zero && !f.load.indexed && f.load.k == l3 + 6 && f.load.width == 2 &&
                        (f.value & 0x1fff) == 0x1fff)
                        first_fragment = true;
                if (proto && (*proto == 6 || *proto == 17 || *proto == 132) && first_fragment) {
                    for (const Fact& f : facts)
                        if (f.op == Fact::Op::eq && f.load.indexed && f.load.x_msh == int64_t{l3} && f.load.width == 2 &&
                            (f.load.k == l3 || f.load.k == l3 + 2))
                            add(IndexKey::Kind::port, f.value);
                }
            } else if (*et == 0x86dd) {
                const auto nh = get(l3 + 6, 1);
                if (nh) add(IndexKey::Kind::proto, *nh);
                if (nh && *nh == 44)
                    if (auto v = get(l3 + 40, 1)) add(IndexKey::Kind::proto, *v);
                for (uint32_t base : {l3 + 8, l3 + 24}) {
                    auto w0 = get(base, 4), w1 = get(base + 4, 4), w2 = get(base + 8, 4), w3 = get(base + 12, 4);
                    if (w0 && w1 && w2 && w3) {
                        IndexKey k;
                        k.kind = IndexKey::Kind::addr6;
                        const uint32_t w[4] = {*w0, *w1, *w2, *w3};
                        for (int i = 0; i < 4; ++i)
                            for (int b = 0; b < 4; ++b) k.addr6[i * 4 + b] = static_cast<uint8_t>(w[i] >> (24 - 8 * b));
                        keys.push_back(k);
                    }
                }
                if (nh && (*nh == 6 || *nh == 17 || *nh == 132)) {
                    if (auto v = get(l3 + 40, 2)) add(IndexKey::Kind::port, *v);
                    if (auto v = get(l3 + 42, 2)) add(IndexKey::Kind::port, *v);
                }
            } else if (*et == 0x0806 || *et == 0x8035) {
                if (auto v = get(l3 + 14, 4)) add(IndexKey::Kind::addr4, *v);
                if (auto v = get(l3 + 24, 4)) add(IndexKey::Kind::addr4, *v);
            }
        }
        if (keys.empty()) {
            needs_nothing_ = true;
            return;
        }
        if (alternatives_.size() >= kMaxAlternatives) return abort("too many filter alternatives (no pruning)");
        alternatives_.push_back(std::move(keys));
    }

    const bpf_insn* insns_;
    size_t count_;
    uint32_t steps_ = 0;
    bool aborted_ = false;
    bool needs_nothing_ = false;
    std::string abort_reason_;
    std::vector<std::vector<IndexKey>> alternatives_;
};

}  // namespace

std::string FilterPlan::describe() const {
    if (!prunable) return "no index pruning: " + note;
    if (alternatives.empty()) return "matches nothing";
    std::string s = "a block may match only if it contains";
    for (size_t i = 0; i < alternatives.size(); ++i) {
        s += i == 0 ? " (" : " or (";
        for (size_t k = 0; k < alternatives[i].size(); ++k) {
            if (k) s += " and ";
            s += alternatives[i][k].to_string();
        }
        s += ")";
    }
    return s;
}

FilterPlan analyze_bpf(const bpf_insn* insns, size_t count) {
    if (count == 0) {
        FilterPlan p;
        p.note = "empty program";
        return p;
    }
    return Analyzer(insns, count).run();
}

Result<CompiledFilter> CompiledFilter::compile(const std::string& expression) {
    CompiledFilter f;
    f.expression_ = expression;
    bool blank = true;
    for (char c : expression) blank = blank && (c == ' ' || c == '\t' || c == '\n');
    if (blank) {
        f.plan_.note = "no filter";
        return f;
    }
    auto program = PcapProgram::compile(expression, pcap::kMaxSnaplen);
    if (!program) return program.error();
    f.program_ = std::move(program.value());
    f.plan_ = analyze_bpf(f.program_.program().bf_insns, f.program_.program().bf_len);
    return f;
}

bool CompiledFilter::matches(const format::Record& r) const {
    if (empty()) return true;
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(r.ts_ns / 1000000000u);
    h.ts.tv_usec = static_cast<suseconds_t>(r.ts_ns % 1000000000u);
    h.caplen = r.caplen;
    h.len = r.len;
    return pcap_offline_filter(&program_.program(), &h, r.data) != 0;
}

BlockSet candidate_blocks(const Index& index, const FilterPlan& plan) {
    const uint32_t n = index.header().block_count;
    if (!plan.prunable) return BlockSet(n, true);
    BlockSet any(n, false);
    for (const auto& alt : plan.alternatives) {
        BlockSet all(n, true);
        for (const IndexKey& k : alt) all.intersect(index.lookup(k));
        any.unite(all);
    }
    return any;
}

CandidateRecords candidate_records(const Index& index, const FilterPlan& plan) {
    const uint32_t n = index.header().block_count;
    CandidateRecords out{BlockSet(n, !plan.prunable), {}};
    if (!plan.prunable) return out;
    for (const auto& alt : plan.alternatives) {
        BlockSet all(n, true);
        std::optional<std::vector<uint32_t>> records;  // of the alternative's listed keys
        for (const IndexKey& k : alt) {
            all.intersect(index.lookup(k));
            auto listed = index.lookup_records(k);
            if (!listed) continue;
            if (!records) {
                records = std::move(listed);
                continue;
            }
            std::vector<uint32_t> both;
            std::set_intersection(records->begin(), records->end(), listed->begin(), listed->end(),
                                  std::back_inserter(both));
            records = std::move(both);
        }
        if (!records) {
            out.whole.unite(all);
            continue;
        }
        for (uint32_t r : *records)
            if (all.test(index.block_of_record(r))) out.records.push_back(r);
    }
    std::sort(out.records.begin(), out.records.end());
    out.records.erase(std::unique(out.records.begin(), out.records.end()), out.records.end());
    std::erase_if(out.records, [&](uint32_t r) { return out.whole.test(index.block_of_record(r)); });
    return out;
}

}  // namespace linecap::store
