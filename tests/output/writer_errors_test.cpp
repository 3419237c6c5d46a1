// The writer when the file system says no: a full disk, a read-only file system, a file
// size limit. Packets are counted as lost (by reason), files keep only complete records,
// the log says so once per episode, and writing resumes by itself.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "archive/layout.hpp"
#include "format/pcap_format.hpp"
#include "archive/manifest.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;
using test::Packet;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint32_t kSnaplen = 262144;
constexpr size_t kPacketsPerBlock = 60;  // ~39 KiB of records with make_packets' sizes

const char* const kEpisodeStart = "until a write succeeds";
const char* const kEpisodeEnd = "resumed after";

// Blocks of distinct packets; remembers what was sent so files can be checked against it.
class Traffic {
public:
    std::vector<Packet> next_block() {
        auto block = test::make_packets(kPacketsPerBlock, next_ts_);
        next_ts_ += 1000000000ull;  // one file name per second, even without {nsec}
        for (const Packet& p : block) sent_.emplace(p.ts_ns, p);
        total_ += block.size();
        return block;
    }
    uint64_t total() const { return total_; }

    // Every record of the file is one that was sent, unchanged. Returns how many.
    size_t check_file(const std::string& path) const {
        SCOPED_TRACE(path);
        const test::PcapRead read = test::read_with_libpcap(path);
        EXPECT_EQ(read.error, "") << "a partial record?";
        EXPECT_EQ(test::read_file(path).size(), sizeof(pcap::FileHeader) + test::record_bytes(read.packets));
        for (const Packet& p : read.packets) {
            const auto it = sent_.find(p.ts_ns);
            EXPECT_TRUE(it != sent_.end() && it->second == p) << "unexpected record at ts " << p.ts_ns;
        }
        return read.packets.size();
    }

private:
    uint64_t next_ts_ = kT0;
    uint64_t total_ = 0;
    std::map<uint64_t, Packet> sent_;
};

uint64_t accounted(const StreamCounters& c) {
    return c.written_packets.load() + c.disk_full_packets.load() + c.write_error_packets.load();
}

class WriterErrorsTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        mount_ = test::ScratchMount::mount("tmpfs", "size=1m", why);
        if (!mount_) GTEST_SKIP() << why;
        config_ = test::test_output_config(mount_->path());
        config_.blocks_per_queue = 4;
    }

    void start_writer() {
        auto created = Writer::create(config_, {StreamSpec{test::test_stream_id(), 0, kSnaplen}}, heap_block_memory());
        ASSERT_TRUE(created.ok()) << created.error().message;
        writer_ = std::move(created).value();
        ASSERT_TRUE(writer_->start().ok());
        worker_ = std::make_unique<FakeWorker>(writer_->stream(0));
    }

    void send_blocks(size_t count) {
        for (size_t i = 0; i < count; ++i) worker_->send_block(traffic_.next_block());
        wait_until_written();
    }

    // Log lines come from the writer thread, just after the counters the test waits for.
    bool logged(const std::string& text, size_t times = 1) {
        return test::wait_until([&] { return log_.count(text) == times; });
    }

    void wait_until_written() {
        ASSERT_TRUE(test::wait_until([&] { return accounted(counters()) == traffic_.total(); }))
            << "written " << counters().written_packets.load() << " of " << traffic_.total();
    }

    const StreamCounters& counters() const { return writer_->counters(0); }

    // Checks every file in the directory, in progress or finished; returns their packets.
    size_t check_all_files() const {
        size_t packets = 0;
        for (const std::string& name : mount_->dir().names())
            if (name.ends_with(".pcap") || layout::final_name_of_in_progress(name))
                packets += traffic_.check_file(mount_->dir().file(name));
        return packets;
    }

    // A file that takes all the space that is left.
    void fill_disk(const std::string& name) {
        std::FILE* f = std::fopen(mount_->dir().file(name).c_str(), "wb");
        ASSERT_NE(f, nullptr);
        const std::vector<char> chunk(4096, 'x');
        while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
        }
        std::fclose(f);
    }

    test::LogCapture log_;  // first in, last out: the writer threads log into it
    std::unique_ptr<test::ScratchMount> mount_;
    OutputConfig config_;
    Traffic traffic_;
    std::unique_ptr<Writer> writer_;
    std::unique_ptr<FakeWorker> worker_;
};

TEST_F(WriterErrorsTest, FullDiskCountsLostPacketsKeepsFilesValidAndResumes) {
    config_.rotate_size_bytes = 300 * 1024;  // some files are finalised on the full disk
    start_writer();
    send_blocks(50);  // ~1.9 MiB into 1 MiB

    const uint64_t lost = counters().disk_full_packets.load();
    EXPECT_GT(lost, 0u);
    EXPECT_GT(counters().written_packets.load(), 0u);
    EXPECT_EQ(counters().write_error_packets.load(), 0u);
    EXPECT_EQ(lost % kPacketsPerBlock, 0u) << "whole blocks are lost, never part of one";
    EXPECT_EQ(check_all_files(), counters().written_packets.load());
    EXPECT_TRUE(logged(kEpisodeStart)) << log_.text();
    EXPECT_EQ(log_.count(kEpisodeEnd), 0u) << log_.text();

    ASSERT_TRUE(mount_->remount("size=16m"));
    send_blocks(10);
    EXPECT_EQ(counters().disk_full_packets.load(), lost);
    EXPECT_TRUE(logged(std::string(kEpisodeEnd) + " " + std::to_string(lost) + " packets lost")) << log_.text();

    writer_->stop();
    for (const std::string& name : mount_->dir().names()) EXPECT_TRUE(name.ends_with(".pcap")) << name;
    EXPECT_EQ(check_all_files(), counters().written_packets.load());
    EXPECT_EQ(counters().written_packets.load() + lost, traffic_.total());
    EXPECT_TRUE(logged(kEpisodeStart)) << log_.text();
}

