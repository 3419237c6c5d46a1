#include "output_test_support.hpp"

#include <dirent.h>
#include <pcap/pcap.h>
#include <sys/mount.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"

namespace linecap::test {

TempDir::TempDir(const std::string& base) {
    std::string pattern = base + "/linecap-output-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        ADD_FAILURE() << "mkdtemp " << pattern << ": " << std::strerror(errno);
        return;
    }
    path_ = pattern;
}

TempDir::~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> TempDir::names() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::unique_ptr<ScratchMount> ScratchMount::mount(const std::string& type, const std::string& options,
                                                  std::string& why, bool read_only) {
    std::unique_ptr<ScratchMount> m(new ScratchMount(type));
    const unsigned long flags = read_only ? MS_RDONLY : 0;
    if (::mount(type.c_str(), m->path().c_str(), type.c_str(), flags, options.c_str()) != 0) {
        why = "cannot mount " + type + " (" + options + ") on " + m->path() + ": " + std::strerror(errno) +
              " (needs root / CAP_SYS_ADMIN)";
        return nullptr;
    }
    m->mounted_ = true;
    return m;
}

ScratchMount::~ScratchMount() {
    if (mounted_ && ::umount2(path().c_str(), 0) != 0)
        ADD_FAILURE() << "umount " << path() << ": " << std::strerror(errno);
}

bool ScratchMount::remount(const std::string& options, bool read_only) {
    const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
    return ::mount(type_.c_str(), path().c_str(), type_.c_str(), flags, options.c_str()) == 0;
}

Packet make_packet(uint64_t ts_ns, uint32_t len, uint32_t snaplen) {
    Packet p;
    p.ts_ns = ts_ns;
    p.len = len;
    p.bytes.resize(std::min(len, snaplen));
    for (size_t i = 0; i < p.bytes.size(); ++i) p.bytes[i] = static_cast<uint8_t>(ts_ns * 31 + i * 7 + (i >> 8));
    return p;
}

std::vector<Packet> make_packets(size_t count, uint64_t first_ts_ns, uint32_t snaplen) {
    static constexpr uint32_t kLengths[] = {60, 1514, 342, 64, 900, 1200, 77, 1500, 128, 590};
    std::vector<Packet> packets;
    packets.reserve(count);
    for (size_t i = 0; i < count; ++i)
        packets.push_back(make_packet(first_ts_ns + i * 1000, kLengths[i % std::size(kLengths)], snaplen));
    return packets;
}

bool append_record(WriteBlock& block, const Packet& packet) {
    const auto caplen = static_cast<uint32_t>(packet.bytes.size());
    if (block.room() < pcap::record_size(caplen)) return false;
    uint8_t* dst = block.tail();
    const size_t header = pcap::encode_record_header(dst, packet.ts_ns, caplen, packet.len);
    std::memcpy(dst + header, packet.bytes.data(), caplen);
    block.used += static_cast<uint32_t>(header + caplen);
    if (block.packets == 0) block.first_ts_ns = packet.ts_ns;
    block.last_ts_ns = packet.ts_ns;
    ++block.packets;
    block.wire_bytes += packet.len;
    return true;
}

bool append_record(WriteBlock& block, const Packet& packet, FileKind format) {
    if (format == FileKind::pcap) return append_record(block, packet);
    const auto caplen = static_cast<uint32_t>(packet.bytes.size());
    if (block.room() < pcapng::record_size(caplen)) return false;
    uint8_t* dst = block.tail();
    const size_t header = pcapng::encode_epb_header(dst, packet.ts_ns, caplen, packet.len);
    std::memcpy(dst + header, packet.bytes.data(), caplen);
    pcapng::encode_epb_trailer(dst + header + caplen, caplen);
    block.used += static_cast<uint32_t>(pcapng::record_size(caplen));
    if (block.packets == 0) block.first_ts_ns = packet.ts_ns;
    block.last_ts_ns = packet.ts_ns;
    ++block.packets;
    block.wire_bytes += packet.len;
    return true;
}

size_t record_bytes(std::span<const Packet> packets) {
    size_t n = 0;
    for (const Packet& p : packets) n += pcap::record_size(static_cast<uint32_t>(p.bytes.size()));
    return n;
}

