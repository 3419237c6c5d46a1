// store_gen: writes a synthetic capture store fast, for the retrieval benchmark.
//
//   store_gen --out DIR [--gb 10] [--rotate-mb 256] [--ports 2] [--queues 2] [--seed 1]
//             [--gbps 1.2] [--active-flows 20000] [--start-ns N]
//
// One nanosecond pcap stream per (port, queue), files named by the daemon's default
// template (archive/layout.hpp), rotated at --rotate-mb. Traffic: a realistic mix —
// flows with Zipf-like popularity and geometric lifetimes (so a conversation is local in
// time), both directions; IPv4/IPv6, TCP/UDP, 8 % VLAN-tagged, some ICMP and ARP; full-size
// data segments and small ACKs/requests. Timestamps advance at --gbps across the store.
//
// Two known conversations are injected, 1000 packets each: into stream p0/q1 in a
// 5-second window at the middle of the capture ("clustered"), 198.18.77.77:41000 <->
// 198.19.88.88:5555/tcp; and into stream p0/q0 evenly over the whole capture ("spread":
// a beacon, a slow exfiltration), 198.18.66.66:42000 <-> 198.19.99.99:6666/tcp. Their
// descriptions are printed on stdout as shell variables (CONV_FILTER, CONV_FROM_NS,
// CONV_TO_NS, CONV_PACKETS; SPREAD_FILTER, SPREAD_PACKETS) for bench/store/run_bench.sh.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "archive/layout.hpp"
#include "format/pcap_format.hpp"
#include "../xorshift.hpp"

namespace {

enum class Kind { tcp4, udp4, tcp6, udp6, icmp4, arp };

struct Flow {
    Kind kind;
    bool vlan;
    uint16_t vid;
    uint8_t a[16], b[16];  // client, server addresses (v4 uses the first 4 bytes)
    uint16_t sport, dport;
    uint32_t remaining;    // packets left
    uint32_t seq;
};

constexpr uint16_t kServerPorts[] = {443, 443, 443, 80, 80, 53, 8080, 22, 25, 993, 3306, 5060, 123, 8443};

void put16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v >> 8); p[1] = uint8_t(v); }
void put32(uint8_t* p, uint32_t v) { p[0] = uint8_t(v >> 24); p[1] = uint8_t(v >> 16); p[2] = uint8_t(v >> 8); p[3] = uint8_t(v); }

