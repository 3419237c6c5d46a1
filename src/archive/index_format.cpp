#include "archive/index_format.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "archive/capture_scan.hpp"
#include "archive/crc32c.hpp"
#include "archive/layout.hpp"
#include "format/capture_writer.hpp"
#include "util/errno_text.hpp"
#include "util/errno_text.hpp"
#include "util/io_status.hpp"
#include "util/stat_time.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

constexpr size_t kKeySize[4] = {1, 2, 4, 16};  // by IndexKey::Kind
constexpr SectionType kKindSection[4] = {SectionType::protos, SectionType::ports, SectionType::addr4,
                                         SectionType::addr6};
constexpr uint32_t kBitmapFlag = 1u << 31;
constexpr uint32_t kRecordsFlag = 1u << 30;  // version 2: the key's records follow its block list
constexpr uint32_t kCountMask = kRecordsFlag - 1;
// Version 2 lists the records of a key in at most 1 in kSelectiveRecords of the file's
// records: enough to lead a query to a sparse flow's packets, while a key in most records
// (a popular server's port) costs nothing beyond its block list.
constexpr uint64_t kSelectiveRecords = 8;
constexpr uint64_t kMaxVarintBytes = 5;  // of a u32
// Index::chunk_state_
constexpr uint8_t kChunkUnchecked = 0, kChunkGood = 1, kChunkBad = 2;

constexpr mode_t kIndexMode = 0644;  // derived data anyone who may read the directory may use

constexpr uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

void put_varint(std::vector<uint8_t>& out, uint32_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

size_t varint_size(uint32_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}

// Reads a varint at p[*pos], bounded by `size`; false when malformed or out of bounds.
bool get_varint(const uint8_t* p, uint64_t size, uint64_t* pos, uint32_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*pos >= size) return false;
        const uint8_t b = p[(*pos)++];
        v |= uint64_t{b & 0x7fu} << shift;
        if (!(b & 0x80)) {
            if (v > UINT32_MAX) return false;
            *out = static_cast<uint32_t>(v);
            return true;
        }
    }
    return false;
}

// Appends an ascending list, delta+varint coded (the first entry as it is).
void put_deltas(std::vector<uint8_t>& out, const std::vector<uint32_t>& ids) {
    uint32_t prev = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
        put_varint(out, k == 0 ? ids[k] : ids[k] - prev);
        prev = ids[k];
    }
}

// Encodes the block lists of one key kind, keys ascending, each list ascending; with
// `with_records`, the block list of a key in few of the `packets` records is followed by
// those records (count, then the ordinals delta-coded) and flagged kRecordsFlag.
template <typename K>
void encode_table(const PostingsTable<K>& table, uint32_t block_count, uint64_t packets, size_t key_size,
                  bool with_records,
                  std::vector<uint8_t>& section, std::vector<uint8_t>& postings, uint64_t* count,
                  uint64_t* record_entries) {
    std::vector<uint8_t> keys;
    std::vector<PostingRef> refs;
    const size_t bitmap_bytes = (block_count + 7) / 8;
    for (const auto& entry : table.sorted_keys()) {
        const std::vector<uint32_t>& ids = *entry.blocks;
        size_t vsize = 0;
        uint32_t prev = 0;
        for (size_t k = 0; k < ids.size(); ++k) {
            vsize += varint_size(k == 0 ? ids[k] : ids[k] - prev);
            prev = ids[k];
        }
        PostingRef ref{static_cast<uint32_t>(postings.size()), static_cast<uint32_t>(ids.size())};
        if (vsize <= bitmap_bytes) {
            put_deltas(postings, ids);
        } else {
            ref.count_enc |= kBitmapFlag;
            const size_t base = postings.size();
            postings.resize(base + bitmap_bytes, 0);
            for (uint32_t id : ids) postings[base + id / 8] |= static_cast<uint8_t>(1u << (id % 8));
        }
        if (with_records && entry.records->size() * kSelectiveRecords <= packets) {
            ref.count_enc |= kRecordsFlag;
            put_varint(postings, static_cast<uint32_t>(entry.records->size()));
            put_deltas(postings, *entry.records);
            *record_entries += entry.records->size();
        }
        const auto* kp = reinterpret_cast<const uint8_t*>(&entry.key);
        keys.insert(keys.end(), kp, kp + key_size);
        refs.push_back(ref);
    }
    *count = refs.size();
    section = std::move(keys);
    section.resize(align8(section.size()), 0);
    const auto* rp = reinterpret_cast<const uint8_t*>(refs.data());
    section.insert(section.end(), rp, rp + refs.size() * sizeof(PostingRef));
}

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Version 3's chunks tile [begin, end) of the index file along its pages: chunk c is what
// lies inside [begin, end) of page begin / kIndexChunkBytes + c, so that checking a chunk
// reads the one page a lookup faults in, not two.
uint64_t chunk_count(uint64_t begin, uint64_t end) {
    return end > begin ? (end + kIndexChunkBytes - 1) / kIndexChunkBytes - begin / kIndexChunkBytes : 0;
}
uint64_t chunk_of(uint64_t begin, uint64_t at) { return at / kIndexChunkBytes - begin / kIndexChunkBytes; }
std::pair<uint64_t, uint64_t> chunk_bounds(uint64_t begin, uint64_t end, uint64_t c) {
    const uint64_t page = begin / kIndexChunkBytes + c;
    return {std::max(begin, page * kIndexChunkBytes), std::min(end, (page + 1) * kIndexChunkBytes)};
}

