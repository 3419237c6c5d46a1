// libFuzzer target: the index reader on arbitrary bytes.
//
// Input byte 0 is a mode: bit 0 set = recompute every checksum before parsing, so the
// fuzzer gets past the CRCs and exercises the structural checks (bounds, ordering,
// postings) that stand behind them (version 3's chunk checksums too). An index that loads
// must answer every lookup and verify() without reading outside its buffer, and name only
// blocks that exist; version 2's record lists only records that exist, in blocks the key's
// block list names, and record byte ranges only inside their block.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "archive/crc32c.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"

using namespace linecap;
using namespace linecap::store;

namespace {

void reseal(std::vector<uint8_t>& ix) {
    if (ix.size() < sizeof(IndexHeader)) return;
    IndexHeader h;
    std::memcpy(&h, ix.data(), sizeof h);
    const uint32_t sections = index_section_count(h.version);  // as the reader expects them
    const size_t fixed = sizeof(IndexHeader) + sections * sizeof(SectionEntry);
    if (ix.size() < fixed) return;
    // Version 3: the chunk checksums first (the section checksums cover them).
    SectionEntry blocks{}, chunks{};
    for (uint32_t i = 0; i < sections; ++i) {
        SectionEntry e;
        std::memcpy(&e, ix.data() + sizeof(IndexHeader) + i * sizeof e, sizeof e);
        if (e.type == uint32_t(SectionType::blocks)) blocks = e;
        if (e.type == uint32_t(SectionType::chunk_crcs)) chunks = e;
    }
    if (h.version >= 3 && chunks.offset <= ix.size() && chunks.size <= ix.size() - chunks.offset &&
        blocks.offset + blocks.size >= blocks.offset && blocks.offset + blocks.size <= chunks.offset) {
        uint64_t c = 0;  // one per page of the file, of the part of it from the block table's end on
        for (uint64_t at = blocks.offset + blocks.size; at < chunks.offset && (c + 1) * 4 <= chunks.size;
             at = (at / kIndexChunkBytes + 1) * kIndexChunkBytes, ++c) {
            const uint64_t to = std::min<uint64_t>((at / kIndexChunkBytes + 1) * kIndexChunkBytes, chunks.offset);
            const uint32_t crc = crc32c(ix.data() + at, to - at);
            std::memcpy(ix.data() + chunks.offset + c * 4, &crc, 4);
        }
    }
    for (uint32_t i = 0; i < sections; ++i) {
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
        if (const auto records = index->lookup_records(k)) {
            for (size_t r = 0; r < records->size(); ++r) {
                const uint32_t ordinal = (*records)[r];
                if (ordinal >= h.packets || (r > 0 && ordinal <= (*records)[r - 1])) abort();
                if (!index->damaged() && !s.test(index->block_of_record(ordinal))) abort();
            }
            // Their blocks' record lengths asked for (a hint: within the buffer), then their
            // byte ranges, block by block: inside the block, in order.
            std::vector<uint32_t> blocks;
            for (uint32_t ordinal : *records)
                if (blocks.empty() || blocks.back() != index->block_of_record(ordinal))
                    blocks.push_back(index->block_of_record(ordinal));
            index->will_need_record_lengths(blocks);
            for (size_t r = 0; r < records->size();) {
                const uint32_t b = index->block_of_record((*records)[r]);
                size_t end = r;
                while (end < records->size() && index->block_of_record((*records)[end]) == b) ++end;
                std::vector<std::pair<uint64_t, uint64_t>> extents;
                const BlockEntry& e = index->blocks()[b];
                if (index->record_extents(b, std::span(*records).subspan(r, end - r), extents)) {
                    if (extents.size() != end - r) abort();
                    for (const auto& [begin, stop] : extents)
                        if (begin < e.offset || stop <= begin || stop > e.offset + e.length) abort();
                }
                r = end;
            }
        }
        plan.alternatives.push_back({k});
    }
    const BlockSet any = candidate_blocks(index.value(), plan);
    if (any.size() != h.block_count || any.popcount() > h.block_count) abort();
    const CandidateRecords some = candidate_records(index.value(), plan);
    if (some.whole.size() != h.block_count) abort();
    for (uint32_t r : some.records)
        if (r >= h.packets || some.whole.test(index->block_of_record(r))) abort();
    // The whole check: an answer either way, within the buffer.
    if (auto whole = index->verify(); !whole.ok() && whole.error().message.empty()) abort();
    return 0;
}
