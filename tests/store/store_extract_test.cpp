// Extraction end to end through the library and the CLI entry point: merge order and
// its stability, time bounds at nanosecond precision, index vs scan equivalence, and the
// regression corpus of damaged files (each an error naming the file; the query over the
// other files still returns exactly the right packets).
#include <fcntl.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "format/pcap_format.hpp"
#include "archive/layout.hpp"
#include "store/cli.hpp"
#include "archive/crc32c.hpp"
#include "store/extract.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"
#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "store_test_support.hpp"

using namespace linecap;
using namespace linecap::store;
using namespace store_test;

namespace {

constexpr uint64_t kT0 = 1796004600000000000ull;  // 2026-11-30T02:10:00Z

struct Run {
    ExtractReport report;
    std::vector<Packet> packets;
    Bytes image;
};

Run run_extract(const std::string& dir, uint64_t from, uint64_t to, const std::string& filter, bool use_index = true) {
    TempDir out;
    const std::string path = out / "out.pcap";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ExtractOptions o;
    o.directory = dir;
    o.from_ns = from;
    o.to_ns = to;
    o.filter = filter;
    o.use_index = use_index;
    auto r = extract(o, fd);
    ::close(fd);
    Run run;
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (r.ok()) run.report = r.value();
    run.image = read_file(path);
    run.packets = parse_image(run.image);
    return run;
}

struct StoreFile {
    std::string name;
    std::vector<Packet> packets;
};

// Reference: every packet of the given files with from <= ts < to that the filter
// accepts, ordered by (ts, file name, position).
std::vector<Packet> reference(std::vector<StoreFile> files, uint64_t from, uint64_t to, const std::string& filter) {
    auto f = CompiledFilter::compile(filter);
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    struct Item {
        uint64_t ts;
        size_t file, pos;
        const Packet* p;
    };
    std::vector<Item> items;
    for (size_t fi = 0; fi < files.size(); ++fi)
        for (size_t i = 0; i < files[fi].packets.size(); ++i) {
            const Packet& p = files[fi].packets[i];
            linecap::format::Record r;
            r.ts_ns = p.ts_ns;
            r.caplen = r.len = p.caplen();
            r.data = p.data.data();
            if (p.ts_ns >= from && p.ts_ns < to && f->matches(r)) items.push_back({p.ts_ns, fi, i, &p});
        }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return std::tie(a.ts, a.file, a.pos) < std::tie(b.ts, b.file, b.pos);
    });
    std::vector<Packet> out;
    for (const auto& it : items) out.push_back(*it.p);
    return out;
}

void expect_same(const std::vector<Packet>& got, const std::vector<Packet>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].ts_ns, want[i].ts_ns) << what << " packet " << i;
        ASSERT_EQ(got[i].data, want[i].data) << what << " packet " << i;
    }
}

// Two streams, three files each; stream 1 shares some timestamps with stream 0.
std::vector<StoreFile> make_streams(const std::string& dir, bool with_index) {
    std::vector<StoreFile> files;
    uint32_t tag = 0;
    for (int q = 0; q < 2; ++q) {
        for (int part = 0; part < 3; ++part) {
            StoreFile f;
            for (int i = 0; i < 200; ++i) {
                FrameSpec s;
                s.tag = tag++;
                s.v6 = i % 4 == 1;
                s.proto = i % 3 == 0 ? 17 : 6;
                s.dport = uint16_t(i % 5 == 0 ? 53 : 80);
                s.src4 = ip4(198, 18, q, i % 10);
                if (i % 7 == 0) s.vlan_tpids = {0x8100};
                s.payload = 20 + uint32_t(i * 7 % 300);
                // q0: every 1000 ns; q1: every 1000 ns but offset 0 for even i (ties).
                const uint64_t ts = kT0 + uint64_t(part * 200 + i) * 1000 + (q == 1 && i % 2 ? 500 : 0);
                f.packets.push_back({ts, frame(s)});
            }
            f.name = store_name(f.packets.front().ts_ns, "p0", q);
            write_file(dir + "/" + f.name, pcap_image(f.packets));
            if (with_index) {
                EXPECT_TRUE(build_index(dir + "/" + f.name, IndexBuildOptions{4096}).ok());
            }
            files.push_back(std::move(f));
        }
    }
    return files;
}

}  // namespace

