// Helpers for the store tests: hand-built Ethernet frames (VLAN tags, IPv4 with options
// and fragments, IPv6 with extension headers, TCP/UDP, ARP), pcap images and files, a
// scratch directory, and running the linecap CLI in-process.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "format/pcap_format.hpp"

namespace store_test {

using Bytes = std::vector<uint8_t>;

inline void put16(Bytes& b, uint16_t v) { b.push_back(uint8_t(v >> 8)); b.push_back(uint8_t(v)); }
inline void put32(Bytes& b, uint32_t v) { put16(b, uint16_t(v >> 16)); put16(b, uint16_t(v)); }

inline uint32_t ip4(int a, int b, int c, int d) { return uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | uint32_t(d); }

struct FrameSpec {
    std::vector<uint16_t> vlan_tpids;  // one entry per tag (0x8100, 0x88a8, …)
    bool v6 = false;
    uint32_t src4 = ip4(198, 18, 0, 1), dst4 = ip4(198, 19, 0, 1);
    std::array<uint8_t, 16> src6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    std::array<uint8_t, 16> dst6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    uint8_t proto = 6;               // 6 tcp, 17 udp, 1 icmp, 58 icmpv6
    uint16_t sport = 40000, dport = 80;   // also SCTP's
    uint8_t icmp_type = 8, icmp_code = 0; // ICMP / ICMPv6 (and the first bytes of other protocols)
    unsigned ip_options_words = 0;   // IPv4 options (32-bit words)
    uint16_t frag_offset = 0;        // IPv4/IPv6 fragment offset (8-byte units)
    bool more_fragments = false;
    bool v6_fragment_header = false; // IPv6: a fragment header before the L4 header
    bool v6_hop_by_hop = false;      // IPv6: a hop-by-hop header first
    bool arp = false;
    uint32_t payload = 20;
    uint32_t tag = 0;                // written into the payload (makes frames unique)
};

inline Bytes frame(const FrameSpec& s) {
    Bytes b = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    for (uint16_t tpid : s.vlan_tpids) {
        put16(b, tpid);
        put16(b, 100);
    }
    if (s.arp) {
        put16(b, 0x0806);
        put16(b, 1); put16(b, 0x0800); b.push_back(6); b.push_back(4); put16(b, 1);
        for (int i = 0; i < 6; ++i) b.push_back(2);
        put32(b, s.src4);
        for (int i = 0; i < 6; ++i) b.push_back(0);
        put32(b, s.dst4);
        put32(b, s.tag);
        while (b.size() < 60) b.push_back(0);
        return b;
    }
    Bytes l4;
    if (s.proto == 6) {
        put16(l4, s.sport); put16(l4, s.dport); put32(l4, 1); put32(l4, 2);
        l4.push_back(0x50); l4.push_back(0x18); put16(l4, 65535); put16(l4, 0); put16(l4, 0);
    } else if (s.proto == 17) {
        put16(l4, s.sport); put16(l4, s.dport); put16(l4, uint16_t(8 + s.payload)); put16(l4, 0);
    } else if (s.proto == 132) {
        put16(l4, s.sport); put16(l4, s.dport); put32(l4, 0x1234); put32(l4, 0);  // verification tag, checksum
    } else {
        l4.push_back(s.icmp_type); l4.push_back(s.icmp_code); put16(l4, 0); put32(l4, 7);
    }
    put32(l4, s.tag);
    for (uint32_t i = 4; i < s.payload; ++i) l4.push_back(uint8_t(i));
    if (!s.v6) {
        put16(b, 0x0800);
        const unsigned ihl = 5 + s.ip_options_words;
        b.push_back(uint8_t(0x40 | ihl)); b.push_back(0);
        put16(b, uint16_t(ihl * 4 + l4.size()));
        put16(b, uint16_t(s.tag));
        put16(b, uint16_t((s.more_fragments ? 0x2000 : 0) | (s.frag_offset & 0x1fff)));
        b.push_back(64); b.push_back(s.proto); put16(b, 0);
        put32(b, s.src4); put32(b, s.dst4);
        for (unsigned i = 0; i < s.ip_options_words; ++i) put32(b, 0x01010101);  // NOPs
    } else {
        put16(b, 0x86dd);
        Bytes ext;
        uint8_t first = s.proto;
        // Chain: [hop-by-hop] [fragment] L4
        if (s.v6_fragment_header) {
            Bytes fh = {s.proto, 0};
            put16(fh, uint16_t((s.frag_offset << 3) | (s.more_fragments ? 1 : 0)));
            put32(fh, 0x1234);
            ext = fh;
            first = 44;
        }
        if (s.v6_hop_by_hop) {
            Bytes hh = {first, 0, 1, 4, 0, 0, 0, 0};  // PadN option
            hh.insert(hh.end(), ext.begin(), ext.end());
            ext = hh;
            first = 0;
        }
        put32(b, 0x60000000);
        put16(b, uint16_t(ext.size() + l4.size()));
        b.push_back(first); b.push_back(64);
        b.insert(b.end(), s.src6.begin(), s.src6.end());
        b.insert(b.end(), s.dst6.begin(), s.dst6.end());
        b.insert(b.end(), ext.begin(), ext.end());
    }
    b.insert(b.end(), l4.begin(), l4.end());
    while (b.size() < 60) b.push_back(0);
    return b;
}

struct Packet {
    uint64_t ts_ns;
    Bytes data;
    uint32_t caplen() const { return uint32_t(data.size()); }
};

inline Bytes pcap_image(const std::vector<Packet>& packets, uint32_t snaplen = 262144) {
    Bytes img(sizeof(linecap::pcap::FileHeader));
    const auto h = linecap::pcap::file_header(snaplen);
    std::memcpy(img.data(), &h, sizeof h);
    for (const auto& p : packets) {
        uint8_t rh[16];
        linecap::pcap::encode_record_header(rh, p.ts_ns, p.caplen(), p.caplen());
        img.insert(img.end(), rh, rh + 16);
        img.insert(img.end(), p.data.begin(), p.data.end());
    }
    return img;
}

inline void write_file(const std::string& path, const Bytes& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline Bytes read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Records of a pcap image (ns, little-endian), for comparisons.
inline std::vector<Packet> parse_image(const Bytes& img) {
    std::vector<Packet> out;
    size_t pos = 24;
    while (pos + 16 <= img.size()) {
        uint32_t h[4];
        std::memcpy(h, img.data() + pos, 16);
        if (pos + 16 + h[2] > img.size()) break;
        out.push_back({uint64_t(h[0]) * 1000000000u + h[1], Bytes(img.begin() + long(pos + 16), img.begin() + long(pos + 16 + h[2]))});
        pos += 16 + h[2];
    }
    return out;
}

// Default-template name of a file whose first packet is at ts_ns.
inline std::string store_name(uint64_t ts_ns, const std::string& port, int queue) {
    const time_t sec = time_t(ts_ns / 1000000000u);
    struct tm utc {};
    gmtime_r(&sec, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &utc);
    char name[128];
    std::snprintf(name, sizeof name, "%s.%09lluZ-%s-q%d.pcap", stamp, (unsigned long long)(ts_ns % 1000000000u),
                  port.c_str(), queue);
    return name;
}

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/lc-store-test.XXXXXX";
        path_ = ::mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

}  // namespace store_test
