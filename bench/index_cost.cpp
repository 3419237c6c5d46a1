// Where should the retrieval index be built: on the writer thread as each block is
// written, or by a background indexer once a file is finished? (issue: forensic
// retrieval, "measure which costs less"). Both are measured here on the same data in the
// same process, by the CPU time of the thread that does the work:
//
//   write      the writer's own job: pwrite 1 MiB blocks of a pcap image into DIR
//   inline     the same, plus IndexBuilder::add for every record of each block before it
//              is written (what indexing on the writer thread would cost it)
//   background build_index() of the finished file, as the daemon's indexer does (the
//              file was just written, so it is read from the page cache)
//
//   linecap_index_cost DIR [--mib N] [--size BYTES|imix] [--runs R]
//
// Prints one table. The writer is what limits capture into files at small frames (see
// the capture benchmark), so the figure that matters is how much slower the writer gets
// with inline indexing; the background indexer's cost lands on an idle-priority thread.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/pcap_format.hpp"
#include "archive/index_format.hpp"
#include "format/capture_reader.hpp"
#include "util/thread_cpu.hpp"

namespace {

using namespace linecap;

// A capture image as the daemon writes it: nanosecond pcap, IPv4 TCP/UDP over 4096
// flows of random addresses and ports (the index's keys), frames of `size` bytes or IMIX
// (7:4:1 of 64/570/1518). Records never straddle a block, like the writer's blocks.
struct Image {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> block_ends;   // end offset of each block (records inside)
    std::vector<uint64_t> records;      // record offsets
};

Image make_image(uint64_t total, int size, size_t block) {
    Image img;
    img.bytes.resize(total + block);
    const auto fh = pcap::file_header(262144);
    std::memcpy(img.bytes.data(), &fh, sizeof fh);
    uint64_t pos = sizeof fh, block_start = 0;
    std::mt19937_64 rng(7);
    struct Flow {
        uint32_t src, dst;
        uint16_t sport, dport;
        uint8_t proto;
    };
    std::vector<Flow> flows(4096);
    for (Flow& f : flows)
        f = {uint32_t(0x0a000000 | (rng() & 0xffffff)), uint32_t(0xc0a80000 | (rng() & 0xffff)),
             uint16_t(1024 + rng() % 60000), uint16_t(rng() % 4 == 0 ? 53 : 443), uint8_t(rng() % 4 == 0 ? 17 : 6)};
    static constexpr int kImix[12] = {64, 64, 64, 64, 64, 64, 64, 570, 570, 570, 570, 1518};
    uint64_t ts = 1'764'460'800'000'000'000ull, n = 0;
    while (true) {
        const int len = size > 0 ? size : kImix[n % 12];
        const uint64_t rec = sizeof(pcap::RecordHeader) + uint64_t(len);
        if (pos - block_start + rec > block) {
            img.block_ends.push_back(pos);
            block_start = pos;
        }
        if (pos + rec > total) break;
        uint8_t* r = img.bytes.data() + pos;
        pcap::encode_record_header(r, ts, uint32_t(len), uint32_t(len));
        uint8_t* f = r + sizeof(pcap::RecordHeader);
        std::memset(f, 0, size_t(len));
        const Flow& fl = flows[rng() % flows.size()];
        const uint8_t mac[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
        std::memcpy(f, mac, 12);
        f[12] = 0x08, f[13] = 0x00;                     // IPv4
        uint8_t* ip = f + 14;
        ip[0] = 0x45;
        const uint16_t ip_len = uint16_t(len - 14);
        ip[2] = uint8_t(ip_len >> 8), ip[3] = uint8_t(ip_len);
        ip[8] = 64, ip[9] = fl.proto;
        for (int i = 0; i < 4; ++i) ip[12 + i] = uint8_t(fl.src >> (24 - 8 * i)), ip[16 + i] = uint8_t(fl.dst >> (24 - 8 * i));
        uint8_t* l4 = ip + 20;
        l4[0] = uint8_t(fl.sport >> 8), l4[1] = uint8_t(fl.sport), l4[2] = uint8_t(fl.dport >> 8), l4[3] = uint8_t(fl.dport);
        img.records.push_back(pos);
        pos += rec;
        ts += 67;  // ~15 Mpps
        ++n;
    }
    img.bytes.resize(pos);
    if (img.block_ends.empty() || img.block_ends.back() != pos) img.block_ends.push_back(pos);
    return img;
}

bool write_all(int fd, const uint8_t* p, size_t n, uint64_t offset) {
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, off_t(offset));
        if (w <= 0) return false;
        p += w, n -= size_t(w), offset += uint64_t(w);
    }
    return true;
}