TEST(Extract, MergesAllStreamsStablyForEqualTimestamps) {
    TempDir dir;
    const auto files = make_streams(dir.path(), true);
    const auto run = run_extract(dir.path(), 0, UINT64_MAX, "");
    EXPECT_TRUE(run.report.errors.empty());
    expect_same(run.packets, reference(files, 0, UINT64_MAX, ""), "all");
    EXPECT_EQ(run.packets.size(), 1200u);
    // Ties: stream q0's file sorts first by name, so its packet comes first.
    ASSERT_EQ(run.packets[0].ts_ns, run.packets[1].ts_ns);
    EXPECT_EQ(run.packets[0].data, files[0].packets[0].data);
    EXPECT_EQ(run.packets[1].data, files[3].packets[0].data);
}

TEST(Extract, IndexAndScanGiveTheSameAnswerForManyQueries) {
    TempDir dir;
    const auto files = make_streams(dir.path(), true);
    const std::vector<std::tuple<uint64_t, uint64_t, std::string>> queries = {
        {0, UINT64_MAX, "udp port 53"},
        {kT0 + 150000, kT0 + 450000, ""},                       // cuts inside files, across boundaries
        {kT0 + 199000, kT0 + 200001, "tcp"},                     // around a file boundary, ns exact
        {kT0 + 1000, kT0 + 1000, ""},                            // empty range
        {kT0 + 1500, kT0 + 1501, ""},                            // one nanosecond
        {kT0, UINT64_MAX, "host 198.18.1.3"},
        {kT0, UINT64_MAX, "vlan and udp"},
        {kT0, UINT64_MAX, "ip6 and tcp port 80"},
        {kT0 + 300000, kT0 + 310000, "host 198.18.0.2 or ip6"},
        {kT0, UINT64_MAX, "host 9.9.9.9"},                       // nothing matches
        {kT0 + 10000000, UINT64_MAX, ""},                        // after the store
    };
    for (const auto& [from, to, filter] : queries) {
        const std::string what = filter + " [" + std::to_string(from) + "," + std::to_string(to) + ")";
        const auto want = reference(files, from, to, filter);
        const auto indexed = run_extract(dir.path(), from, to, filter, true);
        const auto scanned = run_extract(dir.path(), from, to, filter, false);
        expect_same(indexed.packets, want, "indexed " + what);
        expect_same(scanned.packets, want, "scanned " + what);
        EXPECT_TRUE(indexed.report.errors.empty() && indexed.report.warnings.empty()) << what;
        EXPECT_EQ(indexed.report.files_scanned, 0u);
        EXPECT_LE(indexed.report.blocks_read, indexed.report.blocks_total);
    }
    // Pruning happened: a selective query reads a fraction of the blocks.
    const auto sel = run_extract(dir.path(), 0, UINT64_MAX, "host 198.18.1.3");
    EXPECT_LT(sel.report.blocks_read * 2, sel.report.blocks_total);
}

