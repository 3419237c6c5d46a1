#include "archive/recovery.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_blocks.hpp"
#include "format/pcapng_format.hpp"
#include "util/sha256.hpp"
#include "output/writer.hpp"
#include "output_test_support.hpp"

namespace linecap {
namespace {

using Outcome = RecoveredFile::Outcome;
using test::Packet;

constexpr uint64_t kT0 = 1700000000ull * 1000000000ull;
constexpr uint32_t kSnaplen = 262144;
const std::string kPart = ".x.pcap.part";

// Offsets of the record boundaries of pcap_file_bytes(…, packets): [24, 24 + r0, …].
std::vector<size_t> boundaries(const std::vector<Packet>& packets) {
    std::vector<size_t> offsets{sizeof(pcap::FileHeader)};
    for (const Packet& p : packets) offsets.push_back(offsets.back() + pcap::record_size(p.bytes.size()));
    return offsets;
}

class RecoveryTest : public ::testing::Test {
protected:
    RecoveryReport recover() {
        auto report = recover_in_progress(dir.path());
        EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().message);
        return report.ok() ? report.value() : RecoveryReport{};
    }

    // Writes `bytes` as the in-progress file, recovers, and expects the first `kept`
    // packets in a valid "x.pcap".
    void expect_recovered(const std::vector<uint8_t>& bytes, const std::vector<Packet>& packets, size_t kept,
                          uint64_t truncated) {
        test::write_file(dir.file(kPart), bytes);
        const RecoveryReport report = recover();
        ASSERT_EQ(report.files.size(), 1u);
        const RecoveredFile& f = report.files[0];
        EXPECT_EQ(f.outcome, Outcome::recovered) << f.reason;
        EXPECT_EQ(f.in_progress_name, kPart);
        EXPECT_EQ(f.new_name, "x.pcap");
        EXPECT_EQ(f.packets, kept);
        EXPECT_EQ(f.truncated_bytes, truncated);
        EXPECT_EQ(dir.names(), std::vector<std::string>{"x.pcap"});
        const test::PcapRead read = test::read_with_libpcap(dir.file("x.pcap"));
        EXPECT_EQ(read.error, "");
        EXPECT_TRUE(read.packets == std::vector<Packet>(packets.begin(), packets.begin() + kept));
        EXPECT_EQ(test::read_file(dir.file("x.pcap")).size(), bytes.size() - truncated);
    }

    test::TempDir dir;
    test::LogCapture log;
    const std::vector<Packet> packets = test::make_packets(10, kT0);
    const std::vector<uint8_t> file = test::pcap_file_bytes(kSnaplen, packets);
    const std::vector<size_t> at = boundaries(packets);
};

std::vector<uint8_t> prefix(const std::vector<uint8_t>& bytes, size_t n) { return {bytes.begin(), bytes.begin() + n}; }

TEST_F(RecoveryTest, CutInsideRecordDataKeepsTheRecordsBefore) {
    expect_recovered(prefix(file, file.size() - 5), packets, 9, at[10] - at[9] - 5);
    EXPECT_EQ(log.count("recovered " + dir.file("x.pcap") + ": 9 packets, " + std::to_string(at[10] - at[9] - 5) +
                        " bytes truncated"),
              1u)
        << log.text();
}

TEST_F(RecoveryTest, CutInsideARecordHeaderKeepsTheRecordsBefore) {
    expect_recovered(prefix(file, at[7] + 8), packets, 7, 8);
}

TEST_F(RecoveryTest, CutAtARecordBoundaryKeepsEverything) {
    expect_recovered(prefix(file, at[4]), packets, 4, 0);
    EXPECT_EQ(log.count(": 4 packets, 0 bytes truncated"), 1u) << log.text();
}

TEST_F(RecoveryTest, HeaderOnlyBecomesAnEmptyCapture) { expect_recovered(prefix(file, 24), packets, 0, 0); }

TEST_F(RecoveryTest, ZeroFilledTailIsCutOff) {
    auto bytes = file;
    bytes.resize(bytes.size() + 4096, 0);  // what a crash can leave after the last record
    expect_recovered(bytes, packets, 10, 4096);
}

TEST_F(RecoveryTest, ImplausibleRecordsEndTheFile) {
    struct Corruption {
        const char* what;
        size_t field_offset;  // within the record header
        uint32_t value;
    };
    const Corruption corruptions[] = {
        {"caplen over the maximum snaplen", offsetof(pcap::RecordHeader, caplen), pcap::kMaxSnaplen + 1},
        {"caplen over len", offsetof(pcap::RecordHeader, caplen), 1600},
        {"zero len", offsetof(pcap::RecordHeader, len), 0},
        {"nanoseconds out of range", offsetof(pcap::RecordHeader, ts_frac), 1000000000},
    };
    for (const Corruption& c : corruptions) {
        SCOPED_TRACE(c.what);
        auto bytes = file;
        std::memcpy(bytes.data() + at[6] + c.field_offset, &c.value, sizeof c.value);
        expect_recovered(bytes, packets, 6, file.size() - at[6]);
        std::remove(dir.file("x.pcap").c_str());
    }
}

TEST_F(RecoveryTest, CaplenOverTheFileSnaplenEndsTheFile) {
    const std::vector<Packet> big = {test::make_packet(kT0, 100), test::make_packet(kT0 + 1, 1500)};
    auto bytes = test::pcap_file_bytes(kSnaplen, big);
    const uint32_t snaplen = 1000;  // the second record claims more than the file allows
    std::memcpy(bytes.data() + offsetof(pcap::FileHeader, snaplen), &snaplen, sizeof snaplen);
    test::write_file(dir.file(kPart), bytes);
    const RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].packets, 1u);
    EXPECT_EQ(test::read_file(dir.file("x.pcap")).size(), 24u + 16 + 100);
}

