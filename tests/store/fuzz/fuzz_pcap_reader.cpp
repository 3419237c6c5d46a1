// libFuzzer target: the capture file reader and the index builder on arbitrary bytes.
//
// Whatever the input (truncated, corrupt, hostile), the reader must stop cleanly with an
// error naming an offset, never read out of bounds; and an index built from the records
// it accepted must load again and agree with them (the builder's output always validates).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "store/filter_plan.hpp"
#include "store/index_format.hpp"
#include "store/packet_keys.hpp"
#include "store/pcap_file.hpp"

using namespace linecap::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> bytes(data, size);
    auto header = parse_pcap_header(bytes);
    if (!header.ok()) return 0;
    MemorySource source(bytes);
    // A tiny buffer exercises refills at every record boundary.
    RecordReader reader(source, header.value(), kPcapFileHeaderSize, size, 1);
    RawRecord r;
    PacketKeys keys;
    uint64_t packets = 0, last_end = kPcapFileHeaderSize;
    while (reader.next(r)) {
        if (r.offset != last_end || r.end() > size || r.caplen > header->caplen_limit()) abort();
        extract_keys(r.data, r.caplen, keys);
        last_end = r.end();
        ++packets;
    }
    if (reader.failed() && reader.error().empty()) abort();

    IndexStats stats;
    IndexBuildOptions o;
    o.block_bytes = 4096;
    auto built = build_index_bytes(bytes, o, &stats);
    if (!built.ok()) abort();  // the header parsed, so only I/O could fail, and memory cannot
    auto index = Index::parse(std::move(built.value()));
    if (!index.ok()) abort();  // the builder's output always validates
    const IndexHeader& h = index->header();
    if (h.packets != packets || h.data_end != last_end) abort();
    // Every key of every packet is found in the block that holds the packet.
    FilterPlan plan;
    plan.prunable = true;
    uint32_t block = 0;
    uint32_t in_block = 0;
    RecordReader again(source, header.value(), kPcapFileHeaderSize, size, 1);
    while (again.next(r) && block < h.block_count) {
        extract_keys(r.data, r.caplen, keys);
        for (unsigned i = 0; i < keys.n_ports; ++i) {
            IndexKey k;
            k.kind = IndexKey::Kind::port;
            k.value = keys.ports[i];
            if (!index->lookup(k).test(block)) abort();
        }
        for (unsigned i = 0; i < keys.n_addr4; ++i) {
            IndexKey k;
            k.kind = IndexKey::Kind::addr4;
            k.value = keys.addr4[i];
            plan.alternatives = {{k}};
            if (!candidate_blocks(index.value(), plan).test(block)) abort();
        }
        if (++in_block == index->blocks()[block].packets) {
            ++block;
            in_block = 0;
        }
    }
    return 0;
}
