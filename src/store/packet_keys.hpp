// The index keys of one Ethernet frame: IPv4/IPv6 addresses, TCP/UDP/SCTP ports and IP
// protocol numbers.
//
// Contract (what makes index pruning safe): whenever the libpcap filter code for
// DLT_EN10MB reads one of these fields and compares it with a constant, the frame's keys
// contain the value it read. So the extractor can skip a block that lacks a key the
// compiled filter must have seen equal (store/filter_plan.hpp). The extractor therefore
// reads fields exactly where libpcap does, leniently (no version or header-length sanity
// checks: libpcap makes none), and adds what a proper parse finds on top (IPv6 extension
// headers), which only ever makes the key set larger:
//
//   link layer  Ethernet, then up to kMaxVlanTags tags with TPID 0x8100, 0x88a8 or 0x9100
//               (the TPIDs libpcap's `vlan` accepts); L3 starts after the last tag.
//   IPv4        proto = ip[9]; addresses ip[12..15], ip[16..19]; when proto is TCP, UDP or
//               SCTP and the fragment offset (ip[6:2] & 0x1fff) is 0 (first fragment or
//               unfragmented): ports at 4*(ip[0]&0xf) and +2 (IPv4 options included).
//   IPv6        proto = ip6[6]; when it is 44 (fragment) also ip6[40]; addresses
//               ip6[8..23], ip6[24..39]; when ip6[6] is TCP, UDP or SCTP: ports at ip6[40]
//               and ip6[42] (libpcap's fixed offsets). Then hop-by-hop, routing, fragment,
//               destination options, mobility and AH headers are skipped (up to 8) and the
//               final protocol and, for a first fragment, its ports are added.
//   ARP, RARP   sender and target protocol addresses at arp[14..17], arp[24..27] (libpcap
//               `host` matches them too).
// A field is read only when the captured bytes contain it (libpcap rejects a packet
// whose filter reads past caplen).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <string>

#include "format/capture_reader.hpp"

namespace linecap::store {

inline constexpr unsigned kMaxVlanTags = 4;

struct PacketKeys {
    static constexpr unsigned kMaxAddr4 = 4, kMaxAddr6 = 2, kMaxPorts = 4, kMaxProtos = 4;
    std::array<uint32_t, kMaxAddr4> addr4{};  // host order of the big-endian value
    std::array<std::array<uint8_t, 16>, kMaxAddr6> addr6{};
    std::array<uint16_t, kMaxPorts> ports{};
    std::array<uint8_t, kMaxProtos> protos{};
    uint8_t n_addr4 = 0, n_addr6 = 0, n_ports = 0, n_protos = 0;

    void clear() { n_addr4 = n_addr6 = n_ports = n_protos = 0; }
};

void extract_keys(const uint8_t* frame, uint32_t caplen, PacketKeys& keys);

// The wire-format helpers of the walks below (inline: the capture worker runs them per
// packet, capture/flow_cap.hpp and capture/dedup.hpp).
namespace wire {
inline constexpr uint16_t kEtherIPv4 = 0x0800, kEtherIPv6 = 0x86dd, kEtherArp = 0x0806, kEtherRarp = 0x8035;
inline constexpr uint8_t kTcp = 6, kUdp = 17, kSctp = 132;
inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t be32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
inline bool is_vlan_tpid(uint16_t t) { return t == 0x8100 || t == 0x88a8 || t == 0x9100; }
inline bool has_ports(uint8_t proto) { return proto == kTcp || proto == kUdp || proto == kSctp; }
}  // namespace wire

// The layout walk the keys (and the Community ID, store/community_id.hpp) are read with.
// Ethernet and its VLAN tags: the EtherType after the last tag and the offset where the
// network layer starts; false when the frame ends first.
inline bool link_layer(const uint8_t* f, uint32_t caplen, uint16_t& ethertype, uint32_t& l3) {
    if (caplen < 14) return false;
    uint16_t type = wire::be16(f + 12);
    uint32_t off = 14;
    for (unsigned tags = 0; wire::is_vlan_tpid(type) && tags < kMaxVlanTags; ++tags) {
        if (off + 4 > caplen) return false;
        type = wire::be16(f + off + 2);
        off += 4;
    }
    ethertype = type;
    l3 = off;
    return true;
}

// The upper-layer protocol of an IPv6 packet at `l3`, after hop-by-hop, routing,
// fragment, destination options, mobility and AH headers (up to 8): its number, frame
// offset, and whether this is the first fragment (the only one with the upper header).
// complete = false: the frame ends inside the IPv6 or an extension header.
struct Ipv6UpperLayer {
    uint8_t proto = 0;
    uint64_t offset = 0;
    bool first_fragment = true;
    bool complete = false;
};
Ipv6UpperLayer ipv6_upper_layer(const uint8_t* frame, uint32_t caplen, uint32_t l3);

// A flow's identity, the same for both directions (what the capture's per-flow caps key
// their table with, capture/flow_cap.hpp): the upper-layer protocol and the two (address,
// port) ends in a canonical order, the lower first. Read with the walk above: VLAN tags,
// IPv6 extension headers. Ports are those of TCP, UDP and SCTP, and 0 for other protocols
// and for fragments after the first (so those count under their address pair and
// protocol). Two layouts, told apart by their length (the hash covers it):
//
//   IPv4 (16 bytes, most packets: one pair of words for capture/keyed_hash.hpp): two
//        64-bit words, each end as address << 16 | port, the lower one first with the
//        protocol in its top byte (an end takes 48 bits).
//   IPv6 (40 bytes): version (6), protocol, port_lo, port_hi, 0 (16 bits), addr_lo,
//        addr_hi (16 bytes each, as on the wire).
//
// Every byte of the key's `size` is set, so those can be hashed as they are.
struct FlowKey {
    static constexpr uint32_t kIpv4Size = 16, kIpv6Size = 40;
    std::array<uint64_t, 5> words;  // the first `size` bytes are the key
    uint32_t size = 0;

