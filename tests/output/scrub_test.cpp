// The background scrub: files that match their manifests pass, a changed byte marks its
// file (and verify agrees), files without a usable manifest are counted and never
// marked, a file retention deletes meanwhile leaves nothing behind, the reads are paced
// over the period and resume after a restart. Time is a test clock: no test sleeps.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/scrub.hpp"
#include "archive/store_inventory.hpp"
#include "archive/verify.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
using namespace layout;  // every name in the capture directory
namespace {

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint64_t kSecond = 1000000000ull;
constexpr size_t kChunk = 4096;

// Time moves only when the scrub waits: to the deadline it asks for, at once.
class TestClock final : public ScrubClock {
public:
    uint64_t now = kT0 + 1000 * kSecond;
    std::vector<uint64_t> waits;
    // Called at every wait, after time moved; returning false stops the scrub.
    std::function<bool(size_t wait_number)> on_wait;

    uint64_t now_ns() override { return now; }
    bool wait_until(uint64_t deadline_ns) override {
        waits.push_back(deadline_ns);
        now = std::max(now, deadline_ns);
        return !on_wait || on_wait(waits.size());
    }
};

class ScrubTest : public ::testing::Test {
protected:
    void SetUp() override { write_run(4); }

    // `files` files of one stream with manifests, by a writer run.
    void write_run(size_t files) {
        OutputConfig config = test::test_output_config(dir.path());
        config.manifest = true;
        auto created = Writer::create(config, {StreamSpec{StreamId{"p0", 0, 0}, 0, 262144}}, heap_block_memory());
        ASSERT_TRUE(created.ok());
        auto writer = std::move(created).value();
        ASSERT_TRUE(writer->start().ok());
        test::FakeWorker worker(writer->stream(0));
        for (size_t i = 0; i < files; ++i) {
            worker.send_block(test::make_packets(10, kT0 + i * kSecond), true);
            ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).files_finalised.load() == i + 1; }));
        }
        writer->stop();
        names = test::pcap_files(dir);
        ASSERT_EQ(names.size(), files);
    }

    std::unique_ptr<Scrubber> scrubber(uint64_t period_ns = 100 * kSecond) {
        return std::make_unique<Scrubber>(
            ScrubOptions{.directory = dir.path(), .period_ns = period_ns, .chunk_bytes = kChunk,
                         .idle_priority = false},
            clock, counters, [this](const std::string& name) { hooked.push_back(name); });
    }

    uint64_t size_of(const std::string& name) const {
        struct stat st {};
        return ::stat(dir.file(name).c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    }
    // Reads per file: whole chunks, then the short read that ends it.
    static size_t reads_of(uint64_t size) { return size / kChunk + 1; }
    bool marked(const std::string& name) const { return ::access(dir.file(damaged_marker_name(name)).c_str(), F_OK) == 0; }
    std::optional<std::string> marker(const std::string& name) const {
        UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
        return read_damaged_marker(fd.get(), name);
    }
    void flip_byte(const std::string& name) {
        auto bytes = test::read_file(dir.file(name));
        bytes[bytes.size() - 100] ^= 0x01;  // inside the last packet: the file still reads
        test::write_file(dir.file(name), bytes);
    }

    test::TempDir dir;
    std::vector<std::string> names;
    TestClock clock;
    ScrubCounters counters;
    std::vector<std::string> hooked;
};

TEST_F(ScrubTest, FilesThatMatchTheirManifestsPass) {
    ASSERT_TRUE(scrubber()->run_pass());
    uint64_t total = 0;
    for (const std::string& n : names) total += size_of(n);
    EXPECT_EQ(counters.ok_files.load(), 4u);
    EXPECT_EQ(counters.bytes_read.load(), total);
    EXPECT_EQ(counters.mismatched_files.load() + counters.missing_manifests.load() + counters.bad_manifests.load() +
                  counters.unreadable_files.load(),
              0u);
    EXPECT_EQ(counters.damaged_files.load(), 0u);
    EXPECT_EQ(counters.passes.load(), 1u);
    EXPECT_EQ(counters.last_pass_end_ns.load(), clock.now);
    for (const std::string& n : names) EXPECT_FALSE(marked(n)) << n;
    EXPECT_TRUE(hooked.empty());
}

