// libFuzzer target: the index reader on arbitrary bytes.
//
// Input byte 0 is a mode: bit 0 set = recompute every checksum before parsing, so the
// fuzzer gets past the CRCs and exercises the structural checks (bounds, ordering,
// postings) that stand behind them. An index that loads must answer every lookup without
// reading outside its buffer, and name only blocks that exist.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "archive/crc32c.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"

using namespace linecap;
using namespace linecap::store;

namespace {

void reseal(std::vector<uint8_t>& ix) {
    constexpr size_t fixed = sizeof(IndexHeader) + kSectionCount * sizeof(SectionEntry);
    if (ix.size() < fixed) return;
    for (uint32_t i = 0; i < kSectionCount; ++i) {
        SectionEntry e;
        uint8_t* p = ix.data() + sizeof(IndexHeader) + i * sizeof e;
        std::memcpy(&e, p, sizeof e);
        if (e.offset > ix.size() || e.size > ix.size() - e.offset) continue;
        e.crc = crc32c(ix.data() + e.offset, e.size);
        std::memcpy(p, &e, sizeof e);
    }
    std::memset(ix.data() + offsetof(IndexHeader, header_crc), 0, 4);
    const uint32_t crc = crc32c(ix.data(), fixed);
    std::memcpy(ix.data() + offsetof(IndexHeader, header_crc), &crc, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    std::vector<uint8_t> bytes(data + 1, data + size);
    if (data[0] & 1) reseal(bytes);
    auto index = Index::parse(std::move(bytes));
    if (!index.ok()) {
        if (index.error().message.empty()) abort();
        return 0;
    }
    const IndexHeader& h = index->header();
    uint64_t packets = 0;
    for (const BlockEntry& b : index->blocks()) {
        if (b.offset + b.length > h.pcap_size) abort();
        packets += b.packets;
    }
    if (packets != h.packets) abort();
    // Look up keys taken from the input itself and a few fixed ones.
    FilterPlan plan;
    plan.prunable = true;
    for (size_t i = 0; i + 16 <= size && i < 4096; i += 13) {
        IndexKey k;
        k.kind = static_cast<IndexKey::Kind>(data[i] % 4);
        std::memcpy(&k.value, data + i + 1, 4);
        if (k.kind == IndexKey::Kind::proto) k.value &= 0xff;
        if (k.kind == IndexKey::Kind::port) k.value &= 0xffff;
        std::memcpy(k.addr6.data(), data + i, 16);
        const BlockSet s = index->lookup(k);
        if (s.size() != h.block_count) abort();
        plan.alternatives.push_back({k});
    }
    const BlockSet any = candidate_blocks(index.value(), plan);
    if (any.size() != h.block_count || any.popcount() > h.block_count) abort();
    return 0;
}
