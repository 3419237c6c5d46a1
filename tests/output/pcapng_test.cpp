// pcapng files from the writer: one section, one interface (the stream) and an
// Interface Statistics Block at the end whose counts cover the file's span. Checked
// block by block, with libpcap (which reads pcapng) and with scan_capture.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <cstring>

#include "linecap_build.h"
#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "format/pcapng_blocks.hpp"
#include "format/pcapng_format.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;
using test::Packet;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull + 123456789;
constexpr uint32_t kSnaplen = 1500;

uint32_t u32(const std::vector<uint8_t>& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}
uint16_t u16(const std::vector<uint8_t>& b, size_t at) {
    uint16_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}
uint64_t u64(const std::vector<uint8_t>& b, size_t at) {
    uint64_t v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

struct Block {
    uint32_t type = 0;
    size_t offset = 0;
    uint32_t length = 0;
};

// Every block of the file, checking lengths and trailers on the way.
std::vector<Block> blocks_of(const std::vector<uint8_t>& file) {
    std::vector<Block> blocks;
    size_t at = 0;
    while (at + 12 <= file.size()) {
        Block b{u32(file, at), at, u32(file, at + 4)};
        EXPECT_EQ(b.length % 4, 0u);
        EXPECT_LE(at + b.length, file.size());
        if (b.length < 12 || at + b.length > file.size()) break;
        EXPECT_EQ(u32(file, at + b.length - 4), b.length) << "trailer of block at " << at;
        blocks.push_back(b);
        at += b.length;
    }
    EXPECT_EQ(at, file.size()) << "bytes after the last block";
    return blocks;
}

// code → value of the options in [at, end)
std::map<uint16_t, std::vector<uint8_t>> options_of(const std::vector<uint8_t>& file, size_t at, size_t end) {
    std::map<uint16_t, std::vector<uint8_t>> out;
    while (at + 4 <= end) {
        const uint16_t code = u16(file, at), length = u16(file, at + 2);
        if (code == 0) break;
        out[code].assign(file.begin() + static_cast<long>(at + 4), file.begin() + static_cast<long>(at + 4 + length));
        at += 4 + pcapng::padded(length);
    }
    return out;
}

std::string text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

class PcapngTest : public ::testing::Test {
protected:
    void SetUp() override {
        config = test::test_output_config(dir.path());
        config.format = FileKind::pcapng;
    }

    std::unique_ptr<Writer> make_writer() {
        StreamSpec spec{StreamId{"tap0", 0, 3}, 0, kSnaplen};
        spec.device = "net_pcap0,rx_pcap=/tmp/in.pcap";
        spec.capture_counts = [this] {
            return CaptureCounts{filtered.load(), writer_full.load()};
        };
        auto created = Writer::create(config, {spec}, heap_block_memory());
        EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error().message);
        if (!created.ok()) return nullptr;
        return std::move(created).value();
    }

    std::vector<std::string> files() const {
        std::vector<std::string> out;
        for (const std::string& name : dir.names())
            if (name.ends_with(".pcapng")) out.push_back(name);
        return out;
    }

    test::TempDir dir;
    OutputConfig config;
    std::atomic<uint64_t> filtered{0}, writer_full{0};
};

