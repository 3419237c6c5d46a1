// linecap_compress_bench: what output.compress buys and costs, on a stated traffic mix.
//
//   linecap_compress_bench [--dir DIR] [--mb-per-kind 96] [--level 3] [--gbps 1] [--runs 5] [--keep]
//
// Generates four kinds of traffic, each as its own capture file (nanosecond pcap, Ethernet/
// IPv4, default template names), deterministic (fixed seeds):
//   tls    bulk TLS-like transfers: TCP 443, 1448-byte segments of random bytes (what
//          encrypted payload looks like to a compressor), ACKs in the other direction
//   http   HTTP/1.1 text: requests and responses (headers, HTML built from a word list
//          with random numbers and ids), TCP 80, both directions
//   dns    DNS over UDP 53: queries and answers for names from a list with random labels
//   flood  small-packet flood: 64-byte TCP SYNs from random sources to one server
// and a mix of them by bytes: 70 % tls, 20 % http, 5 % dns, 5 % flood (a stated
// assumption: encrypted bulk dominates enterprise and Internet traffic; the flood stands
// for scans and attacks). Each file is indexed (256 KiB blocks), given a manifest and
// compressed with compress_capture — the daemon's code path, on this thread, at
// normal priority — and the table shows: ratio (pcap bytes / compressed bytes), CPU
// seconds per GB of pcap (thread CPU time: compression, the read-back check, hashing),
// and for the mix: extract time over the compressed file against the same file
// uncompressed (three queries; median of --runs warm runs, the two files taking turns so
// a change of load meanwhile slows both alike), and the retention horizon per TB
// at --gbps of that traffic (capture files + index + manifest), compression on and off.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format/pcap_format.hpp"
#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/recovery.hpp"
#include "util/unique_fd.hpp"
#include "archive/compress.hpp"
#include "store/extract.hpp"
#include "archive/index_format.hpp"
#include "util/thread_cpu.hpp"
#include "xorshift.hpp"

using namespace linecap;

