// Compression of finished capture files (archive/compress.hpp, format/zstd_seekable.hpp):
// the seekable format read back at any offset and refused when damaged; a compressed
// store answers every query exactly as the original did (indexed and scanned), and
// `zstd -d` gives back the original bytes; a kill -9 at any moment of a compression
// loses nothing (recovery keeps the original and removes what was unfinished); verify
// and the scrub find a damaged compressed file; retention counts the compressed size.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "archive/capture_scan.hpp"
#include "archive/compress.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/recovery.hpp"
#include "archive/retention.hpp"
#include "archive/scrub.hpp"
#include "archive/store_inventory.hpp"
#include "archive/verify.hpp"
#include "format/zstd_seekable.hpp"
#include "store/extract.hpp"
#include "store_test_support.hpp"
#include "util/unique_fd.hpp"

using namespace linecap;
using namespace linecap::store;
using namespace store_test;

namespace {

constexpr uint64_t kT0 = 1796004600000000000ull;  // 2026-11-30T02:10:00Z

// A manifest as the daemon writes it (size, SHA-256, packets, times of the file).
void write_manifest_for(const std::string& dir, const std::string& name) {
    UniqueFd fd(::open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    const CaptureScan scan = scan_capture(fd.get(), ScanOptions{.hash = true});
    ASSERT_TRUE(scan.complete());
    const Manifest m = manifest_from_scan(name, scan);
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(write_manifest(dir_fd.get(), m).ok());
}

Manifest manifest_of(const std::string& dir, const std::string& name) {
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const ManifestRead r = read_manifest(dir_fd.get(), name);
    EXPECT_TRUE(r.ok()) << r.problem;
    return r.manifest;
}

bool exists(const std::string& path) { return std::filesystem::exists(path); }

// Two streams of varied traffic (IPv4/IPv6, VLAN, TCP/UDP, DNS port, sizes), three files
// each, indexed in small blocks (many frames), each with a manifest.
std::vector<std::string> make_store(const std::string& dir, int packets_per_file = 600, uint32_t block = 8192) {
    std::vector<std::string> names;
    uint32_t tag = 0;
    std::mt19937 rng(7);
    for (int q = 0; q < 2; ++q) {
        for (int part = 0; part < 3; ++part) {
            std::vector<Packet> packets;
            for (int i = 0; i < packets_per_file; ++i) {
                FrameSpec s;
                s.tag = tag++;
                s.v6 = i % 4 == 1;
                s.proto = i % 3 == 0 ? 17 : 6;
                s.dport = uint16_t(i % 5 == 0 ? 53 : i % 5 == 1 ? 443 : 80);
                s.src4 = ip4(198, 18, q, i % 10);
                s.dst4 = ip4(198, 19, 0, i % 3);
                if (i % 7 == 0) s.vlan_tpids = {0x8100};
                s.payload = 20 + uint32_t(rng() % 1200);
                Bytes f = frame(s);
                // A payload of random bytes for some (the TLS-like part that does not compress).
                if (i % 2 == 0)
                    for (size_t k = 60; k < f.size(); ++k) f[k] = uint8_t(rng());
                packets.push_back({kT0 + uint64_t(part * packets_per_file + i) * 1000 + uint64_t(q) * 500, f});
            }
            const std::string name = store_name(packets.front().ts_ns, "p0", q);
            write_file(dir + "/" + name, pcap_image(packets));
            EXPECT_TRUE(build_index(dir + "/" + name, IndexBuildOptions{block}).ok());
            write_manifest_for(dir, name);
            names.push_back(name);
        }
    }
    return names;
}

Bytes run_extract(const std::string& dir, const std::string& filter, bool use_index, uint64_t from = 0,
                  uint64_t to = UINT64_MAX, ExtractReport* report = nullptr) {
    TempDir out;
    const std::string path = out / "out.pcap";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ExtractOptions o;
    o.directory = dir;
    o.filter = filter;
    o.use_index = use_index;
    o.from_ns = from;
    o.to_ns = to;
    auto r = extract(o, fd);
    ::close(fd);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (r.ok()) {
        EXPECT_TRUE(r->errors.empty()) << r->errors.front();
        EXPECT_TRUE(r->concerns.empty()) << r->concerns.front().reason;
        if (report) *report = r.value();
    }
    return read_file(path);
}

void copy_dir(const std::string& from, const std::string& to) {
    std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

// `zstd -d -c PATH` (scripts/install-deps.sh installs zstd; its absence is a failure).
std::optional<Bytes> zstd_decompress(const std::string& path) {
    if (std::system("command -v zstd >/dev/null 2>&1") != 0) {
        ADD_FAILURE() << "zstd is not installed (scripts/install-deps.sh)";
        return std::nullopt;
    }
    TempDir out;
    const std::string cmd = "zstd -q -d -c '" + path + "' > '" + (out / "d") + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return read_file(out / "d");
}

std::vector<std::string> verify_lines(const std::string& dir, VerifyReport* report) {
    std::vector<std::string> lines;
    auto r = verify_directory(VerifyOptions{.directory = dir}, [&](const std::string& l) { lines.push_back(l); });
    EXPECT_TRUE(r.ok());
    if (r.ok()) *report = r.value();
    return lines;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
}

void flip_byte(const std::string& path, uint64_t offset) {
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
    b ^= 0x5a;
    ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
    ::close(fd);
}

}  // namespace

TEST(SeekableFormat, ReadsAnyRangeAndRefusesDamage) {
    TempDir dir;
    std::mt19937 rng(1);
    Bytes plain;
    format::SeekableWriter writer(3);
    Bytes file;
    for (int i = 0; i < 40; ++i) {
        Bytes chunk(1 + rng() % 70000);
        for (size_t k = 0; k < chunk.size(); ++k) chunk[k] = uint8_t(i % 3 ? k % 251 : rng());
        plain.insert(plain.end(), chunk.begin(), chunk.end());
        ASSERT_TRUE(writer.frame(chunk, file).ok());
    }
    writer.seek_table(file);
    write_file(dir / "a.zst", file);

    auto opened = format::open_capture_file(dir / "a.zst");
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    const format::OpenFile& src = *opened.value();
    ASSERT_TRUE(src.compressed());
    ASSERT_EQ(src.size(), plain.size());
    EXPECT_EQ(src.stored_size(), file.size());
    for (int i = 0; i < 300; ++i) {
        const uint64_t at = rng() % plain.size();
        const size_t n = rng() % 200000;
        Bytes got(n);
        const ssize_t r = src.read_at(got.data(), n, at);
        ASSERT_EQ(r, static_cast<ssize_t>(std::min<uint64_t>(n, plain.size() - at)));
        ASSERT_TRUE(std::equal(got.begin(), got.begin() + r, plain.begin() + static_cast<long>(at))) << at;
    }
    if (auto d = zstd_decompress(dir / "a.zst")) {
        EXPECT_EQ(*d, plain) << "zstd -d skips the seek table";
    }

    // Forward reads decompress each frame once, whether a read wants a frame whole
    // (decompressed straight into the caller's buffer) or in part (kept for the next
    // read, which starts inside it when a record crossed the end of the last one: the
    // capture reader refilling its buffer; with frames cut at index blocks no record
    // crosses a frame's end).
    {
        auto fresh = format::open_capture_file(dir / "a.zst");
        ASSERT_TRUE(fresh.ok());
        const auto* s = dynamic_cast<const format::SeekableSource*>(fresh.value().get());
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->frames_decompressed(), 0u) << "opening decompresses nothing";
        const auto& frames = s->table().frames;
        for (uint64_t at = 0; at < plain.size();) {
            Bytes got(100000);
            const ssize_t r = s->read_at(got.data(), got.size(), at);
            ASSERT_GT(r, 0);
            ASSERT_TRUE(std::equal(got.begin(), got.begin() + r, plain.begin() + static_cast<long>(at))) << at;
            const uint64_t end = at + static_cast<uint64_t>(r);
            const format::SeekableFrame& last = frames[s->table().frame_at(end - 1)];
            const bool at_frame_end = last.decompressed_offset + last.decompressed_size == end;
            at = at_frame_end ? end : end - std::min<uint64_t>(300, end - last.decompressed_offset);
        }
        EXPECT_EQ(s->frames_decompressed(), writer.frames());
        // A frame read in part and then whole: the kept copy serves it.
        const uint64_t before = s->frames_decompressed();
        Bytes part(10), whole(frames[0].decompressed_size);
        ASSERT_EQ(s->read_at(part.data(), part.size(), 0), 10);
        ASSERT_EQ(s->read_at(whole.data(), whole.size(), 0), static_cast<ssize_t>(whole.size()));
        EXPECT_TRUE(std::equal(whole.begin(), whole.end(), plain.begin()));
        EXPECT_EQ(s->frames_decompressed(), before + 1);
    }

    // A seek table that does not add up, a footer gone: refused with a reason.
    Bytes cut(file.begin(), file.end() - 1);
    write_file(dir / "b.zst", cut);
    auto bad = format::open_capture_file(dir / "b.zst");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("seek table"), std::string::npos) << bad.error().message;
    Bytes grown = file;
    grown.insert(grown.begin() + 10, 0);
    write_file(dir / "c.zst", grown);
    bad = format::open_capture_file(dir / "c.zst");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("add up"), std::string::npos) << bad.error().message;

    // A damaged frame: the read fails (zstd's checksum), naming the frame.
    Bytes rot = file;
    rot[rot.size() / 2] ^= 0x40;
    write_file(dir / "d.zst", rot);
    auto damaged = format::open_capture_file(dir / "d.zst");
    ASSERT_TRUE(damaged.ok());
    Bytes all(plain.size());
    EXPECT_EQ(damaged.value()->read_at(all.data(), all.size(), 0), -1);
    EXPECT_EQ(errno, EBADMSG);
    const auto* seekable = dynamic_cast<const format::SeekableSource*>(damaged.value().get());
    ASSERT_NE(seekable, nullptr);
    EXPECT_NE(seekable->last_error().find("compressed frame"), std::string::npos) << seekable->last_error();
}