TEST_F(RecoveryTest, TooShortOrUnknownFilesAreMovedAsideUnchanged) {
    const std::vector<uint8_t> short_file = prefix(file, 20);
    std::vector<uint8_t> bad_magic = file;
    bad_magic[0] ^= 0xff;
    test::write_file(dir.file(".a.pcap.part"), short_file);
    test::write_file(dir.file(".b.pcap.part"), bad_magic);
    test::write_file(dir.file(".c.pcap.part"), {});

    const RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 3u);
    EXPECT_EQ(report.count(Outcome::moved_aside), 3u);
    EXPECT_NE(report.files[1].reason.find("magic"), std::string::npos) << report.files[1].reason;
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"a.pcap.corrupt", "b.pcap.corrupt", "c.pcap.corrupt"}));
    EXPECT_EQ(test::read_file(dir.file("a.pcap.corrupt")), short_file);
    EXPECT_EQ(test::read_file(dir.file("b.pcap.corrupt")), bad_magic);
    EXPECT_EQ(log.count("moved aside"), 3u) << log.text();
}

TEST_F(RecoveryTest, AnExistingFinalNameIsNeverOverwritten) {
    test::write_file(dir.file("x.pcap"), std::vector<uint8_t>{1});
    test::write_file(dir.file(kPart), file);
    RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].new_name, "x-recovered.pcap");

    test::write_file(dir.file(kPart), file);
    report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].new_name, "x-recovered-1.pcap");
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"x-recovered-1.pcap", "x-recovered.pcap", "x.pcap"}));
    EXPECT_EQ(test::read_file(dir.file("x.pcap")), std::vector<uint8_t>{1});
    EXPECT_EQ(test::read_file(dir.file("x-recovered-1.pcap")), file);
}

TEST_F(RecoveryTest, OtherFilesAreLeftAlone) {
    for (const char* name : {"y.pcap", ".hidden", "z.part", ".z.pcap.partial"}) test::write_file(dir.file(name), file);
    EXPECT_TRUE(recover().files.empty());
    EXPECT_EQ(dir.names(), (std::vector<std::string>{".hidden", ".z.pcap.partial", "y.pcap", "z.part"}));
}

TEST_F(RecoveryTest, AMissingDirectoryIsAnError) {
    auto report = recover_in_progress(dir.file("missing"));
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message.find("No such file or directory"), std::string::npos);
}

// pcap as other tools write it: microsecond timestamps and/or the other byte order.
struct ForeignFormat {
    const char* name;
    bool microseconds;
    bool swapped;
};

class ForeignRecoveryTest : public RecoveryTest, public ::testing::WithParamInterface<ForeignFormat> {};

void put32(std::vector<uint8_t>& out, uint32_t v, bool swapped) {
    if (swapped) v = __builtin_bswap32(v);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + 4);
}

void put16(std::vector<uint8_t>& out, uint16_t v, bool swapped) {
    if (swapped) v = static_cast<uint16_t>(v << 8 | v >> 8);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + 2);
}

