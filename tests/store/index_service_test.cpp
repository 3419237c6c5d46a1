// The daemon's background indexer (archive/index_service.hpp): files reported finished are
// indexed and reported to the hook; the start-up sweep finds files whose index is
// missing, stale or damaged and leaves current ones alone; files deleted before their
// turn are not failures; unreadable files are; a full queue skips and counts; stop()
// indexes the files already reported.
#include <gtest/gtest.h>
#include <utime.h>

#include <chrono>
#include <map>
#include <mutex>

#include "archive/index_format.hpp"
#include "archive/index_service.hpp"
#include "store_test_support.hpp"

namespace {

using namespace store_test;
using linecap::IndexingCounters;
using linecap::IndexService;
using linecap::IndexServiceOptions;
using linecap::IndexState;
using linecap::load_index;

constexpr auto kWait = std::chrono::seconds(30);
constexpr uint64_t kT0 = 1'764'460'800'000'000'000ull;  // 2025-11-30T00:00:00Z

class IndexServiceTest : public ::testing::Test {
protected:
    // A capture file of `packets` TCP packets starting at ts, named as the daemon would.
    std::string make_capture(uint64_t ts, int packets) {
        std::vector<Packet> pk;
        for (int i = 0; i < packets; ++i)
            pk.push_back({ts + uint64_t(i) * 1000, frame(FrameSpec{.sport = uint16_t(1000 + i), .tag = uint32_t(i)})});
        const std::string name = store_name(ts, "tap", 0);
        write_file(dir / name, pcap_image(pk));
        return name;
    }

    IndexState index_state(const std::string& name) {
        struct stat st {};
        EXPECT_EQ(::stat((dir / name).c_str(), &st), 0);
        const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
        return load_index(dir / name, uint64_t(st.st_size), mtime).state;
    }

    std::unique_ptr<IndexService> service(size_t max_queued = 65536, bool sweep = true) {
        IndexServiceOptions o{.directory = dir.path(),
                              .file_template = "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}",
                              .sweep_at_start = sweep,
                              .idle_priority = false,
                              .max_queued = max_queued};
        return std::make_unique<IndexService>(
            o,
            [this](const std::string& name, uint64_t bytes) {
                const std::lock_guard lock(mu);
                indexed[name] = bytes;
            },
            counters);
    }