TEST_F(PcapngTest, OneSectionOneInterfaceThePacketsAndTheStatistics) {
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    const auto first = test::make_packets(40, kT0, kSnaplen);
    const auto second = test::make_packets(30, kT0 + 1000000, kSnaplen);
    FakeWorker worker(writer->stream(0), FileKind::pcapng);
    worker.send_block(first);
    // What the worker counted meanwhile: 5 filtered, 2 dropped for want of a block.
    filtered = 5;
    writer_full = 2;
    worker.send_block(second, /*rotate_after=*/true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    writer->stop();

    const auto names = files();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0], "20231114T221320.123456789Z-tap0-q3.pcapng");
    const auto file = test::read_file(dir.file(names[0]));
    const auto blocks = blocks_of(file);
    ASSERT_EQ(blocks.size(), 2u + 70u + 1u);

    // SHB: byte-order magic, version 1.0, unknown section length, shb_userappl.
    const Block& shb = blocks[0];
    EXPECT_EQ(shb.type, pcapng::kSectionHeaderBlock);
    EXPECT_EQ(u32(file, 8), pcapng::kByteOrderMagic);
    EXPECT_EQ(u16(file, 12), 1u);
    EXPECT_EQ(u16(file, 14), 0u);
    EXPECT_EQ(u64(file, 16), ~uint64_t{0});
    auto opts = options_of(file, 24, shb.offset + shb.length - 4);
    EXPECT_EQ(text(opts[pcapng::kShbUserAppl]), std::string("linecap ") + LINECAP_VERSION);

    // IDB: Ethernet, the stream's snap length, its name, the device, ns timestamps.
    const Block& idb = blocks[1];
    EXPECT_EQ(idb.type, pcapng::kInterfaceDescriptionBlock);
    EXPECT_EQ(u16(file, idb.offset + 8), 1u);
    EXPECT_EQ(u32(file, idb.offset + 12), kSnaplen);
    opts = options_of(file, idb.offset + 16, idb.offset + idb.length - 4);
    EXPECT_EQ(text(opts[pcapng::kIfName]), "tap0:3");
    EXPECT_EQ(text(opts[pcapng::kIfDescription]), "net_pcap0,rx_pcap=/tmp/in.pcap");
    EXPECT_EQ(opts[pcapng::kIfTsresol], std::vector<uint8_t>{9});

    for (size_t i = 2; i < blocks.size() - 1; ++i) EXPECT_EQ(blocks[i].type, pcapng::kEnhancedPacketBlock);

    // ISB: interface 0, first/last packet, received = written + dropped + filtered.
    const Block& isb = blocks.back();
    EXPECT_EQ(isb.type, pcapng::kInterfaceStatisticsBlock);
    EXPECT_EQ(u32(file, isb.offset + 8), 0u);
    opts = options_of(file, isb.offset + 20, isb.offset + isb.length - 4);
    const auto ts = [](const std::vector<uint8_t>& v) {
        uint32_t hi, lo;
        std::memcpy(&hi, v.data(), 4);
        std::memcpy(&lo, v.data() + 4, 4);
        return (uint64_t{hi} << 32) | lo;
    };
    EXPECT_EQ(ts(opts[pcapng::kIsbStartTime]), first.front().ts_ns);
    EXPECT_EQ(ts(opts[pcapng::kIsbEndTime]), second.back().ts_ns);
    const auto value = [&](uint16_t code) { return u64(opts[code], 0); };
    EXPECT_EQ(value(pcapng::kIsbIfRecv), 70u + 2u + 5u);
    EXPECT_EQ(value(pcapng::kIsbIfDrop), 2u);
    EXPECT_EQ(value(pcapng::kIsbFilterAccept), 72u);
    EXPECT_NE(text(opts[pcapng::kOptComment]).find("writer_full=2 write_error=0 disk_full=0"), std::string::npos);

    // libpcap reads it, packet for packet, with nanosecond timestamps.
    const test::PcapRead read = test::read_with_libpcap(dir.file(names[0]));
    EXPECT_EQ(read.error, "");
    std::vector<Packet> sent = first;
    sent.insert(sent.end(), second.begin(), second.end());
    EXPECT_EQ(read.packets, sent);
    EXPECT_EQ(read.snaplen, kSnaplen);

    // And so does scan_capture.
    const int fd = ::open(dir.file(names[0]).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const CaptureScan scan = scan_capture(fd);
    ::close(fd);
    EXPECT_TRUE(scan.complete());
    EXPECT_EQ(scan.format, FileKind::pcapng);
    EXPECT_EQ(scan.packets, 70u);
    EXPECT_EQ(scan.first_ns, first.front().ts_ns);
    EXPECT_EQ(scan.last_ns, second.back().ts_ns);
    EXPECT_EQ(scan.interface_name, "tap0:3");
    ASSERT_TRUE(scan.statistics);
    EXPECT_EQ(scan.statistics->ifrecv, 77u);
    EXPECT_EQ(scan.statistics->ifdrop, 2u);
    EXPECT_EQ(scan.statistics->start_ns, first.front().ts_ns);
    EXPECT_EQ(scan.statistics->end_ns, second.back().ts_ns);
}

