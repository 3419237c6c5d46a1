// The per-file index: on-disk format, builder and validating reader.
//
// One index per finished capture file, layout::index_name() beside it. It maps time
// to file offsets at block granularity and lists, for every IPv4/IPv6 address, TCP/UDP/
// SCTP port and IP protocol seen in the file (packet/packet_keys.hpp), the blocks that
// contain it ("postings": sorted block numbers, delta+varint coded, or a bitmap when
// that is smaller). Chosen over per-block Bloom filters by measurement: see
// doc/store.md and bench/store/index_variants.cpp.
//
// Version 2 (written since issue 32; version 1 files are still read, and `linecap
// index` and the daemon's start-up sweep rebuild them) adds, so that a query reads the records it needs and not the
// 256 KiB blocks around them, and so that every block read from the archive tier is
// checked:
//   - per block the CRC-32C of its bytes (section block_crcs);
//   - per record its length (section records: per block the position of its first
//     length, then one varint per record), so a record's byte range is known without
//     reading its block;
//   - for each port and address in at most 1 in 8 of the file's records, the records
//     that hold it: right after the key's block list in the postings section (its
//     PostingRef flagged, bit 30 of count_enc), varint count then delta+varint record
//     ordinals (the n-th packet of the file is ordinal n). Keys in more records and
//     protocols stay block-level: a query intersects the record lists of its selective
//     keys and keeps the records whose blocks the other keys allow.
//
// Version 3 (written since the query table of issue 32) is version 2 with its checksums
// per 4 KiB page (section chunk_crcs) over the sections a lookup reads only in part (key
// tables, postings, block CRCs, records). A query checks what it touches, the first time
// it touches it: the index of a file that a lookup rules out costs its header, its block
// table and a few pages of key table, not the whole file read and checksummed (the
// 17 MB of indexes of a 1 GB store were a fifth of a cold query that matched nothing).
// Index::verify() checks all of it (`linecap index` does, before it calls an index up to
// date; the archive reader does, having fetched the index whole).
//
// Layout (little-endian, all offsets from the start of the index file):
//
//   IndexHeader      128 bytes: magic "LCAPIDX\n", version, what was indexed (pcap size
//                    and mtime, for staleness), summary (packets, time span, snaplen), and
//                    the CRC-32C of header + section table
//   SectionEntry[n]  32 bytes each: type, CRC-32C of the section, offset, size, count
//                    (n = 6 in version 1, 8 in version 2, 9 in version 3)
//   sections         blocks:     BlockEntry[count] (32 bytes each), contiguous, in file order
//                    protos:     u8 key[count],  pad to 8,  PostingRef[count]
//                    ports:      u16 key[count], pad to 8,  PostingRef[count]
//                    addr4:      u32 key[count], pad to 8,  PostingRef[count]
//                    addr6:      16-byte key[count],        PostingRef[count]
//                    postings:   the block lists the PostingRefs point into (v2: each
//                                delta-coded port/address list followed by its records)
//                    block_crcs: (v2) u32 crc[count = blocks], pad to 8
//                    records:    (v2) u32 first[count = blocks] (offset of the block's first
//                                length from the end of this array), then varint record
//                                lengths, each the record and any non-packet pcapng blocks
//                                before it, summing to the block's length
//                    chunk_crcs: (v3) u32 crc[count], pad to 8: the CRC-32C of each
//                                page (kIndexChunkBytes) of the index file's bytes from the
//                                end of the blocks section to the start of this one
//                                (sections 2 to 8, in order): the part of each page in that
//                                range, so the first and last chunks may be shorter
//
// Keys are sorted ascending (numeric value; IPv6 bytewise) and unique. The reader
// verifies the header, the section table and the block table before it hands out an
// Index (versions 1 and 2: every checksum and every structural invariant), so an index
// that loads lies within the pcap file it names. What a lookup reads after that is
// checked as it is read (version 3: its chunks' checksums), and record lists and
// lengths when they are decoded (bounded; against the block lists and block lengths): a
// chunk that does not match, or a list that does not decode, makes that lookup answer
// "every block" and the index damaged().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "archive/postings_table.hpp"
#include "format/capture_reader.hpp"
#include "packet/packet_keys.hpp"
#include "util/result.hpp"

