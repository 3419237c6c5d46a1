// output.o_direct: byte-exact files on a real disk and on tmpfs, the on-disk state of an
// in-progress file (zero padding that recovery cuts off), the buffered fallback with a
// single warning where the file system refuses O_DIRECT, and a full disk.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "archive/layout.hpp"
#include "format/pcap_format.hpp"
#include "archive/recovery.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;
using test::Packet;
using test::PlannedBlock;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint32_t kSnaplen = 262144;
const char* const kFallbackWarning = "does not support O_DIRECT";

// Whether this process has `path` open with O_DIRECT (from /proc/self/fdinfo).
bool open_with_o_direct(const std::string& path) {
    const std::filesystem::path target = std::filesystem::canonical(path);
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        if (std::filesystem::read_symlink(fd.path(), ec) != target) continue;
        std::ifstream info("/proc/self/fdinfo/" + fd.path().filename().string());
        std::string key;
        while (info >> key) {
            if (key != "flags:") continue;
            std::string octal;
            info >> octal;
            return (std::stoul(octal, nullptr, 8) & O_DIRECT) != 0;
        }
    }
    return false;
}

// Blocks whose sizes are nowhere near a multiple of 4 KiB.
std::vector<PlannedBlock> odd_blocks(size_t count) {
    std::vector<PlannedBlock> blocks;
    uint64_t ts = kT0;
    for (size_t i = 0; i < count; ++i) {
        const size_t n = 1 + (i * 13) % 37;
        blocks.push_back({test::make_packets(n, ts), i == 9});
        ts += 1000000000ull;
    }
    return blocks;
}

class DirectIoTest : public ::testing::Test {
protected:
    std::unique_ptr<Writer> start_writer(const std::string& directory, size_t streams = 1) {
        config = test::test_output_config(directory);
        config.o_direct = true;
        config.fsync = FsyncPolicy::rotate;
        config.rotate_size_bytes = 200 * 1024;
        std::vector<StreamSpec> specs;
        for (uint16_t q = 0; q < streams; ++q) specs.push_back({test::test_stream_id("p0", q), 0, kSnaplen});
        auto created = Writer::create(config, specs, heap_block_memory());
        EXPECT_TRUE(created.ok()) << created.error().message;
        if (!created.ok()) return nullptr;
        auto writer = std::move(created).value();
        EXPECT_TRUE(writer->start().ok());
        return writer;
    }

    // Writes odd-sized blocks with O_DIRECT into `dir`; checks the open file's flag and
    // on-disk state after the first block, and every finished file at the end.
    void write_and_check(const test::TempDir& dir, bool expect_direct) {
        auto writer = start_writer(dir.path());
        ASSERT_TRUE(writer);
        FakeWorker worker(writer->stream(0));
        const auto blocks = odd_blocks(30);

        worker.send_block(blocks[0].packets);
        ASSERT_TRUE(test::wait_until(
            [&] { return writer->counters(0).written_packets.load() == blocks[0].packets.size(); }));
        const auto names_while_open = dir.names();
        ASSERT_EQ(names_while_open.size(), 1u);
        ASSERT_TRUE(layout::final_name_of_in_progress(names_while_open[0])) << names_while_open[0];
        const std::string part = dir.file(names_while_open[0]);
        EXPECT_EQ(open_with_o_direct(part), expect_direct);
        check_in_progress_state(part, blocks[0].packets);

        for (size_t i = 1; i < blocks.size(); ++i) worker.send_block(blocks[i].packets, blocks[i].rotate_after);
        writer->stop();

        const auto files = test::expected_files(blocks, config.rotate_size_bytes);
        const auto names = test::pcap_files(dir);
        ASSERT_EQ(names.size(), files.size()) << ::testing::PrintToString(dir.names());
        EXPECT_EQ(dir.names().size(), names.size());
        for (size_t i = 0; i < names.size(); ++i) {
            SCOPED_TRACE(names[i]);
            EXPECT_EQ(test::read_file(dir.file(names[i])), test::pcap_file_bytes(kSnaplen, files[i]));
            EXPECT_EQ(test::read_with_libpcap(dir.file(names[i])).error, "");
        }
    }

    // Everything counted as written is on disk already; with O_DIRECT the file is followed
    // by zero padding up to the next 4 KiB, which scan_pcap (and so recovery) cuts off.
    void check_in_progress_state(const std::string& part, const std::vector<Packet>& packets) {
        const auto expected = test::pcap_file_bytes(kSnaplen, packets);
        const auto on_disk = test::read_file(part);
        ASSERT_GE(on_disk.size(), expected.size());
        EXPECT_LT(on_disk.size(), expected.size() + 4096);
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), on_disk.begin()));
        EXPECT_TRUE(std::all_of(on_disk.begin() + static_cast<long>(expected.size()), on_disk.end(),
                                [](uint8_t b) { return b == 0; }));
        const int fd = ::open(part.c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        const PcapScan scan = scan_pcap(fd);
        ::close(fd);
        EXPECT_TRUE(scan.header_valid);
        EXPECT_EQ(scan.packets, packets.size());
        EXPECT_EQ(scan.valid_bytes, expected.size());
    }

    test::LogCapture log;
    OutputConfig config;
};

