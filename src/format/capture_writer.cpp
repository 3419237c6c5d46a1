#include "format/capture_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"
#include "util/errno_text.hpp"

namespace linecap::format {

Status FdSink::write(const uint8_t* data, size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd_, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return runtime_error("write: " + errno_text(errno));
        data += w;
        n -= static_cast<size_t>(w);
    }
    return {};
}

CaptureWriter::CaptureWriter(ByteSink& sink, FileKind kind, size_t buffer_size)
    : sink_(sink), kind_(kind), buffer_size_(std::max<size_t>(buffer_size, 4096)),
      buffer_(std::make_unique_for_overwrite<uint8_t[]>(buffer_size_)) {}

Status CaptureWriter::put(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    size_ += n;
    while (n > 0) {
        if (used_ == buffer_size_) {
            if (auto s = flush(); !s) return s;
        }
        const size_t k = std::min(n, buffer_size_ - used_);
        std::memcpy(buffer_.get() + used_, p, k);
        used_ += k;
        p += k;
        n -= k;
    }
    return {};
}

Status CaptureWriter::begin(uint32_t snaplen, uint32_t link_field, const std::string& user_application) {
    if (kind_ == FileKind::pcap) {
        pcap::FileHeader h = pcap::file_header(snaplen);
        h.linktype = link_field;
        return put(&h, sizeof h);
    }
    const std::vector<uint8_t> shb = pcapng::section_header_block(user_application);
    return put(shb.data(), shb.size());
}

Result<uint32_t> CaptureWriter::add_interface(const pcapng::InterfaceInfo& interface) {
    if (kind_ == FileKind::pcap) return 0u;
    const std::vector<uint8_t> idb = pcapng::interface_block(interface);
    if (auto s = put(idb.data(), idb.size()); !s) return s.error();
    return interfaces_++;
}

Status CaptureWriter::write(uint32_t interface, uint64_t ts_ns, uint32_t caplen, uint32_t len, const uint8_t* data) {
    if (kind_ == FileKind::pcap) {
        uint8_t header[sizeof(pcap::RecordHeader)];
        pcap::encode_record_header(header, ts_ns, caplen, len);
        if (auto s = put(header, sizeof header); !s) return s;
        if (auto s = put(data, caplen); !s) return s;
    } else {
        uint8_t header[pcapng::kEpbHeaderSize];
        pcapng::encode_epb_header(header, ts_ns, caplen, len, interface);
        if (auto s = put(header, sizeof header); !s) return s;
        if (auto s = put(data, caplen); !s) return s;
        uint8_t trailer[8];
        pcapng::encode_epb_trailer(trailer, caplen);
        const size_t trailer_size = pcapng::padded(caplen) - caplen + pcapng::kEpbTrailerSize;
        if (auto s = put(trailer, trailer_size); !s) return s;
    }
    bytes_ += record_size(caplen);
    ++packets_;
    return {};
}

uint64_t CaptureWriter::record_size(uint32_t caplen) const {
    return kind_ == FileKind::pcap ? pcap::record_size(caplen) : pcapng::record_size(caplen);
}

uint64_t CaptureWriter::interface_size(const pcapng::InterfaceInfo& interface) const {
    return kind_ == FileKind::pcap ? 0 : pcapng::interface_block(interface).size();
}

Status CaptureWriter::flush() {
    if (used_ == 0) return {};
    auto s = sink_.write(buffer_.get(), used_);
    used_ = 0;
    return s;
}

}  // namespace linecap::format