namespace linecap {

inline constexpr char kIndexMagic[8] = {'L', 'C', 'A', 'P', 'I', 'D', 'X', '\n'};
inline constexpr uint32_t kIndexVersion = 3;        // what the builder writes
inline constexpr uint32_t kIndexVersionOldest = 1;  // the oldest the reader reads
inline constexpr uint32_t kDefaultIndexBlockBytes = 256 * 1024;
inline constexpr uint32_t kIndexChunkBytes = 4096;  // version 3: bytes per chunk checksum

enum IndexFlags : uint32_t {
    kIndexMonotonic = 1u << 0,      // timestamps never decrease within the file
    kIndexTruncatedTail = 1u << 1,  // the file ends with bytes that are not a complete record
    kIndexCorruptTail = 1u << 2,    // indexing stopped at an implausible record
    // pcapng: a section header or interface block comes after the first packet, so a
    // block cannot be read on its own (it may need an interface described before it):
    // the index still prunes the file as a whole, but the file is read from its start.
    kIndexLayoutAfterData = 1u << 3,
};

// IndexHeader::pcap_flags
enum IndexPcapFlags : uint32_t {
    kIndexNanosecond = 1u << 0,     // pcap: ns timestamps
    kIndexSwapped = 1u << 1,        // written in the other byte order (pcapng: first section)
    kIndexPcapng = 1u << 2,
};

struct IndexHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_size;      // sizeof(IndexHeader)
    uint64_t pcap_size;        // the capture file when it was indexed
    int64_t pcap_mtime_ns;
    uint64_t data_end;         // end of the last complete record indexed
    uint64_t packets;
    uint64_t captured_bytes;   // sum of record sizes (headers + captured data)
    uint64_t min_ts_ns;        // 0 when there are no packets
    uint64_t max_ts_ns;
    uint32_t snaplen;          // pcap header / pcapng first interface
    uint32_t linktype;         // pcap header field / pcapng first interface
    uint32_t pcap_flags;       // IndexPcapFlags
    uint32_t flags;            // IndexFlags
    uint32_t block_target;     // bytes per block the builder aimed at
    uint32_t block_count;
    uint32_t section_count;
    uint32_t header_crc;       // CRC-32C of header (this field 0) + section table
    uint64_t data_begin;       // where block 0 starts: after the pcap header or the first
                               // pcapng SHB (0 in indexes from before pcapng: 24)
    uint64_t damage_at;        // with kIndexTruncatedTail/kIndexCorruptTail: where (0 in
                               // older indexes: data_end)
    uint8_t reserved[8];
};
static_assert(sizeof(IndexHeader) == 128);

enum class SectionType : uint32_t {
    blocks = 1, protos = 2, ports = 3, addr4 = 4, addr6 = 5, postings = 6,
    block_crcs = 7, records = 8,  // version 2
    chunk_crcs = 9,               // version 3
};
// Sections of an index of `version`.
constexpr uint32_t index_section_count(uint32_t version) { return version >= 3 ? 9 : version >= 2 ? 8 : 6; }
inline constexpr uint32_t kSectionCount = index_section_count(kIndexVersion);

struct SectionEntry {
    uint32_t type;
    uint32_t crc;
    uint64_t offset;
    uint64_t size;
    uint64_t count;
};
static_assert(sizeof(SectionEntry) == 32);

struct BlockEntry {
    uint64_t offset;     // file offset of the block's first record (pcapng: or of the
                         // non-packet blocks before it)
    uint32_t length;     // bytes of whole records (pcapng: blocks)
    uint32_t packets;
    uint64_t min_ts_ns;
    uint64_t max_ts_ns;
};
static_assert(sizeof(BlockEntry) == 32);