TEST_F(DirectIoTest, OnARealDiskFilesAreByteExact) {
    test::TempDir dir("/var/tmp");
    write_and_check(dir, /*expect_direct=*/true);
    EXPECT_EQ(log.count(kFallbackWarning), 0u) << log.text();
}

TEST_F(DirectIoTest, OnTmpfsFilesAreByteExact) {
    std::string why;
    auto mount = test::ScratchMount::mount("tmpfs", "size=64m", why);
    if (!mount) GTEST_SKIP() << why;
    // tmpfs takes O_DIRECT since Linux 6.6 and refuses it before: either way the files
    // must be the same, and a refusal must be announced.
    const int probe = ::open(mount->dir().file("probe").c_str(), O_CREAT | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
    const bool supported = probe >= 0;
    if (probe >= 0) ::close(probe);
    ::unlink(mount->dir().file("probe").c_str());
    write_and_check(mount->dir(), supported);
    EXPECT_EQ(log.count(kFallbackWarning), supported ? 0u : 1u) << log.text();
}

TEST_F(DirectIoTest, RefusedDirectIoFallsBackToBufferedWithOneWarning) {
    std::string why;
    auto mount = test::ScratchMount::mount("ramfs", "", why);  // ramfs has no direct I/O
    if (!mount) GTEST_SKIP() << why;
    auto writer = start_writer(mount->path(), 2);
    ASSERT_TRUE(writer);
    std::vector<std::vector<Packet>> sent;
    for (uint16_t q = 0; q < 2; ++q) {
        FakeWorker worker(writer->stream(q));
        for (int b = 0; b < 3; ++b) {
            sent.push_back(test::make_packets(11, kT0 + (q * 10 + b) * 1000000000ull));
            worker.send_block(sent.back(), true);
        }
    }
    writer->stop();
    EXPECT_EQ(log.count(kFallbackWarning), 1u) << log.text();
    const auto names = test::pcap_files(mount->dir());
    ASSERT_EQ(names.size(), sent.size());
    for (size_t i = 0; i < names.size(); ++i)
        EXPECT_EQ(test::read_file(mount->dir().file(names[i])), test::pcap_file_bytes(kSnaplen, sent[i])) << names[i];
}

TEST_F(DirectIoTest, FullDiskKeepsOnlyCompleteRecords) {
    std::string why;
    auto mount = test::ScratchMount::mount("tmpfs", "size=1m", why);
    if (!mount) GTEST_SKIP() << why;
    auto writer = start_writer(mount->path());
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    uint64_t sent = 0;
    for (size_t b = 0; b < 40; ++b) {
        const auto packets = test::make_packets(47, kT0 + b * 1000000000ull);
        worker.send_block(packets);
        sent += packets.size();
    }
    writer->stop();
    const StreamCounters& c = writer->counters(0);
    EXPECT_GT(c.disk_full_packets.load(), 0u);
    EXPECT_EQ(c.written_packets.load() + c.disk_full_packets.load(), sent);
    uint64_t in_files = 0;
    for (const std::string& name : mount->dir().names()) {
        ASSERT_TRUE(name.ends_with(".pcap")) << name;
        const test::PcapRead read = test::read_with_libpcap(mount->dir().file(name));
        EXPECT_EQ(read.error, "") << name;
        EXPECT_EQ(test::read_file(mount->dir().file(name)).size(),
                  sizeof(pcap::FileHeader) + test::record_bytes(read.packets));
        in_files += read.packets.size();
    }
    EXPECT_EQ(in_files, c.written_packets.load());
}

// A write that fails halfway through (here: the file size limit) with O_DIRECT on a real
// disk: the file is cut back to its last complete block and writing carries on from there.
TEST_F(DirectIoTest, AFailedWriteIsCutBackAndWritingContinues) {
    test::TempDir dir("/var/tmp");
    auto writer = start_writer(dir.path());
    ASSERT_TRUE(writer);
    FakeWorker worker(writer->stream(0));
    const StreamCounters& c = writer->counters(0);
    std::vector<std::vector<Packet>> blocks;
    for (uint64_t b = 0; b < 5; ++b) blocks.push_back(test::make_packets(60, kT0 + b * 1000000000ull));
    const auto send = [&](size_t b) {
        worker.send_block(blocks[b]);
        ASSERT_TRUE(test::wait_until([&] {
            return c.written_packets.load() + c.write_error_packets.load() == (b + 1) * 60;
        }));
    };
    {
        test::FileSizeLimit limit(100 * 1024);  // two blocks fit, the third does not
        for (size_t b = 0; b < 4; ++b) send(b);
    }
    send(4);
    writer->stop();

    EXPECT_EQ(c.written_packets.load(), 3u * 60);
    EXPECT_EQ(c.write_error_packets.load(), 2u * 60);
    EXPECT_EQ(log.count("File too large"), 1u) << log.text();
    std::vector<Packet> kept = blocks[0];
    kept.insert(kept.end(), blocks[1].begin(), blocks[1].end());
    kept.insert(kept.end(), blocks[4].begin(), blocks[4].end());
    const auto names = test::pcap_files(dir);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(test::read_file(dir.file(names[0])), test::pcap_file_bytes(kSnaplen, kept));
}

}  // namespace
}  // namespace linecap