uint16_t ip_checksum(const uint8_t* p, size_t n) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < n; i += 2) sum += uint32_t(p[i] << 8 | p[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

class Generator {
public:
    Generator(uint64_t seed, unsigned active, unsigned servers) : rng_{seed * 0x9E3779B97F4A7C15ull + 1} {
        payload_.resize(16384);
        for (auto& c : payload_) c = static_cast<uint8_t>(rng_.next());
        servers_.resize(servers);
        for (auto& s : servers_) {
            s.v4 = 0xc6130000u | rng_.below(65536);  // 198.19.0.0/16
            for (int i = 0; i < 16; ++i) s.v6[i] = static_cast<uint8_t>(rng_.next());
            s.v6[0] = 0x20; s.v6[1] = 0x01; s.v6[2] = 0x0d; s.v6[3] = 0xb8; s.v6[4] = 0x99;
            s.port = kServerPorts[rng_.below(sizeof kServerPorts / sizeof kServerPorts[0])];
        }
        flows_.resize(active);
        for (auto& f : flows_) new_flow(f);
    }

    // Builds the next frame into `out` (≥ 1600 bytes); returns its length.
    uint32_t next(uint8_t* out) {
        // Zipf-ish: a few heavy flows, many light ones.
        const double u = rng_.unit();
        const uint32_t i = static_cast<uint32_t>(std::pow(u, 3.0) * flows_.size()) % flows_.size();
        Flow& f = flows_[i];
        const uint32_t n = frame(f, rng_.below(2) == 0, out);
        if (--f.remaining == 0) new_flow(f);
        return n;
    }

    uint32_t frame(Flow& f, bool reverse, uint8_t* out) {
        static const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 1}, mac_b[6] = {2, 0, 0, 0, 0, 2};
        std::memcpy(out, reverse ? mac_a : mac_b, 6);
        std::memcpy(out + 6, reverse ? mac_b : mac_a, 6);
        uint32_t off = 12;
        if (f.vlan) {
            put16(out + off, 0x8100);
            put16(out + off + 2, f.vid);
            off += 4;
        }
        const uint8_t* src = reverse ? f.b : f.a;
        const uint8_t* dst = reverse ? f.a : f.b;
        const uint16_t sp = reverse ? f.dport : f.sport, dp = reverse ? f.sport : f.dport;
        ++f.seq;
        if (f.kind == Kind::arp) {
            put16(out + off, 0x0806);
            uint8_t* a = out + off + 2;
            put16(a, 1); put16(a + 2, 0x0800); a[4] = 6; a[5] = 4; put16(a + 6, reverse ? 2 : 1);
            std::memcpy(a + 8, mac_a, 6); std::memcpy(a + 14, src, 4);
            std::memset(a + 18, 0, 6); std::memcpy(a + 24, dst, 4);
            const uint32_t n = off + 2 + 28;
            std::memset(out + n, 0, 60 - n);
            return 60;
        }
        const bool v6 = f.kind == Kind::tcp6 || f.kind == Kind::udp6;
        const bool tcp = f.kind == Kind::tcp4 || f.kind == Kind::tcp6;
        const uint8_t proto = tcp ? 6 : f.kind == Kind::icmp4 ? 1 : 17;
        uint32_t l4len;
        if (tcp) l4len = 20 + ((f.seq & 1) ? 1460u - (f.vlan ? 4u : 0u) - (v6 ? 20u : 0u) : rng_.below(3) == 0 ? 0u : rng_.below(400));
        else if (proto == 17) l4len = 8 + 20 + rng_.below(1200);
        else l4len = 8 + 56;
        put16(out + off, v6 ? 0x86dd : 0x0800);
        off += 2;
        const uint32_t l3 = off;
        if (v6) {
            put32(out + l3, 0x60000000u | (f.sport & 0xfffff));
            put16(out + l3 + 4, static_cast<uint16_t>(l4len));
            out[l3 + 6] = proto;
            out[l3 + 7] = 64;
            std::memcpy(out + l3 + 8, src, 16);
            std::memcpy(out + l3 + 24, dst, 16);
            off += 40;
        } else {
            out[l3] = 0x45; out[l3 + 1] = 0;
            put16(out + l3 + 2, static_cast<uint16_t>(20 + l4len));
            put16(out + l3 + 4, static_cast<uint16_t>(f.seq));
            put16(out + l3 + 6, 0x4000);
            out[l3 + 8] = 64; out[l3 + 9] = proto;
            put16(out + l3 + 10, 0);
            std::memcpy(out + l3 + 12, src, 4);
            std::memcpy(out + l3 + 16, dst, 4);
            put16(out + l3 + 10, ip_checksum(out + l3, 20));
            off += 20;
        }
        uint8_t* l4 = out + off;
        uint32_t hdr;
        if (tcp) {
            put16(l4, sp); put16(l4 + 2, dp);
            put32(l4 + 4, f.seq * 1460u); put32(l4 + 8, f.seq * 7u);
            l4[12] = 0x50; l4[13] = 0x18; put16(l4 + 14, 65535); put16(l4 + 16, 0); put16(l4 + 18, 0);
            hdr = 20;
        } else if (proto == 17) {
            put16(l4, sp); put16(l4 + 2, dp); put16(l4 + 4, static_cast<uint16_t>(l4len)); put16(l4 + 6, 0);
            hdr = 8;
        } else {
            l4[0] = reverse ? 0 : 8; l4[1] = 0; put16(l4 + 2, 0); put16(l4 + 4, f.sport); put16(l4 + 6, static_cast<uint16_t>(f.seq));
            hdr = 8;
        }
        const uint32_t body = l4len - hdr;
        std::memcpy(l4 + hdr, payload_.data() + rng_.below(static_cast<uint32_t>(payload_.size() - 1600)), body);
        if (body >= 4) put32(l4 + hdr, f.seq);
        const uint32_t n = off + l4len;
        if (n < 60) {
            std::memset(out + n, 0, 60 - n);
            return 60;
        }
        return n;
    }

    void make_conversation(Flow& f, bool spread = false) {
        f = Flow{};
        f.kind = Kind::tcp4;
        const uint8_t a[4] = {198, 18, 77, 77}, b[4] = {198, 19, 88, 88};
        const uint8_t sa[4] = {198, 18, 66, 66}, sb[4] = {198, 19, 99, 99};
        std::memcpy(f.a, spread ? sa : a, 4);
        std::memcpy(f.b, spread ? sb : b, 4);
        f.sport = spread ? 42000 : 41000;
        f.dport = spread ? 6666 : 5555;
        f.remaining = UINT32_MAX;
    }

private:
    struct Server {
        uint32_t v4;
        uint8_t v6[16];
        uint16_t port;
    };

    void new_flow(Flow& f) {
        const uint32_t r = rng_.below(100);
        f.kind = r < 50 ? Kind::tcp4 : r < 72 ? Kind::udp4 : r < 86 ? Kind::tcp6 : r < 96 ? Kind::udp6 : r < 98 ? Kind::icmp4 : Kind::arp;
        f.vlan = rng_.below(100) < 8;
        f.vid = static_cast<uint16_t>(1 + rng_.below(4094));
        const Server& s = servers_[static_cast<uint32_t>(std::pow(rng_.unit(), 2.0) * servers_.size()) % servers_.size()];
        const bool v6 = f.kind == Kind::tcp6 || f.kind == Kind::udp6;
        if (v6) {
            for (int i = 0; i < 16; ++i) f.a[i] = static_cast<uint8_t>(rng_.next());
            f.a[0] = 0x20; f.a[1] = 0x01; f.a[2] = 0x0d; f.a[3] = 0xb8;
            std::memcpy(f.b, s.v6, 16);
        } else {
            put32(f.a, 0xc6120000u | rng_.below(65536));  // 198.18.0.0/16 clients
            put32(f.b, s.v4);
        }
        f.sport = static_cast<uint16_t>(1024 + rng_.below(64511));
        f.dport = f.kind == Kind::icmp4 ? 0 : s.port;
        // Geometric lifetime: mostly short, some long.
        f.remaining = 2 + static_cast<uint32_t>(-std::log(1.0 - rng_.unit()) * (rng_.below(10) == 0 ? 3000.0 : 60.0));
        f.seq = rng_.below(1000000);
    }

    Rng rng_;
    std::vector<uint8_t> payload_;
    std::vector<Server> servers_;
    std::vector<Flow> flows_;
};

struct StreamOut {
    std::string port;
    unsigned queue;
    Generator gen;
    int fd = -1;
    uint64_t file_bytes = 0;
    uint64_t seq = 0;
    std::vector<uint8_t> buf;
    size_t used = 0;
    std::string part, final_path;
};

void die(const char* what) {
    std::perror(what);
    std::exit(1);
}

void flush(StreamOut& s) {
    size_t done = 0;
    while (done < s.used) {
        const ssize_t n = ::write(s.fd, s.buf.data() + done, s.used - done);
        if (n < 0) die("write");
        done += static_cast<size_t>(n);
    }
    s.used = 0;
}

void close_file(StreamOut& s) {
    if (s.fd < 0) return;
    flush(s);
    ::close(s.fd);
    if (::rename(s.part.c_str(), s.final_path.c_str()) != 0) die("rename");
    s.fd = -1;
}

}  // namespace