struct PostingRef {
    uint32_t offset;       // into the postings section
    uint32_t count_enc;    // bit 31: bitmap of block_count bits; bit 30 (version 2): the
                           // key's records follow; bits 0..29: blocks in the list
};
static_assert(sizeof(PostingRef) == 8);

// A key as the filter analysis asks for it.
struct IndexKey {
    enum class Kind : uint8_t { proto, port, addr4, addr6 };
    Kind kind = Kind::proto;
    uint32_t value = 0;              // proto, port, addr4 (host order)
    std::array<uint8_t, 16> addr6{};
    bool operator==(const IndexKey&) const = default;
    std::string to_string() const;
};

// A set of blocks of one file, as a bitmap.
class BlockSet {
public:
    BlockSet() = default;
    BlockSet(uint32_t count, bool all);
    uint32_t size() const { return count_; }
    bool test(uint32_t i) const { return (bits_[i >> 6] >> (i & 63)) & 1; }
    void set(uint32_t i) { bits_[i >> 6] |= uint64_t{1} << (i & 63); }
    void intersect(const BlockSet& o);
    void unite(const BlockSet& o);
    uint32_t popcount() const;

private:
    uint32_t count_ = 0;
    std::vector<uint64_t> bits_;
};

struct IndexStats {
    uint64_t packets = 0;
    uint64_t blocks = 0;
    uint64_t pcap_bytes = 0;
    uint64_t index_bytes = 0;
    uint64_t keys = 0;             // distinct keys of all kinds
    uint64_t postings_entries = 0; // (key, block) pairs
    uint64_t record_entries = 0;   // (key, record) pairs in record lists (version 2)
    double seconds = 0;            // wall time to build
    std::string warning;           // the file ends in a truncated or corrupt record (indexed up to it)
};

struct IndexBuildOptions {
    uint32_t block_bytes = kDefaultIndexBlockBytes;
    // kIndexVersion, or an older one (2: checksums per section; 1: no block CRCs, no
    // record positions): tests, benches comparing them.
    uint32_t version = kIndexVersion;
};

// Accumulates the records of one capture file, in file order, and serialises the index.
// Blocks tile the file from header.data_begin to the end of the last record: pcapng
// blocks that are not packets belong to the index block of the packet after them.
class IndexBuilder {
public:
    IndexBuilder(const format::CaptureHeader& header, IndexBuildOptions options = {});
    // `interface`: of the record (pcapng: link type and snaplen of the first one go to the
    // header).
    void add(const format::Record& record, const format::Interface& interface);
    // `data_end` = end of the last complete record; `flags` = truncated/corrupt tail,
    // layout after data; `damage_at` = offset of the truncated or corrupt record.
    // Version 2: the CRC-32C of every block, read back from `source` (the capture file
    // the records came from) after the last add(); false when it cannot be read.
    bool checksum_blocks(const format::ByteSource& source);
    std::vector<uint8_t> finish(uint64_t pcap_size, int64_t pcap_mtime_ns, uint64_t data_end,
                                uint32_t flags, uint64_t damage_at = 0, IndexStats* stats = nullptr);

private:
    void close_block();
    std::vector<uint8_t> records_section() const;

    format::CaptureHeader header_;
    IndexBuildOptions options_;
    uint64_t next_offset_;               // where the next index block starts
    std::vector<BlockEntry> blocks_;
    std::vector<uint32_t> block_crcs_;     // checksum_blocks()
    std::vector<uint32_t> first_length_;   // per block: where its first record length is in lengths_
    std::vector<uint8_t> lengths_;         // varint record lengths, file order
    BlockEntry cur_{};
    bool cur_open_ = false;
    bool monotonic_ = true;
    uint64_t last_ts_ = 0;
    uint64_t packets_ = 0, captured_bytes_ = 0, min_ts_ = UINT64_MAX, max_ts_ = 0;
    PacketKeys keys_;
    // Each key's blocks (postings_table.hpp).
    PostingsTable<uint8_t> protos_;
    PostingsTable<uint16_t> ports_;
    PostingsTable<uint32_t> addr4_;
    PostingsTable<std::array<uint8_t, 16>> addr6_;
};