// A conversation spread through three files among other traffic: a version-2 index reads
// its records alone (and little else), a version-1 index its blocks; the answers are the
// reference's either way, for the conversation, a window of it, and queries mixing
// record-level and block-level alternatives.
TEST(Extract, Version2IndexReadsASpreadFlowsRecordsAlone) {
    for (const uint32_t version : {3u, 2u, 1u}) {
        TempDir dir;
        std::vector<StoreFile> files;
        uint32_t tag = 0;
        for (int part = 0; part < 3; ++part) {
            StoreFile f;
            for (int i = 0; i < 1500; ++i) {
                FrameSpec s;
                s.tag = tag++;
                s.src4 = ip4(198, 18, 0, i % 50);
                s.dst4 = ip4(198, 19, 0, i % 13);
                s.sport = uint16_t(20000 + i % 301);
                s.proto = i % 5 == 0 ? 17 : 6;
                s.payload = 60 + uint32_t(i * 37 % 900);
                if (i % 61 == 7) {  // the conversation, both directions, ~25 packets a file
                    const bool back = i % 2;
                    s.src4 = back ? ip4(10, 9, 9, 2) : ip4(10, 9, 9, 1);
                    s.dst4 = back ? ip4(10, 9, 9, 1) : ip4(10, 9, 9, 2);
                    s.sport = back ? 6666 : 5555;
                    s.dport = back ? 5555 : 6666;
                    s.proto = 6;
                }
                if (i % 9 == 0) s.vlan_tpids = {0x8100};
                f.packets.push_back({kT0 + uint64_t(part * 1500 + i) * 1000, frame(s)});
            }
            f.name = store_name(f.packets.front().ts_ns, "p0", 0);
            write_file(dir / f.name, pcap_image(f.packets));
            IndexBuildOptions o{16384};
            o.version = version;
            ASSERT_TRUE(build_index(dir / f.name, o).ok());
            files.push_back(std::move(f));
        }
        const std::string conv = "host 10.9.9.1 and host 10.9.9.2 and tcp port 5555";
        const std::vector<std::tuple<uint64_t, uint64_t, std::string>> queries = {
            {0, UINT64_MAX, conv},
            {kT0 + 1000 * 1000, kT0 + 3200 * 1000, conv},     // half-open, across files
            {0, UINT64_MAX, "(" + conv + ") or udp port 20003"},
            {0, UINT64_MAX, "(" + conv + ") or icmp"},        // icmp: no port, no address listed
            {0, UINT64_MAX, "host 10.9.9.1 and not port 5555"},
            {0, UINT64_MAX, "host 10.9.9.3"},                 // nothing
            {0, UINT64_MAX, "host 198.18.0.7 and host 198.19.0.3"},
        };
        for (const auto& [from, to, filter] : queries) {
            const std::string what = "v" + std::to_string(version) + " " + filter;
            const auto want = reference(files, from, to, filter);
            const auto got = run_extract(dir.path(), from, to, filter);
            expect_same(got.packets, want, what);
            EXPECT_TRUE(got.report.errors.empty() && got.report.warnings.empty()) << what;
            EXPECT_EQ(got.report.files_scanned, 0u) << what;
        }
        const auto c = run_extract(dir.path(), 0, UINT64_MAX, conv);
        ASSERT_GT(c.packets.size(), 30u);
        uint64_t returned = 0;
        for (const Packet& p : c.packets) returned += 16 + p.data.size();
        if (version >= 2) {
            // Only the conversation's records (and the few within 4 KiB of one) are parsed.
            // (VLAN-tagged ones too: the index reads through tags, "host" without "vlan" does not.)
            EXPECT_GE(c.report.records_read_alone, c.packets.size());
            EXPECT_LE(c.report.records_read_alone, 2 * c.packets.size());
            EXPECT_LE(c.report.bytes_read, 4 * returned) << c.report.bytes_read << " read for " << returned;
            EXPECT_LE(c.report.packets_examined, 4 * c.packets.size());
        } else {
            EXPECT_EQ(c.report.records_read_alone, 0u);
            EXPECT_GT(c.report.bytes_read, 10 * returned);
        }
    }
}

