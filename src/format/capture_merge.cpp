#include "format/capture_merge.hpp"

#include <algorithm>
#include <queue>

namespace linecap::format {

void MergedHeader::add(uint32_t snaplen, uint32_t link_field) {
    snaplen_ = std::max(snaplen_, effective_snaplen(snaplen));
    if (link_field_ && *link_field_ != link_field) link_fields_differ_ = true;
    link_field_ = link_field;
}

uint32_t MergedHeader::snaplen() const { return snaplen_ ? snaplen_ : pcap::kMaxSnaplen; }

uint32_t MergedHeader::link_field() const {
    return link_field_ && !link_fields_differ_ ? *link_field_ : pcap::kLinktypeEthernet;
}

std::optional<uint32_t> InterfaceIds::find(const CaptureReader& reader, uint32_t in) {
    if (reader.sections() != section_) {
        section_ = reader.sections();
        ids_.clear();
    }
    if (in < ids_.size() && ids_[in] >= 0) return static_cast<uint32_t>(ids_[in]);
    return std::nullopt;
}

void InterfaceIds::set(uint32_t in, uint32_t id) {
    if (ids_.size() <= in) ids_.resize(in + 1, -1);
    ids_[in] = id;
}

Result<MergeEnd> merge_by_time(std::vector<MergeEntry> inputs, CaptureWriter& writer, const MergeLimits& limits) {
    std::stable_sort(inputs.begin(), inputs.end(), [](const MergeEntry& a, const MergeEntry& b) {
        return a.start_bound != b.start_bound ? a.start_bound < b.start_bound : a.rank < b.rank;
    });
    const auto later = [](const MergeEntry* a, const MergeEntry* b) {
        const uint64_t ta = a->input->current().ts_ns, tb = b->input->current().ts_ns;
        return ta != tb ? ta > tb : a->rank > b->rank;
    };
    std::priority_queue<MergeEntry*, std::vector<MergeEntry*>, decltype(later)> heap(later);
    const auto head_ts = [&heap] { return heap.top()->input->current().ts_ns; };
    size_t next_input = 0;
    for (;;) {
        // Open every input that may hold a record at or before the heap's head.
        while (next_input < inputs.size() && (heap.empty() || inputs[next_input].start_bound <= head_ts())) {
            MergeEntry& e = inputs[next_input++];
            if (!e.input->open()) {
                e.input.reset();
                continue;
            }
            const MergeInput::Next n = e.input->advance();
            if (n == MergeInput::Next::stop) return MergeEnd::stopped;
            if (n == MergeInput::Next::record) heap.push(&e);
            else e.input.reset();
        }
        if (heap.empty()) return MergeEnd::complete;
        MergeEntry* e = heap.top();
        const Record& r = e->input->current();
        uint32_t id = 0;
        const uint64_t record_bytes = writer.record_size(r.caplen);
        if (writer.kind() == FileKind::pcapng) {
            auto out_id = e->input->output_interface(writer, record_bytes);
            if (!out_id) return out_id.error().context("output");
            if (!*out_id) return MergeEnd::max_bytes;
            id = **out_id;
        }
        if (limits.max_bytes && writer.size() + record_bytes > limits.max_bytes) return MergeEnd::max_bytes;
        if (limits.max_packets && writer.packets() >= limits.max_packets) return MergeEnd::max_packets;
        if (limits.should_stop && limits.should_stop()) return MergeEnd::stopped;
        heap.pop();
        if (auto s = writer.write(id, r.ts_ns, r.caplen, r.len, r.data); !s) return s.error().context("output");
        const MergeInput::Next n = e->input->advance();
        if (n == MergeInput::Next::stop) return MergeEnd::stopped;
        if (n == MergeInput::Next::record) heap.push(e);
        else e->input.reset();  // its file and buffer go as soon as it is done
    }
}

}  // namespace linecap::format