// A loaded, validated index.
//
// parse() verifies the header, the section table and the block table (sections within
// the file, contiguous blocks within the capture file, sane block counts); versions 1
// and 2 also every checksum, sorted keys and postings references. Version 3 checks the
// rest as lookups read it, chunk by chunk. The postings lists themselves are decoded
// lazily, bounds-checked. A chunk that does not match its checksum, or a list that does
// not decode (possible only for a crafted file whose checksums were recomputed), makes
// that lookup answer "all blocks" and sets damaged(). Copies share what has been checked.
class Index {
public:
    Index() = default;

    // Parses and validates `bytes` (the whole index file). Errors name what is wrong:
    // "bad magic", "checksum mismatch in header", "block 3 extends past the end of the
    // capture file", …
    static Result<Index> parse(std::vector<uint8_t> bytes);
    // The same over memory that `keeper` keeps alive (e.g. a mapping of the file).
    static Result<Index> parse(const uint8_t* data, size_t size, std::shared_ptr<const void> keeper);
    // Everything parse() left to the lookups: every chunk's checksum, sorted keys and
    // postings references, the record table. Errors as parse()'s ("checksum mismatch in
    // chunk 12 (bytes 79872..83968)").
    Result<void> verify() const;

    const IndexHeader& header() const { return header_; }
    std::span<const BlockEntry> blocks() const { return blocks_; }
    // Blocks that contain `key` (empty set when none).
    BlockSet lookup(const IndexKey& key) const;
    // Version 2: the records (file ordinals, ascending) that contain `key`; nullopt when
    // the index does not list them for this key (version 1, a protocol, a key in so many
    // blocks that only its blocks are listed, or a list that does not decode): then only
    // lookup() says where it is. An empty list when the file does not hold the key.
    std::optional<std::vector<uint32_t>> lookup_records(const IndexKey& key) const;
    uint32_t version() const { return header_.version; }
    // Version 2: the CRC-32C of block `b`'s bytes; nullopt in version 1.
    std::optional<uint32_t> block_crc(uint32_t b) const;
    // Whether `bytes` (blocks()[b].length of them) are block `b`'s as indexed: its CRC-32C
    // matches (version 1: true, there is nothing to check against).
    bool block_matches(uint32_t b, const uint8_t* bytes) const;
    // The ordinal of block `b`'s first record (b = block count: the packet count), and
    // the block holding record `ordinal`.
    uint64_t first_record(uint32_t b) const { return first_record_[b]; }
    uint32_t block_of_record(uint64_t ordinal) const;
    // Version 2: the byte range [begin, end) of each record of block `b` whose ordinal is
    // in `ordinals` (ascending, all in the block), appended to `out`; false (nothing
    // appended) when the index has no record lengths or they do not decode.
    bool record_extents(uint32_t b, std::span<const uint32_t> ordinals,
                        std::vector<std::pair<uint64_t, uint64_t>>& out) const;
    // Asks the kernel for the pages of record lengths of blocks `blocks` (ascending), so
    // that record_extents() of each then waits for no disk read of its own: a flow spread
    // over a file has a record in hundreds of blocks, each a page of the index.
    void will_need_record_lengths(std::span<const uint32_t> blocks) const;
    size_t bytes() const { return size_; }
    uint64_t key_count() const;
    bool damaged() const { return *damaged_; }

private:
    enum class Found { no, yes, damaged };
    BlockSet decode(const PostingRef& ref, uint64_t* end = nullptr) const;
    Found find(const IndexKey& key, PostingRef* ref) const;
    // Whether [p, p + n) of the index is as written: version 3 checks the chunks it
    // overlaps the first time (false, and damaged(), when one does not match); older
    // versions were checked whole by parse().
    bool checked(const uint8_t* p, uint64_t n) const;
    // The key tables' order and references, and the record table's starts.
    Result<void> check_tables() const;
    // A key's postings reference points into the postings and counts a possible number of
    // blocks (`kind`: IndexKey::Kind).
    bool valid_ref(const PostingRef& ref, int kind) const;