TEST_F(PcapngTest, EachFileCountsItsOwnSpan) {
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0), FileKind::pcapng);
    writer_full = 4;
    worker.send_block(test::make_packets(10, kT0, kSnaplen), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    filtered = 3;  // after the first file was finished: the second file's span
    worker.send_block(test::make_packets(20, kT0 + 1000000000, kSnaplen), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 2; }));
    writer->stop();

    const auto names = files();
    ASSERT_EQ(names.size(), 2u);
    std::vector<CaptureStatistics> stats;
    for (const std::string& name : names) {
        const int fd = ::open(dir.file(name).c_str(), O_RDONLY | O_CLOEXEC);
        const CaptureScan scan = scan_capture(fd);
        ::close(fd);
        ASSERT_TRUE(scan.statistics) << name;
        stats.push_back(*scan.statistics);
    }
    EXPECT_EQ(stats[0].ifrecv, 14u);
    EXPECT_EQ(stats[0].ifdrop, 4u);
    EXPECT_EQ(stats[0].filteraccept, 14u);
    EXPECT_EQ(stats[1].ifrecv, 23u);
    EXPECT_EQ(stats[1].ifdrop, 0u);
    EXPECT_EQ(stats[1].filteraccept, 20u);
}

TEST_F(PcapngTest, ADiskFullEpisodeShowsInTheStatisticsOfTheNextFile) {
    std::string why;
    auto mount = test::ScratchMount::mount("tmpfs", "size=1m", why);
    if (!mount) GTEST_SKIP() << why;
    config.directory = mount->path();
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0), FileKind::pcapng);

    // Fill the file system, lose one block, free it, write another.
    const std::string filler = mount->dir().file("filler");
    {
        std::vector<uint8_t> big(1 << 20, 0xab);
        test::write_file(filler, big);
    }
    worker.send_block(test::make_packets(25, kT0, kSnaplen));
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).disk_full_packets.load() == 25; }));
    ASSERT_EQ(::unlink(filler.c_str()), 0);
    worker.send_block(test::make_packets(15, kT0 + 1000000000, kSnaplen), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    writer->stop();

    std::vector<std::string> names;
    for (const std::string& n : mount->dir().names())
        if (n.ends_with(".pcapng")) names.push_back(n);
    ASSERT_EQ(names.size(), 1u);
    const int fd = ::open(mount->dir().file(names[0]).c_str(), O_RDONLY | O_CLOEXEC);
    const CaptureScan scan = scan_capture(fd);
    ::close(fd);
    EXPECT_TRUE(scan.complete());
    EXPECT_EQ(scan.packets, 15u);
    ASSERT_TRUE(scan.statistics);
    EXPECT_EQ(scan.statistics->ifrecv, 40u);
    EXPECT_EQ(scan.statistics->ifdrop, 25u);
    EXPECT_NE(scan.statistics->comment.find("disk_full=25"), std::string::npos) << scan.statistics->comment;
}

TEST_F(PcapngTest, WithDirectIoTheStatisticsBlockEndsTheFileExactly) {
    test::TempDir disk("/var/tmp");  // tmpfs has no O_DIRECT
    config.directory = disk.path();
    config.o_direct = true;
    auto writer = make_writer();
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->start().ok());
    FakeWorker worker(writer->stream(0), FileKind::pcapng);
    worker.send_block(test::make_packets(33, kT0, kSnaplen));
    worker.send_block(test::make_packets(21, kT0 + 1000000, kSnaplen), true);
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == 1; }));
    writer->stop();
    std::vector<std::string> names;
    for (const std::string& n : disk.names())
        if (n.ends_with(".pcapng")) names.push_back(n);
    ASSERT_EQ(names.size(), 1u);
    const auto file = test::read_file(disk.file(names[0]));
    const auto blocks = blocks_of(file);  // no padding after the last block
    ASSERT_FALSE(blocks.empty());
    EXPECT_EQ(blocks.back().type, pcapng::kInterfaceStatisticsBlock);
    EXPECT_EQ(test::read_with_libpcap(disk.file(names[0])).packets.size(), 54u);
}

TEST(PcapngBlocks, OptionsArePaddedAndTheLengthIsRepeated) {
    const auto header = pcapng::file_header({"p:1", "", 64}, "x");  // odd lengths: padding
    const auto blocks = blocks_of(header);
    ASSERT_EQ(blocks.size(), 2u);
    const auto idb_opts = options_of(header, blocks[1].offset + 16, blocks[1].offset + blocks[1].length - 4);
    EXPECT_EQ(text(idb_opts.at(pcapng::kIfName)), "p:1");
    EXPECT_FALSE(idb_opts.contains(pcapng::kIfDescription));  // empty: left out
    const auto isb = pcapng::statistics_block({.timestamp_ns = 5, .ifrecv = 1, .comment = "abcde"});
    EXPECT_EQ(blocks_of(isb).size(), 1u);
}

}  // namespace
}  // namespace linecap
