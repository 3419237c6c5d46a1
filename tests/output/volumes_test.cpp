// Several capture volumes (output.volumes): streams spread over them, a volume failed by
// an I/O error (injected EIO, a real read-only remount), a full disk retention cannot
// clear (a real full tmpfs), or a stalled write (injected) moves its streams to the
// healthy volumes; every packet is written or counted lost, on the volume that lost it;
// a failed volume is probed and re-admitted.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "archive/layout.hpp"
#include "archive/verify.hpp"
#include "output/writer.hpp"
#include "util/follow_directory.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using test::FakeWorker;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr size_t kPacketsPerBlock = 40;

class VolumesTest : public ::testing::Test {
protected:
    void SetUp() override { config_ = test::test_output_config(dirs_[0].path()); }

    // `volumes` directories (mounts, when given, replace the temporary ones).
    void start(size_t streams, std::vector<std::string> directories = {}) {
        if (directories.empty()) directories = {dirs_[0].path(), dirs_[1].path()};
        config_.volumes.clear();
        for (const std::string& d : directories) config_.volumes.push_back({d, config_.retention});
        config_.directory = config_.volumes.front().directory;
        config_.volume_stall_timeout_ms = 300;
        config_.volume_probe_interval_s = 1;
        config_.blocks_per_queue = 4;
        std::vector<StreamSpec> specs;
        for (size_t s = 0; s < streams; ++s)
            specs.push_back(StreamSpec{test::test_stream_id("p0", static_cast<uint16_t>(s)), 0, 262144});
        auto created = Writer::create(config_, specs, heap_block_memory());
        ASSERT_TRUE(created.ok()) << created.error().message;
        writer_ = std::move(created).value();
        ASSERT_TRUE(writer_->start().ok());
        for (size_t s = 0; s < streams; ++s) workers_.push_back(std::make_unique<FakeWorker>(writer_->stream(s)));
        sent_.assign(streams, 0);
    }

    void send(size_t stream, size_t blocks = 1) {
        for (size_t b = 0; b < blocks; ++b) {
            workers_[stream]->send_block(test::make_packets(kPacketsPerBlock, next_ts_));
            next_ts_ += 1'000'000'000ull;
            sent_[stream] += kPacketsPerBlock;
        }
    }

    uint64_t accounted(size_t s) const {
        const StreamCounters& c = writer_->counters(s);
        return c.written_packets.load() + c.write_error_packets.load() + c.disk_full_packets.load();
    }
    // Every packet sent is written or counted lost (the fake worker never drops).
    void expect_all_accounted() {
        for (size_t s = 0; s < sent_.size(); ++s)
            ASSERT_TRUE(test::wait_until([&] { return accounted(s) == sent_[s]; }))
                << "stream " << s << ": accounted " << accounted(s) << " of " << sent_[s];
        // And what the volumes counted adds up to what the streams did.
        uint64_t written = 0, lost = 0, volume_written = 0, volume_lost = 0;
        for (size_t s = 0; s < sent_.size(); ++s) {
            written += writer_->counters(s).written_packets.load();
            lost += writer_->counters(s).write_error_packets.load() + writer_->counters(s).disk_full_packets.load();
        }
        for (size_t v = 0; v < writer_->volume_count(); ++v) {
            const VolumeCounters& c = writer_->volume_counters(v);
            volume_written += c.written_packets.load();
            volume_lost += c.write_error_packets.load() + c.disk_full_packets.load();
        }
        EXPECT_EQ(volume_written, written);
        EXPECT_EQ(volume_lost, lost);
    }

    const VolumeCounters& volume(size_t v) const { return writer_->volume_counters(v); }
    bool healthy(size_t v) const { return volume(v).healthy.load() == 1; }

    // Packets in the finished and in-progress files of a directory.
    static size_t packets_in(const std::string& directory) {
        size_t n = 0;
        for (const auto& entry : std::filesystem::directory_iterator(directory)) {
            const std::string name = entry.path().filename();
            if (name.ends_with(".pcap") || layout::final_name_of_in_progress(name))
                n += test::read_with_libpcap(entry.path()).packets.size();
        }
        return n;
    }