TEST(Extract, CorruptFilesAreReportedAndTheRestIsStillRight) {
    TempDir dir;
    auto files = make_streams(dir.path(), true);
    std::vector<StoreFile> good = files;
    FrameSpec s;
    const Packet p1{kT0 + 100, frame(s)};
    auto add_bad = [&](const std::string& port, const Bytes& bytes) {
        const std::string name = store_name(kT0 + 50, port, 0);
        write_file(dir / name, bytes);
        return name;
    };
    // Damaged capture files (each its own stream, all inside the query range).
    const Bytes ok_img = pcap_image({p1, {kT0 + 200, frame(s)}}, 1000);
    const std::string trunc_header = add_bad("th", Bytes(ok_img.begin(), ok_img.begin() + 20));
    const std::string trunc_record = add_bad("tr", Bytes(ok_img.begin(), ok_img.end() - 3));
    Bytes caplen = ok_img;
    const uint32_t big = 300000;  // above libpcap's bound (a caplen up to it is read, cut to the snaplen)
    std::memcpy(caplen.data() + 24 + 16 + p1.caplen() + 8, &big, 4);
    const std::string caplen_name = add_bad("cs", caplen);
    Bytes magic = ok_img;
    magic[0] = 0;
    const std::string magic_name = add_bad("bm", magic);
    const std::string ng_name = add_bad("ng", Bytes{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a});
    // The truncated-record and caplen files keep their first packet(s).
    good.push_back({trunc_record, {p1}});
    good.push_back({caplen_name, {p1}});
    // Damaged indexes of good files: bad checksum, pointing past EOF, stale.
    const std::string bad_crc = dir / (files[0].name + ".idx");
    Bytes ix = read_file(bad_crc);
    ix[ix.size() - 3] ^= 0xff;
    write_file(bad_crc, ix);
    const std::string past = dir / (files[1].name + ".idx");
    {
        Bytes img = read_file(dir / files[1].name);
        // Index of a longer file, claimed for this one: every block past the real end.
        std::vector<Packet> more = files[1].packets;
        for (int i = 0; i < 50; ++i) more.push_back(more.back());
        Bytes longer = pcap_image(more);
        Bytes lix = build_index_bytes(longer, IndexBuildOptions{4096}).value();
        IndexHeader h;
        std::memcpy(&h, lix.data(), sizeof h);
        struct stat st {};
        ::stat((dir / files[1].name).c_str(), &st);
        h.pcap_size = img.size();
        h.pcap_mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
        std::memcpy(lix.data(), &h, sizeof h);
        // Reseal the header checksum only (the sections are intact).
        const size_t fixed = sizeof(IndexHeader) + h.section_count * sizeof(SectionEntry);
        std::memset(lix.data() + offsetof(IndexHeader, header_crc), 0, 4);
        const uint32_t crc = linecap::crc32c(lix.data(), fixed);
        std::memcpy(lix.data() + offsetof(IndexHeader, header_crc), &crc, 4);
        write_file(past, lix);
    }
    {
        // Stale: the file grew after indexing (same packets plus nothing: rewrite → new mtime/size).
        Bytes img = read_file(dir / files[2].name);
        img.insert(img.end(), {0});  // one stray byte: also a truncated record at the end
        write_file(dir / files[2].name, img);
        good[2].packets = files[2].packets;
    }

    for (bool use_index : {true, false}) {
        const auto run = run_extract(dir.path(), kT0, UINT64_MAX, "", use_index);
        expect_same(run.packets, reference(good, kT0, UINT64_MAX, ""), use_index ? "indexed" : "scanned");
        auto error_for = [&](const std::string& name) {
            std::string found;
            for (const auto& e : run.report.errors)
                if (e.find(name) != std::string::npos) found = e;
            return found;
        };
        EXPECT_NE(error_for(trunc_header).find("shorter than a pcap file header (20 of 24 bytes)"), std::string::npos);
        EXPECT_NE(error_for(trunc_record).find("truncated record at offset"), std::string::npos);
        EXPECT_NE(error_for(caplen_name).find("caplen 300000 > the maximum 262144"), std::string::npos);
        EXPECT_NE(error_for(magic_name).find("not a pcap or pcapng file"), std::string::npos);
        EXPECT_NE(error_for(ng_name).find("incomplete pcapng section header block"), std::string::npos);
        EXPECT_NE(error_for(files[2].name).find("truncated record"), std::string::npos);
        EXPECT_EQ(run.report.errors.size(), 6u);
        for (const auto& e : run.report.errors) EXPECT_EQ(e.find('\n'), std::string::npos);
        if (use_index) {
            auto warning_for = [&](const std::string& name) {
                for (const auto& w : run.report.warnings)
                    if (w.find(name) != std::string::npos) return w;
                return std::string();
            };
            EXPECT_NE(warning_for(files[0].name).find("checksum mismatch"), std::string::npos);
            EXPECT_NE(warning_for(files[1].name).find("extends past the end of the capture file"), std::string::npos)
                << warning_for(files[1].name);
            // The file changed after it was indexed: not a warning but a concern (scanned).
            EXPECT_EQ(warning_for(files[2].name), "");
            ASSERT_EQ(run.report.concerns.size(), 1u);
            EXPECT_EQ(run.report.concerns[0].path, dir / files[2].name);
            EXPECT_TRUE(run.report.concerns[0].stale_index);
            EXPECT_NE(run.report.concerns[0].reason.find("index older than the file (indexed at"), std::string::npos)
                << run.report.concerns[0].reason;
            EXPECT_NE(warning_for(trunc_record).find("no index; scanning the file"), std::string::npos);
        }
    }
}

TEST(Extract, OutputHeaderTakesTheLargestSnaplen) {
    TempDir dir;
    FrameSpec s;
    write_file(dir / store_name(kT0, "p0", 0), pcap_image({{kT0, frame(s)}}, 1500));
    write_file(dir / store_name(kT0 + 1, "p0", 1), pcap_image({{kT0 + 1, frame(s)}}, 9000));
    const auto run = run_extract(dir.path(), 0, UINT64_MAX, "");
    ASSERT_GE(run.image.size(), 24u);
    const auto h = linecap::format::parse_header(run.image);
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(h->nanosecond);
    EXPECT_EQ(h->snaplen, 9000u);
    EXPECT_EQ(run.packets.size(), 2u);
}

