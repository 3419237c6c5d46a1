// Writing a capture file as a stream (extractions, the retrieval API): a nanosecond pcap
// or a pcapng section whose interfaces are added as they are first needed, through one
// buffer into a sink (a descriptor, or anything that takes bytes).
//
// pcap has one link type and one snap length for the whole file, so which stream a
// packet came from is lost; pcapng keeps it: one Interface Description Block per source
// (the store names them "<port>:<queue>"), each written just before its first packet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "format/capture_reader.hpp"
#include "format/pcapng_blocks.hpp"
#include "util/result.hpp"

namespace linecap::format {

class ByteSink {
public:
    virtual ~ByteSink() = default;
    virtual Status write(const uint8_t* data, size_t n) = 0;
};

// write(2) to a descriptor, retrying short writes and EINTR.
class FdSink final : public ByteSink {
public:
    explicit FdSink(int fd) : fd_(fd) {}
    Status write(const uint8_t* data, size_t n) override;

private:
    int fd_;
};

class CaptureWriter {
public:
    CaptureWriter(ByteSink& sink, FileKind kind, size_t buffer_size = 1u << 20);

    // The file header. pcap: snaplen and the 32-bit link-type field; pcapng: an SHB
    // naming the application (snaplen and link type are per interface).
    Status begin(uint32_t snaplen, uint32_t link_field, const std::string& user_application);
    // pcapng: describes one more interface (its IDB goes out now) and returns its id;
    // pcap: 0, nothing written.
    Result<uint32_t> add_interface(const pcapng::InterfaceInfo& interface);
    Status write(uint32_t interface, uint64_t ts_ns, uint32_t caplen, uint32_t len, const uint8_t* data);
    Status flush();

    FileKind kind() const { return kind_; }
    uint64_t packets() const { return packets_; }
    uint64_t bytes() const { return bytes_; }  // records only
    // Everything accepted so far (file header, interface descriptions, records), flushed
    // or not: what the output holds after the next flush. With the two sizes below, a
    // caller keeps an output within a byte limit at block boundaries.
    uint64_t size() const { return size_; }
    uint64_t record_size(uint32_t caplen) const;
    uint64_t interface_size(const pcapng::InterfaceInfo& interface) const;

private:
    Status put(const void* data, size_t n);

    ByteSink& sink_;
    FileKind kind_;
    size_t buffer_size_;
    // Not zero-filled: only the bytes put are written. Most answers are far smaller than
    // the buffer, and filling it would cost more than writing them.
    std::unique_ptr<uint8_t[]> buffer_;
    size_t used_ = 0;
    uint32_t interfaces_ = 0;
    uint64_t packets_ = 0;
    uint64_t bytes_ = 0;
    uint64_t size_ = 0;
};

}  // namespace linecap::format