    test::LogCapture log_;
    test::TempDir dirs_[2];
    std::unique_ptr<test::ScratchMount> mount_;  // outlives the writer, which has files open there
    OutputConfig config_;
    std::unique_ptr<Writer> writer_;
    std::vector<std::unique_ptr<FakeWorker>> workers_;
    std::vector<uint64_t> sent_;
    uint64_t next_ts_ = kT0;
};

TEST_F(VolumesTest, OneDirectoryIsOneVolume) {
    auto created = Writer::create(config_, {StreamSpec{test::test_stream_id(), 0, 262144}}, heap_block_memory());
    ASSERT_TRUE(created.ok());
    EXPECT_EQ(created.value()->volume_count(), 1u);
    EXPECT_EQ(created.value()->volume_directory(0), dirs_[0].path());
}

TEST_F(VolumesTest, StreamsAreSpreadOverTheVolumes) {
    start(4);
    for (size_t s = 0; s < 4; ++s) EXPECT_EQ(writer_->stream_volume(s), s % 2);
    EXPECT_EQ(volume(0).streams.load(), 2u);
    EXPECT_EQ(volume(1).streams.load(), 2u);
    for (size_t s = 0; s < 4; ++s) send(s, 3);
    expect_all_accounted();
    writer_->stop();
    EXPECT_EQ(packets_in(dirs_[0].path()), 6 * kPacketsPerBlock);
    EXPECT_EQ(packets_in(dirs_[1].path()), 6 * kPacketsPerBlock);
    EXPECT_EQ(volume(0).written_packets.load(), 6 * kPacketsPerBlock);
}

// EIO on volume 0: the block being written is lost (write_error on volume 0), the stream
// moves to volume 1 within that block, and volume 0 comes back once writes work again.
TEST_F(VolumesTest, AnIoErrorFailsTheVolumeItsStreamsMoveAndItIsReadmitted) {
    start(2);
    send(0, 2);
    expect_all_accounted();
    writer_->volume_fault(0)->error.store(EIO);
    send(0);  // lost to the error
    ASSERT_TRUE(test::wait_until([&] { return !healthy(0); }));
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(0) == 1; }));
    send(0, 3);  // on volume 1
    send(1, 2);
    expect_all_accounted();
    EXPECT_EQ(volume(0).write_error_packets.load(), kPacketsPerBlock);
    EXPECT_EQ(writer_->counters(0).write_error_packets.load(), kPacketsPerBlock) << "exactly one block lost";
    EXPECT_GE(volume(0).errors_eio.load(), 1u);
    EXPECT_EQ(volume(0).failures.load(), 1u);
    EXPECT_EQ(volume(0).failovers.load(), 1u);
    EXPECT_EQ(volume(0).streams.load(), 0u);
    EXPECT_EQ(volume(1).streams.load(), 2u);
    EXPECT_EQ(log_.count("failed (EIO)"), 1u) << log_.text();

    writer_->volume_fault(0)->error.store(0);  // the disk works again: the probe sees it
    ASSERT_TRUE(test::wait_until([&] { return healthy(0); }, std::chrono::seconds(10)));
    EXPECT_EQ(volume(0).readmissions.load(), 1u);
    // Re-admitted volumes get streams back at their next file.
    writer_->stop();
    EXPECT_EQ(volume(0).streams.load() + volume(1).streams.load(), 2u);
    EXPECT_EQ(volume(0).streams.load(), 1u);
    EXPECT_EQ(packets_in(dirs_[0].path()) + packets_in(dirs_[1].path()), 7 * kPacketsPerBlock);
}

// A real read-only remount (ext4 errors=remount-ro behaves so): EROFS, the same failover.
TEST_F(VolumesTest, AReadOnlyVolumeFails) {
    std::string why;
    mount_ = test::ScratchMount::mount("tmpfs", "size=8m", why);
    if (!mount_) GTEST_SKIP() << why;
    test::ScratchMount* mount = mount_.get();
    start(1, {mount->path(), dirs_[1].path()});
    send(0, 2);
    workers_[0]->send_rotation_mark();  // no file left open: the remount needs that
    expect_all_accounted();
    ASSERT_TRUE(test::wait_until([&] { return writer_->counters(0).files_finalised.load() == 1; }));
    ASSERT_TRUE(mount->remount("size=8m", true));
    // The next file cannot be created: EROFS.
    for (int i = 0; i < 50 && healthy(0); ++i) {
        send(0);
        expect_all_accounted();
    }
    ASSERT_FALSE(healthy(0));
    EXPECT_GE(volume(0).errors_erofs.load(), 1u);
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(0) == 1; }));
    send(0, 2);
    expect_all_accounted();
    EXPECT_EQ(writer_->counters(0).write_error_packets.load(), volume(0).write_error_packets.load());
    EXPECT_GE(volume(1).written_packets.load(), 2 * kPacketsPerBlock);
    ASSERT_TRUE(mount->remount("size=8m", false));
    ASSERT_TRUE(test::wait_until([&] { return healthy(0); }, std::chrono::seconds(10)));
    writer_->stop();
}