// --- the CLI ---

namespace {
int cli(std::vector<std::string> args, std::string* err = nullptr) {
    args.insert(args.begin(), "linecap");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    testing::internal::CaptureStderr();
    const int rc = linecap_tool_main(int(argv.size()), argv.data());
    const std::string e = testing::internal::GetCapturedStderr();
    if (err) *err = e;
    return rc;
}
}  // namespace

// `linecap index` rebuilds a version-1 index as the current version (without --force), and
// leaves a current one alone.
TEST(Cli, IndexUpgradesVersion1Indexes) {
    TempDir dir;
    const auto files = make_streams(dir.path(), false);
    IndexBuildOptions v1{4096};
    v1.version = 1;
    for (const auto& f : files) ASSERT_TRUE(build_index(dir / f.name, v1).ok());
    auto version = [&](const StoreFile& f) {
        struct stat st {};
        EXPECT_EQ(::stat((dir / f.name).c_str(), &st), 0);
        const LoadedIndex li = load_index(dir / f.name, uint64_t(st.st_size),
                                          int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
        EXPECT_EQ(li.state, IndexState::valid);
        return li.index.version();
    };
    EXPECT_EQ(version(files[0]), 1u);
    std::string err;
    ASSERT_EQ(cli({"index", "--dir", dir.path()}, &err), 0) << err;
    EXPECT_NE(err.find(std::to_string(files.size()) + " indexed, 0 up to date"), std::string::npos) << err;
    for (const auto& f : files) EXPECT_EQ(version(f), kIndexVersion) << f.name;
    ASSERT_EQ(cli({"index", "--dir", dir.path()}, &err), 0) << err;
    EXPECT_NE(err.find("0 indexed, " + std::to_string(files.size()) + " up to date"), std::string::npos) << err;
}

// Integrity at query time: one address byte changed with the mtime
// kept. The index, built before, says the host is absent; extract sees that the file
// changed after it was indexed (ctime), scans it and reports it. A file the scrub marked
// damaged is scanned and reported even when its index is current.
TEST(Cli, FilesChangedAfterIndexingOrMarkedDamagedAreScannedAndReported) {
    TempDir dir;
    auto files = make_streams(dir.path(), true);
    const std::string path = dir / files[1].name;
    // Packet 3 of the file (untagged IPv4): source 198.18.0.3 becomes 203.18.0.3, an
    // address no file holds.
    size_t at = sizeof(linecap::pcap::FileHeader);
    for (int i = 0; i < 3; ++i) at += sizeof(linecap::pcap::RecordHeader) + files[1].packets[size_t(i)].data.size();
    Bytes img = read_file(path);
    ASSERT_EQ(img[at + sizeof(linecap::pcap::RecordHeader) + 26], 198);
    img[at + sizeof(linecap::pcap::RecordHeader) + 26] = 203;
    files[1].packets[3].data[26] = 203;
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    {
        const int fd = ::open(path.c_str(), O_WRONLY);
        ASSERT_EQ(::pwrite(fd, img.data(), img.size(), 0), ssize_t(img.size()));
        const timespec times[2] = {before.st_atim, before.st_mtim};
        ASSERT_EQ(::futimens(fd, times), 0);  // the mtime kept
        ::close(fd);
    }
    // The index was written before the change: its mtime says so (set explicitly, as the
    // change may fall in the same tick of the kernel's file clock as the build).
    const std::string idx = linecap::layout::index_name(path);
    const timespec earlier[2] = {{before.st_mtim.tv_sec - 10, 0}, {before.st_mtim.tv_sec - 10, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, idx.c_str(), earlier, 0), 0);

    const std::string host = "host 203.18.0.3";
    const auto want = reference(files, 0, UINT64_MAX, host);
    ASSERT_EQ(want.size(), 1u);
    auto run = run_extract(dir.path(), 0, UINT64_MAX, host);
    expect_same(run.packets, want, "changed after indexing");
    ASSERT_EQ(run.report.concerns.size(), 1u);
    EXPECT_EQ(run.report.concerns[0].path, path);
    EXPECT_TRUE(run.report.concerns[0].stale_index);
    EXPECT_FALSE(run.report.concerns[0].damaged);
    EXPECT_NE(run.report.concerns[0].reason.find("after it was indexed (its mtime was kept)"), std::string::npos)
        << run.report.concerns[0].reason;
    EXPECT_TRUE(run.report.warnings.empty()) << run.report.warnings[0];
    EXPECT_TRUE(run.report.errors.empty());

    TempDir out;
    std::string err;
    const std::vector<std::string> query = {"extract", "--dir", dir.path(), "--filter", host, "-o", out / "x.pcap"};
    auto with = [&](std::vector<std::string> args, std::vector<std::string> more) {
        args.insert(args.end(), more.begin(), more.end());
        return args;
    };
    EXPECT_EQ(cli(query, &err), linecap::kExitUntrusted) << err;
    EXPECT_EQ(err, "linecap: integrity: " + path + ": " + run.report.concerns[0].reason + "\n");
    EXPECT_EQ(parse_image(read_file(out / "x.pcap")).size(), 1u);  // the packets are written all the same
    EXPECT_EQ(cli(with(query, {"--accept-damaged"}), &err), linecap::kExitOk) << err;
    EXPECT_NE(err.find("linecap: integrity: " + path), std::string::npos) << err;  // still said
    // linecap index rebuilds it (it called the file "up to date"); then the index
    // answers, and nothing is reported.
    EXPECT_EQ(cli({"index", "--dir", dir.path()}, &err), 0) << err;
    EXPECT_NE(err.find("linecap: 1 indexed, " + std::to_string(files.size() - 1) + " up to date, 0 failed"),
              std::string::npos)
        << err;
    EXPECT_EQ(cli(query, &err), linecap::kExitOk) << err;
    EXPECT_EQ(err, "");

    // Marked damaged by the scrub: scanned though its index is current, and reported,
    // with --no-index too.
    write_file(path + ".damaged", Bytes{'2', '0', ' ', 's', 'c', 'r', 'u', 'b', ':', ' ', 'x', '\n', 'y'});
    for (bool use_index : {true, false}) {
        run = run_extract(dir.path(), 0, UINT64_MAX, host, use_index);
        expect_same(run.packets, want, "marked");
        ASSERT_EQ(run.report.concerns.size(), 1u);
        EXPECT_TRUE(run.report.concerns[0].damaged);
        EXPECT_EQ(run.report.concerns[0].reason, "marked damaged (20 scrub: x)");
        EXPECT_EQ(run.report.files_scanned, use_index ? 1u : files.size());
    }
    EXPECT_EQ(cli(query, &err), linecap::kExitUntrusted) << err;
    EXPECT_EQ(err, "linecap: integrity: " + path + ": marked damaged (20 scrub: x)\n");
    // A query that ends where the file begins does not touch it.
    char to[32];
    const uint64_t begins = files[1].packets.front().ts_ns;
    std::snprintf(to, sizeof to, "%llu.%09llu", static_cast<unsigned long long>(begins / 1000000000),
                  static_cast<unsigned long long>(begins % 1000000000));
    EXPECT_EQ(cli(with(query, {"--to", to}), &err), linecap::kExitOk) << err;
    EXPECT_EQ(err, "");
}

TEST(Cli, ExitCodesAndMessages) {
    TempDir dir;
    auto files = make_streams(dir.path(), false);
    TempDir out;
    std::string err;
    EXPECT_EQ(cli({"index", "--dir", dir.path()}, &err), 0) << err;
    EXPECT_NE(err.find("6 indexed, 0 up to date, 0 failed"), std::string::npos) << err;
    EXPECT_EQ(cli({"index", "--dir", dir.path()}, &err), 0);
    EXPECT_NE(err.find("0 indexed, 6 up to date"), std::string::npos) << err;
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "--from", "2026-11-30T02:10:00.0001Z", "--to", "1796004600.0003",
                   "--filter", "udp", "-o", out / "a.pcap"}, &err), 0) << err;
    EXPECT_EQ(err, "");
    expect_same(parse_image(read_file(out / "a.pcap")), reference(files, kT0 + 100000, kT0 + 300000, "udp"), "cli");
    // Usage errors: 64.
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "-o", out / "b.pcap", "--from", "2026-11-30T02:10:00"}, &err), 64);
    EXPECT_NE(err.find("--from: '2026-11-30T02:10:00': no time zone"), std::string::npos) << err;
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "-o", out / "b.pcap", "--filter", "host or"}, &err), 64);
    EXPECT_NE(err.find("filter 'host or'"), std::string::npos) << err;
    EXPECT_EQ(cli({"extract", "--dir", dir.path()}, &err), 64);
    EXPECT_EQ(cli({"extract", "--bogus"}, &err), 64);
    EXPECT_EQ(cli({"frobnicate"}, &err), 64);
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "-o", dir / files[0].name}, &err), 64);
    EXPECT_NE(err.find("inside the store directory"), std::string::npos) << err;
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "-o", dir / "new.pcap"}, &err), 64);  // a new name too
    EXPECT_NE(err.find("inside the store directory"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(dir / "new.pcap"));
    EXPECT_FALSE(std::filesystem::exists(out / "b.pcap"));
    // A damaged file: exit 1, one line naming it, output still valid.
    write_file(dir / store_name(kT0 + 5, "zz", 0), Bytes{1, 2, 3});
    EXPECT_EQ(cli({"extract", "--dir", dir.path(), "-o", out / "c.pcap"}, &err), 1);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one line, naming the file
    EXPECT_NE(err.find("linecap: error: " + dir.path() + "/" + store_name(kT0 + 5, "zz", 0) +
                       ": shorter than a capture file header (3 bytes)"),
              std::string::npos)
        << err;
    EXPECT_EQ(parse_image(read_file(out / "c.pcap")).size(), 1200u);
    // stats
    testing::internal::CaptureStdout();
    EXPECT_EQ(cli({"stats", "--dir", dir.path(), "--json"}, &err), 1);
    const std::string json = testing::internal::GetCapturedStdout();
    EXPECT_NE(json.find("\"packets\":1200"), std::string::npos) << json;
    EXPECT_NE(json.find("\"stream\":\"p0/q1\",\"files\":3"), std::string::npos) << json;
    // No stray temporaries anywhere.
    for (const auto& e : std::filesystem::directory_iterator(out.path()))
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
}

