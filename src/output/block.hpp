// A write block: a large aligned buffer of whole pcap records for one stream (one port
// queue). The worker fills it; the writer thread writes it to the stream's current file
// with one syscall and hands it back. Blocks only ever contain complete records, so a
// file cut at any block boundary is a valid pcap file.
#pragma once

#include <cstdint>

namespace linecap {

struct WriteBlock {
    uint8_t* data = nullptr;       // aligned (4 KiB) storage, owned by the Writer (BlockMemory)
    uint32_t capacity = 0;
    uint32_t used = 0;             // bytes of complete records
    uint32_t packets = 0;          // records in the block
    uint32_t stream = 0;           // index of the owning stream
    uint64_t wire_bytes = 0;       // sum of original packet lengths (for metrics)
    uint64_t first_ts_ns = 0;      // timestamp of the first record (UTC ns)
    uint64_t last_ts_ns = 0;
    uint64_t first_tsc = 0;        // worker TSC when the first record went in (flush timer)
    // Set by the worker: the stream crossed a rotation boundary (wall-clock interval or
    // on-demand rotation) after this block, so the writer finalises the current file once
    // the block is written. A block may be empty and only carry this flag.
    bool rotate_after = false;
    // The last duplicate-suppression record written into the block (capture/dedup.hpp),
    // which forgets everything up to it when the worker takes the block again. Only the
    // worker reads or writes it.
    uint64_t dedup_last_seq = 0;

    uint32_t room() const { return capacity - used; }
    uint8_t* tail() { return data + used; }

    void reset() {
        used = 0;
        packets = 0;
        wire_bytes = 0;
        first_ts_ns = last_ts_ns = 0;
        first_tsc = 0;
        rotate_after = false;
    }
};

}  // namespace linecap