TEST_P(ForeignRecoveryTest, CutInsideARecordIsRepaired) {
    const ForeignFormat f = GetParam();
    std::vector<uint8_t> bytes;
    put32(bytes, f.microseconds ? pcap::kMagicMicrosecond : pcap::kMagicNanosecond, f.swapped);
    put16(bytes, 2, f.swapped);
    put16(bytes, 4, f.swapped);
    put32(bytes, 0, f.swapped);
    put32(bytes, 0, f.swapped);
    put32(bytes, kSnaplen, f.swapped);
    put32(bytes, pcap::kLinktypeEthernet, f.swapped);
    std::vector<Packet> expected;
    for (Packet p : packets) {
        const uint64_t ns = p.ts_ns;
        put32(bytes, static_cast<uint32_t>(ns / 1000000000u), f.swapped);
        put32(bytes, static_cast<uint32_t>(f.microseconds ? ns % 1000000000u / 1000 : ns % 1000000000u), f.swapped);
        put32(bytes, static_cast<uint32_t>(p.bytes.size()), f.swapped);
        put32(bytes, p.len, f.swapped);
        bytes.insert(bytes.end(), p.bytes.begin(), p.bytes.end());
        if (f.microseconds) p.ts_ns = ns / 1000 * 1000;  // what libpcap reports back
        expected.push_back(p);
    }
    expect_recovered(prefix(bytes, at[8] + 20), expected, 8, 20);
}

INSTANTIATE_TEST_SUITE_P(Formats, ForeignRecoveryTest,
                         ::testing::Values(ForeignFormat{"ns_native", false, false}, ForeignFormat{"us_native", true, false},
                                           ForeignFormat{"ns_swapped", false, true}, ForeignFormat{"us_swapped", true, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// A file the writer had open when the process died: copied while in progress, cut in the
// middle of a record, recovered.
TEST_F(RecoveryTest, RepairsWhatTheWriterLeftBehind) {
    test::TempDir out;
    auto created = Writer::create(test::test_output_config(out.path()),
                                  {StreamSpec{test::test_stream_id(), 0, kSnaplen}}, heap_block_memory());
    ASSERT_TRUE(created.ok()) << created.error().message;
    auto writer = std::move(created).value();
    ASSERT_TRUE(writer->start().ok());
    const auto sent = test::make_packets(90, kT0);
    test::FakeWorker worker(writer->stream(0));
    for (size_t b = 0; b < 3; ++b) worker.send_block(std::span<const Packet>(sent).subspan(b * 30, 30));
    ASSERT_TRUE(test::wait_until([&] { return writer->counters(0).written_packets.load() == 90; }));
    const auto names = out.names();
    ASSERT_EQ(names.size(), 1u);
    const auto in_progress = test::read_file(out.file(names[0]));
    writer->stop();

    const auto sent_at = boundaries(sent);
    test::write_file(dir.file(names[0]), prefix(in_progress, sent_at[71] - 3));
    const RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].packets, 70u);
    const std::string final_name = *layout::final_name_of_in_progress(names[0]);
    EXPECT_EQ(report.files[0].new_name, final_name);
    const test::PcapRead read = test::read_with_libpcap(dir.file(final_name));
    EXPECT_EQ(read.error, "");
    EXPECT_TRUE(read.packets == std::vector<Packet>(sent.begin(), sent.begin() + 70));
}

// pcapng as the writer lays it out: SHB + IDB, then EPBs (no ISB: the daemon died).
struct PcapngFile {
    std::vector<uint8_t> bytes;
    std::vector<size_t> ends;  // where each EPB ends
};
PcapngFile pcapng_in_progress(const std::vector<Packet>& packets) {
    PcapngFile f;
    f.bytes = pcapng::file_header({"tap0:2", "net_null0", kSnaplen}, "linecap test");
    for (const Packet& p : packets) {
        const auto caplen = static_cast<uint32_t>(p.bytes.size());
        std::vector<uint8_t> epb(pcapng::record_size(caplen));
        const size_t h = pcapng::encode_epb_header(epb.data(), p.ts_ns, caplen, p.len);
        std::memcpy(epb.data() + h, p.bytes.data(), caplen);
        pcapng::encode_epb_trailer(epb.data() + h + caplen, caplen);
        f.bytes.insert(f.bytes.end(), epb.begin(), epb.end());
        f.ends.push_back(f.bytes.size());
    }
    return f;
}

TEST_F(RecoveryTest, StaleIndexAndManifestTemporariesAreRemovedNothingElse) {
    test::write_file(dir.file("a.pcap"), test::pcap_file_bytes(262144, test::make_packets(3, kT0)));
    test::write_file(dir.file("a.pcap.idx"), std::vector<uint8_t>(64, 1));
    test::write_file(dir.file(".a.pcap.idx.tmp.Xy12Zq"), std::vector<uint8_t>(10, 1));  // a killed indexer's
    test::write_file(dir.file(".a.pcap.manifest.tmp.aB3dE9"), std::vector<uint8_t>{'{'});
    test::write_file(dir.file(".notes"), std::vector<uint8_t>{'x'});                   // not ours
    test::write_file(dir.file(".a.pcap.manifest.tmp"), std::vector<uint8_t>{'x'});    // not an AtomicFile's
    const auto report = recover_in_progress(dir.path(), RecoveryOptions{.write_manifests = false});
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->files.empty());
    EXPECT_EQ(dir.names(), (std::vector<std::string>{".a.pcap.manifest.tmp", ".notes", "a.pcap", "a.pcap.idx"}));
    EXPECT_EQ(log.count("removed stale temporary"), 2u) << log.text();
}