// Whether key a < key b in a table of `kind` (IndexKey::Kind).
bool key_less(int kind, const uint8_t* a, const uint8_t* b) {
    switch (kind) {
        case 0: return *a < *b;
        case 1: return load<uint16_t>(a) < load<uint16_t>(b);
        case 2: return load<uint32_t>(a) < load<uint32_t>(b);
        default: return std::memcmp(a, b, 16) < 0;
    }
}

std::string hex_bytes(const uint8_t* p, size_t n) {
    std::string s;
    char b[4];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(b, sizeof b, "%02x", p[i]);
        s += b;
    }
    return s;
}

}  // namespace

std::string IndexKey::to_string() const {
    char text[64];
    switch (kind) {
        case Kind::proto: return "proto " + std::to_string(value);
        case Kind::port: return "port " + std::to_string(value);
        case Kind::addr4:
            std::snprintf(text, sizeof text, "%u.%u.%u.%u", value >> 24, (value >> 16) & 0xff, (value >> 8) & 0xff,
                          value & 0xff);
            return std::string("host ") + text;
        case Kind::addr6: return "host6 " + hex_bytes(addr6.data(), 16);
    }
    return "?";
}

BlockSet::BlockSet(uint32_t count, bool all) : count_(count), bits_((count + 63) / 64, all ? ~uint64_t{0} : 0) {
    if (all && (count & 63)) bits_.back() = (uint64_t{1} << (count & 63)) - 1;
}
void BlockSet::intersect(const BlockSet& o) {
    for (size_t i = 0; i < bits_.size() && i < o.bits_.size(); ++i) bits_[i] &= o.bits_[i];
}
void BlockSet::unite(const BlockSet& o) {
    for (size_t i = 0; i < bits_.size() && i < o.bits_.size(); ++i) bits_[i] |= o.bits_[i];
}
uint32_t BlockSet::popcount() const {
    uint32_t n = 0;
    for (uint64_t w : bits_) n += static_cast<uint32_t>(std::popcount(w));
    return n;
}

// --- builder ---------------------------------------------------------------------------------

IndexBuilder::IndexBuilder(const format::CaptureHeader& header, IndexBuildOptions options)
    : header_(header), options_(options), next_offset_(header.data_begin) {
    if (options_.block_bytes < 4096) options_.block_bytes = 4096;
    if (options_.block_bytes > (64u << 20)) options_.block_bytes = 64u << 20;
}

void IndexBuilder::add(const format::Record& r, const format::Interface& interface) {
    if (packets_ == 0) {
        // pcap: the header's; pcapng: the first interface with a packet.
        header_.snaplen = interface.snaplen;
        header_.link_field = interface.link_field;
    }
    // A block's length is 32 bits: a pcapng file may put many skipped blocks between
    // packets (build_from_source bounds the gap to well below that).
    if (cur_open_ && r.end - cur_.offset > (1ull << 31)) close_block();
    if (!cur_open_) {
        cur_ = BlockEntry{next_offset_, 0, 0, r.ts_ns, r.ts_ns};
        cur_open_ = true;
        first_length_.push_back(static_cast<uint32_t>(lengths_.size()));
    }
    const uint64_t size = r.end - next_offset_;  // the record and any non-packet blocks before it
    next_offset_ = r.end;
    const bool records = options_.version >= 2;
    if (records) put_varint(lengths_, static_cast<uint32_t>(size));  // < 2^31: see above
    cur_.length = static_cast<uint32_t>(r.end - cur_.offset);
    cur_.packets += 1;
    cur_.min_ts_ns = std::min(cur_.min_ts_ns, r.ts_ns);
    cur_.max_ts_ns = std::max(cur_.max_ts_ns, r.ts_ns);
    if (packets_ > 0 && r.ts_ns < last_ts_) monotonic_ = false;
    last_ts_ = r.ts_ns;
    ++packets_;
    captured_bytes_ += size;
    min_ts_ = std::min(min_ts_, r.ts_ns);
    max_ts_ = std::max(max_ts_, r.ts_ns);

    extract_keys(r.data, r.caplen, keys_);
    const auto block = static_cast<uint32_t>(blocks_.size());  // the open block's number
    const uint32_t record = records ? static_cast<uint32_t>(packets_ - 1) : PostingsTable<uint8_t>::kNoRecord;
    for (unsigned i = 0; i < keys_.n_protos; ++i) protos_.add(keys_.protos[i], block);
    for (unsigned i = 0; i < keys_.n_ports; ++i) ports_.add(keys_.ports[i], block, record);
    for (unsigned i = 0; i < keys_.n_addr4; ++i) addr4_.add(keys_.addr4[i], block, record);
    for (unsigned i = 0; i < keys_.n_addr6; ++i) addr6_.add(keys_.addr6[i], block, record);
    if (cur_.length >= options_.block_bytes) close_block();
}

void IndexBuilder::close_block() {
    if (!cur_open_) return;
    blocks_.push_back(cur_);
    cur_open_ = false;
}

bool IndexBuilder::checksum_blocks(const format::ByteSource& source) {
    close_block();
    block_crcs_.clear();
    std::vector<uint8_t> chunk(1u << 20);
    for (const BlockEntry& b : blocks_) {
        uint32_t crc = 0;
        for (uint64_t at = b.offset, end = b.offset + b.length; at < end;) {
            const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), end - at));
            const ssize_t got = source.read_at(chunk.data(), want, at);
            if (got <= 0) return false;
            crc = crc32c_extend(crc, chunk.data(), static_cast<size_t>(got));
            at += static_cast<uint64_t>(got);
        }
        block_crcs_.push_back(crc);
    }
    return true;
}

