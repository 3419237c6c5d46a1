// index_variants: measures the two candidate index designs on real capture files, to
// choose between them (doc: src/store/README.md).
//
//   index_variants [--block-kb 64,256,1024] [--queries 2000] FILE.pcap...
//
//   postings  per file: sorted exact keys → delta/varint block lists (or bitmaps); the
//             format linecap uses (archive/index_format.hpp), built by IndexBuilder
//   bloom     per block: a Bloom filter over the block's distinct keys, 10 bits per key,
//             7 hash functions (≈ 1 % false positives), sized per block
//
// For each block size it prints: build time (key extraction, which both share, and each
// variant's own part), index size (and ratio to the pcap bytes), lookup time for
// selective conjunctive queries (the address pair and server port of a random flow seen
// in the files: "host A and host B and port P") and for absent keys, and the blocks each
// variant selects (Bloom false positives mean more blocks to read).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"
#include "packet/packet_keys.hpp"
#include "format/capture_reader.hpp"

using namespace linecap;
using namespace linecap::store;
using Clock = std::chrono::steady_clock;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

uint64_t key_hash(const IndexKey& k) {
    uint64_t h = mix64(static_cast<uint64_t>(k.kind) << 56 ^ k.value);
    if (k.kind == IndexKey::Kind::addr6) {
        uint64_t a, b;
        std::memcpy(&a, k.addr6.data(), 8);
        std::memcpy(&b, k.addr6.data() + 8, 8);
        h = mix64(h ^ mix64(a) ^ mix64(b + 0x9e3779b97f4a7c15ull));
    }
    return h;
}

struct Bloom {
    uint32_t bits = 0;
    std::vector<uint64_t> words;
    static constexpr int kHashes = 7;
    void init(size_t keys) {
        bits = static_cast<uint32_t>(std::max<size_t>(64, keys * 10));
        words.assign((bits + 63) / 64, 0);
    }
    void add(uint64_t h) {
        const uint32_t h1 = static_cast<uint32_t>(h), h2 = static_cast<uint32_t>(h >> 32) | 1;
        for (int i = 0; i < kHashes; ++i) {
            const uint32_t b = (h1 + static_cast<uint32_t>(i) * h2) % bits;
            words[b / 64] |= uint64_t{1} << (b % 64);
        }
    }
    bool test(uint64_t h) const {
        const uint32_t h1 = static_cast<uint32_t>(h), h2 = static_cast<uint32_t>(h >> 32) | 1;
        for (int i = 0; i < kHashes; ++i) {
            const uint32_t b = (h1 + static_cast<uint32_t>(i) * h2) % bits;
            if (!(words[b / 64] >> (b % 64) & 1)) return false;
        }
        return true;
    }
    size_t bytes() const { return words.size() * 8 + 8; }
};

struct Flow {
    IndexKey a, b, port;
};

IndexKey k4(uint32_t v) { IndexKey k; k.kind = IndexKey::Kind::addr4; k.value = v; return k; }
IndexKey kport(uint32_t v) { IndexKey k; k.kind = IndexKey::Kind::port; k.value = v; return k; }
IndexKey k6(const std::array<uint8_t, 16>& a) { IndexKey k; k.kind = IndexKey::Kind::addr6; k.addr6 = a; return k; }

}  // namespace