int main(int argc, char** argv) {
    std::string out;
    double gb = 10, gbps = 1.2;
    uint64_t rotate_mb = 256, seed = 1, start_ns = 1764468000000000000ull;  // 2025-11-30T02:00:00Z
    unsigned ports = 2, queues = 2, active = 20000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--out") out = v;
        else if (k == "--gb") gb = std::stod(v);
        else if (k == "--rotate-mb") rotate_mb = std::stoull(v);
        else if (k == "--ports") ports = static_cast<unsigned>(std::stoul(v));
        else if (k == "--queues") queues = static_cast<unsigned>(std::stoul(v));
        else if (k == "--seed") seed = std::stoull(v);
        else if (k == "--gbps") gbps = std::stod(v);
        else if (k == "--active-flows") active = static_cast<unsigned>(std::stoul(v));
        else if (k == "--start-ns") start_ns = std::stoull(v);
        else {
            std::fprintf(stderr, "store_gen: unknown option %s\n", k.c_str());
            return 64;
        }
    }
    if (out.empty()) {
        std::fprintf(stderr, "usage: store_gen --out DIR [--gb 10] [--rotate-mb 256] [--ports 2] [--queues 2]\n");
        return 64;
    }
    ::mkdir(out.c_str(), 0755);
    const uint64_t total = static_cast<uint64_t>(gb * 1e9);
    const double ns_per_byte = 8.0 / gbps;  // wire time of the whole store's traffic
    std::vector<StreamOut> streams;
    for (unsigned p = 0; p < ports; ++p)
        for (unsigned q = 0; q < queues; ++q)
            streams.push_back(StreamOut{"p" + std::to_string(p), q, Generator(seed * 1000 + p * 16 + q, active, 3000)});
    for (auto& s : streams) s.buf.resize(1 << 20);

    // The injected conversation: stream 1 (p0/q1), 1000 packets, in a 5 s window mid-capture.
    const uint64_t duration_ns = static_cast<uint64_t>(static_cast<double>(total) * ns_per_byte);
    const uint64_t conv_from = start_ns + duration_ns / 2, conv_to = conv_from + 5000000000ull;
    const uint64_t conv_packets = 1000;
    Flow conv{};
    streams[std::min<size_t>(1, streams.size() - 1)].gen.make_conversation(conv);
    uint64_t conv_written = 0, next_conv_ts = conv_from;
    // The spread one: stream 0 (p0/q0), 1000 packets evenly over the whole capture.
    Flow spread{};
    streams[0].gen.make_conversation(spread, true);
    uint64_t spread_written = 0, next_spread_ts = start_ns;

    const linecap::FileTemplate file_template = linecap::FileTemplate::compile(linecap::kDefaultFileTemplate).value();
    Rng rng{seed + 99};
    uint64_t written = 0, ts = start_ns, packets = 0;
    uint8_t frame[2048];
    while (written < total) {
        StreamOut& s = streams[rng.below(static_cast<uint32_t>(streams.size()))];
        uint32_t len;
        const bool conv_now = &s == &streams[std::min<size_t>(1, streams.size() - 1)] && conv_written < conv_packets &&
                              ts >= next_conv_ts;
        const bool spread_now = &s == &streams[0] && !conv_now && spread_written < conv_packets &&
                                ts >= next_spread_ts;
        if (conv_now) {
            len = s.gen.frame(conv, (conv_written & 1) != 0, frame);
            ++conv_written;
            next_conv_ts = conv_from + (conv_to - conv_from) / conv_packets * conv_written;
        } else if (spread_now) {
            len = s.gen.frame(spread, (spread_written & 1) != 0, frame);
            ++spread_written;
            // The last one a little before the end (the end is where the byte budget runs out).
            next_spread_ts = start_ns + duration_ns / (conv_packets + 2) * spread_written;
        } else {
            len = s.gen.next(frame);
        }
        const uint32_t rec = static_cast<uint32_t>(linecap::pcap::record_size(len));
        if (s.fd >= 0 && s.file_bytes + rec > rotate_mb << 20) close_file(s);
        if (s.fd < 0) {
            linecap::StreamId id{s.port, 0, static_cast<uint16_t>(s.queue)};
            const std::string name = linecap::layout::capture_name(file_template, ts, id, s.seq++,
                                                                   linecap::FileKind::pcap, 0);
            s.final_path = out + "/" + name;
            s.part = out + "/" + linecap::layout::in_progress_name(name);
            s.fd = ::open(s.part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (s.fd < 0) die("open");
            const auto h = linecap::pcap::file_header(262144);
            std::memcpy(s.buf.data(), &h, sizeof h);
            s.used = sizeof h;
            s.file_bytes = sizeof h;
        }
        if (s.used + rec > s.buf.size()) flush(s);
        s.used += linecap::pcap::encode_record_header(s.buf.data() + s.used, ts, len, len);
        std::memcpy(s.buf.data() + s.used, frame, len);
        s.used += len;
        s.file_bytes += rec;
        written += rec;
        ++packets;
        ts += 1 + static_cast<uint64_t>(static_cast<double>(len + 24) * ns_per_byte);
    }
    for (auto& s : streams) close_file(s);
    std::printf("STORE_BYTES=%" PRIu64 "\nSTORE_PACKETS=%" PRIu64 "\nSTORE_FROM_NS=%" PRIu64 "\nSTORE_TO_NS=%" PRIu64 "\n",
                written, packets, start_ns, ts);
    std::printf("CONV_FILTER='host 198.18.77.77 and host 198.19.88.88 and tcp port 5555'\n");
    std::printf("CONV_FROM_NS=%" PRIu64 "\nCONV_TO_NS=%" PRIu64 "\nCONV_PACKETS=%" PRIu64 "\n", conv_from, conv_to + 1,
                conv_written);
    std::printf("SPREAD_FILTER='host 198.18.66.66 and host 198.19.99.99 and tcp port 6666'\nSPREAD_PACKETS=%" PRIu64 "\n",
                spread_written);
    return 0;
}