// A full disk without a retention budget stays full: after volume_stall_timeout_ms the
// volume counts as failed, and its stream moves.
TEST_F(VolumesTest, AFullDiskRetentionCannotClearFailsTheVolume) {
    std::string why;
    mount_ = test::ScratchMount::mount("tmpfs", "size=1m", why);
    if (!mount_) GTEST_SKIP() << why;
    test::ScratchMount* mount = mount_.get();
    {
        std::FILE* f = std::fopen(mount->dir().file("filler").c_str(), "wb");
        ASSERT_NE(f, nullptr);
        const std::vector<char> chunk(4096, 'x');
        while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
        }
        std::fclose(f);
    }
    start(1, {mount->path(), dirs_[1].path()});
    const auto begin = std::chrono::steady_clock::now();
    while (healthy(0) && std::chrono::steady_clock::now() - begin < std::chrono::seconds(10)) {
        send(0);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // traffic over time, not a wait
    }
    ASSERT_FALSE(healthy(0));
    EXPECT_GE(volume(0).errors_enospc.load(), 1u);
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(0) == 1; }));
    send(0, 2);
    expect_all_accounted();
    EXPECT_GT(volume(0).disk_full_packets.load(), 0u);
    EXPECT_EQ(volume(0).disk_full_packets.load(), writer_->counters(0).disk_full_packets.load());
    EXPECT_GE(volume(1).written_packets.load(), 2 * kPacketsPerBlock);
    writer_->stop();
}

// A write stalled in the kernel: the watchdog fails the volume at the bound; the stream
// the stalled thread is not writing moves at once; the stalled one follows when its
// write returns, and nothing is lost without a count.
TEST_F(VolumesTest, AStalledWriteFailsTheVolumeAndTheOtherStreamsMoveAtOnce) {
    start(3);  // streams 0 and 2 on volume 0, 1 on volume 1
    send(0);
    send(2);
    expect_all_accounted();
    writer_->volume_fault(0)->stall_ms.store(2000);
    send(0);  // the writer of volume 0 sleeps in this block's write
    ASSERT_TRUE(test::wait_until([&] { return !healthy(0); }, std::chrono::seconds(5)));
    EXPECT_EQ(volume(0).stalls.load(), 1u);
    // Stream 2 is not in the stalled write: it moves now, while the stall lasts.
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(2) == 1; }));
    send(2, 2);
    ASSERT_TRUE(test::wait_until([&] { return accounted(2) == sent_[2]; }, std::chrono::milliseconds(1500)))
        << "stream 2 waited for the stalled write";
    EXPECT_EQ(writer_->counters(0).written_packets.load(), kPacketsPerBlock) << "the stalled block is not done yet";
    writer_->volume_fault(0)->stall_ms.store(0);
    send(0, 2);  // queued behind the stalled block, then written on volume 1
    expect_all_accounted();
    EXPECT_EQ(writer_->counters(0).write_error_packets.load(), 0u) << "a stall that returns loses nothing";
    ASSERT_TRUE(test::wait_until([&] { return healthy(0); }, std::chrono::seconds(10)));
    writer_->stop();
    EXPECT_EQ(packets_in(dirs_[0].path()) + packets_in(dirs_[1].path()), 7 * kPacketsPerBlock);
}

