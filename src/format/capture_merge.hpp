// Many capture inputs merged into one output in timestamp order: the local extraction
// (store/extract.cpp: one input per capture file) and the fan-out client (api/remote.cpp:
// one input per appliance's answer) both write through this merge.
//
// The order is (timestamp, rank): equal timestamps go to the input of lower rank (file
// name order, appliance order). An input may be opened late: it is opened only when the
// merge reaches its start bound (no record of it is earlier), so a query over many files
// holds only those that overlap the records being written.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "util/result.hpp"

namespace linecap::format {

// What the header of a merged output says: the largest snap length of the inputs, and
// their link-type field when they all agree (else plain Ethernet).
class MergedHeader {
public:
    void add(uint32_t snaplen, uint32_t link_field);
    uint32_t snaplen() const;
    uint32_t link_field() const;
    // The inputs differ in their link-type field (e.g. in its FCS bits): a pcap output,
    // which has one, says plain Ethernet; a pcapng one keeps each input's.
    bool link_fields_differ() const { return link_fields_differ_; }

private:
    uint32_t snaplen_ = 0;
    std::optional<uint32_t> link_field_;
    bool link_fields_differ_ = false;
};

// The output interface of each interface of one input (pcapng output), kept per section of
// the input's reader: an input may start a new section, whose interfaces have new ids.
class InterfaceIds {
public:
    // The output id of interface `in` of the reader's current section; nullopt while it
    // has not been described.
    std::optional<uint32_t> find(const CaptureReader& reader, uint32_t in);
    void set(uint32_t in, uint32_t id);

private:
    uint32_t section_ = 0;
    std::vector<int64_t> ids_;  // -1: not described
};

// One input of the merge.
class MergeInput {
public:
    enum class Next { record, end, stop };  // stop: the whole merge ends ("stopped")

    virtual ~MergeInput() = default;
    // Called once, when the merge reaches the input; false: it has nothing to give.
    virtual bool open() { return true; }
    // Moves current() to the next record to write.
    virtual Next advance() = 0;
    virtual const Record& current() const = 0;
    // pcapng output: the output interface of current(), described through `writer` when
    // new; nullopt when describing it and then `record_bytes` would take the output past
    // the merge's max_bytes.
    virtual Result<std::optional<uint32_t>> output_interface(CaptureWriter& writer, uint64_t record_bytes) = 0;
};

struct MergeEntry {
    uint64_t start_bound = 0;  // no record of the input is earlier
    size_t rank = 0;           // equal timestamps: the lower rank first
    std::unique_ptr<MergeInput> input;
};

struct MergeLimits {
    uint64_t max_bytes = 0;             // stop before the record that would pass it; 0 = none
    uint64_t max_packets = 0;           // stop after this many records; 0 = none
    std::function<bool()> should_stop;  // asked before each record
};

enum class MergeEnd { complete, max_bytes, max_packets, stopped };

// Writes every input's records to `writer` (its header already begun) in (timestamp,
// rank) order, opening each input when the merge reaches its start bound and releasing
// it when it is done. Errors: the writer's (the output's) only; the caller flushes.
Result<MergeEnd> merge_by_time(std::vector<MergeEntry> inputs, CaptureWriter& writer, const MergeLimits& limits);

}  // namespace linecap::format