TEST_F(ScrubTest, AChangedByteMarksTheFileAndVerifyAgrees) {
    const auto original = test::read_file(dir.file(names[1]));
    flip_byte(names[1]);
    ASSERT_TRUE(scrubber()->run_pass());
    EXPECT_EQ(counters.ok_files.load(), 3u);
    EXPECT_EQ(counters.mismatched_files.load(), 1u);
    EXPECT_EQ(counters.damaged_files.load(), 1u);
    ASSERT_TRUE(marked(names[1]));
    EXPECT_EQ(hooked, std::vector<std::string>{names[1]});
    const std::optional<std::string> why = marker(names[1]);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("sha256"), std::string::npos) << *why;
    EXPECT_NE(why->find(format_utc_ns(clock.now).substr(0, 10)), std::string::npos) << *why;  // when
    EXPECT_FALSE(marker(names[0]));
    // The marker is a sidecar: neither a capture file nor a manifest.
    EXPECT_FALSE(is_capture_name(damaged_marker_name(names[1])));
    EXPECT_EQ(capture_name_of_damaged_marker(damaged_marker_name(names[1])), names[1]);

    // verify reports the same file, by the same comparison.
    std::vector<std::string> lines;
    const auto report = verify_directory({dir.path(), 0, false}, [&](const std::string& l) { lines.push_back(l); });
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->mismatched, 1u);
    EXPECT_EQ(report->damaged, 1u);
    const auto has = [&](const std::string& prefix) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.starts_with(prefix); });
    };
    EXPECT_TRUE(has("MISMATCH " + names[1] + ": sha256")) << ::testing::PrintToString(lines);
    EXPECT_TRUE(has("DAMAGED " + names[1] + ": marked by the scrub")) << ::testing::PrintToString(lines);

    // The next pass finds it again and keeps the first finding; restored, it is unmarked.
    ASSERT_TRUE(scrubber()->run_pass());
    EXPECT_EQ(marker(names[1]), why);
    test::write_file(dir.file(names[1]), original);
    ASSERT_TRUE(scrubber()->run_pass());
    EXPECT_FALSE(marked(names[1]));
    EXPECT_EQ(counters.damaged_files.load(), 0u);
    EXPECT_EQ(counters.ok_files.load(), 3u + 3u + 4u);
}

TEST_F(ScrubTest, FilesWithoutAUsableManifestAreCountedNotMarked) {
    ASSERT_EQ(::unlink(dir.file(manifest_name(names[0])).c_str()), 0);
    test::write_file(dir.file(manifest_name(names[2])), std::vector<uint8_t>{'{', '"', 's'});  // cut short
    flip_byte(names[0]);  // cannot be told from the original without a manifest
    flip_byte(names[2]);
    ASSERT_TRUE(scrubber()->run_pass());
    EXPECT_EQ(counters.missing_manifests.load(), 1u);
    EXPECT_EQ(counters.bad_manifests.load(), 1u);
    EXPECT_EQ(counters.ok_files.load(), 2u);
    EXPECT_EQ(counters.mismatched_files.load(), 0u);
    EXPECT_EQ(counters.bytes_read.load(), size_of(names[1]) + size_of(names[3]));  // nothing to check against
    EXPECT_FALSE(marked(names[0]));
    EXPECT_FALSE(marked(names[2]));
}

TEST_F(ScrubTest, AFileDeletedMeanwhileLeavesNothingBehind) {
    flip_byte(names[1]);
    // names[1] is deleted (as retention does: file, then sidecars) after the scrub opened
    // it — at the first wait of its reads — and names[2] before its turn.
    const size_t first_wait_of_1 = reads_of(size_of(names[0])) + 1;
    clock.on_wait = [&](size_t n) {
        if (n == first_wait_of_1) {
            for (const std::string& f : {names[1], manifest_name(names[1]), names[2], manifest_name(names[2])})
                EXPECT_EQ(::unlink(dir.file(f).c_str()), 0) << f;
        }
        return true;
    };
    ASSERT_TRUE(scrubber()->run_pass());
    EXPECT_EQ(counters.ok_files.load(), 2u);
    EXPECT_EQ(counters.mismatched_files.load(), 0u);
    EXPECT_EQ(counters.unreadable_files.load(), 0u);
    EXPECT_EQ(counters.missing_manifests.load(), 0u);
    EXPECT_EQ(counters.damaged_files.load(), 0u);
    EXPECT_FALSE(marked(names[1]));
    EXPECT_EQ(dir.names().size(), 2u * 2 + 1) << ::testing::PrintToString(dir.names());  // 2 files, 2 manifests, state
}

TEST_F(ScrubTest, ReadsArePacedOverThePeriod) {
    const uint64_t period = 100 * kSecond;
    auto s = scrubber(period);
    const uint64_t start = clock.now;
    ASSERT_TRUE(s->run_pass());
    // Before each chunk: start + period × (bytes read before it) / (bytes of the pass).
    uint64_t total = 0;
    for (const std::string& n : names) total += size_of(n);
    std::vector<uint64_t> expected;
    uint64_t done = 0;
    for (const std::string& n : names) {
        const uint64_t size = size_of(n);
        for (uint64_t at = 0;; at += kChunk) {
            expected.push_back(start + static_cast<uint64_t>(static_cast<unsigned __int128>(period) * (done + at) / total));
            if (size - at < kChunk) break;
        }
        done += size;
    }
    EXPECT_EQ(clock.waits, expected);
    // The store took (almost) the whole period: the last chunk began near its end, and
    // the pass ended within it.
    EXPECT_GT(clock.waits.back(), start + period * 3 / 4);
    EXPECT_LE(clock.now, start + period);
}