TEST_F(RecoveryTest, PcapngIsCutAtItsLastCompleteBlockAndGetsARecoveredManifest) {
    const auto packets = test::make_packets(50, kT0);
    PcapngFile f = pcapng_in_progress(packets);
    // Power loss: the last block half written, then a zero-filled page.
    std::vector<uint8_t> bytes(f.bytes.begin(), f.bytes.begin() + static_cast<long>(f.ends[40] - 7));
    bytes.resize(bytes.size() + 4096, 0);
    test::write_file(dir.file(".y.pcapng.part"), bytes);
    test::write_file(dir.file(".y.pcapng.manifest.tmp.Xy12Zq"), std::vector<uint8_t>{'{'});  // a stale temporary

    const auto report = recover_in_progress(dir.path(), RecoveryOptions{.write_manifests = true});
    ASSERT_TRUE(report.ok());
    ASSERT_EQ(report->files.size(), 1u);
    const RecoveredFile& r = report->files[0];
    EXPECT_EQ(r.outcome, Outcome::recovered) << r.reason;
    EXPECT_EQ(r.new_name, "y.pcapng");
    EXPECT_EQ(r.packets, 40u);
    EXPECT_TRUE(r.manifest_written);
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"y.pcapng", "y.pcapng.manifest"}));
    const auto kept = test::read_file(dir.file("y.pcapng"));
    EXPECT_EQ(kept.size(), f.ends[39]);
    const test::PcapRead read = test::read_with_libpcap(dir.file("y.pcapng"));
    EXPECT_EQ(read.error, "");
    EXPECT_TRUE(read.packets == std::vector<Packet>(packets.begin(), packets.begin() + 40));
    EXPECT_EQ(log.count("no interface statistics block"), 1u) << log.text();
    EXPECT_EQ(log.count("removed stale temporary"), 1u);

    const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const ManifestRead manifest = read_manifest(fd, "y.pcapng");
    ::close(fd);
    ASSERT_TRUE(manifest.ok()) << manifest.problem;
    const Manifest* m = &manifest.manifest;
    EXPECT_TRUE(m->recovered);
    EXPECT_EQ(m->format, "pcapng");
    EXPECT_EQ(m->sha256, Sha256::of(kept));
    EXPECT_EQ(m->size, kept.size());
    EXPECT_EQ(m->packets, 40u);
    EXPECT_EQ(m->first_ns, packets[0].ts_ns);
    EXPECT_EQ(m->last_ns, packets[39].ts_ns);
    EXPECT_EQ(m->stream, (ManifestStream{"tap0", 0, 2}));
    EXPECT_FALSE(m->drops);
    EXPECT_FALSE(m->seq);
}

TEST_F(RecoveryTest, PcapngWithGarbageInsteadOfABlockIsCutThere) {
    const auto packets = test::make_packets(10, kT0);
    PcapngFile f = pcapng_in_progress(packets);
    std::vector<uint8_t> bytes(f.bytes.begin(), f.bytes.begin() + static_cast<long>(f.ends[5]));
    // A block whose trailer does not repeat its length.
    std::vector<uint8_t> bogus(f.bytes.begin() + static_cast<long>(f.ends[5]), f.bytes.begin() + static_cast<long>(f.ends[6]));
    bogus.back() ^= 0x01;
    bytes.insert(bytes.end(), bogus.begin(), bogus.end());
    bytes.insert(bytes.end(), f.bytes.begin() + static_cast<long>(f.ends[6]), f.bytes.end());
    test::write_file(dir.file(".z.pcapng.part"), bytes);
    const RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].packets, 6u);
    EXPECT_EQ(test::read_file(dir.file("z.pcapng")).size(), f.ends[5]);
}

TEST_F(RecoveryTest, APcapngSectionHeaderAloneIsAnEmptyFile) {
    const auto header = pcapng::file_header({"p:0", "", kSnaplen}, "x");
    test::write_file(dir.file(".e.pcapng.part"), std::vector<uint8_t>(header.begin(), header.begin() + 20));
    RecoveryReport report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].outcome, Outcome::moved_aside);  // not even a whole SHB
    test::write_file(dir.file(".f.pcapng.part"), header);
    report = recover();
    ASSERT_EQ(report.files.size(), 1u);
    EXPECT_EQ(report.files[0].outcome, Outcome::recovered);
    EXPECT_EQ(report.files[0].packets, 0u);
}

}  // namespace
}  // namespace linecap
