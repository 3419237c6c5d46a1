// The store as one inventory: what finished capture files it holds, their time spans
// (from their names), sizes, whether they are compressed, their index, manifest and
// damage marker, the files being written, and where their bytes are. Every reader and
// background service lists the store through it — retention, the manifest hasher, the
// scrub, recovery, verify, the indexer, the compressor, `linecap index/compress/extract/
// stats` and the API — so the directory of a store is read in one place (layout.hpp says
// what each name means).
//
// A store is a StoreBackend: list() takes the inventory, open() gives a listed file's
// capture bytes as a format::ByteSource (format/capture_reader.hpp; decompressed when
// the file is stored compressed), load_index() its retrieval index, read_manifest() its
// manifest. A backend is one class;
// the one here is the local directory (LocalDirectoryStore). Readers that only read the
// store (extract, stats, the API) get theirs from open_store() and know nothing else
// about it, so a second backend — an object store, a second volume — is one more class
// and one more case in open_store(): a backend of several volumes lists them all and
// answers open() for each of its files. The services that change the directory
// (retention deletes, the scrub marks, recovery renames, the compressor replaces) work
// on the local directory, through LocalDirectoryStore::directory_fd().
//
// Listing is one readdir and one stat per capture file; what costs more is asked for
// in ListOptions: the names' time spans (a file template), a compressed file's capture
// size (its seek table) and the bytes of every sidecar (a stat each).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "archive/index_format.hpp"
#include "archive/manifest.hpp"
#include "config/config.hpp"
#include "config/file_template.hpp"
#include "format/capture_reader.hpp"
#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace linecap {

// One finished capture file of the store.
struct StoredFile {
    std::string name;             // the capture file's name, "x.pcap" (also when stored compressed)
    std::string path;             // directory/name: how messages name it; its sidecars are path + suffix
    std::string stored_name;      // the name that holds its bytes: name, or layout::compressed_name(name)
    FileKind format = FileKind::pcap;  // by extension
    bool compressed = false;      // the bytes are stored compressed (name.zst), the plain file is gone
    bool compression_unfinished = false;   // name and name.zst both there: name holds the bytes
    uint64_t size = 0;            // capture bytes (compressed: only with ListOptions::capture_sizes, else 0)
    uint64_t stored_size = 0;     // bytes of the stored form
    uint64_t bytes_on_disk = 0;   // stored form and every sidecar (ListOptions::sidecar_bytes): what deleting frees
    int64_t mtime_ns = 0;         // of the stored form
    int64_t ctime_ns = 0;
    bool manifest = false;        // name.manifest is there
    bool manifest_pending = false;  // name.manifest-pending is there (archive/manifest_hasher.hpp)
    bool index = false;           // name.idx is there
    bool archived = false;        // name.archived is there: in the archive tier, verified
    // The scrub's damage marker (archive/scrub.hpp): its line (when and why; "" when it
    // cannot be read), nullopt when the file is not marked.
    std::optional<std::string> damaged;

    // With ListOptions::file_template: what the name says.
    std::optional<ParsedName> parsed;  // nullopt: the name does not match the template
    std::string stream;           // "port/q<queue>" or, for an unmatched name, the name itself
    // The appliance the file comes from when a store spans several (an archive bucket
    // holding several appliances' prefixes), "" otherwise; part of `stream` then.
    std::string origin;
    // Bounds of the file's packet timestamps from the names alone: [lower, upper). A name
    // gives the time of the file's first packet, floored to the template's precision;
    // packet timestamps in a stream never decrease, so a file of stream S holds packets
    // in [its time, time of S's next file + precision).
    uint64_t lower_ns = 0;
    uint64_t upper_ns = UINT64_MAX;
};