    const void* data() const { return words.data(); }
};

// false (key unspecified): not IPv4 or IPv6, or the frame ends before the addresses.
//
// Inline (the worker builds one per packet), and the key is assembled in 64-bit words and
// stored whole: the worker hashes it right away in 8-byte reads, which narrower stores
// could not forward.
inline bool flow_key(const uint8_t* f, uint32_t caplen, FlowKey& k) {
    using namespace wire;
    uint16_t type = 0;
    uint32_t l3 = 0;
    if (!link_layer(f, caplen, type, l3)) return false;
    uint32_t ports = 0;  // source << 16 | destination
    if (type == kEtherIPv4) {
        if (uint64_t{l3} + 20 > caplen) return false;
        const uint8_t* ip = f + l3;
        const uint8_t proto = ip[9];
        const uint64_t l4 = uint64_t{l3} + 4u * (ip[0] & 0x0f);
        if (has_ports(proto) && (be16(ip + 6) & 0x1fff) == 0 && l4 + 4 <= caplen) ports = be32(f + l4);
        // Numeric order of the 48-bit ends = the order of (address bytes, port).
        const uint64_t src = uint64_t{be32(ip + 12)} << 16 | ports >> 16;
        const uint64_t dst = uint64_t{be32(ip + 16)} << 16 | (ports & 0xffff);
        k.words[0] = std::min(src, dst) | uint64_t{proto} << 56;
        k.words[1] = std::max(src, dst);
        k.size = FlowKey::kIpv4Size;
        return true;
    }
    if (type != kEtherIPv6 || uint64_t{l3} + 40 > caplen) return false;
    struct Head {  // the IPv6 key's first 8 bytes
        uint8_t version, proto;
        uint16_t port_lo, port_hi, zero;
    };
    Head h{};
    h.version = 6;
    const Ipv6UpperLayer upper = ipv6_upper_layer(f, caplen, l3);
    h.proto = upper.complete ? upper.proto : f[l3 + 6];
    if (upper.complete && upper.first_fragment && has_ports(upper.proto) && upper.offset + 4 <= caplen)
        ports = be32(f + upper.offset);
    const uint16_t sport = static_cast<uint16_t>(ports >> 16), dport = static_cast<uint16_t>(ports);
    uint64_t src[2], dst[2];  // the addresses' bytes as they are on the wire
    std::memcpy(src, f + l3 + 8, 16);
    std::memcpy(dst, f + l3 + 24, 16);
    const int order = std::memcmp(f + l3 + 8, f + l3 + 24, 16);
    const bool src_lower = order < 0 || (order == 0 && sport <= dport);  // the source end comes first
    h.port_lo = src_lower ? sport : dport;
    h.port_hi = src_lower ? dport : sport;
    const uint64_t* lo = src_lower ? src : dst;
    const uint64_t* hi = src_lower ? dst : src;
    static_assert(sizeof(Head) == 8);
    k.words = {std::bit_cast<uint64_t>(h), lo[0], lo[1], hi[0], hi[1]};
    k.size = FlowKey::kIpv6Size;
    return true;
}

// The store indexes and filters Ethernet frames only (keys above, filters compiled for
// DLT_EN10MB). Empty when a packet of `interface` at `offset` is one; else why not, in
// one line. The link type is the low 16 bits of the field: pcap's FCS bits (0x30000001)
// describe Ethernet with its FCS in the captured bytes, read as libpcap reads them.
std::string link_type_problem(const format::Interface& interface, uint64_t offset);

}  // namespace linecap::store
