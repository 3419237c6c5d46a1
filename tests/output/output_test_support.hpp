// Helpers shared by the output tests: temporary directories and tmpfs mounts, packets
// and blocks built exactly as a worker builds them, pcap files read back with libpcap,
// a worker stand-in that feeds a Writer's stream, and a spdlog capture.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "output/block.hpp"
#include "output/stream.hpp"

namespace linecap::test {

// mkdtemp under `base`, removed (recursively) on destruction.
class TempDir {
public:
    explicit TempDir(const std::string& base = "/tmp");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    std::vector<std::string> names() const;  // sorted, without "." and ".."

private:
    std::string path_;
};

// A file system mounted on a fresh TempDir (tests run as root); unmounted on destruction.
class ScratchMount {
public:
    // nullptr (with `why` set) when mounting is not possible here: the caller skips.
    static std::unique_ptr<ScratchMount> mount(const std::string& type, const std::string& options,
                                               std::string& why, bool read_only = false);
    ~ScratchMount();

    const TempDir& dir() const { return dir_; }
    const std::string& path() const { return dir_.path(); }
    // Changes mount options in place (e.g. "size=8m"), or makes it read-only / writable.
    bool remount(const std::string& options, bool read_only = false);

private:
    ScratchMount(std::string type) : type_(std::move(type)) {}
    TempDir dir_;
    std::string type_;
    bool mounted_ = false;
};

struct Packet {
    uint64_t ts_ns = 0;
    uint32_t len = 0;             // wire length
    std::vector<uint8_t> bytes;   // captured: the first min(len, snaplen) bytes
    bool operator==(const Packet&) const = default;
};

// A packet whose contents derive from its timestamp, so every packet is distinct.
Packet make_packet(uint64_t ts_ns, uint32_t len, uint32_t snaplen = 262144);

// `count` packets starting at `first_ts_ns`, 1 µs apart, with lengths cycling through a
// spread of sizes (60 … 1514).
std::vector<Packet> make_packets(size_t count, uint64_t first_ts_ns, uint32_t snaplen = 262144);

// Appends one record as a worker does (pcap::encode_record_header + data) and updates
// used/packets/wire_bytes/timestamps. False when the block has no room.
bool append_record(WriteBlock& block, const Packet& packet);
// The same in the given format (pcapng: an Enhanced Packet Block on interface 0).
bool append_record(WriteBlock& block, const Packet& packet, FileKind format);

size_t record_bytes(std::span<const Packet> packets);

// The exact bytes a pcap file with these records must have.
std::vector<uint8_t> pcap_file_bytes(uint32_t snaplen, std::span<const Packet> packets);

std::vector<uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, std::span<const uint8_t> bytes);

// A pcap file read with libpcap at nanosecond precision.
struct PcapRead {
    std::string error;             // open failure or a read error (e.g. truncated record)
    uint32_t snaplen = 0;
    std::vector<Packet> packets;
};
PcapRead read_with_libpcap(const std::string& path);

// Polls `condition` until it holds or `timeout` passes (waiting for another thread's
// progress; never a substitute for a condition).
bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

// The worker side of one stream: takes free blocks, fills them with whole records and
// hands them over, as the capture loop does.
class FakeWorker {
public:
    explicit FakeWorker(Stream& stream, FileKind format = FileKind::pcap) : stream_(stream), format_(format) {}

    // One block with these packets (they must fit) and the rotation mark. Waits (bounded)
    // for a free block when the writer has all of them.
    void send_block(std::span<const Packet> packets, bool rotate_after = false);
    void send_rotation_mark() { send_block({}, true); }

private:
    Stream& stream_;
    FileKind format_;
};

// Captures what spdlog's default logger prints while it lives.
class LogCapture {
public:
    LogCapture();
    ~LogCapture();
    std::vector<std::string> messages() const;
    size_t count(const std::string& substring) const;
    std::string text() const;

private:
    class Sink;
    std::shared_ptr<Sink> sink_;
    std::shared_ptr<spdlog::logger> previous_;
};

// RLIMIT_FSIZE for the whole process while it lives: writes past the limit are cut short
// and then fail with EFBIG (SIGXFSZ is ignored meanwhile) — an I/O error other than a full
// disk, in the middle of a block, on any file system.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes);
    ~FileSizeLimit();
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit old_{};
    sighandler_t old_handler_;
};

// What a worker hands over, for the expected-output model below.
struct PlannedBlock {
    std::vector<Packet> packets;
    bool rotate_after = false;
};

// The records each finished file must hold, in order, for blocks written in this order
// with this size limit (0 = none): the writer's rotation rules restated independently.
std::vector<std::vector<Packet>> expected_files(const std::vector<PlannedBlock>& blocks,
                                                uint64_t rotate_size_bytes);

// Names in `dir` ending in ".pcap", sorted (the default template sorts by time).
std::vector<std::string> pcap_files(const TempDir& dir);

// An OutputConfig for tests: small blocks, no fsync (speed), no manifests, default template.
OutputConfig test_output_config(const std::string& directory);

StreamId test_stream_id(const std::string& port = "p0", uint16_t queue = 0);

}  // namespace linecap::test