    TempDir dir;
    IndexingCounters counters;
    std::mutex mu;
    std::map<std::string, uint64_t> indexed;  // what the hook was told
};

TEST_F(IndexServiceTest, IndexesReportedFilesAndTellsTheHook) {
    auto svc = service(65536, false);  // no sweep: it would race the files created below
    svc->start();
    const std::string a = make_capture(kT0, 50), b = make_capture(kT0 + 60'000'000'000ull, 70);
    svc->file_finished(a);
    svc->file_finished(b);
    ASSERT_TRUE(svc->wait_idle(kWait));
    EXPECT_EQ(index_state(a), IndexState::valid);
    EXPECT_EQ(index_state(b), IndexState::valid);
    EXPECT_EQ(counters.built_files.load(), 2u);
    EXPECT_EQ(counters.failed_files.load(), 0u);
    EXPECT_EQ(counters.queued_files.load(), 0u);
    struct stat st {};
    ASSERT_EQ(::stat((dir / a + ".idx").c_str(), &st), 0);
    const std::lock_guard lock(mu);
    ASSERT_EQ(indexed.size(), 2u);
    EXPECT_EQ(indexed.at(a), uint64_t(st.st_size));
    EXPECT_EQ(counters.index_bytes.load(), indexed.at(a) + indexed.at(b));
}

TEST_F(IndexServiceTest, SweepRebuildsMissingStaleAndDamagedIndexesOnly) {
    const std::string current = make_capture(kT0, 10), missing = make_capture(kT0 + 1'000'000'000, 10),
                      stale = make_capture(kT0 + 2'000'000'000, 10), damaged = make_capture(kT0 + 3'000'000'000, 10);
    for (const auto& n : {current, stale, damaged}) ASSERT_TRUE(linecap::build_index(dir / n));
    utimbuf old{1, 1};
    ASSERT_EQ(::utime((dir / stale).c_str(), &old), 0);  // the file changed after indexing
    write_file(dir / damaged + ".idx", Bytes{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'n', 'd', 'e', 'x'});
    struct stat before {};
    ASSERT_EQ(::stat((dir / current + ".idx").c_str(), &before), 0);

    auto svc = service();
    svc->start();
    ASSERT_TRUE(svc->wait_idle(kWait));
    for (const auto& n : {current, missing, stale, damaged}) EXPECT_EQ(index_state(n), IndexState::valid) << n;
    EXPECT_EQ(counters.built_files.load(), 3u);
    struct stat after {};
    ASSERT_EQ(::stat((dir / current + ".idx").c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino) << "a current index was rebuilt";
    const std::lock_guard lock(mu);
    EXPECT_FALSE(indexed.contains(current));
}

TEST_F(IndexServiceTest, AFileQueuedTwiceIsIndexedOnce) {
    const std::string a = make_capture(kT0, 10);
    auto svc = service();  // the sweep finds `a` unindexed ...
    svc->file_finished(a);  // ... and the writer reports it too
    svc->start();
    ASSERT_TRUE(svc->wait_idle(kWait));
    EXPECT_EQ(counters.built_files.load(), 1u);
    EXPECT_EQ(index_state(a), IndexState::valid);
}

TEST_F(IndexServiceTest, DeletedBeforeItsTurnIsNotAFailure) {
    auto svc = service(65536, false);  // not started: the file waits in the queue
    const std::string gone = make_capture(kT0, 10), kept = make_capture(kT0 + 1'000'000'000, 10);
    svc->file_finished(gone);
    svc->file_finished(kept);
    ASSERT_EQ(::unlink((dir / gone).c_str()), 0);  // retention got there first
    svc->start();
    ASSERT_TRUE(svc->wait_idle(kWait));
    EXPECT_EQ(counters.built_files.load(), 1u);
    EXPECT_EQ(counters.failed_files.load(), 0u);
    EXPECT_FALSE(std::filesystem::exists(dir / gone + ".idx"));
    EXPECT_EQ(index_state(kept), IndexState::valid);
}

TEST_F(IndexServiceTest, UnreadableFileIsCountedAsFailedAndTheRestGoesOn) {
    auto svc = service(65536, false);
    write_file(dir / "20251130T000000.000000000Z-tap-q0.pcap", Bytes(40, 0xAB));  // not a pcap
    const std::string good = make_capture(kT0 + 1'000'000'000, 10);
    svc->file_finished("20251130T000000.000000000Z-tap-q0.pcap");
    svc->file_finished(good);
    svc->start();
    ASSERT_TRUE(svc->wait_idle(kWait));
    EXPECT_EQ(counters.failed_files.load(), 1u);
    EXPECT_EQ(counters.built_files.load(), 1u);
    EXPECT_EQ(index_state(good), IndexState::valid);
}

TEST_F(IndexServiceTest, FullQueueSkipsAndCounts) {
    auto svc = service(2, false);
    std::vector<std::string> names;
    for (int i = 0; i < 4; ++i) names.push_back(make_capture(kT0 + uint64_t(i) * 1'000'000'000, 5));
    for (const auto& n : names) svc->file_finished(n);
    EXPECT_EQ(counters.queued_files.load(), 2u);
    EXPECT_EQ(counters.skipped_files.load(), 2u);
    svc->start();
    ASSERT_TRUE(svc->wait_idle(kWait));
    EXPECT_EQ(counters.built_files.load(), 2u);
    EXPECT_EQ(index_state(names[0]), IndexState::valid);
    EXPECT_EQ(index_state(names[3]), IndexState::missing);
}

TEST_F(IndexServiceTest, StopIndexesTheFilesAlreadyReported) {
    auto svc = service(65536, false);
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i) names.push_back(make_capture(kT0 + uint64_t(i) * 1'000'000'000, 2000));
    svc->start();
    for (const auto& n : names) svc->file_finished(n);
    svc->stop();
    for (const auto& n : names) EXPECT_EQ(index_state(n), IndexState::valid) << n;
    EXPECT_EQ(counters.built_files.load(), 3u);
}

TEST_F(IndexServiceTest, StopBeforeStartAndTwiceIsSafe) {
    auto svc = service(65536, false);
    svc->stop();
    svc->start();  // refused after stop: no thread to leak
    svc->file_finished(make_capture(kT0, 5));
    svc->stop();
    EXPECT_EQ(counters.built_files.load(), 0u);
}  // the destructor stops a third time

}  // namespace