// --- exact time ranges whatever the order of timestamps -------------

namespace {

// Packets stamped `times` (ns after kT0), one file of stream p0/q0.
StoreFile stamped(const std::string& dir, const std::vector<uint64_t>& times, bool with_index) {
    StoreFile f;
    uint32_t tag = 0;
    for (uint64_t t : times) {
        FrameSpec s;
        s.tag = tag++;
        f.packets.push_back({kT0 + t, frame(s)});
    }
    f.name = store_name(kT0, "p0", 0);
    write_file(dir + "/" + f.name, pcap_image(f.packets));
    if (with_index) {
        EXPECT_TRUE(build_index(dir + "/" + f.name, IndexBuildOptions{4096}).ok());
    }
    return f;
}

// What tcpdump -r gives for the window: the file's packets in [from, to), file order.
std::vector<Packet> window(const std::vector<Packet>& all, uint64_t from, uint64_t to) {
    std::vector<Packet> out;
    for (const Packet& p : all)
        if (p.ts_ns >= from && p.ts_ns < to) out.push_back(p);
    return out;
}

}  // namespace

TEST(Extract, BackwardTimestampsDoNotEndTheWindowEarly) {
    // A clock step back mid-file (9 of tcpdump's 447 test captures have one): the old
    // reader stopped at the first record >= --to and lost the later, earlier-stamped ones.
    std::vector<uint64_t> times;
    for (uint64_t i = 0; i < 400; ++i) times.push_back(i * 1000);          // 0 .. 399 µs
    for (uint64_t i = 0; i < 400; ++i) times.push_back(100000 + i * 500);  // back to 100 µs
    for (bool with_index : {false, true}) {
        TempDir dir;
        const StoreFile f = stamped(dir.path(), times, with_index);
        for (auto [from, to] : {std::pair<uint64_t, uint64_t>{kT0 + 150000, kT0 + 250000},
                                {kT0, kT0 + 120000}, {kT0 + 399000, kT0 + 400000}}) {
            const auto run = run_extract(dir.path(), from, to, "", with_index);
            expect_same(run.packets, window(f.packets, from, to), with_index ? "indexed" : "scanned");
            EXPECT_TRUE(run.report.errors.empty());
        }
    }
}

