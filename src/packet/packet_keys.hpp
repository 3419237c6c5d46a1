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

namespace linecap {

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
// Native-order loads of wire bytes, and constants to compare them with.
inline uint16_t load16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
constexpr uint16_t loaded16(uint8_t first, uint8_t second) {
    return std::bit_cast<uint16_t>(std::array<uint8_t, 2>{first, second});
}
}  // namespace wire

// The layout walk the keys (and the Community ID, packet/community_id.hpp) are read with.
// Ethernet and its VLAN tags: the EtherType after the last tag and the offset where the
// network layer starts; false when the frame ends first. An untagged frame (nearly every
// one) returns before the loop: the capture worker walks every packet's head with this.
inline bool link_layer(const uint8_t* f, uint32_t caplen, uint16_t& ethertype, uint32_t& l3) {
    if (caplen < 14) return false;
    uint16_t type = wire::be16(f + 12);
    uint32_t off = 14;
    if (!wire::is_vlan_tpid(type)) [[likely]] {
        ethertype = type;
        l3 = off;
        return true;
    }
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
// port) ends in a canonical order. Read with the walk above: VLAN tags, IPv6 extension
// headers. Ports are those of TCP, UDP and SCTP, and 0 for other protocols and for
// fragments after the first (so those count under their address pair and protocol). The
// key is only ever hashed, so its fields are the wire's bytes as they are loaded (no byte
// swaps) and "canonical" is any fixed order of the ends: the lower one first, comparing
// the ends as loaded. Two layouts, told apart by their length (the hash covers it):
//
//   IPv4 (16 bytes, most packets: one pair of words for capture/keyed_hash.hpp): two
//        64-bit words, each end as its address's 4 bytes loaded << 16 | its port's 2
//        bytes loaded, the lower first, with the protocol in the first word's top byte
//        (an end takes 48 bits).
//   IPv6 (40 bytes): version (6), protocol, port_lo, port_hi, 0 (16 bits), addr_lo,
//        addr_hi (16 bytes each); ports and addresses as on the wire.
//
// Every byte of the key's `size` is set, so those can be hashed as they are.
struct FlowKey {
    static constexpr uint32_t kIpv4Size = 16, kIpv6Size = 40;
    std::array<uint64_t, 5> words;  // the first `size` bytes are the key
    uint32_t size = 0;

    const void* data() const { return words.data(); }
};

// The IPv4 key of the header at `ip` (see FlowKey). `ports`: the four bytes of the upper
// header's ports as loaded (source then destination), or 0.
inline void ipv4_flow_key(const uint8_t* ip, uint32_t ports, FlowKey& k) {
    const uint64_t addresses = wire::load64(ip + 12);  // source, then destination
    const uint64_t src = (addresses & 0xffffffffu) << 16 | (ports & 0xffffu);
    const uint64_t dst = (addresses >> 32) << 16 | ports >> 16;
    // Ordered by arithmetic, not a branch: a queue sees both directions of its flows
    // interleaved, and a branch here was mispredicted on about every other packet (10 to
    // 13 cycles per packet, bench/micro.cpp BM_CapturePolicies).
    const uint64_t swap = (src ^ dst) & (uint64_t{0} - uint64_t{dst < src});
    k.words[0] = (src ^ swap) | uint64_t{ip[9]} << 56;
    k.words[1] = dst ^ swap;
    k.size = FlowKey::kIpv4Size;
}

// Whether the IPv4 packet at `ip` carries ports: TCP, UDP or SCTP, first fragment or
// unfragmented.
inline bool ipv4_has_ports(const uint8_t* ip) {
    return wire::has_ports(ip[9]) && (wire::load16(ip + 6) & wire::loaded16(0x1f, 0xff)) == 0;
}

// flow_key for every layout (VLAN tags, IPv4 options, IPv6, short frames).
bool flow_key_walked(const uint8_t* frame, uint32_t caplen, FlowKey& k);

// false (key unspecified): not IPv4 or IPv6, or the frame ends before the addresses.
//
// Inline (the worker builds one per packet) for the layout of nearly every packet:
// untagged IPv4 without options, its ports (when it has them) within the frame. The key
// is assembled in 64-bit words and stored whole: the worker hashes it right away in
// 8-byte reads, which narrower stores could not forward.
inline bool flow_key(const uint8_t* f, uint32_t caplen, FlowKey& k) {
    constexpr uint32_t kIpv4PortsEnd = 14 + 20 + 4;
    if (caplen >= kIpv4PortsEnd && wire::load16(f + 12) == wire::loaded16(0x08, 0x00) && f[14] == 0x45) [[likely]] {
        const uint8_t* ip = f + 14;
        ipv4_flow_key(ip, ipv4_has_ports(ip) ? wire::load32(ip + 20) : 0, k);
        return true;
    }
    return flow_key_walked(f, caplen, k);
}

// The store indexes and filters Ethernet frames only (keys above, filters compiled for
// DLT_EN10MB). Empty when a packet of `interface` at `offset` is one; else why not, in
// one line. The link type is the low 16 bits of the field: pcap's FCS bits (0x30000001)
// describe Ethernet with its FCS in the captured bytes, read as libpcap reads them.
std::string link_type_problem(const format::Interface& interface, uint64_t offset);

}  // namespace linecap