// Writes the image block by block; with `builder`, indexes each block's records first.
double write_file(const std::string& path, const Image& img, IndexBuilder* builder) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::perror(path.c_str());
        std::exit(1);
    }
    const double t0 = thread_cpu_seconds();
    const format::Interface interface;  // Ethernet, as make_image writes
    uint64_t start = 0;
    size_t r = 0;
    for (uint64_t end : img.block_ends) {
        if (builder != nullptr) {
            for (; r < img.records.size() && img.records[r] < end; ++r) {
                const uint8_t* h = img.bytes.data() + img.records[r];
                uint32_t f[4];
                std::memcpy(f, h, 16);
                format::Record rec;
                rec.offset = img.records[r];
                rec.end = rec.offset + 16 + f[2];
                rec.ts_ns = uint64_t(f[0]) * 1'000'000'000ull + f[1];
                rec.caplen = f[2];
                rec.len = f[3];
                rec.data = h + 16;
                builder->add(rec, interface);
            }
        }
        if (!write_all(fd, img.bytes.data() + start, end - start, start)) {
            std::perror("pwrite");
            std::exit(1);
        }
        start = end;
    }
    if (builder != nullptr) {
        const std::vector<uint8_t> idx = builder->finish(img.bytes.size(), 0, img.bytes.size(), 0);
        const int ifd = ::open((path + ".idx").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (ifd < 0 || !write_all(ifd, idx.data(), idx.size(), 0)) std::exit(1);
        ::close(ifd);
    }
    const double cpu = thread_cpu_seconds() - t0;
    ::close(fd);
    return cpu;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: linecap_index_cost DIR [--mib N] [--size BYTES|imix] [--runs R]\n");
        return 64;
    }
    const std::string dir = argv[1];
    uint64_t mib = 512;
    int size = 64, runs = 5;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--mib") mib = std::strtoull(v.c_str(), nullptr, 10);
        else if (a == "--size") size = v == "imix" ? 0 : std::atoi(v.c_str());
        else if (a == "--runs") runs = std::atoi(v.c_str());
        else return std::fprintf(stderr, "unknown option %s\n", a.c_str()), 64;
    }
    const size_t block = 1 << 20;
    const Image img = make_image(mib << 20, size, block);
    const double gib = double(img.bytes.size()) / double(1ull << 30);
    const auto header = format::parse_header(img.bytes);
    if (!header) return std::fprintf(stderr, "bad image\n"), 1;

    const std::string a = dir + "/index_cost_a.pcap", b = dir + "/index_cost_b.pcap";
    std::vector<double> write_only, inline_idx, background;
    uint64_t index_bytes = 0;
    for (int run = 0; run < runs; ++run) {
        write_only.push_back(write_file(a, img, nullptr) / gib);
        IndexBuilder builder(header.value());
        inline_idx.push_back(write_file(b, img, &builder) / gib);
        const double t0 = thread_cpu_seconds();
        auto built = build_index(a);
        background.push_back((thread_cpu_seconds() - t0) / gib);
        if (!built) return std::fprintf(stderr, "build_index: %s\n", built.error().message.c_str()), 1;
        index_bytes = built->index_bytes;
        ::unlink(a.c_str()), ::unlink((a + ".idx").c_str()), ::unlink(b.c_str()), ::unlink((b + ".idx").c_str());
    }
    const double w = median(write_only), in = median(inline_idx), bg = median(background);
    const char* frames = size > 0 ? nullptr : "IMIX";
    std::printf("index cost: %s%s frames, %.2f GiB pcap (%zu packets) into %s, 1 MiB blocks, median of %d runs, "
                "CPU seconds of the working thread per GiB\n",
                frames ? frames : std::to_string(size).c_str(), frames ? "" : "-byte", gib, img.records.size(),
                dir.c_str(), runs);
    std::printf("  %-44s %7.3f s/GiB  (%.2f GiB/s per core)\n", "writer: write only", w, 1 / w);
    std::printf("  %-44s %7.3f s/GiB  (%.2f GiB/s per core, writer %.2fx slower)\n",
                "writer: write + index each block (inline)", in, 1 / in, in / w);
    std::printf("  %-44s %7.3f s/GiB  (%.2f GiB/s per core, off the writer)\n",
                "background indexer: build_index after finalise", bg, 1 / bg);
    std::printf("  index size %.3f%% of the pcap; %.0f ns of writer CPU per packet inline vs %.0f ns write only\n",
                100.0 * double(index_bytes) / double(img.bytes.size()), in * gib / double(img.records.size()) * 1e9,
                w * gib / double(img.records.size()) * 1e9);
    return 0;
}