TEST(Extract, TimestampCorruptedIntoTheFutureWithMtimeKept) {
    // Bit rot: one bit of a record's seconds flips, the file's mtime stays. The answer must
    // be what a scan (and tcpdump) gives, and say so.
    TempDir dir;
    std::vector<uint64_t> times;
    for (uint64_t i = 0; i < 2000; ++i) times.push_back(i * 1000);
    StoreFile f = stamped(dir.path(), times, true);
    const std::string path = dir / f.name;
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    Bytes img = read_file(path);
    const size_t victim = 700;
    const size_t at = 24 + victim * (16 + f.packets[0].caplen());
    img[at + 3] ^= 0x10;  // ts_sec + 2^28 s: 8.5 years later
    write_file(path, img);
    const timespec times2[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times2, 0), 0);
    // The rewrite sets the file's ctime to now, but within one file-system clock tick of
    // the index's mtime it may not be *later*: date the index a second back, as any index
    // written before the rot would be.
    timespec index_times[2] = {before.st_atim, before.st_mtim};
    index_times[1].tv_sec -= 1;
    ASSERT_EQ(::utimensat(AT_FDCWD, linecap::layout::index_name(path).c_str(), index_times, 0), 0);
    const std::vector<Packet> now = parse_image(img);
    ASSERT_NE(now[victim].ts_ns, f.packets[victim].ts_ns);
    for (bool use_index : {true, false}) {
        const uint64_t from = kT0 + 500000, to = kT0 + 1500000;
        const auto run = run_extract(dir.path(), from, to, "", use_index);
        expect_same(run.packets, window(now, from, to), use_index ? "indexed" : "scanned");
        EXPECT_EQ(run.packets.size(), 999u);
        if (use_index) {
            // The rewrite moved the file's ctime past its index's: the index is not trusted,
            // the file is scanned, and the caller is told (exit 3 in the CLI).
            ASSERT_EQ(run.report.concerns.size(), 1u);
            EXPECT_TRUE(run.report.concerns[0].stale_index);
            EXPECT_EQ(run.report.concerns[0].path, path);
        }
        // A window holding only the corrupted record: found either way, as tcpdump finds it.
        const auto future = run_extract(dir.path(), now[victim].ts_ns, now[victim].ts_ns + 1, "", use_index);
        EXPECT_EQ(future.packets.size(), 1u)
            << future.report.files_selected << " selected, " << future.report.packets_examined << " examined";
    }
}