std::vector<uint8_t> IndexBuilder::records_section() const {
    std::vector<uint8_t> out(first_length_.size() * sizeof(uint32_t));
    if (!first_length_.empty()) std::memcpy(out.data(), first_length_.data(), out.size());
    out.insert(out.end(), lengths_.begin(), lengths_.end());
    return out;
}

std::vector<uint8_t> IndexBuilder::finish(uint64_t pcap_size, int64_t pcap_mtime_ns, uint64_t data_end,
                                          uint32_t flags, uint64_t damage_at, IndexStats* stats) {
    close_block();
    const auto block_count = static_cast<uint32_t>(blocks_.size());
    const uint32_t version = std::clamp(options_.version, kIndexVersionOldest, kIndexVersion);
    const uint32_t section_count = index_section_count(version);
    const bool records = version >= 2;

    std::vector<uint8_t> sections[kSectionCount];
    uint64_t counts[kSectionCount] = {};
    uint64_t record_entries = 0;
    {
        const auto* bp = reinterpret_cast<const uint8_t*>(blocks_.data());
        sections[0].assign(bp, bp + blocks_.size() * sizeof(BlockEntry));
        counts[0] = blocks_.size();
    }
    std::vector<uint8_t>& postings = sections[5];
    encode_table(protos_, block_count, packets_, 1, false, sections[1], postings, &counts[1], &record_entries);
    encode_table(ports_, block_count, packets_, 2, records, sections[2], postings, &counts[2], &record_entries);
    encode_table(addr4_, block_count, packets_, 4, records, sections[3], postings, &counts[3], &record_entries);
    encode_table(addr6_, block_count, packets_, 16, records, sections[4], postings, &counts[4], &record_entries);
    counts[5] = postings.size();
    if (records) {
        // Without checksum_blocks() (a builder fed records only) the CRCs are of nothing
        // read: 0, which the archive reader would refuse. build_from_source always sets them.
        std::vector<uint32_t> crcs = block_crcs_;
        crcs.resize(block_count, 0);
        const auto* cp = reinterpret_cast<const uint8_t*>(crcs.data());
        sections[6].assign(cp, cp + crcs.size() * sizeof(uint32_t));
        counts[6] = block_count;
        sections[7] = records_section();
        counts[7] = block_count;
    }

    IndexHeader h{};
    std::memcpy(h.magic, kIndexMagic, sizeof h.magic);
    h.version = version;
    h.header_size = sizeof(IndexHeader);
    h.pcap_size = pcap_size;
    h.pcap_mtime_ns = pcap_mtime_ns;
    h.data_end = data_end;
    h.packets = packets_;
    h.captured_bytes = captured_bytes_;
    h.min_ts_ns = packets_ ? min_ts_ : 0;
    h.max_ts_ns = packets_ ? max_ts_ : 0;
    h.snaplen = header_.snaplen;
    h.linktype = header_.link_field;
    h.pcap_flags = (header_.nanosecond ? kIndexNanosecond : 0u) | (header_.swapped ? kIndexSwapped : 0u) |
                   (header_.kind == FileKind::pcapng ? kIndexPcapng : 0u);
    h.flags = (monotonic_ ? kIndexMonotonic : 0u) | flags;
    h.data_begin = header_.data_begin;
    h.damage_at = damage_at;
    h.block_target = options_.block_bytes;
    h.block_count = block_count;
    h.section_count = section_count;

    for (uint32_t i = 0; i < section_count; ++i) sections[i].resize(align8(sections[i].size()), 0);
    if (version >= 3) {
        // The chunks tile sections 2 to 8 as they follow each other in the file, after the
        // header, the section table and the block table.
        std::vector<uint8_t> lazy;
        for (uint32_t i = 1; i < 8; ++i) lazy.insert(lazy.end(), sections[i].begin(), sections[i].end());
        const uint64_t begin = sizeof(IndexHeader) + section_count * sizeof(SectionEntry) + sections[0].size();
        const uint64_t end = begin + lazy.size();
        std::vector<uint32_t> crcs;
        for (uint64_t c = 0; c < chunk_count(begin, end); ++c) {
            const auto [from, to] = chunk_bounds(begin, end, c);
            crcs.push_back(crc32c(lazy.data() + (from - begin), to - from));
        }
        const auto* cp = reinterpret_cast<const uint8_t*>(crcs.data());
        sections[8].assign(cp, cp + crcs.size() * sizeof(uint32_t));
        sections[8].resize(align8(sections[8].size()), 0);
        counts[8] = crcs.size();
    }
    SectionEntry table[kSectionCount];
    const size_t table_bytes = section_count * sizeof(SectionEntry);
    uint64_t offset = sizeof(IndexHeader) + table_bytes;
    for (uint32_t i = 0; i < section_count; ++i) {
        table[i] = SectionEntry{i + 1, crc32c(sections[i].data(), sections[i].size()), offset, sections[i].size(),
                                counts[i]};
        offset += sections[i].size();
    }
    std::vector<uint8_t> out;
    out.reserve(offset);
    h.header_crc = 0;
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + sizeof h);
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(table),
               reinterpret_cast<const uint8_t*>(table) + table_bytes);
    const uint32_t crc = crc32c(out.data(), out.size());
    std::memcpy(out.data() + offsetof(IndexHeader, header_crc), &crc, sizeof crc);
    for (uint32_t i = 0; i < section_count; ++i) out.insert(out.end(), sections[i].begin(), sections[i].end());

    if (stats) {
        stats->packets = packets_;
        stats->blocks = block_count;
        stats->pcap_bytes = pcap_size;
        stats->index_bytes = out.size();
        stats->keys = counts[1] + counts[2] + counts[3] + counts[4];
        stats->postings_entries = protos_.entries() + ports_.entries() + addr4_.entries() + addr6_.entries();
        stats->record_entries = record_entries;
    }
    return out;
}