    std::shared_ptr<const void> keeper_;  // owns the bytes the tables point into
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    IndexHeader header_{};
    std::vector<BlockEntry> blocks_;
    struct Table {
        const uint8_t* keys = nullptr;
        const uint8_t* refs = nullptr;  // PostingRef[count], read with memcpy
        uint64_t count = 0;
    };
    Table tables_[4];  // by IndexKey::Kind
    const uint8_t* postings_ = nullptr;
    uint64_t postings_size_ = 0;
    std::vector<uint64_t> first_record_;        // per block, and the packet count after them
    const uint8_t* block_crcs_ = nullptr;       // version 2
    const uint8_t* record_starts_ = nullptr;    // version 2: u32 per block
    const uint8_t* record_lengths_ = nullptr;
    uint64_t record_lengths_size_ = 0;
    // Version 3: the checked region [lazy_begin_, lazy_end_) of the index, its chunks'
    // CRCs, and per chunk 0 (not checked yet), 1 (matches) or 2 (does not).
    uint64_t lazy_begin_ = 0, lazy_end_ = 0;
    const uint8_t* chunk_crcs_ = nullptr;
    std::shared_ptr<std::atomic<uint8_t>[]> chunk_state_;
    std::shared_ptr<bool> damaged_ = std::make_shared<bool>(false);
};

// The offset of index block 0 (legacy indexes: the pcap header's end).
uint64_t data_begin_of(const IndexHeader& header);
// Where the damage that ended indexing is (legacy indexes: data_end).
uint64_t damage_offset_of(const IndexHeader& header);

// Builds the index of a finished capture file: reads it once and writes
// layout::index_name(pcap_path) with layout::atomic_write (a reader sees the old index,
// none, or the new one). A file
// whose tail is truncated or corrupt is indexed up to its last complete record and the
// problem reported in IndexStats::warning. Errors: the file cannot be read, is not a
// pcap or pcapng file, has a packet whose link type is not Ethernet, or the index cannot
// be written.
Result<IndexStats> build_index(const std::string& pcap_path, IndexBuildOptions options = {});

// In-memory variant (tests, fuzzing): the index bytes of a capture file's image.
Result<std::vector<uint8_t>> build_index_bytes(std::span<const uint8_t> pcap, IndexBuildOptions options = {},
                                               IndexStats* stats = nullptr);

// Why an index cannot be used for a pcap file right now.
enum class IndexState { valid, missing, stale, corrupt };
struct LoadedIndex {
    IndexState state = IndexState::missing;
    std::string problem;  // for stale and corrupt: one line
    Index index;
};
// Why an index no longer describes its capture file ("" when it does): the file's size or
// mtime differs from what was indexed, or the file changed after the index was written —
// its ctime is later than the index file's mtime. The last catches bytes rewritten with
// the mtime set back (anyone can set an mtime; only the kernel sets a ctime). A chmod,
// chown or copy of the store also moves ctimes: those indexes are rebuilt too (`linecap
// index`, the daemon's start-up sweep), which costs time but never gives a wrong answer.
std::string index_staleness(const IndexHeader& header, int64_t index_mtime_ns, uint64_t pcap_size,
                            int64_t pcap_mtime_ns, int64_t pcap_ctime_ns);

// Loads and validates the index of `pcap_path` against the file as it is now: its size
// and mtime (`pcap_size`, `pcap_mtime_ns`, as the caller found them) and its ctime.
// Stale: index_staleness().
LoadedIndex load_index(const std::string& pcap_path, uint64_t pcap_size, int64_t pcap_mtime_ns);

}  // namespace linecap