namespace {

constexpr uint64_t kT0 = 1796004600000000000ull;  // 2026-11-30T02:10:00Z

void put16(std::vector<uint8_t>& b, uint16_t v) {
    b.push_back(uint8_t(v >> 8));
    b.push_back(uint8_t(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
    put16(b, uint16_t(v >> 16));
    put16(b, uint16_t(v));
}

// Ethernet + IPv4 + TCP/UDP header, then the payload.
std::vector<uint8_t> packet(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t seq,
                            uint8_t tcp_flags, const uint8_t* payload, size_t n) {
    std::vector<uint8_t> b = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    put16(b, 0x0800);
    const size_t l4 = proto == 6 ? 20 : 8;
    b.push_back(0x45);
    b.push_back(0);
    put16(b, uint16_t(20 + l4 + n));
    put16(b, uint16_t(seq));
    put16(b, 0x4000);
    b.push_back(64);
    b.push_back(proto);
    put16(b, 0);
    put32(b, src);
    put32(b, dst);
    put16(b, sport);
    put16(b, dport);
    if (proto == 6) {
        put32(b, seq);
        put32(b, seq ^ 0x5a5a5a5a);
        b.push_back(0x50);
        b.push_back(tcp_flags);
        put16(b, 65535);
        put16(b, uint16_t(seq * 7));
        put16(b, 0);
    } else {
        put16(b, uint16_t(8 + n));
        put16(b, uint16_t(seq * 13));
    }
    b.insert(b.end(), payload, payload + n);
    while (b.size() < 60) b.push_back(0);
    return b;
}

class PcapOut {
public:
    explicit PcapOut(const std::string& path) : f_(path, std::ios::binary | std::ios::trunc) {
        const auto h = pcap::file_header(262144);
        f_.write(reinterpret_cast<const char*>(&h), sizeof h);
        bytes_ = sizeof h;
    }
    void add(uint64_t ts, const std::vector<uint8_t>& p) {
        uint8_t rh[16];
        pcap::encode_record_header(rh, ts, uint32_t(p.size()), uint32_t(p.size()));
        f_.write(reinterpret_cast<const char*>(rh), 16);
        f_.write(reinterpret_cast<const char*>(p.data()), std::streamsize(p.size()));
        bytes_ += 16 + p.size();
    }
    uint64_t bytes() const { return bytes_; }

private:
    std::ofstream f_;
    uint64_t bytes_;
};

const char* kWords[] = {"the",     "capture", "packet",  "server", "client", "request", "session", "account",
                        "invoice", "report",  "network", "search", "result", "profile", "update",  "content",
                        "image",   "product", "order",   "cart",   "price",  "login",   "status",  "message"};
const char* kDomains[] = {"example.com", "cdn.example.net", "mail.example.org", "api.service.io",
                          "static.assets.example", "login.corp.example", "updates.vendor.example"};

std::string words(Rng& r, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
        s += kWords[r.below(std::size(kWords))];
        s += (r.below(9) == 0) ? std::to_string(r.next() % 100000) + " " : " ";
    }
    return s;
}

// One kind of traffic, `kinds` a set of weights over tls/http/dns/flood (by bytes),
// until `target` bytes. Timestamps 1 µs apart.
void generate(const std::string& path, const double weights[4], uint64_t target, uint64_t seed) {
    Rng r{seed * 0x9E3779B97F4A7C15ull + 7};
    PcapOut out(path);
    uint64_t ts = kT0;
    uint64_t done[4] = {};
    std::vector<uint8_t> random(1448);
    const uint32_t client_net = 0xc6120000u, server_net = 0xc6130000u;  // 198.18/16, 198.19/16
    while (out.bytes() < target) {
        // The kind furthest behind its share.
        int k = 0;
        double worst = 1e300;
        for (int i = 0; i < 4; ++i) {
            if (weights[i] <= 0) continue;
            const double share = double(done[i]) / weights[i];
            if (share < worst) worst = share, k = i;
        }
        const uint64_t before = out.bytes();
        const uint32_t client = client_net | r.below(65536), server = server_net | r.below(256);
        const uint16_t cport = uint16_t(1024 + r.below(60000));
        uint32_t seq = uint32_t(r.next());
        if (k == 0) {  // a TLS transfer: 16 .. 64 full segments and their ACKs
            const int n = 16 + int(r.below(48));
            for (int i = 0; i < n; ++i) {
                for (auto& c : random) c = uint8_t(r.next());
                out.add(ts += 1000, packet(server, client, 6, 443, cport, seq, 0x18, random.data(), random.size()));
                if (i % 2) out.add(ts += 1000, packet(client, server, 6, cport, 443, seq + 1, 0x10, nullptr, 0));
                seq += 1448;
            }
        } else if (k == 1) {  // an HTTP exchange
            const std::string req = "GET /" + words(r, 3) + "?id=" + std::to_string(r.next() % 1000000) +
                                    " HTTP/1.1\r\nHost: www." + kDomains[r.below(std::size(kDomains))] +
                                    "\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: text/html\r\nCookie: "
                                    "session=" + std::to_string(r.next()) + "\r\n\r\n";
            out.add(ts += 1000, packet(client, server, 6, cport, 80, seq, 0x18,
                                       reinterpret_cast<const uint8_t*>(req.data()), req.size()));
            std::string body = "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nServer: nginx\r\n\r\n"
                               "<html><head><title>" + words(r, 4) + "</title></head><body>";
            const int paragraphs = 2 + int(r.below(12));
            for (int i = 0; i < paragraphs; ++i) body += "<p class=\"text\">" + words(r, 40) + "</p>\n";
            body += "</body></html>";
            for (size_t at = 0; at < body.size(); at += 1448) {
                const size_t n = std::min<size_t>(1448, body.size() - at);
                out.add(ts += 1000, packet(server, client, 6, 80, cport, seq, 0x18,
                                           reinterpret_cast<const uint8_t*>(body.data() + at), n));
                seq += uint32_t(n);
            }
        } else if (k == 2) {  // a DNS query and its answer
            std::vector<uint8_t> q = {uint8_t(r.next()), uint8_t(r.next()), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
            std::string name = (r.below(3) == 0 ? "x" + std::to_string(r.next() % 100000) + "." : std::string("www.")) +
                               kDomains[r.below(std::size(kDomains))];
            size_t label = 0;
            for (size_t i = 0; i <= name.size(); ++i)
                if (i == name.size() || name[i] == '.') {
                    q.push_back(uint8_t(i - label));
                    q.insert(q.end(), name.begin() + long(label), name.begin() + long(i));
                    label = i + 1;
                }
            q.push_back(0);
            put16(q, 1);
            put16(q, 1);
            out.add(ts += 1000, packet(client, server, 17, cport, 53, seq, 0, q.data(), q.size()));
            std::vector<uint8_t> a = q;
            a[2] = 0x81;
            a[3] = 0x80;
            a[7] = 1;
            a.insert(a.end(), {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4});
            put32(a, server_net | r.below(65536));
            out.add(ts += 1000, packet(server, client, 17, 53, cport, seq, 0, a.data(), a.size()));
        } else {  // a burst of SYNs from random sources
            for (int i = 0; i < 32; ++i)
                out.add(ts += 1000, packet(uint32_t(r.next()), server_net | 7, 6, uint16_t(r.next()), 80,
                                           uint32_t(r.next()), 0x02, nullptr, 0));
        }
        done[k] += out.bytes() - before;
    }
}

std::string name_for(uint64_t ts) {
    const time_t sec = time_t(ts / 1000000000u);
    struct tm utc {};
    gmtime_r(&sec, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &utc);
    return std::string(stamp) + ".000000000Z-p0-q0.pcap";
}

// Index + manifest, as the daemon leaves a finished file.
void finish(const std::string& dir, const std::string& name) {
    if (!build_index(dir + "/" + name)) std::exit(1);
    UniqueFd fd(::open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    const Manifest m = manifest_from_scan(name, scan_capture(fd.get(), ScanOptions{.hash = true}));
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!write_manifest(dir_fd.get(), m).ok()) std::exit(1);
}

uint64_t sidecar_bytes(const std::string& dir, const std::string& name) {
    uint64_t n = 0;
    for (const std::string& s : {layout::manifest_name(name), layout::index_name(name)})
        if (std::filesystem::exists(dir + "/" + s)) n += std::filesystem::file_size(dir + "/" + s);
    return n;
}

struct ExtractTimes {
    double plain_s = 0, compressed_s = 0;          // wall clock
    double plain_cpu_s = 0, compressed_cpu_s = 0;  // this thread's CPU time (what a loaded machine does not inflate)
    uint64_t packets = 0;
    uint64_t blocks_read = 0, blocks_total = 0;
};

store::ExtractReport run_extract_once(const std::string& dir, const std::string& filter, double* seconds,
                                      double* cpu_seconds) {
    const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    store::ExtractOptions o;
    o.directory = dir;
    o.filter = filter;
    const double cpu0 = thread_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = store::extract(o, fd);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    *cpu_seconds = thread_cpu_seconds() - cpu0;
    ::close(fd);
    if (!r || !r->errors.empty()) {
        std::fprintf(stderr, "extract failed in %s\n", dir.c_str());
        std::exit(1);
    }
    return std::move(r.value());
}

// `runs` warm extractions of each, plain and compressed taking turns (a machine whose load
// changes during the runs slows both sides alike); the medians.
ExtractTimes extract_times(const std::string& plain, const std::string& packed, const std::string& filter, int runs) {
    std::vector<double> a, b, ca, cb;
    ExtractTimes t;
    for (int i = 0; i < runs; ++i) {
        double s = 0, cpu = 0;
        const store::ExtractReport ra = run_extract_once(plain, filter, &s, &cpu);
        a.push_back(s);
        ca.push_back(cpu);
        const store::ExtractReport rb = run_extract_once(packed, filter, &s, &cpu);
        b.push_back(s);
        cb.push_back(cpu);
        if (ra.packets_written != rb.packets_written || ra.blocks_read != rb.blocks_read) {
            std::fprintf(stderr, "'%s': %llu packets, %llu blocks uncompressed; %llu packets, %llu blocks compressed\n",
                         filter.c_str(), static_cast<unsigned long long>(ra.packets_written),
                         static_cast<unsigned long long>(ra.blocks_read),
                         static_cast<unsigned long long>(rb.packets_written),
                         static_cast<unsigned long long>(rb.blocks_read));
            std::exit(1);
        }
        t.packets = ra.packets_written;
        t.blocks_read = ra.blocks_read;
        t.blocks_total = ra.blocks_total;
    }
    const auto median = [](std::vector<double>& v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    t.plain_s = median(a);
    t.compressed_s = median(b);
    t.plain_cpu_s = median(ca);
    t.compressed_cpu_s = median(cb);
    return t;
}

std::string loadavg() {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
    std::string root = "/tmp/linecap-compress-bench";
    uint64_t mb = 96;
    int level = kDefaultCompressLevel;
    double gbps = 1.0;
    int runs = 5;
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--keep") keep = true;
        else if (a == "--dir" && has_value) root = argv[++i];
        else if (a == "--mb-per-kind" && has_value) mb = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--level" && has_value) level = std::atoi(argv[++i]);
        else if (a == "--gbps" && has_value) gbps = std::atof(argv[++i]);
        else if (a == "--runs" && has_value) runs = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: linecap_compress_bench [--dir DIR] [--mb-per-kind N] [--level N] [--gbps G] "
                                 "[--runs N] [--keep]\n");
            return 64;
        }
    }
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    std::printf("linecap_compress_bench: zstd level %d, %llu MB per kind, %ld CPUs, load average %s (shared machine)\n",
                level, static_cast<unsigned long long>(mb), sysconf(_SC_NPROCESSORS_ONLN), loadavg().c_str());
    struct Kind {
        const char* name;
        double weights[4];
    };
    const Kind kinds[] = {{"tls", {1, 0, 0, 0}},
                          {"http", {0, 1, 0, 0}},
                          {"dns", {0, 0, 1, 0}},
                          {"flood", {0, 0, 0, 1}},
                          {"mix", {0.70, 0.20, 0.05, 0.05}}};
    std::printf("\n| traffic | pcap MB | compressed MB | ratio | CPU s/GB | frames |\n| --- | --- | --- | --- | --- | --- |\n");
    double mix_ratio = 0;
    uint64_t mix_pcap = 0, mix_zst = 0, mix_sidecars_plain = 0, mix_sidecars_zst = 0;
    const std::string name = name_for(kT0);
    for (const Kind& k : kinds) {
        const std::string dir = root + "/" + k.name;
        std::filesystem::create_directories(dir);
        generate(dir + "/" + name, k.weights, mb << 20, 17);
        finish(dir, name);
        const uint64_t sidecars_plain = sidecar_bytes(dir, name);
        bool vanished = false;
        auto r = compress_capture(dir, name, {.level = level}, &vanished);
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        const double ratio = double(r->pcap_bytes) / double(r->compressed_bytes);
        std::printf("| %s | %.1f | %.1f | %.2f | %.2f | %llu |\n", k.name, r->pcap_bytes / 1e6,
                    r->compressed_bytes / 1e6, ratio, r->cpu_seconds / (r->pcap_bytes / 1e9),
                    static_cast<unsigned long long>(r->frames));
        std::fflush(stdout);
        if (std::string(k.name) == "mix") {
            mix_ratio = ratio;
            mix_pcap = r->pcap_bytes;
            mix_zst = r->compressed_bytes;
            mix_sidecars_plain = sidecars_plain;
            mix_sidecars_zst = sidecar_bytes(dir, name);
        } else {
            std::filesystem::remove_all(dir);
        }
    }

    // The same mix file again, left uncompressed, for the extract comparison.
    const std::string plain = root + "/mix-plain", packed = root + "/mix";
    std::filesystem::create_directories(plain);
    generate(plain + "/" + name, kinds[4].weights, mb << 20, 17);
    finish(plain, name);
    std::printf("\nextract over the mix (%.1f MB pcap, %.1f MB compressed), median of %d warm runs each, the two "
                "files taking turns; load average %s:\n\n",
                mix_pcap / 1e6, mix_zst / 1e6, runs, loadavg().c_str());
    std::printf("| query | packets | blocks read | uncompressed s | compressed s | compressed / uncompressed | CPU "
                "s uncompressed | CPU s compressed | CPU ratio |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    const char* queries[] = {"host 198.19.0.9 and tcp port 80", "udp port 53", ""};
    for (const char* q : queries) {
        (void)extract_times(plain, packed, q, 1);  // warm-up: page cache, allocator
        const ExtractTimes t = extract_times(plain, packed, q, runs);
        std::printf("| %s | %llu | %llu of %llu | %.4f | %.4f | %.2f× | %.4f | %.4f | %.2f× |\n",
                    *q ? q : "(everything)", static_cast<unsigned long long>(t.packets),
                    static_cast<unsigned long long>(t.blocks_read), static_cast<unsigned long long>(t.blocks_total),
                    t.plain_s, t.compressed_s, t.compressed_s / t.plain_s, t.plain_cpu_s, t.compressed_cpu_s,
                    t.compressed_cpu_s / t.plain_cpu_s);
        std::fflush(stdout);
    }

    // Horizon: a TB holds this traffic for TB / (rate × stored bytes per pcap byte).
    const double rate = gbps * 1e9 / 8;  // pcap bytes per second (record headers counted as the capture's)
    const double per_byte_plain = double(mix_pcap + mix_sidecars_plain) / double(mix_pcap);
    const double per_byte_zst = double(mix_zst + mix_sidecars_zst) / double(mix_pcap);
    const double h_plain = 1e12 / (rate * per_byte_plain) / 3600, h_zst = 1e12 / (rate * per_byte_zst) / 3600;
    std::printf("\nretention horizon per TB at %.2f Gbit/s of the mix (file + index + manifest):\n\n", gbps);
    std::printf("| compression | bytes stored per pcap byte | hours per TB |\n| --- | --- | --- |\n");
    std::printf("| off | %.4f | %.2f |\n| on (level %d) | %.4f | %.2f (%.2f×) |\n", per_byte_plain, h_plain, level,
                per_byte_zst, h_zst, h_zst / h_plain);
    std::printf("\nmix ratio %.3f; load average at the end %s\n", mix_ratio, loadavg().c_str());
    // --keep: DIR/mix (compressed) and DIR/mix-plain stay, to profile `linecap extract` over them.
    if (!keep) std::filesystem::remove_all(root);
    return 0;
}
