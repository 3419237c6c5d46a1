// The archive tier read in place: a StoreBackend over the objects an archiver wrote to an
// S3-compatible object store (object_layout.hpp says which object holds what), so
// extract, stats and the API answer over it exactly as over a local directory.
//
//   list()          ListObjectsV2 pages under the archive's prefix — or, for a URL naming
//                   only the bucket, the whole bucket, every prefix holding a
//                   linecap-store.json being one appliance's archive (its files then carry
//                   the appliance as StoredFile::origin). A capture object counts only when
//                   its manifest object is listed (uploaded last). Names are read with the
//                   file template the prefix's linecap-store.json gives, spans bound as
//                   the local inventory bounds them. The listing is kept for
//                   listing_ttl and taken again after it.
//   open()          a format::ByteSource that reads with Range GETs only what its reader
//                   asks for (at least kMinFetchBytes at a time), through a small bounded
//                   cache of recent ranges shared by the store's files; a plain object
//                   whose index has block CRCs (version 2) is read in whole index blocks,
//                   each checked against its CRC-32C before a byte of it is used (a
//                   mismatch is a read error naming the block); a .zst object is read
//                   through format::SeekableSource over it, so every frame fetched is
//                   checked against zstd's own content checksum when it is decompressed.
//                   Queries read archived files block by block, never record by record
//                   (small_reads_cheap() is false): a request per record would cost more
//                   than the block, and could not be checked.
//   load_index()    the NAME.idx object, fetched whole once and kept (within
//                   index_cache_bytes), checked by Index::parse (every section's CRC-32C):
//                   a damaged one is "corrupt" naming the object, and the file is scanned.
//   read_manifest() the NAME.manifest object.
//
// Every byte fetched is counted by kind (ArchiveReadBytes): `extract -v` prints them and
// the API exports linecap_archive_read_bytes_total. One client, one request at a time
// (a mutex): the store may be shared by threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "archive/object_layout.hpp"
#include "archive/store_inventory.hpp"
#include "s3/client.hpp"
#include "util/metric.hpp"
#include "util/result.hpp"

namespace linecap {

// How to reach an archive.
struct ArchiveAccess {
    std::string url;                 // s3://BUCKET[/PREFIX]
    s3::Endpoint endpoint;
    std::string credentials_file;    // AWS shared-credentials format; "" = the AWS_* environment
    std::string profile = "default";
    std::chrono::milliseconds listing_ttl{30000};
    uint64_t index_cache_bytes = 64ull << 20;   // parsed indexes kept, by their size
    uint64_t range_cache_bytes = 8ull << 20;    // recent ranges kept, shared by every open file
};

// Bytes fetched from the object store, by what they were for.
struct ArchiveReadBytes {
    std::atomic<uint64_t> index{0};     // NAME.idx objects
    std::atomic<uint64_t> data{0};      // capture objects (ranges), seek tables included
    std::atomic<uint64_t> manifest{0};  // NAME.manifest and linecap-store.json objects
    std::atomic<uint64_t> requests{0};  // every request, listings included
};

inline constexpr MetricDecl kArchiveReadBytesMetric{
    "linecap_archive_read_bytes_total",
    "Bytes fetched from the archive tier by queries, by what they were for (kind: index, data, manifest)",
    MetricType::counter};
// The Prometheus text of kArchiveReadBytesMetric, one series per kind.
std::string archive_read_exposition(const ArchiveReadBytes& bytes);

class ArchiveStore final : public StoreBackend {
public:
    // The smallest range a read fetches: a file header or a seek table is one request.
    static constexpr uint64_t kMinFetchBytes = 16u << 10;

    // Reads the credentials and lists the archive once, so an unusable one is refused here
    // in one line: a bad URL (a config error), credentials refused, the endpoint
    // unreachable, the bucket missing, or no linecap-store.json at the prefix (in the
    // bucket, for a bucket-only URL).
    static Result<std::unique_ptr<ArchiveStore>> open(const ArchiveAccess& access);
    ~ArchiveStore() override;

    const std::string& location() const override { return location_; }
    Result<StoreInventory> list(const ListOptions& options) const override;
    std::optional<StoredFile> find(const std::string& name, const ListOptions& options) const override;
    Result<std::unique_ptr<format::OpenFile>> open(const StoredFile& file) const override;
    LoadedIndex load_index(const StoredFile& file, uint64_t capture_size, int64_t capture_mtime_ns) const override;
    ManifestRead read_manifest(const StoredFile& file) const override;

    const ArchiveReadBytes& read_bytes() const;

    struct State;

private:
    explicit ArchiveStore(std::shared_ptr<State> state);
    std::shared_ptr<State> state_;  // shared with the files it opened
    std::string location_;
};

// Local files and an archive as one store (`--dir` with `--archive`): every file of
// `first`, and each file of `second` that `first` does not hold (by name), the spans of
// their names bound across both. open() and the rest go to the backend that listed the
// file (by its path: under the backend's location).
class StoreUnion final : public StoreBackend {
public:
    StoreUnion(std::unique_ptr<StoreBackend> first, std::unique_ptr<StoreBackend> second);

    const std::string& location() const override { return location_; }
    Result<StoreInventory> list(const ListOptions& options) const override;
    std::optional<StoredFile> find(const std::string& name, const ListOptions& options) const override;
    Result<std::unique_ptr<format::OpenFile>> open(const StoredFile& file) const override;
    LoadedIndex load_index(const StoredFile& file, uint64_t capture_size, int64_t capture_mtime_ns) const override;
    ManifestRead read_manifest(const StoredFile& file) const override;

private:
    const StoreBackend& owner(const StoredFile& file) const;
    std::unique_ptr<StoreBackend> first_, second_;
    std::string location_;
};

// The capture volumes `directories` (output.volumes, `--dir` given several times) as one
// store: the first alone, or a StoreUnion of them all. Not empty.
std::unique_ptr<StoreBackend> open_volumes(const std::vector<std::string>& directories);

}  // namespace linecap