TEST(Extract, PcapngFilesAreIndexedAndExtractedLikePcap) {
    TempDir dir;
    auto files = make_streams(dir.path(), false);
    // Rewrite the files of queue 1 as pcapng (as the daemon writes with output.format: pcapng).
    for (auto& f : files) {
        if (f.name.find("-q1.pcap") == std::string::npos) continue;
        std::filesystem::remove(dir / f.name);
        f.name += "ng";
        struct Sink final : linecap::format::ByteSink {
            Bytes b;
            linecap::Status write(const uint8_t* d, size_t n) override {
                b.insert(b.end(), d, d + n);
                return {};
            }
        } sink;
        linecap::format::CaptureWriter w(sink, linecap::FileKind::pcapng);
        ASSERT_TRUE(w.begin(0, 1, "test").ok());
        const uint32_t id = w.add_interface({"p0:1", "net_tap1", 262144, 1}).value();
        for (const Packet& p : f.packets) ASSERT_TRUE(w.write(id, p.ts_ns, p.caplen(), p.caplen(), p.data.data()).ok());
        ASSERT_TRUE(w.flush().ok());
        write_file(dir / f.name, sink.b);
    }
    for (const auto& f : files) {
        ASSERT_TRUE(build_index(dir / f.name, IndexBuildOptions{4096}).ok()) << f.name;
    }
    for (const auto& [from, to, filter] : std::vector<std::tuple<uint64_t, uint64_t, std::string>>{
             {0, UINT64_MAX, ""}, {kT0 + 150000, kT0 + 450000, "udp"}, {0, UINT64_MAX, "host 198.18.1.3"}}) {
        const auto indexed = run_extract(dir.path(), from, to, filter, true);
        const auto scanned = run_extract(dir.path(), from, to, filter, false);
        expect_same(indexed.packets, reference(files, from, to, filter), "indexed " + filter);
        expect_same(scanned.packets, reference(files, from, to, filter), "scanned " + filter);
        EXPECT_EQ(indexed.report.files_scanned, 0u);
        EXPECT_TRUE(indexed.report.errors.empty() && indexed.report.warnings.empty());
    }
    // The index prunes pcapng files too.
    const auto sel = run_extract(dir.path(), 0, UINT64_MAX, "host 198.18.1.3");
    EXPECT_LT(sel.report.blocks_read * 2, sel.report.blocks_total);
}
