// libFuzzer target: the capture file reader (pcap, pcapng) and the index builder on
// arbitrary bytes.
//
// Whatever the input (truncated, corrupt, hostile), the reader must stop cleanly with an
// error naming an offset, never read out of bounds, and give the same records through its
// buffer (a source that is not memory, refilled at every record) as over memory; an
// index built from the records must load again, agree with them, and its blocks read on
// their own must give the same packets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "format/capture_reader.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"
#include "packet/packet_keys.hpp"

using namespace linecap;
using namespace linecap::store;

namespace {

class PreadOnly final : public format::ByteSource {
public:
    explicit PreadOnly(std::span<const uint8_t> b) : m_(b) {}
    ssize_t read_at(void* dst, size_t n, uint64_t offset) const override { return m_.read_at(dst, n, offset); }
    uint64_t size() const override { return m_.size(); }

private:
    format::MemorySource m_;
};

struct Seen {
    uint64_t offset, end, ts_ns;
    uint32_t caplen, len;
    bool operator==(const Seen&) const = default;
};

void check(bool ok) {
    if (!ok) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> bytes(data, size);
    const format::MemorySource memory(bytes);
    auto header = format::read_header(memory);
    if (!header.ok()) {
        check(!header.error().message.empty());
        return 0;
    }
    std::vector<Seen> seen;
    format::CaptureReader reader(memory, header.value());
    format::Record r;
    uint64_t last_end = header->data_begin;
    while (reader.next(r)) {
        check(r.offset >= last_end && r.end > r.offset && r.end <= size);
        check(r.caplen <= linecap::pcap::kMaxSnaplen && r.data >= data && r.data + r.caplen <= data + size);
        check(r.interface < reader.interfaces().size());
        seen.push_back({r.offset, r.end, r.ts_ns, r.caplen, r.len});
        last_end = r.end;
    }
    if (reader.failed()) check(reader.error().find("offset") != std::string::npos);

    // The same through a one-byte buffer that grows and refills.
    PreadOnly slow(bytes);
    format::CaptureReader buffered(slow, header.value(), 1);
    size_t i = 0;
    while (buffered.next(r)) {
        check(i < seen.size() && seen[i] == Seen{r.offset, r.end, r.ts_ns, r.caplen, r.len});
        PacketKeys keys;
        extract_keys(r.data, r.caplen, keys);
        ++i;
    }
    check(i == seen.size() && buffered.error() == reader.error());

    IndexBuildOptions o;
    o.block_bytes = 4096;
    auto built = build_index_bytes(bytes, o);
    if (!built.ok()) {
        // Only a packet the store cannot index (not Ethernet, a huge gap) stops a build.
        check(!built.error().message.empty());
        return 0;
    }
    auto index = Index::parse(std::move(built.value()));
    check(index.ok());  // the builder's output always validates
    const IndexHeader& h = index->header();
    check(h.packets == seen.size());
    // Every block read on its own gives its packets (unless the layout says it cannot).
    if (h.flags & kIndexLayoutAfterData) return 0;
    size_t next = 0;
    format::CaptureReader ranged(slow, header.value(), 1);
    for (const BlockEntry& b : index->blocks()) {
        ranged.seek(b.offset, b.offset + b.length);
        for (uint32_t k = 0; k < b.packets; ++k) {
            check(ranged.next(r));
            check(next < seen.size() && seen[next] == Seen{r.offset, r.end, r.ts_ns, r.caplen, r.len});
            check(r.ts_ns >= b.min_ts_ns && r.ts_ns <= b.max_ts_ns);
            ++next;
        }
        check(!ranged.next(r) && !ranged.failed());
    }
    return 0;
}