TEST_F(ScrubTest, PassesStartOnePeriodApart) {
    const uint64_t period = 100 * kSecond;
    auto s = scrubber(period);
    const uint64_t start = clock.now;
    clock.on_wait = [&](size_t) { return counters.passes.load() < 2; };  // stop in the third pass
    s->run();
    EXPECT_EQ(counters.passes.load(), 2u);
    // Waits of pass 1, then the wait for pass 2 (one period after pass 1 began), pass 2's
    // first chunk at its own start, …, and the wait for pass 3 (where the test stops it).
    const size_t per_pass = [&] {
        size_t n = 0;
        for (const std::string& f : names) n += reads_of(size_of(f));
        return n;
    }();
    ASSERT_EQ(clock.waits.size(), 2 * per_pass + 2);
    EXPECT_EQ(clock.waits[0], start);  // no pass before: at once
    EXPECT_EQ(clock.waits[per_pass], start + period);
    EXPECT_EQ(clock.waits[per_pass + 1], start + period);
    EXPECT_EQ(clock.waits[2 * per_pass + 1], start + 2 * period);
}

TEST_F(ScrubTest, ARestartResumesThePassWhereItStopped) {
    const uint64_t period = 100 * kSecond;
    const uint64_t start = clock.now;
    // Stop at the first wait of names[2]'s reads: names[0] and names[1] are done.
    const size_t first_wait_of_2 = reads_of(size_of(names[0])) + reads_of(size_of(names[1])) + 1;
    clock.on_wait = [&](size_t n) { return n < first_wait_of_2; };
    scrubber(period)->run();
    EXPECT_EQ(counters.ok_files.load(), 2u);
    EXPECT_EQ(counters.passes.load(), 0u);

    // A new daemon run: the same pass goes on with names[2], paced from its first start.
    ScrubCounters again;
    TestClock later;
    later.now = clock.now + 10 * kSecond;
    later.on_wait = [&](size_t) { return again.passes.load() < 1; };
    Scrubber resumed(ScrubOptions{.directory = dir.path(), .period_ns = period, .chunk_bytes = kChunk,
                                  .idle_priority = false},
                     later, again);
    resumed.run();
    EXPECT_EQ(again.passes.load(), 1u);
    EXPECT_EQ(again.ok_files.load(), 2u);
    EXPECT_EQ(again.bytes_read.load(), size_of(names[2]) + size_of(names[3]));
    uint64_t total = 0;
    for (const std::string& n : names) total += size_of(n);
    const uint64_t done = size_of(names[0]) + size_of(names[1]);
    EXPECT_EQ(later.waits.front(), start + static_cast<uint64_t>(static_cast<unsigned __int128>(period) * done / total));

    // And the completed pass is remembered by the next run (the metric survives).
    ScrubCounters third;
    TestClock clock3;
    clock3.now = start + period / 2;
    clock3.on_wait = [](size_t) { return false; };
    Scrubber next(ScrubOptions{.directory = dir.path(), .period_ns = period, .idle_priority = false}, clock3, third);
    next.run();
    EXPECT_EQ(third.last_pass_end_ns.load(), again.last_pass_end_ns.load());
    ASSERT_EQ(clock3.waits.size(), 1u);
    EXPECT_EQ(clock3.waits[0], start + period);  // the next pass is due a period after the resumed one began
}

TEST_F(ScrubTest, AnUnreadableStateStartsAFreshPass) {
    test::write_file(dir.file(std::string(kScrubStateName)), std::vector<uint8_t>{'s', 't', 'a', 'r', 't', 'e', 'd', ' ', 'x'});
    clock.on_wait = [&](size_t) { return counters.passes.load() < 1; };
    scrubber()->run();
    EXPECT_EQ(counters.passes.load(), 1u);
    EXPECT_EQ(counters.ok_files.load(), 4u);
}

// The thread: stop() interrupts a pass paced over a long period at its next chunk.
TEST_F(ScrubTest, TheServiceStopsInTheMiddleOfAPass) {
    ScrubService service(ScrubOptions{.directory = dir.path(), .period_ns = 3600 * kSecond, .chunk_bytes = kChunk,
                                      .idle_priority = false},
                         {}, counters);
    service.start();
    ASSERT_TRUE(test::wait_until([&] { return counters.bytes_read.load() > 0; }));
    service.stop();  // would wait for most of an hour if the pacing did not see it
    EXPECT_EQ(counters.passes.load(), 0u);
    EXPECT_EQ(counters.period_s.load(), 3600u);
    EXPECT_EQ(::access(dir.file(std::string(kScrubStateName)).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace linecap