std::vector<uint8_t> pcap_file_bytes(uint32_t snaplen, std::span<const Packet> packets) {
    std::vector<uint8_t> bytes(sizeof(pcap::FileHeader));
    const pcap::FileHeader header = pcap::file_header(snaplen);
    std::memcpy(bytes.data(), &header, sizeof header);
    for (const Packet& p : packets) {
        uint8_t record[sizeof(pcap::RecordHeader)];
        pcap::encode_record_header(record, p.ts_ns, static_cast<uint32_t>(p.bytes.size()), p.len);
        bytes.insert(bytes.end(), record, record + sizeof record);
        bytes.insert(bytes.end(), p.bytes.begin(), p.bytes.end());
    }
    return bytes;
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

PcapRead read_with_libpcap(const std::string& path) {
    PcapRead result;
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* handle = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle == nullptr) {
        result.error = errbuf;
        return result;
    }
    result.snaplen = static_cast<uint32_t>(pcap_snapshot(handle));
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    int rc;
    while ((rc = pcap_next_ex(handle, &header, &data)) == 1) {
        Packet p;
        // At nanosecond precision libpcap puts nanoseconds in tv_usec.
        p.ts_ns = static_cast<uint64_t>(header->ts.tv_sec) * 1000000000u + static_cast<uint64_t>(header->ts.tv_usec);
        p.len = header->len;
        p.bytes.assign(data, data + header->caplen);
        result.packets.push_back(std::move(p));
    }
    if (rc != PCAP_ERROR_BREAK) result.error = pcap_geterr(handle);
    pcap_close(handle);
    return result;
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return condition();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

void FakeWorker::send_block(std::span<const Packet> packets, bool rotate_after) {
    WriteBlock* block = nullptr;
    ASSERT_TRUE(wait_until([&] { return (block = stream_.free_blocks.pop()) != nullptr; }))
        << "the writer returned no free block";
    for (const Packet& p : packets) ASSERT_TRUE(append_record(*block, p, format_)) << "packets do not fit one block";
    block->rotate_after = rotate_after;
    ASSERT_TRUE(stream_.full_blocks.push(block));
}

class LogCapture::Sink : public spdlog::sinks::base_sink<std::mutex> {
public:
    std::vector<std::string> messages() {
        std::lock_guard lock(mutex_);
        return messages_;
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        messages_.emplace_back(std::string(spdlog::level::to_string_view(msg.level).data()) + ": " +
                               std::string(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

private:
    std::vector<std::string> messages_;
};

LogCapture::LogCapture() : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("output-test", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
}

LogCapture::~LogCapture() { spdlog::set_default_logger(previous_); }

std::vector<std::string> LogCapture::messages() const { return sink_->messages(); }

size_t LogCapture::count(const std::string& substring) const {
    const auto all = messages();
    return static_cast<size_t>(std::count_if(all.begin(), all.end(), [&](const std::string& m) {
        return m.find(substring) != std::string::npos;
    }));
}

std::string LogCapture::text() const {
    std::string text;
    for (const std::string& m : messages()) text += m + "\n";
    return text;
}

FileSizeLimit::FileSizeLimit(rlim_t bytes) : old_handler_(::signal(SIGXFSZ, SIG_IGN)) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limit = old_;
    limit.rlim_cur = std::min(bytes, old_.rlim_max);
    ::setrlimit(RLIMIT_FSIZE, &limit);
}

FileSizeLimit::~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
}

std::vector<std::vector<Packet>> expected_files(const std::vector<PlannedBlock>& blocks,
                                                uint64_t rotate_size_bytes) {
    std::vector<std::vector<Packet>> files;
    bool open = false;
    uint64_t size = 0;
    for (const PlannedBlock& block : blocks) {
        if (!block.packets.empty()) {
            const uint64_t used = record_bytes(block.packets);
            if (open && rotate_size_bytes > 0 && size + used > rotate_size_bytes) open = false;
            if (!open) {
                files.emplace_back();
                open = true;
                size = sizeof(pcap::FileHeader);
            }
            files.back().insert(files.back().end(), block.packets.begin(), block.packets.end());
            size += used;
        }
        if (block.rotate_after) open = false;
    }
    return files;
}

std::vector<std::string> pcap_files(const TempDir& dir) {
    std::vector<std::string> names;
    for (const std::string& name : dir.names())
        if (name.ends_with(".pcap")) names.push_back(name);
    return names;
}

OutputConfig test_output_config(const std::string& directory) {
    OutputConfig config;
    config.directory = directory;
    config.block_size_kb = 64;
    config.blocks_per_queue = 8;
    config.fsync = FsyncPolicy::none;
    config.manifest = false;  // the tests that want manifests turn them on
    return config;
}

StreamId test_stream_id(const std::string& port, uint16_t queue) {
    return StreamId{port, 0, queue};
}

}  // namespace linecap::test