TEST_F(WriterErrorsTest, FullDiskWhenOpeningAFileLeavesNothingBehindAndIsRetried) {
    fill_disk("filler");
    start_writer();
    send_blocks(2);
    EXPECT_EQ(counters().disk_full_packets.load(), 2 * kPacketsPerBlock);
    EXPECT_EQ(counters().written_packets.load(), 0u);
    EXPECT_EQ(mount_->dir().names(), std::vector<std::string>{"filler"});
    EXPECT_TRUE(logged(kEpisodeStart)) << log_.text();

    ASSERT_EQ(std::remove(mount_->dir().file("filler").c_str()), 0);
    send_blocks(1);
    EXPECT_EQ(counters().written_packets.load(), kPacketsPerBlock);
    EXPECT_TRUE(logged(std::string(kEpisodeEnd) + " " + std::to_string(2 * kPacketsPerBlock))) << log_.text();
    writer_->stop();
    EXPECT_EQ(check_all_files(), kPacketsPerBlock);
}

// The header of a new file fits, its first block does not: the file (named after a packet it
// would not hold) goes, and the block that fits later opens the stream's file under its own
// first packet's time, with a manifest that starts there and carries the drops.
TEST_F(WriterErrorsTest, AFileWhoseFirstBlockDoesNotFitIsNotKept) {
    config_.manifest = true;
    test::write_file(mount_->dir().file("page"), std::vector<uint8_t>(4096, 1));
    fill_disk("filler");
    ASSERT_EQ(std::remove(mount_->dir().file("page").c_str()), 0);  // room for a header, not a block
    start_writer();
    send_blocks(2);
    EXPECT_EQ(counters().disk_full_packets.load(), 2 * kPacketsPerBlock);
    EXPECT_EQ(mount_->dir().names(), std::vector<std::string>{"filler"});

    ASSERT_EQ(std::remove(mount_->dir().file("filler").c_str()), 0);
    send_blocks(1);
    writer_->stop();
    const auto names = test::pcap_files(mount_->dir());
    ASSERT_EQ(names.size(), 1u);
    const test::PcapRead read = test::read_with_libpcap(mount_->dir().file(names[0]));
    ASSERT_FALSE(read.packets.empty());
    EXPECT_EQ(names[0], layout::capture_name(FileTemplate::compile(config_.file_template).value(),
                                             read.packets.front().ts_ns, test::test_stream_id(), 0, FileKind::pcap, 0));
    const int fd = ::open(mount_->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const ManifestRead manifest = read_manifest(fd, names[0]);
    ::close(fd);
    ASSERT_TRUE(manifest.ok()) << manifest.problem;
    const Manifest* m = &manifest.manifest;
    EXPECT_EQ(m->first_ns, read.packets.front().ts_ns);
    EXPECT_EQ(m->seq, 0u);
    ASSERT_TRUE(m->drops);
    EXPECT_EQ(m->drops->disk_full, 2 * kPacketsPerBlock);
}

TEST_F(WriterErrorsTest, ReadOnlyFileSystemCountsWriteErrorsAndRecovers) {
    start_writer();
    worker_->send_block(traffic_.next_block(), /*rotate_after=*/true);
    wait_until_written();
    // The block is counted as written before its file is finalised and closed, and a file
    // system with a file open for writing refuses to go read-only (EBUSY): wait for the
    // close, which files_finalised counts.
    ASSERT_TRUE(test::wait_until([&] { return counters().files_finalised.load() == 1; }));
    ASSERT_TRUE(mount_->remount("", /*read_only=*/true)) << std::strerror(errno);

    send_blocks(2);
    EXPECT_EQ(counters().write_error_packets.load(), 2 * kPacketsPerBlock);
    EXPECT_EQ(counters().disk_full_packets.load(), 0u);
    EXPECT_TRUE(logged("Read-only file system")) << log_.text();

    ASSERT_TRUE(mount_->remount("", /*read_only=*/false)) << std::strerror(errno);
    send_blocks(1);
    EXPECT_EQ(counters().written_packets.load(), 2 * kPacketsPerBlock);
    EXPECT_TRUE(logged(kEpisodeEnd)) << log_.text();
    writer_->stop();
    EXPECT_EQ(check_all_files(), 2 * kPacketsPerBlock);
}

TEST_F(WriterErrorsTest, OtherWriteErrorsAreCountedApartAndTheFileIsCutBack) {
    ASSERT_TRUE(mount_->remount("size=16m"));
    start_writer();
    {
        test::FileSizeLimit limit(100 * 1024);  // two blocks fit, the third does not
        send_blocks(4);
        EXPECT_EQ(counters().written_packets.load(), 2 * kPacketsPerBlock);
        EXPECT_EQ(counters().write_error_packets.load(), 2 * kPacketsPerBlock);
        EXPECT_EQ(counters().disk_full_packets.load(), 0u);
        EXPECT_TRUE(logged("File too large")) << log_.text();
        EXPECT_EQ(check_all_files(), 2 * kPacketsPerBlock);  // the in-progress file: no partial block
    }
    send_blocks(1);
    EXPECT_EQ(counters().written_packets.load(), 3 * kPacketsPerBlock);
    EXPECT_TRUE(logged(std::string(kEpisodeEnd) + " " + std::to_string(2 * kPacketsPerBlock))) << log_.text();
    writer_->stop();
    EXPECT_EQ(check_all_files(), 3 * kPacketsPerBlock);
}

}  // namespace
}  // namespace linecap