TEST(Compress, ExtractOverCompressedFilesEqualsTheOriginals) {
    TempDir root;
    const std::string store = root / "store", orig = root / "orig";
    std::filesystem::create_directory(store);
    std::filesystem::create_directory(orig);
    const auto names = make_store(store);
    // The same store again (make_store is deterministic): a copy would make every index
    // stale (the copies' ctimes are later than the indexes).
    ASSERT_EQ(make_store(orig), names);

    uint64_t pcap = 0, compressed = 0;
    for (const std::string& name : names) {
        const Result<Index> index = Index::parse(read_file(store + "/" + layout::index_name(name)));
        ASSERT_TRUE(index.ok());
        auto r = compress_capture(store, name);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_TRUE(r->index_aligned);
        EXPECT_EQ(r->frames, index->blocks().size()) << "one frame per index block";
        pcap += r->pcap_bytes;
        compressed += r->compressed_bytes;
        EXPECT_FALSE(exists(store + "/" + name));
        ASSERT_TRUE(exists(store + "/" + layout::compressed_name(name)));
        const Manifest m = manifest_of(store, name);
        ASSERT_TRUE(m.compressed.has_value());
        EXPECT_EQ(m.compressed->file, layout::compressed_name(name));
        EXPECT_EQ(m.compressed->size, std::filesystem::file_size(store + "/" + layout::compressed_name(name)));
        EXPECT_EQ(m.sha256, manifest_of(orig, name).sha256);
        if (auto d = zstd_decompress(store + "/" + layout::compressed_name(name))) {
            EXPECT_EQ(*d, read_file(orig + "/" + name)) << "zstd -d " << name;
        }
        // The index still describes the file: not stale after the compression.
        const auto st = stat_stored_capture(store + "/" + name);
        ASSERT_TRUE(st && st->compressed);
        EXPECT_EQ(load_index(store + "/" + name, st->size, st->mtime_ns).state, IndexState::valid);
    }
    EXPECT_LT(compressed, pcap);

    // The filter set of store_filter_test's soundness check, plus time ranges.
    const char* filters[] = {"",
                             "tcp",
                             "udp",
                             "ip6",
                             "vlan",
                             "vlan and udp",
                             "tcp port 80",
                             "udp port 53",
                             "port 443 or port 53",
                             "host 198.18.1.3",
                             "src host 198.18.0.7 and dst host 198.19.0.2",
                             "ip6 and tcp",
                             "not tcp",
                             "greater 800",
                             "net 198.18.0.0/24 and not port 80"};
    for (const char* f : filters) {
        for (const bool indexed : {true, false}) {
            const Bytes want = run_extract(orig, f, indexed);
            const Bytes got = run_extract(store, f, indexed);
            EXPECT_EQ(got, want) << "'" << f << "' " << (indexed ? "indexed" : "scanned");
        }
        const uint64_t from = kT0 + 700'000, to = kT0 + 1'300'777;
        EXPECT_EQ(run_extract(store, f, true, from, to), run_extract(orig, f, true, from, to)) << f << " (range)";
    }
    // A selective query reads the same fraction of the blocks, compressed or not: the plain
    // files only the matching records of them, the compressed ones the blocks whole (each
    // read decompresses its frame anyway).
    ExtractReport plain_report, compressed_report;
    (void)run_extract(orig, "host 198.18.1.3", true, 0, UINT64_MAX, &plain_report);
    (void)run_extract(store, "host 198.18.1.3", true, 0, UINT64_MAX, &compressed_report);
    EXPECT_EQ(compressed_report.blocks_read, plain_report.blocks_read);
    EXPECT_GT(plain_report.records_read_alone, 0u);
    EXPECT_EQ(compressed_report.records_read_alone, 0u);
    EXPECT_LT(plain_report.bytes_read, compressed_report.bytes_read);

    VerifyReport report;
    const auto lines = verify_lines(store, &report);
    EXPECT_EQ(report.findings(), 0u) << joined(lines);
    EXPECT_EQ(report.verified, names.size()) << joined(lines);
}