// --- reader ----------------------------------------------------------------------------------

Result<Index> Index::parse(std::vector<uint8_t> bytes) {
    auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    const uint8_t* data = owned->data();
    const size_t size = owned->size();
    return parse(data, size, std::move(owned));
}

Result<Index> Index::parse(const uint8_t* data, size_t data_size, std::shared_ptr<const void> keeper) {
    Index ix;
    ix.keeper_ = std::move(keeper);
    ix.data_ = data;
    ix.size_ = data_size;
    const uint8_t* base = data;
    const uint64_t size = data_size;
    if (size < 8 || std::memcmp(base, kIndexMagic, 8) != 0) return runtime_error("bad magic (not a linecap index)");
    if (size < sizeof(IndexHeader)) return runtime_error("truncated header (" + std::to_string(size) + " bytes)");
    IndexHeader& h = ix.header_;
    std::memcpy(&h, base, sizeof h);
    if (h.version < kIndexVersionOldest || h.version > kIndexVersion)
        return runtime_error("unsupported index version " + std::to_string(h.version) + " (this linecap reads " +
                             std::to_string(kIndexVersionOldest) + " to " + std::to_string(kIndexVersion) + ")");
    const uint32_t nsections = index_section_count(h.version);
    const uint64_t kFixed = sizeof(IndexHeader) + nsections * sizeof(SectionEntry);
    if (h.header_size != sizeof(IndexHeader) || h.section_count != nsections)
        return runtime_error("unexpected header or section table size");
    if (size < kFixed) return runtime_error("truncated section table");
    {
        std::vector<uint8_t> copy(base, base + kFixed);
        std::memset(copy.data() + offsetof(IndexHeader, header_crc), 0, 4);
        if (crc32c(copy.data(), copy.size()) != h.header_crc) return runtime_error("checksum mismatch in header");
    }
    const SectionEntry* found[kSectionCount] = {};
    for (uint32_t i = 0; i < nsections; ++i) {
        const auto* e = reinterpret_cast<const SectionEntry*>(base + sizeof(IndexHeader)) + i;
        SectionEntry s;
        std::memcpy(&s, e, sizeof s);
        if (s.type < 1 || s.type > nsections || found[s.type - 1])
            return runtime_error("bad section table (entry " + std::to_string(i) + ")");
        if (s.offset < kFixed || s.offset > size || s.size > size - s.offset)
            return runtime_error("section " + std::to_string(s.type) + " lies outside the index file (truncated?)");
        // Version 3: the block table and the chunk checksums now, the rest by chunk as it
        // is read (checked()).
        const bool now = h.version < 3 || s.type == static_cast<uint32_t>(SectionType::blocks) ||
                         s.type == static_cast<uint32_t>(SectionType::chunk_crcs);
        if (now && crc32c(base + s.offset, s.size) != s.crc)
            return runtime_error("checksum mismatch in section " + std::to_string(s.type));
        found[s.type - 1] = e;
    }
    auto section = [&](SectionType t) {
        SectionEntry s;
        std::memcpy(&s, found[static_cast<uint32_t>(t) - 1], sizeof s);
        return s;
    };

    // Blocks: contiguous from data_begin to data_end <= pcap_size.
    const SectionEntry bs = section(SectionType::blocks);
    if (h.block_count >= kRecordsFlag) return runtime_error("too many blocks");
    if (bs.count != h.block_count || bs.size != bs.count * sizeof(BlockEntry))
        return runtime_error("block table size does not match the block count");
    const uint64_t data_begin = data_begin_of(h);
    if (h.data_end > h.pcap_size || data_begin > h.pcap_size || (h.block_count > 0 && data_begin > h.data_end))
        return runtime_error("indexed data extends past the end of the capture file");
    ix.blocks_.resize(bs.count);
    if (bs.size) std::memcpy(ix.blocks_.data(), base + bs.offset, bs.size);
    uint64_t expect = data_begin, packets = 0, captured = 0;
    uint64_t min_ts = UINT64_MAX, max_ts = 0;
    for (size_t i = 0; i < ix.blocks_.size(); ++i) {
        const BlockEntry& b = ix.blocks_[i];
        const std::string name = "block " + std::to_string(i);
        if (b.offset != expect) return runtime_error(name + " does not start where the previous one ends");
        if (b.packets == 0 || b.length < uint64_t{b.packets} * sizeof(pcap::RecordHeader))
            return runtime_error(name + " has an impossible length or packet count");
        if (b.offset + b.length > h.pcap_size)
            return runtime_error(name + " extends past the end of the capture file");
        if (b.min_ts_ns > b.max_ts_ns) return runtime_error(name + " has an inverted time span");
        expect = b.offset + b.length;
        packets += b.packets;
        captured += b.length;
        min_ts = std::min(min_ts, b.min_ts_ns);
        max_ts = std::max(max_ts, b.max_ts_ns);
    }
    if (expect != h.data_end || packets != h.packets || captured != h.captured_bytes)
        return runtime_error("block table does not add up to the header's totals");
    if (packets && (min_ts != h.min_ts_ns || max_ts != h.max_ts_ns))
        return runtime_error("block time spans do not match the header's");
    ix.first_record_.resize(ix.blocks_.size() + 1);
    for (size_t i = 0; i < ix.blocks_.size(); ++i) ix.first_record_[i + 1] = ix.first_record_[i] + ix.blocks_[i].packets;

    if (h.version >= 2) {
        const SectionEntry cs = section(SectionType::block_crcs);
        if (cs.count != h.block_count || cs.size != align8(cs.count * sizeof(uint32_t)))
            return runtime_error("block checksum table size does not match the block count");
        ix.block_crcs_ = base + cs.offset;
        const SectionEntry rs = section(SectionType::records);
        const uint64_t starts = rs.count * sizeof(uint32_t);
        if (rs.count != h.block_count || rs.size < starts)
            return runtime_error("record table size does not match the block count");
        ix.record_starts_ = base + rs.offset;
        ix.record_lengths_ = base + rs.offset + starts;
        ix.record_lengths_size_ = rs.size - starts;
    }

    const SectionEntry ps = section(SectionType::postings);
    ix.postings_ = base + ps.offset;
    ix.postings_size_ = ps.size;

    for (int kind = 0; kind < 4; ++kind) {
        const SectionEntry s = section(kKindSection[kind]);
        const size_t ks = kKeySize[kind];
        if (s.count > UINT32_MAX || s.size != align8(align8(s.count * ks) + s.count * sizeof(PostingRef)))
            return runtime_error("key table " + std::to_string(s.type) + " has the wrong size");
        Table& t = ix.tables_[kind];
        t.keys = base + s.offset;
        t.refs = base + s.offset + align8(s.count * ks);
        t.count = s.count;
    }

    if (h.version >= 3) {
        // The chunks tile what lies between the block table and the chunk checksums, and
        // every other section lies there.
        const SectionEntry cs = section(SectionType::chunk_crcs);
        ix.lazy_begin_ = bs.offset + bs.size;
        ix.lazy_end_ = cs.offset;
        if (ix.lazy_begin_ > ix.lazy_end_) return runtime_error("the chunk checksums come before the block table");
        for (uint32_t type = 2; type <= 8; ++type) {
            const SectionEntry s = section(static_cast<SectionType>(type));
            if (s.offset < ix.lazy_begin_ || s.offset + s.size > ix.lazy_end_)
                return runtime_error("section " + std::to_string(type) + " lies outside the checksummed chunks");
        }
        const uint64_t chunks = chunk_count(ix.lazy_begin_, ix.lazy_end_);
        if (cs.count != chunks || cs.size != align8(chunks * sizeof(uint32_t)))
            return runtime_error("chunk checksum table size does not match the index's size");
        ix.chunk_crcs_ = base + cs.offset;
        ix.chunk_state_.reset(new std::atomic<uint8_t>[chunks]());  // kChunkUnchecked
        return ix;
    }
    if (auto tables = ix.check_tables(); !tables) return tables.error();
    return ix;
}

