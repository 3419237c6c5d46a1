// libFuzzer target: a filter expression (extract's and the API's query filter, a port's
// `filter:` in the configuration) and one packet.
//
// Input: the expression, a NUL, the packet (an Ethernet frame). The expression compiles
// under the complexity bound (filter/pcap_program.hpp) or is refused with one line; a
// compiled one is analysed for index pruning (store/filter_plan.hpp). The invariant that
// makes pruning safe is checked end to end: when the filter matches the packet, the index
// of a one-packet file holding it must keep that packet's block among the candidates. A
// failure here would be an extraction that silently misses a matching packet.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "format/capture_reader.hpp"
#include "format/pcap_format.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"

using namespace linecap;
using namespace linecap::store;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

// A nanosecond pcap holding `frame` as its only packet.
std::vector<uint8_t> one_packet_pcap(std::span<const uint8_t> frame) {
    std::vector<uint8_t> file(sizeof(linecap::pcap::FileHeader) + linecap::pcap::record_size(frame.size()));
    const linecap::pcap::FileHeader h = linecap::pcap::file_header(linecap::pcap::kMaxSnaplen);
    std::memcpy(file.data(), &h, sizeof h);
    linecap::pcap::encode_record_header(file.data() + sizeof h, 1796004600000000000ull, static_cast<uint32_t>(frame.size()),
                               static_cast<uint32_t>(frame.size()));
    if (!frame.empty()) std::memcpy(file.data() + sizeof h + sizeof(linecap::pcap::RecordHeader), frame.data(), frame.size());
    return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const std::string expression(reinterpret_cast<const char*>(data), nul ? static_cast<size_t>(nul - data) : size);
    const std::span<const uint8_t> frame = nul ? std::span<const uint8_t>(nul + 1, data + size) : std::span<const uint8_t>();

    auto filter = CompiledFilter::compile(expression);
    if (!filter.ok()) {
        // One line, whatever the expression holds.
        check(!filter.error().message.empty() && filter.error().message.find('\n') == std::string::npos);
        return 0;
    }
    const FilterPlan& plan = filter->plan();
    check(!plan.describe().empty());
    if (frame.size() < 14 || frame.size() > 65535) return 0;

    const std::vector<uint8_t> file = one_packet_pcap(frame);
    const format::MemorySource source(file);
    auto header = format::read_header(source);
    check(header.ok());
    format::CaptureReader reader(source, header.value());
    format::Record record;
    check(reader.next(record));
    if (!filter->matches(record) || !plan.prunable) return 0;

    auto built = build_index_bytes(file);
    check(built.ok());
    auto index = Index::parse(std::move(built.value()));
    check(index.ok() && index->header().block_count == 1);
    check(candidate_blocks(index.value(), plan).test(0));  // a matching packet is never pruned
    return 0;
}