TEST(Compress, KillDuringCompressionLosesNothing) {
    TempDir root;
    const std::string seed = root / "seed";
    std::filesystem::create_directory(seed);
    // One larger file, so the kill lands at different steps.
    std::vector<Packet> packets;
    std::mt19937 rng(3);
    for (int i = 0; i < 20000; ++i) {
        FrameSpec s;
        s.tag = uint32_t(i);
        s.payload = 100 + uint32_t(rng() % 1300);
        Bytes f = frame(s);
        if (i % 3 == 0)
            for (size_t k = 60; k < f.size(); ++k) f[k] = uint8_t(rng());
        packets.push_back({kT0 + uint64_t(i) * 1000, f});
    }
    const std::string name = store_name(kT0, "p0", 0);
    const Bytes original = pcap_image(packets);
    write_file(seed + "/" + name, original);
    write_manifest_for(seed, name);
    const std::string sha = manifest_of(seed, name).sha256;

    int finished = 0, interrupted = 0;
    for (int round = 0; round < 14; ++round) {
        const std::string dir = root / ("r" + std::to_string(round));
        copy_dir(seed, dir);
        ASSERT_TRUE(build_index(dir + "/" + name).ok());
        int ready[2];
        ASSERT_EQ(::pipe(ready), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(ready[0]);
            (void)!::write(ready[1], "x", 1);
            const auto r = compress_capture(dir, name);
            ::_exit(r.ok() ? 0 : 1);
        }
        ::close(ready[1]);
        char c;
        ASSERT_EQ(::read(ready[0], &c, 1), 1);
        ::close(ready[0]);
        // From at once to well into the work (a compression of this file takes tens to
        // hundreds of milliseconds, more under load); the last round is not killed.
        static constexpr int kDelayMs[] = {0, 1, 3, 6, 10, 20, 30, 50, 80, 120, 200, 350, 600};
        if (round < static_cast<int>(std::size(kDelayMs))) {
            std::this_thread::sleep_for(std::chrono::milliseconds(kDelayMs[round]) +
                                        std::chrono::microseconds(rng() % 1000));
            ::kill(pid, SIGKILL);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        const bool completed = WIFEXITED(status);
        if (completed) {
            ASSERT_EQ(WEXITSTATUS(status), 0) << "round " << round;
        }

        auto recovered = recover_in_progress(dir);
        ASSERT_TRUE(recovered.ok());
        // Nothing hidden is left, and the packets are all there: the original, or its
        // complete compressed form.
        for (const auto& e : std::filesystem::directory_iterator(dir))
            EXPECT_NE(e.path().filename().string()[0], '.') << "left behind: " << e.path();
        const bool plain = exists(dir + "/" + name), zst = exists(dir + "/" + layout::compressed_name(name));
        ASSERT_NE(plain, zst) << "round " << round << ": exactly one form remains";
        const Manifest m = manifest_of(dir, name);
        EXPECT_EQ(m.sha256, sha);
        if (plain) {
            ++interrupted;
            EXPECT_EQ(read_file(dir + "/" + name), original) << "round " << round;
            EXPECT_FALSE(m.compressed.has_value()) << "round " << round;
        } else {
            ++finished;
            ASSERT_TRUE(m.compressed.has_value());
        }
        VerifyReport report;
        const auto lines = verify_lines(dir, &report);
        EXPECT_EQ(report.findings(), 0u) << "round " << round << "\n" << joined(lines);
        EXPECT_EQ(parse_image(run_extract(dir, "", true)).size(), packets.size()) << "round " << round;
        std::filesystem::remove_all(dir);
    }
    std::printf("kill -9 rounds: %d interrupted (original kept), %d finished\n", interrupted, finished);
    EXPECT_GT(interrupted, 0);
    EXPECT_GT(finished, 0);
}

TEST(Compress, RecoveryUndoesACompressionNotFinished) {
    // The state a kill leaves between the rename of the .zst and the deletion of the
    // original (both there, the manifest already extended).
    TempDir root;
    const std::string store = root / "s";
    std::filesystem::create_directory(store);
    const auto names = make_store(store, 200);
    const std::string name = names[0];
    const Bytes original = read_file(store + "/" + name);
    ASSERT_TRUE(compress_capture(store, name).ok());
    write_file(store + "/" + name, original);
    ASSERT_TRUE(manifest_of(store, name).compressed.has_value());

    auto recovered = recover_in_progress(store);
    ASSERT_TRUE(recovered.ok());
    ASSERT_EQ(recovered->compressions_undone.size(), 1u);
    EXPECT_EQ(recovered->compressions_undone[0], layout::compressed_name(name));
    EXPECT_FALSE(exists(store + "/" + layout::compressed_name(name)));
    EXPECT_EQ(read_file(store + "/" + name), original);
    EXPECT_FALSE(manifest_of(store, name).compressed.has_value());
    VerifyReport report;
    const auto lines = verify_lines(store, &report);
    EXPECT_EQ(report.findings(), 0u) << joined(lines);
    // And it compresses again.
    EXPECT_TRUE(compress_capture(store, name).ok());
}

TEST(Compress, VerifyAndScrubFindADamagedCompressedFile) {
    TempDir root;
    const std::string store = root / "s";
    std::filesystem::create_directory(store);
    const auto names = make_store(store, 300);
    for (const auto& n : names) ASSERT_TRUE(compress_capture(store, n).ok());

    struct Clock final : ScrubClock {
        uint64_t now_ns() override { return kT0; }
        bool wait_until(uint64_t) override { return true; }
    } clock;
    ScrubCounters counters;
    {
        Scrubber scrubber(ScrubOptions{.directory = store}, clock, counters);
        ASSERT_TRUE(scrubber.run_pass());
        EXPECT_EQ(counters.ok_files.load(), names.size());
        EXPECT_EQ(counters.mismatched_files.load(), 0u);
    }

    // A byte of a frame changes: verify reports the compressed SHA-256 and the frame that
    // no longer decompresses; the scrub marks the file.
    const std::string zst = store + "/" + layout::compressed_name(names[1]);
    flip_byte(zst, std::filesystem::file_size(zst) / 2);
    VerifyReport report;
    auto lines = verify_lines(store, &report);
    EXPECT_EQ(report.invalid, 1u) << joined(lines);
    EXPECT_NE(joined(lines).find("INVALID " + layout::compressed_name(names[1])), std::string::npos) << joined(lines);
    // A damaged seek table: the file cannot be opened at all.
    const std::string zst2 = store + "/" + layout::compressed_name(names[2]);
    flip_byte(zst2, std::filesystem::file_size(zst2) - 2);
    lines = verify_lines(store, &report);
    EXPECT_EQ(report.invalid, 2u) << joined(lines);
    EXPECT_NE(joined(lines).find("seek table"), std::string::npos) << joined(lines);
    // Bytes after the table (a compressed file grown): its size and SHA-256 differ.
    const std::string zst3 = store + "/" + layout::compressed_name(names[3]);
    {
        std::ofstream f(zst3, std::ios::binary | std::ios::app);
        f << "x";
    }
    lines = verify_lines(store, &report);
    EXPECT_GE(report.invalid + report.mismatched, 3u) << joined(lines);

    ScrubCounters after;
    Scrubber scrubber(ScrubOptions{.directory = store}, clock, after);
    ASSERT_TRUE(scrubber.run_pass());
    EXPECT_EQ(after.mismatched_files.load(), 3u);
    EXPECT_TRUE(exists(store + "/" + layout::damaged_marker_name(names[1])));
    EXPECT_EQ(after.damaged_files.load(), 3u);
    const std::string marker = joined({read_damaged_marker(
        UniqueFd(::open(store.c_str(), O_RDONLY | O_DIRECTORY)).get(), names[1]).value_or("")});
    EXPECT_NE(marker.find("compressed sha256"), std::string::npos) << marker;
}

TEST(Compress, RetentionCountsTheCompressedSize) {
    TempDir root;
    const std::string store = root / "s";
    std::filesystem::create_directory(store);
    const auto names = make_store(store, 400);
    for (size_t i = 0; i < 4; ++i) ASSERT_TRUE(compress_capture(store, names[i]).ok());

    const auto on_disk = [&](const std::string& name) {
        uint64_t bytes = 0;
        for (const std::string& f : {name, layout::manifest_name(name), layout::index_name(name),
                                     layout::compressed_name(name)})
            if (exists(store + "/" + f)) bytes += std::filesystem::file_size(store + "/" + f);
        return bytes;
    };
    UniqueFd dir_fd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    OutputConfig config;
    config.directory = store;
    RetentionCounters counters;
    {
        RetentionManager manager(config, dir_fd.get(), {}, counters);
        manager.enforce(kT0);
        const auto files = manager.files();
        ASSERT_EQ(files.size(), names.size());
        uint64_t total = 0;
        for (const FinishedFile& f : files) {
            EXPECT_EQ(f.bytes, on_disk(f.name)) << f.name;
            total += f.bytes;
            EXPECT_GT(f.first_ns, 0u);
        }
        EXPECT_EQ(counters.bytes.load(), total);
    }
    // A budget that keeps about half: the oldest go, compressed form and sidecars with them.
    uint64_t total = 0;
    for (const auto& n : names) total += on_disk(n);
    config.retention.max_bytes = total / 2;
    RetentionCounters counters2;
    RetentionManager manager(config, dir_fd.get(), {}, counters2);
    manager.enforce(kT0);
    EXPECT_LE(counters2.bytes.load(), total / 2);
    for (const FinishedFile& f : manager.files()) EXPECT_EQ(f.bytes, on_disk(f.name));
    size_t deleted = 0;
    for (const auto& n : names) {
        if (on_disk(n) != 0) continue;
        ++deleted;
        for (const std::string& side : layout::sidecar_names(n)) EXPECT_FALSE(exists(store + "/" + side)) << side;
    }
    EXPECT_GT(deleted, 0u);
    EXPECT_EQ(deleted + manager.files().size(), names.size());
}