struct StoreInventory {
    std::string directory;                   // where the store is, for messages
    std::vector<StoredFile> files;           // sorted by name
    size_t in_progress = 0;                  // files being written
    std::vector<std::string> in_progress_names;  // ".x.pcap.part", sorted
    std::vector<std::string> temporaries;    // of layout::AtomicFile, sorted
    // Sidecars whose capture file is not stored (deleted, or never finished), sorted.
    std::vector<std::string> orphan_manifests;
    std::vector<std::string> orphan_indexes;
    std::vector<std::string> orphan_pending_markers;
};

struct ListOptions {
    // Names parsed with it: stream and time bounds per file. None: every file is a stream
    // of its own of unknown time.
    const FileTemplate* file_template = nullptr;
    // A compressed file's capture size from its seek table; one whose seek table cannot
    // be read is then left out.
    bool capture_sizes = false;
    bool sidecar_bytes = false;   // StoredFile::bytes_on_disk
    // The daemon never follows a symlink in its own directory; the tool reads the files
    // a user points it at as any program does.
    bool follow_symlinks = false;

    // How the `linecap` tool, the indexer and the API list a store: spans, capture
    // sizes, links followed.
    static ListOptions catalog(const FileTemplate& file_template) {
        return {.file_template = &file_template, .capture_sizes = true, .follow_symlinks = true};
    }
};

class StoreBackend {
public:
    virtual ~StoreBackend() = default;
    // Where the store is ("/srv/pcap"), for messages.
    virtual const std::string& location() const = 0;
    // Errors: the store cannot be listed ("<location>: <reason>").
    virtual Result<StoreInventory> list(const ListOptions& options) const = 0;
    // One capture file by name, without a listing (no time bounds: those come from its
    // neighbours); nullopt when it is not stored.
    virtual std::optional<StoredFile> find(const std::string& name, const ListOptions& options) const = 0;
    // The capture bytes of a listed file (compressed since it was listed: the same bytes).
    // Errors: "<reason>" (the caller adds the path).
    virtual Result<std::unique_ptr<format::OpenFile>> open(const StoredFile& file) const = 0;
    // The index of a listed file, checked against its capture bytes as open() gives them
    // (`capture_size`, `capture_mtime_ns`): missing when the store holds none.
    virtual LoadedIndex load_index(const StoredFile& file, uint64_t capture_size, int64_t capture_mtime_ns) const = 0;
    virtual ManifestRead read_manifest(const StoredFile& file) const = 0;
};

// A store that is a local directory (output.directory).
class LocalDirectoryStore final : public StoreBackend {
public:
    // Opens the directory; a failure is what list() then reports.
    explicit LocalDirectoryStore(std::string directory);
    // Over a directory descriptor the caller keeps open (the daemon's).
    LocalDirectoryStore(std::string directory, int dir_fd);

    const std::string& location() const override { return directory_; }
    Result<StoreInventory> list(const ListOptions& options) const override;
    std::optional<StoredFile> find(const std::string& name, const ListOptions& options) const override;
    Result<std::unique_ptr<format::OpenFile>> open(const StoredFile& file) const override;
    LoadedIndex load_index(const StoredFile& file, uint64_t capture_size, int64_t capture_mtime_ns) const override;
    ManifestRead read_manifest(const StoredFile& file) const override;

    // For the services that change the directory; -1 when it could not be opened.
    int directory_fd() const { return dir_fd_; }

private:
    std::string directory_;
    UniqueFd owned_;
    int dir_fd_ = -1;
    int open_error_ = 0;
};

// What a file's name says, with options.file_template (StoredFile::parsed, stream;
// origin, when set, leads the stream); nothing without one.
void describe_name(StoredFile& file, const ListOptions& options);
// Time bounds of the files (lower_ns, upper_ns) from consecutive names of each stream.
void bound_spans(std::vector<StoredFile>& files);

// The store at `location` (a directory), for the readers that only read it.
std::unique_ptr<StoreBackend> open_store(const std::string& location);

// Whether the capture file `name` in `dir_fd` is marked damaged: the marker's line (when
// and why, "" if it could not be read), nullopt when it is not marked.
std::optional<std::string> read_damaged_marker(int dir_fd, const std::string& name);

}  // namespace linecap