bool Index::valid_ref(const PostingRef& ref, int kind) const {
    const uint32_t n = ref.count_enc & kCountMask;
    return n > 0 && n <= header_.block_count && ref.offset <= postings_size_ &&
           !((ref.count_enc & kRecordsFlag) && (header_.version < 2 || kind == 0));
}

Result<void> Index::check_tables() const {
    for (uint32_t i = 0; record_starts_ && i < header_.block_count; ++i) {
        const auto at = load<uint32_t>(record_starts_ + uint64_t{i} * sizeof(uint32_t));
        if (at > record_lengths_size_ || (i > 0 && at < load<uint32_t>(record_starts_ + (i - 1) * sizeof(uint32_t))))
            return runtime_error("record table: bad start of block " + std::to_string(i));
    }
    for (int kind = 0; kind < 4; ++kind) {
        const Table& t = tables_[kind];
        const size_t ks = kKeySize[kind];
        const std::string name = "key table " + std::to_string(static_cast<uint32_t>(kKindSection[kind]));
        for (uint64_t i = 0; i < t.count; ++i) {
            if (i > 0 && !key_less(kind, t.keys + (i - 1) * ks, t.keys + i * ks))
                return runtime_error(name + " is not sorted");
            PostingRef ref;
            std::memcpy(&ref, t.refs + i * sizeof ref, sizeof ref);
            if (!valid_ref(ref, kind)) return runtime_error(name + ": bad postings reference");
        }
    }
    return {};
}

Result<void> Index::verify() const {
    for (uint64_t c = 0; chunk_state_ && c < chunk_count(lazy_begin_, lazy_end_); ++c) {
        const auto [from, to] = chunk_bounds(lazy_begin_, lazy_end_, c);
        if (!checked(data_ + from, to - from))
            return runtime_error("checksum mismatch in chunk " + std::to_string(c) + " (bytes " + std::to_string(from) +
                                 ".." + std::to_string(to) + ")");
    }
    return check_tables();
}

bool Index::checked(const uint8_t* p, uint64_t n) const {
    if (!chunk_state_ || n == 0) return true;
    const uint64_t begin = static_cast<uint64_t>(p - data_), end = begin + n;
    if (begin < lazy_begin_ || end > lazy_end_) {  // not reached: callers stay within their sections
        *damaged_ = true;
        return false;
    }
    for (uint64_t c = chunk_of(lazy_begin_, begin); c <= chunk_of(lazy_begin_, end - 1); ++c) {
        std::atomic<uint8_t>& state = chunk_state_[c];
        uint8_t now = state.load(std::memory_order_acquire);
        if (now == kChunkUnchecked) {
            const auto [from, to] = chunk_bounds(lazy_begin_, lazy_end_, c);
            const uint32_t want = load<uint32_t>(chunk_crcs_ + c * sizeof(uint32_t));
            now = crc32c(data_ + from, to - from) == want ? kChunkGood : kChunkBad;
            state.store(now, std::memory_order_release);  // two threads may both check: same answer
        }
        if (now == kChunkBad) {
            *damaged_ = true;
            return false;
        }
    }
    return true;
}