// The files of a stream that moved are one sequence across the volumes: verify over both
// finds them all in their manifests and no gap; over one alone, the other's are missing.
TEST_F(VolumesTest, AStreamsFilesAreOneSequenceAcrossTheVolumes) {
    config_.manifest = true;
    start(1);
    send(0, 2);
    expect_all_accounted();
    writer_->volume_fault(0)->error.store(EIO);
    send(0);
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(0) == 1; }));
    send(0, 2);
    expect_all_accounted();
    writer_->stop();
    std::vector<std::string> lines;
    const auto keep = [&](const std::string& line) { lines.push_back(line); };
    const Result<VerifyReport> both = verify_volumes({}, {dirs_[0].path(), dirs_[1].path()}, keep);
    ASSERT_TRUE(both.ok()) << both.error().message;
    EXPECT_EQ(both->files, 2u);
    EXPECT_EQ(both->verified, 2u);
    EXPECT_EQ(both->gaps, 0u) << testing::PrintToString(lines);
    // The block lost to the error is in the span of the file that was open on volume 0.
    EXPECT_EQ(both->losses, 1u);
    VerifyOptions one;
    one.directory = dirs_[1].path();
    const Result<VerifyReport> alone = verify_directory(one, keep);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ(alone->files, 1u);
}

// The file open on a volume when it failed could not be renamed (a file system gone
// read-only): it waits under its in-progress name. Repaired, the file system holds less of
// it than was written (what it had not committed). Once the volume is re-admitted the
// daemon finishes it with its run and sequence, cut to complete records, and counts what
// it no longer holds as lost after write: files == written - lost_after_write, exactly.
TEST_F(VolumesTest, AFileLeftOnAFailedVolumeIsFinishedWhenItIsBackWhatItLostCounted) {
    config_.manifest = true;
    config_.volume_probe_interval_s = 3600;  // re-admitted when the test says so
    start(1);
    send(0, 3);
    expect_all_accounted();
    std::string part;
    for (const auto& entry : std::filesystem::directory_iterator(dirs_[0].path()))
        if (layout::final_name_of_in_progress(entry.path().filename().string())) part = entry.path().filename();
    ASSERT_FALSE(part.empty());
    const std::string final_name = *layout::final_name_of_in_progress(part);
    // The rename cannot be done: a directory has the final name (EISDIR), as a read-only
    // file system refuses it.
    ASSERT_EQ(::mkdir(dirs_[0].file(final_name).c_str(), 0700), 0);
    writer_->volume_fault(0)->error.store(EIO);
    send(0);  // lost to the error; the volume fails, the stream moves, the file stays
    ASSERT_TRUE(test::wait_until([&] { return writer_->stream_volume(0) == 1; }));
    send(0, 2);
    expect_all_accounted();
    ASSERT_TRUE(test::wait_until([&] { return volume(0).errors_other.load() >= 1; }));  // the rename
    const uint64_t written_size = test::read_file(dirs_[0].file(part)).size();
    // What the repaired file system kept: the last 1000 bytes are gone (a partial record).
    ASSERT_EQ(::truncate(dirs_[0].file(part).c_str(), static_cast<off_t>(written_size - 1000)), 0);
    ASSERT_EQ(::rmdir(dirs_[0].file(final_name).c_str()), 0);
    writer_->volume_fault(0)->error.store(0);
    writer_->probe_failed_volumes();
    ASSERT_TRUE(test::wait_until([&] { return healthy(0); }, std::chrono::seconds(5)));
    ASSERT_TRUE(test::wait_until([&] { return writer_->counters(0).files_finalised.load() == 1; }));
    writer_->stop();

    const test::PcapRead kept = test::read_with_libpcap(dirs_[0].file(final_name));
    ASSERT_TRUE(kept.error.empty()) << kept.error;
    EXPECT_FALSE(std::filesystem::exists(dirs_[0].file(part)));
    const uint64_t kept_size = test::read_file(dirs_[0].file(final_name)).size();
    EXPECT_LT(kept_size, written_size - 1000 + 1);
    uint64_t kept_wire = 0;
    for (const test::Packet& p : kept.packets) kept_wire += p.len;
    const uint64_t lost = 3 * kPacketsPerBlock - kept.packets.size();
    EXPECT_GE(lost, 1u);
    EXPECT_EQ(volume(0).lost_after_write_packets.load(), lost);
    EXPECT_EQ(volume(0).lost_after_write_file_bytes.load(), written_size - kept_size);
    uint64_t sent_wire = 0;
    for (const test::Packet& p : test::make_packets(kPacketsPerBlock, kT0)) sent_wire += p.len;
    for (const test::Packet& p : test::make_packets(kPacketsPerBlock, kT0 + 1'000'000'000ull)) sent_wire += p.len;
    for (const test::Packet& p : test::make_packets(kPacketsPerBlock, kT0 + 2'000'000'000ull)) sent_wire += p.len;
    EXPECT_EQ(volume(0).lost_after_write_bytes.load(), sent_wire - kept_wire);
    // Over both volumes: the files hold written - lost_after_write.
    EXPECT_EQ(packets_in(dirs_[0].path()) + packets_in(dirs_[1].path()),
              writer_->counters(0).written_packets.load() - lost);
    // Its manifest is the writer's (run, sequence 0), the late losses among its drops.
    const UniqueFd dir(::open(dirs_[0].path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const ManifestRead read = read_manifest(dir.get(), final_name);
    ASSERT_TRUE(read.ok()) << read.problem;
    EXPECT_FALSE(read.manifest.recovered);
    EXPECT_EQ(read.manifest.seq, 0u);
    EXPECT_EQ(read.manifest.packets, kept.packets.size());
    ASSERT_TRUE(read.manifest.drops.has_value());
    EXPECT_EQ(read.manifest.drops->write_error, kPacketsPerBlock + lost);
    std::vector<std::string> lines;
    const Result<VerifyReport> both = verify_volumes(
        {}, {dirs_[0].path(), dirs_[1].path()}, [&](const std::string& line) { lines.push_back(line); });
    ASSERT_TRUE(both.ok()) << both.error().message;
    EXPECT_EQ(both->files, 2u);
    EXPECT_EQ(both->verified, 2u) << testing::PrintToString(lines);
    EXPECT_EQ(both->gaps, 0u) << testing::PrintToString(lines);
    EXPECT_EQ(both->recovered, 0u);
    EXPECT_EQ(log_.count("now that its volume is back"), 1u) << log_.text();
}

// With every volume failed capture goes on counting what it loses; SIGHUP's probe
// brings a volume back at once (probe interval notwithstanding).
TEST_F(VolumesTest, EveryVolumeFailedCountsDropsAndResumes) {
    config_.volumes.clear();
    config_.volume_probe_interval_s = 3600;
    config_.volume_stall_timeout_ms = 300;
    config_.blocks_per_queue = 4;
    auto created = Writer::create(config_, {StreamSpec{test::test_stream_id(), 0, 262144}}, heap_block_memory());
    ASSERT_TRUE(created.ok());
    writer_ = std::move(created).value();
    ASSERT_TRUE(writer_->start().ok());
    workers_.push_back(std::make_unique<FakeWorker>(writer_->stream(0)));
    sent_.assign(1, 0);
    writer_->volume_fault(0)->error.store(EIO);
    send(0, 3);
    expect_all_accounted();
    EXPECT_FALSE(healthy(0));
    EXPECT_EQ(writer_->counters(0).write_error_packets.load(), 3 * kPacketsPerBlock);
    writer_->volume_fault(0)->error.store(0);
    writer_->probe_failed_volumes();
    ASSERT_TRUE(test::wait_until([&] { return healthy(0); }, std::chrono::seconds(5)));
    send(0, 2);
    expect_all_accounted();
    EXPECT_EQ(writer_->counters(0).written_packets.load(), 2 * kPacketsPerBlock);
    writer_->stop();
}

// What the probe does for a volume mounted again on its path: the descriptor it holds is
// moved to the directory the path names now (here: the old one renamed away, a new one
// made in its place), once.
TEST(FollowDirectory, APathNamingAnotherDirectoryIsFollowed) {
    test::TempDir base;
    const std::string path = base.path() + "/vol";
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_FALSE(follow_directory(fd, path));  // the same directory
    ASSERT_EQ(::rename(path.c_str(), (path + ".old").c_str()), 0);
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
    std::fclose(std::fopen((path + "/new-file").c_str(), "w"));
    EXPECT_EQ(::faccessat(fd, "new-file", F_OK, 0), -1);
    EXPECT_TRUE(follow_directory(fd, path));
    EXPECT_EQ(::faccessat(fd, "new-file", F_OK, 0), 0);
    EXPECT_FALSE(follow_directory(fd, path));
    EXPECT_FALSE(follow_directory(fd, base.path() + "/gone"));  // cannot be opened: left as it is
    EXPECT_EQ(::faccessat(fd, "new-file", F_OK, 0), 0);
    ::close(fd);
}

}  // namespace
}  // namespace linecap