int main(int argc, char** argv) {
    std::vector<uint32_t> block_kbs = {64, 256, 1024};
    size_t queries = 2000;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--block-kb" && i + 1 < argc) {
            block_kbs.clear();
            std::string s = argv[++i];
            for (size_t p = 0; p < s.size();) {
                const size_t c = s.find(',', p);
                block_kbs.push_back(static_cast<uint32_t>(std::stoul(s.substr(p, c - p))));
                p = c == std::string::npos ? s.size() : c + 1;
            }
        } else if (a == "--queries" && i + 1 < argc) {
            queries = std::stoul(argv[++i]);
        } else {
            files.push_back(a);
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: index_variants [--block-kb 64,256,1024] [--queries N] FILE.pcap...\n");
        return 64;
    }
    // Load the files into memory once (the measurement is about the index, not the disk).
    std::vector<std::vector<uint8_t>> images;
    uint64_t pcap_bytes = 0;
    for (const auto& f : files) {
        auto file = linecap::format::FileSource::open(f);
        if (!file) {
            std::fprintf(stderr, "%s: %s\n", f.c_str(), file.error().message.c_str());
            return 1;
        }
        std::vector<uint8_t> img(file.value()->size());
        if (file.value()->read_at(img.data(), img.size(), 0) != static_cast<ssize_t>(img.size())) return 1;
        pcap_bytes += img.size();
        images.push_back(std::move(img));
    }
    std::printf("%zu files, %.1f MiB of pcap\n", files.size(), static_cast<double>(pcap_bytes) / (1 << 20));

    // Sample flows for queries: every 997th IPv4/IPv6 TCP/UDP packet's address pair + server port.
    std::vector<Flow> flows;
    {
        PacketKeys k;
        for (auto& img : images) {
            linecap::format::MemorySource src(img);
            auto h = linecap::format::read_header(src);
            linecap::format::CaptureReader rd(src, h.value());
            linecap::format::Record r;
            uint64_t n = 0;
            while (rd.next(r)) {
                if (++n % 997) continue;
                extract_keys(r.data, r.caplen, k);
                if (k.n_ports < 2) continue;
                Flow f;
                if (k.n_addr4 >= 2) f.a = k4(k.addr4[0]), f.b = k4(k.addr4[1]);
                else if (k.n_addr6 >= 2) f.a = k6(k.addr6[0]), f.b = k6(k.addr6[1]);
                else continue;
                f.port = kport(std::min(k.ports[0], k.ports[1]));
                flows.push_back(f);
            }
        }
        std::shuffle(flows.begin(), flows.end(), std::mt19937_64(7));
        if (flows.size() > queries) flows.resize(queries);
    }
    std::printf("%zu sampled conversations as queries (host A and host B and port P)\n\n", flows.size());
    std::printf("%8s %-9s %10s %10s %12s %10s %14s %12s %12s\n", "block", "variant", "build s", "MB/s", "index bytes",
                "ratio %", "query us/file", "blocks/query", "absent us");

    for (uint32_t kb : block_kbs) {
        // Shared part: key extraction (time it alone).
        double t_extract = 0;
        {
            PacketKeys k;
            const auto t0 = Clock::now();
            uint64_t sink = 0;
            for (auto& img : images) {
                linecap::format::MemorySource src(img);
                auto h = linecap::format::read_header(src);
                linecap::format::CaptureReader rd(src, h.value());
                linecap::format::Record r;
                while (rd.next(r)) {
                    extract_keys(r.data, r.caplen, k);
                    sink += k.n_addr4 + k.n_ports;
                }
            }
            t_extract = secs(t0, Clock::now());
            if (sink == 42) std::puts("");
        }
        // Postings: the real builder.
        std::vector<Index> indexes;
        uint64_t postings_bytes = 0;
        const auto t0 = Clock::now();
        for (auto& img : images) {
            IndexBuildOptions o;
            o.block_bytes = kb * 1024;
            auto bytes = build_index_bytes(img, o);
            postings_bytes += bytes->size();
            auto ix = Index::parse(std::move(bytes.value()));
            indexes.push_back(std::move(ix.value()));
        }
        const double t_postings = secs(t0, Clock::now());
        // Bloom: per block filters over the same blocks.
        std::vector<std::vector<Bloom>> blooms;
        uint64_t bloom_bytes = 0;
        const auto t1 = Clock::now();
        for (size_t fi = 0; fi < images.size(); ++fi) {
            auto& img = images[fi];
            linecap::format::MemorySource src(img);
            auto h = linecap::format::read_header(src);
            std::vector<Bloom> fb;
            PacketKeys k;
            std::vector<uint64_t> hashes;
            for (const BlockEntry& b : indexes[fi].blocks()) {
                linecap::format::CaptureReader rd(src, h.value(), b.offset, b.offset + b.length);
                linecap::format::Record r;
                hashes.clear();
                while (rd.next(r)) {
                    extract_keys(r.data, r.caplen, k);
                    for (unsigned i = 0; i < k.n_addr4; ++i) hashes.push_back(key_hash(k4(k.addr4[i])));
                    for (unsigned i = 0; i < k.n_addr6; ++i) hashes.push_back(key_hash(k6(k.addr6[i])));
                    for (unsigned i = 0; i < k.n_ports; ++i) hashes.push_back(key_hash(kport(k.ports[i])));
                    for (unsigned i = 0; i < k.n_protos; ++i) {
                        IndexKey p;
                        p.kind = IndexKey::Kind::proto;
                        p.value = k.protos[i];
                        hashes.push_back(key_hash(p));
                    }
                }
                std::sort(hashes.begin(), hashes.end());
                hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
                Bloom bl;
                bl.init(hashes.size());
                for (uint64_t hh : hashes) bl.add(hh);
                bloom_bytes += bl.bytes() + sizeof(BlockEntry);
                fb.push_back(std::move(bl));
            }
            blooms.push_back(std::move(fb));
        }
        const double t_bloom = secs(t1, Clock::now());

        // Queries.
        FilterPlan plan;
        plan.prunable = true;
        uint64_t p_blocks = 0, b_blocks = 0;
        const auto q0 = Clock::now();
        for (const Flow& f : flows) {
            plan.alternatives = {{f.a, f.b, f.port}};
            for (const Index& ix : indexes) p_blocks += candidate_blocks(ix, plan).popcount();
        }
        const double tq_postings = secs(q0, Clock::now());
        const auto q1 = Clock::now();
        for (const Flow& f : flows) {
            const uint64_t ha = key_hash(f.a), hb = key_hash(f.b), hp = key_hash(f.port);
            for (const auto& fb : blooms)
                for (const Bloom& bl : fb) b_blocks += bl.test(ha) && bl.test(hb) && bl.test(hp);
        }
        const double tq_bloom = secs(q1, Clock::now());
        // Absent keys.
        const auto a0 = Clock::now();
        uint64_t sink = 0;
        for (size_t i = 0; i < flows.size(); ++i) {
            plan.alternatives = {{k4(0x0a000000u + static_cast<uint32_t>(i))}};
            for (const Index& ix : indexes) sink += candidate_blocks(ix, plan).popcount();
        }
        const double ta_postings = secs(a0, Clock::now());
        const auto a1 = Clock::now();
        for (size_t i = 0; i < flows.size(); ++i) {
            const uint64_t h = key_hash(k4(0x0a000000u + static_cast<uint32_t>(i)));
            for (const auto& fb : blooms)
                for (const Bloom& bl : fb) sink += bl.test(h);
        }
        const double ta_bloom = secs(a1, Clock::now());
        const double nq = static_cast<double>(std::max<size_t>(flows.size(), 1)) * static_cast<double>(images.size());
        const double mb = static_cast<double>(pcap_bytes) / 1e6;
        std::printf("%6uK %-9s %10.3f %10.0f %12s %10s %14s %12s %12s   (key extraction alone: %.3f s)\n", kb, "extract",
                    t_extract, mb / t_extract, "", "", "", "", "", t_extract);
        std::printf("%7uK %-9s %10.3f %10.0f %12llu %10.4f %14.2f %12.2f %12.2f\n", kb, "postings", t_postings,
                    mb / t_postings, static_cast<unsigned long long>(postings_bytes),
                    100.0 * static_cast<double>(postings_bytes) / static_cast<double>(pcap_bytes), tq_postings * 1e6 / nq,
                    static_cast<double>(p_blocks) / static_cast<double>(std::max<size_t>(flows.size(), 1)),
                    ta_postings * 1e6 / nq);
        std::printf("%7uK %-9s %10.3f %10.0f %12llu %10.4f %14.2f %12.2f %12.2f   (bloom build = extraction + filters)\n",
                    kb, "bloom", t_bloom, mb / t_bloom, static_cast<unsigned long long>(bloom_bytes),
                    100.0 * static_cast<double>(bloom_bytes) / static_cast<double>(pcap_bytes), tq_bloom * 1e6 / nq,
                    static_cast<double>(b_blocks) / static_cast<double>(std::max<size_t>(flows.size(), 1)),
                    ta_bloom * 1e6 / nq);
        if (sink == 1) std::puts("");
    }
    return 0;
}