BlockSet Index::decode(const PostingRef& ref, uint64_t* end) const {
    const uint32_t count = header_.block_count;
    BlockSet set(count, false);
    const uint32_t n = ref.count_enc & kCountMask;
    bool ok = true;
    if (ref.count_enc & kBitmapFlag) {
        const uint64_t nbytes = (uint64_t{count} + 7) / 8;
        ok = ref.offset <= postings_size_ && nbytes <= postings_size_ - ref.offset &&
             checked(postings_ + ref.offset, nbytes);
        uint32_t pop = 0;
        for (uint32_t i = 0; ok && i < count; ++i)
            if (postings_[ref.offset + i / 8] & (1u << (i % 8))) {
                set.set(i);
                ++pop;
            }
        ok = ok && pop == n && !((count & 7) && (postings_[ref.offset + nbytes - 1] >> (count & 7)));
        if (end) *end = ref.offset + nbytes;
    } else {
        uint64_t pos = ref.offset, prev = 0;
        ok = ref.offset <= postings_size_ &&
             checked(postings_ + ref.offset, std::min<uint64_t>(uint64_t{n} * kMaxVarintBytes, postings_size_ - ref.offset));
        for (uint32_t k = 0; ok && k < n; ++k) {
            uint32_t v = 0;
            ok = get_varint(postings_, postings_size_, &pos, &v) && (k == 0 || v > 0);
            const uint64_t id = k == 0 ? v : prev + v;
            ok = ok && id < count;
            if (ok) set.set(static_cast<uint32_t>(id));
            prev = id;
        }
        if (end) *end = pos;
    }
    if (!ok) {
        if (end) *end = UINT64_MAX;
        // Only a crafted file gets here (the checksums matched): answer conservatively.
        *damaged_ = true;
        return BlockSet(count, true);
    }
    return set;
}

Index::Found Index::find(const IndexKey& key, PostingRef* out) const {
    const int kind = static_cast<int>(key.kind);
    const Table& t = tables_[kind];
    const size_t ks = kKeySize[kind];
    uint8_t want[16] = {};
    switch (key.kind) {
        case IndexKey::Kind::proto: want[0] = static_cast<uint8_t>(key.value); break;
        case IndexKey::Kind::port: {
            const auto v = static_cast<uint16_t>(key.value);
            std::memcpy(want, &v, 2);
            break;
        }
        case IndexKey::Kind::addr4: std::memcpy(want, &key.value, 4); break;
        case IndexKey::Kind::addr6: std::memcpy(want, key.addr6.data(), 16); break;
    }
    uint64_t lo = 0, hi = t.count;
    while (lo < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (!checked(t.keys + mid * ks, ks)) return Found::damaged;
        if (key_less(kind, t.keys + mid * ks, want)) lo = mid + 1;
        else hi = mid;
    }
    if (lo == t.count || key_less(kind, want, t.keys + lo * ks)) return Found::no;  // t.keys[lo] was checked
    if (!checked(t.refs + lo * sizeof *out, sizeof *out)) return Found::damaged;
    std::memcpy(out, t.refs + lo * sizeof *out, sizeof *out);
    if (!valid_ref(*out, kind)) {  // version 3 (older ones: checked by parse)
        *damaged_ = true;
        return Found::damaged;
    }
    return Found::yes;
}

BlockSet Index::lookup(const IndexKey& key) const {
    PostingRef ref;
    switch (find(key, &ref)) {
        case Found::no: return BlockSet(header_.block_count, false);
        case Found::damaged: return BlockSet(header_.block_count, true);
        case Found::yes: break;
    }
    return decode(ref);
}

std::optional<std::vector<uint32_t>> Index::lookup_records(const IndexKey& key) const {
    if (header_.version < 2 || key.kind == IndexKey::Kind::proto) return std::nullopt;
    PostingRef ref;
    switch (find(key, &ref)) {
        case Found::no: return std::vector<uint32_t>{};
        case Found::damaged: return std::nullopt;
        case Found::yes: break;
    }
    if (!(ref.count_enc & kRecordsFlag)) return std::nullopt;  // in many records: blocks only
    uint64_t pos = 0;
    const BlockSet blocks = decode(ref, &pos);
    if (pos == UINT64_MAX) return std::nullopt;  // decode() marked the index damaged
    // Every record in a listed block, ascending, no more than the file holds.
    uint32_t n = 0;
    bool ok = checked(postings_ + pos, std::min<uint64_t>(kMaxVarintBytes, postings_size_ - pos)) &&
              get_varint(postings_, postings_size_, &pos, &n) && n >= (ref.count_enc & kCountMask) &&
              n <= header_.packets &&
              checked(postings_ + pos, std::min<uint64_t>(uint64_t{n} * kMaxVarintBytes, postings_size_ - pos));
    std::vector<uint32_t> out;
    if (ok) out.reserve(n);
    uint64_t prev = 0;
    for (uint32_t k = 0; ok && k < n; ++k) {
        uint32_t v = 0;
        ok = get_varint(postings_, postings_size_, &pos, &v) && (k == 0 || v > 0);
        const uint64_t id = k == 0 ? v : prev + v;
        ok = ok && id < header_.packets && blocks.test(block_of_record(id));
        out.push_back(static_cast<uint32_t>(id));
        prev = id;
    }
    if (!ok) {
        *damaged_ = true;
        return std::nullopt;
    }
    return out;
}

std::optional<uint32_t> Index::block_crc(uint32_t b) const {
    if (!block_crcs_ || b >= header_.block_count) return std::nullopt;
    const uint8_t* at = block_crcs_ + uint64_t{b} * sizeof(uint32_t);
    if (!checked(at, sizeof(uint32_t))) return std::nullopt;
    return load<uint32_t>(at);
}

