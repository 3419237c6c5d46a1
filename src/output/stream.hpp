// The hand-off between one worker (producer) and the writer (consumer) for one stream,
// i.e. one (port, queue). Blocks circulate: free ring → worker fills → full ring →
// writer writes → free ring. The number of blocks is fixed at start; when the free ring
// is empty the worker drops (writer_full) instead of waiting.
#pragma once

#include <cstdint>
#include <string>

#include "archive/stream_id.hpp"
#include "output/block.hpp"
#include "util/spsc_ring.hpp"

namespace linecap {

struct Stream {
    Stream(StreamId id_, uint32_t index_, size_t blocks)
        : id(std::move(id_)), index(index_), free_blocks(blocks), full_blocks(blocks) {}

    const StreamId id;
    const uint32_t index;
    uint32_t snaplen = 262144;       // written into the file header
    SpscRing<WriteBlock> free_blocks;  // writer → worker
    SpscRing<WriteBlock> full_blocks;  // worker → writer
};

}  // namespace linecap
