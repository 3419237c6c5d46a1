#include "format/pcapng_blocks.hpp"

#include <cstring>

#include "format/pcapng_format.hpp"

namespace linecap::pcapng {
namespace {

// Builds one block: type, length, body, options, length.
class BlockBuilder {
public:
    explicit BlockBuilder(uint32_t type) {
        u32(type);
        u32(0);  // total length, patched in finish()
    }

    void u16(uint16_t v) { raw(&v, sizeof v); }
    void u32(uint32_t v) { raw(&v, sizeof v); }
    void u64(uint64_t v) { raw(&v, sizeof v); }
    // A timestamp as pcapng stores it: upper 32 bits, then lower 32 bits.
    void timestamp(uint64_t units) {
        u32(static_cast<uint32_t>(units >> 32));
        u32(static_cast<uint32_t>(units));
    }

    void option(uint16_t code, const void* value, uint16_t length) {
        u16(code);
        u16(length);
        raw(value, length);
        pad();
    }
    void option(uint16_t code, const std::string& text) {
        // Option values are at most 65535 bytes; longer text is cut (descriptions only).
        const size_t n = std::min<size_t>(text.size(), 0xfffcu);
        option(code, text.data(), static_cast<uint16_t>(n));
    }
    void option_u64(uint16_t code, uint64_t v) { option(code, &v, sizeof v); }
    void option_timestamp(uint16_t code, uint64_t units) {
        const uint32_t words[2] = {static_cast<uint32_t>(units >> 32), static_cast<uint32_t>(units)};
        option(code, words, sizeof words);
    }

    // Ends the options (opt_endofopt) and the block.
    std::vector<uint8_t> finish() {
        u16(kOptEndOfOpt);
        u16(0);
        const uint32_t total = static_cast<uint32_t>(bytes_.size() + 4);
        u32(total);
        std::memcpy(bytes_.data() + 4, &total, sizeof total);
        return std::move(bytes_);
    }

private:
    void raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + n);
    }
    void pad() { bytes_.resize(padded(static_cast<uint32_t>(bytes_.size())), 0); }

    std::vector<uint8_t> bytes_;
};

constexpr uint8_t kNanosecondResolution = 9;

}  // namespace

std::vector<uint8_t> section_header_block(const std::string& user_application) {
    BlockBuilder shb(kSectionHeaderBlock);
    shb.u32(kByteOrderMagic);
    shb.u16(1);  // major
    shb.u16(0);  // minor
    shb.u64(~uint64_t{0});  // section length: -1, not known in advance
    shb.option(kShbUserAppl, user_application);
    return shb.finish();
}

std::vector<uint8_t> interface_block(const InterfaceInfo& interface) {
    BlockBuilder idb(kInterfaceDescriptionBlock);
    idb.u16(interface.link_type);
    idb.u16(0);  // reserved
    idb.u32(interface.snaplen);
    idb.option(kIfName, interface.name);
    if (!interface.description.empty()) idb.option(kIfDescription, interface.description);
    idb.option(kIfTsresol, &kNanosecondResolution, 1);
    if (!interface.comment.empty()) idb.option(kOptComment, interface.comment);
    return idb.finish();
}

std::vector<uint8_t> file_header(const InterfaceInfo& interface, const std::string& user_application) {
    std::vector<uint8_t> out = section_header_block(user_application);
    const std::vector<uint8_t> idb = interface_block(interface);
    out.insert(out.end(), idb.begin(), idb.end());
    return out;
}

std::vector<uint8_t> statistics_block(const IsbCounts& counts) {
    BlockBuilder isb(kInterfaceStatisticsBlock);
    isb.u32(0);  // interface id
    isb.timestamp(counts.timestamp_ns);
    isb.option_timestamp(kIsbStartTime, counts.start_ns);
    isb.option_timestamp(kIsbEndTime, counts.end_ns);
    isb.option_u64(kIsbIfRecv, counts.ifrecv);
    isb.option_u64(kIsbIfDrop, counts.ifdrop);
    isb.option_u64(kIsbFilterAccept, counts.filteraccept);
    if (!counts.comment.empty()) isb.option(kOptComment, counts.comment);
    return isb.finish();
}

}  // namespace linecap::pcapng