bool Index::block_matches(uint32_t b, const uint8_t* bytes) const {
    if (!block_crcs_) return true;  // version 1: nothing to check against
    const std::optional<uint32_t> crc = block_crc(b);
    return crc && crc32c(bytes, blocks_[b].length) == *crc;  // a damaged index vouches for nothing
}

uint32_t Index::block_of_record(uint64_t ordinal) const {
    const auto it = std::upper_bound(first_record_.begin(), first_record_.end(), ordinal);
    return static_cast<uint32_t>(it - first_record_.begin()) - 1;
}

bool Index::record_extents(uint32_t b, std::span<const uint32_t> ordinals,
                           std::vector<std::pair<uint64_t, uint64_t>>& out) const {
    if (!record_starts_ || b >= header_.block_count) return false;
    const BlockEntry& e = blocks_[b];
    // The block's lengths lie between its start and the next block's.
    const uint8_t* starts = record_starts_ + uint64_t{b} * sizeof(uint32_t);
    const bool last = b + 1 == header_.block_count;
    if (!checked(starts, last ? sizeof(uint32_t) : 2 * sizeof(uint32_t))) return false;
    uint64_t pos = load<uint32_t>(starts);
    const uint64_t stop = last ? record_lengths_size_ : load<uint32_t>(starts + sizeof(uint32_t));
    bool ok = pos <= stop && stop <= record_lengths_size_ && checked(record_lengths_ + pos, stop - pos);
    uint64_t at = e.offset;
    const uint64_t end = e.offset + e.length, first = first_record_[b];
    std::vector<std::pair<uint64_t, uint64_t>> got;
    got.reserve(ordinals.size());
    size_t next = 0;
    for (uint32_t k = 0; ok && k < e.packets; ++k) {
        uint32_t len = 0;
        ok = get_varint(record_lengths_, stop, &pos, &len) && len > 0 && len <= end - at;
        if (ok && next < ordinals.size() && ordinals[next] == first + k) {
            got.emplace_back(at, at + len);
            ++next;
        }
        at += len;
    }
    if (!ok || at != end || next != ordinals.size()) {
        *damaged_ = true;
        return false;
    }
    out.insert(out.end(), got.begin(), got.end());
    return true;
}

void Index::will_need_record_lengths(std::span<const uint32_t> blocks) const {
    static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t asked_to = 0;  // pages below are asked for already
    for (const uint32_t b : blocks) {
        if (!record_starts_ || b >= header_.block_count) return;
        // Its start (and the next block's) are read unchecked: only a hint is made of them.
        const uint64_t from = load<uint32_t>(record_starts_ + uint64_t{b} * sizeof(uint32_t));
        const uint64_t to = b + 1 < header_.block_count
                                ? load<uint32_t>(record_starts_ + (uint64_t{b} + 1) * sizeof(uint32_t))
                                : record_lengths_size_;
        if (from >= to || to > record_lengths_size_) continue;
        uintptr_t first = reinterpret_cast<uintptr_t>(record_lengths_ + from) & ~(page - 1);
        const uintptr_t end = reinterpret_cast<uintptr_t>(record_lengths_ + to);
        first = std::max(first, asked_to);
        if (first >= end) continue;
        (void)::madvise(reinterpret_cast<void*>(first), end - first, MADV_WILLNEED);
        asked_to = (end + page - 1) & ~(page - 1);
    }
}

uint64_t Index::key_count() const {
    uint64_t n = 0;
    for (const Table& t : tables_) n += t.count;
    return n;
}

// --- files -----------------------------------------------------------------------------------

uint64_t data_begin_of(const IndexHeader& header) {
    return header.data_begin != 0 ? header.data_begin : sizeof(pcap::FileHeader);
}

uint64_t damage_offset_of(const IndexHeader& header) {
    return header.damage_at != 0 ? header.damage_at : header.data_end;
}

namespace {

struct BuildOutcome {
    std::vector<uint8_t> bytes;
    IndexStats stats;
};

// The most bytes of non-packet pcapng blocks an index block may span before a packet.
constexpr uint64_t kMaxGap = 1u << 30;

Result<BuildOutcome> build_from_source(const format::ByteSource& source, const format::CaptureHeader& header,
                                       int64_t mtime_ns, IndexBuildOptions options) {
    IndexBuilder builder(header, options);
    format::CaptureReader reader(source, header, static_cast<size_t>(std::min<uint64_t>(4u << 20, source.size())));
    format::Record r;
    uint64_t data_end = header.data_begin;
    while (reader.next(r)) {
        const format::Interface& interface = reader.interfaces()[r.interface];
        if (auto problem = link_type_problem(interface, r.offset); !problem.empty()) return runtime_error(problem);
        if (r.end - data_end > kMaxGap)
            return runtime_error("more than " + std::to_string(kMaxGap >> 20) +
                                 " MiB of non-packet blocks before the packet at offset " + std::to_string(r.offset) +
                                 "; not indexed");
        builder.add(r, interface);
        data_end = r.end;
    }
    uint32_t flags = reader.layout_after_data() ? kIndexLayoutAfterData : 0u;
    BuildOutcome out;
    switch (reader.problem()) {
        case format::CaptureReader::Problem::none: break;
        case format::CaptureReader::Problem::io: return runtime_error(reader.error());
        case format::CaptureReader::Problem::truncated: flags |= kIndexTruncatedTail; break;
        default: flags |= kIndexCorruptTail; break;
    }
    if (reader.failed()) out.stats.warning = reader.error() + "; indexed up to it";
    if (options.version >= 2 && !builder.checksum_blocks(source))
        return runtime_error("cannot read the file back to checksum its blocks");
    out.bytes = builder.finish(source.size(), mtime_ns, data_end, flags, reader.failed() ? reader.position() : 0,
                               &out.stats);
    return out;
}

}  // namespace

Result<std::vector<uint8_t>> build_index_bytes(std::span<const uint8_t> pcap, IndexBuildOptions options,
                                               IndexStats* stats) {
    format::MemorySource source(pcap);
    auto header = format::read_header(source);
    if (!header) return header.error();
    auto out = build_from_source(source, header.value(), 0, options);
    if (!out) return out.error();
    if (stats) *stats = out->stats;
    return std::move(out->bytes);
}

Result<IndexStats> build_index(const std::string& pcap_path, IndexBuildOptions options) {
    const auto started = std::chrono::steady_clock::now();
    auto file = open_stored_capture(pcap_path);
    if (!file) return file.error().context(pcap_path);
    format::OpenFile& f = *file.value();
    auto header = format::read_header(f);
    if (!header) return header.error().context(pcap_path);
    f.advise_sequential();
    auto built = build_from_source(f, header.value(), f.mtime_ns(), options);
    if (!built) return built.error().context(pcap_path);
    {
        auto again = open_stored_capture(pcap_path);
        if (!again || again.value()->size() != f.size() || again.value()->mtime_ns() != f.mtime_ns())
            return runtime_error(pcap_path + ": the file changed while it was indexed");
    }

    const std::string final_path = layout::index_name(pcap_path);
    if (const IoStatus written = layout::atomic_write(final_path, built->bytes, kIndexMode); !written.ok())
        return runtime_error(final_path + ": " + written.message());
    IndexStats stats = built->stats;
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return stats;
}

std::string index_staleness(const IndexHeader& h, int64_t index_mtime_ns, uint64_t pcap_size, int64_t pcap_mtime_ns,
                            int64_t pcap_ctime_ns) {
    if (h.pcap_size != pcap_size)
        return "indexed at " + std::to_string(h.pcap_size) + " bytes, file now has " + std::to_string(pcap_size);
    if (h.pcap_mtime_ns != pcap_mtime_ns) return "file modified since it was indexed";
    // Strictly later: the indexer writes the index after the writer's rename, usually
    // within the same tick of the kernel's coarse file-time clock.
    if (pcap_ctime_ns > index_mtime_ns)
        return "file changed at " + format_utc_ns(static_cast<uint64_t>(pcap_ctime_ns)) +
               ", after it was indexed (its mtime was kept)";
    return "";
}

LoadedIndex load_index(const std::string& pcap_path, uint64_t pcap_size, int64_t pcap_mtime_ns) {
    LoadedIndex out;
    const std::string path = layout::index_name(pcap_path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return out;
        out.state = IndexState::corrupt;
        out.problem = "open: " + errno_text(errno);
        return out;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        out.state = IndexState::corrupt;
        out.problem = "fstat: " + errno_text(errno);
        ::close(fd);
        return out;
    }
    // Mapped, not read: no copy, and the page cache serves repeated queries. Index files
    // are only ever replaced by rename, never truncated in place, so the mapping stays
    // valid while it is used.
    const size_t size = static_cast<size_t>(st.st_size);
    Result<Index> ix = runtime_error("empty file");
    void* map = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (map != MAP_FAILED) {
        // A lookup reads a version-3 index in pieces, each checked as it is read
        // (Index::checked): the pages it touches, not the readahead window around each
        // (8 MiB on some virtual disks: every index a query opens, whole). The header,
        // section table and block table, which parse() reads, in one request.
        ::madvise(map, size, MADV_RANDOM);
        const auto* header = static_cast<const IndexHeader*>(map);
        if (size >= sizeof(IndexHeader) && header->version >= 3)
            ::madvise(map,
                      std::min<uint64_t>(size, sizeof(IndexHeader) + kSectionCount * sizeof(SectionEntry) +
                                                   uint64_t{header->block_count} * sizeof(BlockEntry)),
                      MADV_WILLNEED);
        else
            ::madvise(map, size, MADV_SEQUENTIAL);  // older versions are checked whole at once
        std::shared_ptr<const void> keeper(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
        ix = Index::parse(static_cast<const uint8_t*>(map), size, std::move(keeper));
    } else {
        std::vector<uint8_t> bytes(size);
        size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<size_t>(n);
        }
        bytes.resize(got);
        ix = Index::parse(std::move(bytes));
    }
    ::close(fd);
    if (!ix) {
        out.state = IndexState::corrupt;
        out.problem = ix.error().message;
        return out;
    }
    struct stat pcap_st {};
    int64_t pcap_ctime_ns = ::stat(pcap_path.c_str(), &pcap_st) == 0 ? stat_ctime_ns(pcap_st) : 0;
    // Compressed: the compressor rewrites the index after the compressed file is in place
    // (archive/compress.hpp), so its ctime is checked like the plain file's.
    if (pcap_ctime_ns == 0 && ::stat(layout::compressed_name(pcap_path).c_str(), &pcap_st) == 0)
        pcap_ctime_ns = stat_ctime_ns(pcap_st);
    if (std::string why = index_staleness(ix->header(), stat_mtime_ns(st), pcap_size, pcap_mtime_ns, pcap_ctime_ns);
        !why.empty()) {
        out.state = IndexState::stale;
        out.problem = std::move(why);
        return out;
    }
    out.state = IndexState::valid;
    out.index = std::move(ix.value());
    return out;
}

}  // namespace linecap
