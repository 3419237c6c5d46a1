#include "archive/store_inventory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "format/zstd_seekable.hpp"
#include "util/errno_text.hpp"
#include "util/stat_time.hpp"

namespace linecap {
namespace {

// Which names of one capture file the directory holds.
struct Present {
    bool plain = false;
    bool compressed = false;
    bool manifest = false;
    bool manifest_pending = false;
    bool index = false;
    bool damaged = false;
    bool archived = false;
};

bool stat_at(int dir_fd, const std::string& name, bool follow, struct stat& st) {
    return ::fstatat(dir_fd, name.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0;
}

uint64_t size_at(int dir_fd, const std::string& name) {
    struct stat st {};
    return stat_at(dir_fd, name, false, st) ? static_cast<uint64_t>(st.st_size) : 0;
}

// The file `capture` from the names the directory holds for it; nullopt when neither its
// plain nor its compressed form is a regular file (or, with capture_sizes, the compressed
// form's seek table cannot be read).
std::optional<StoredFile> describe(int dir_fd, const std::string& directory, const std::string& capture,
                                   const Present& present, const ListOptions& options) {
    StoredFile f;
    f.name = capture;
    f.path = directory + "/" + capture;
    struct stat st {};
    const std::string compressed = layout::compressed_name(capture);
    if (present.plain && stat_at(dir_fd, capture, options.follow_symlinks, st) && S_ISREG(st.st_mode)) {
        f.stored_name = capture;
        f.size = static_cast<uint64_t>(st.st_size);
    } else if (present.compressed && stat_at(dir_fd, compressed, options.follow_symlinks, st) && S_ISREG(st.st_mode)) {
        f.stored_name = compressed;
        f.compressed = true;
        if (options.capture_sizes) {
            auto file = format::open_capture_file(directory + "/" + compressed);
            if (!file) return std::nullopt;
            f.size = file.value()->size();
        }
    } else {
        return std::nullopt;
    }
    f.format = layout::capture_format(capture).value_or(FileKind::pcap);
    f.compression_unfinished = present.plain && present.compressed;
    f.stored_size = static_cast<uint64_t>(st.st_size);
    f.mtime_ns = stat_mtime_ns(st);
    f.ctime_ns = stat_ctime_ns(st);
    f.manifest = present.manifest;
    f.manifest_pending = present.manifest_pending;
    f.index = present.index;
    f.archived = present.archived;
    if (present.damaged) f.damaged = read_damaged_marker(dir_fd, capture);
    if (options.sidecar_bytes) {
        f.bytes_on_disk = f.stored_size;
        for (const std::string& sidecar : layout::sidecar_names(capture))
            if (sidecar != f.stored_name) f.bytes_on_disk += size_at(dir_fd, sidecar);
    }
    describe_name(f, options);
    return f;
}

}  // namespace

void describe_name(StoredFile& f, const ListOptions& options) {
    if (!options.file_template) return;
    f.parsed = layout::parse_capture_name(*options.file_template, f.name);
    if (f.parsed && f.parsed->has_stream)
        f.stream = f.parsed->port + "/q" + (f.parsed->queue >= 0 ? std::to_string(f.parsed->queue) : "?");
    else
        f.stream = f.name;
    if (!f.origin.empty()) f.stream = f.origin + " " + f.stream;
}

void bound_spans(std::vector<StoredFile>& files) {
    std::map<std::string, std::vector<StoredFile*>> streams;
    for (auto& f : files)
        if (f.parsed && f.parsed->has_time) streams[f.stream].push_back(&f);
    for (auto& [stream, in_stream] : streams) {
        std::stable_sort(in_stream.begin(), in_stream.end(), [](const StoredFile* a, const StoredFile* b) {
            return a->parsed->time_ns < b->parsed->time_ns;
        });
        // Files with the same name time (a "-1" duplicate) share the bound of the next
        // file with a later name time.
        for (size_t i = 0; i < in_stream.size(); ++i) {
            in_stream[i]->lower_ns = in_stream[i]->parsed->time_ns;
            in_stream[i]->upper_ns = UINT64_MAX;
            size_t j = i + 1;
            while (j < in_stream.size() && in_stream[j]->parsed->time_ns == in_stream[i]->parsed->time_ns) ++j;
            if (j < in_stream.size()) {
                const ParsedName& next = *in_stream[j]->parsed;
                const uint64_t up = next.time_ns + next.precision_ns;
                in_stream[i]->upper_ns = up < next.time_ns ? UINT64_MAX : up;
            }
        }
    }
}

std::optional<std::string> read_damaged_marker(int dir_fd, const std::string& name) {
    UniqueFd fd(::openat(dir_fd, layout::damaged_marker_name(name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT) return std::nullopt;
        return std::string();  // there, but unreadable: still marked
    }
    char line[512];
    const ssize_t n = ::read(fd.get(), line, sizeof line);
    std::string text(line, n > 0 ? static_cast<size_t>(n) : 0);
    if (const size_t end = text.find('\n'); end != std::string::npos) text.resize(end);
    return text;
}

LocalDirectoryStore::LocalDirectoryStore(std::string directory) : directory_(std::move(directory)) {
    owned_.reset(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    dir_fd_ = owned_.get();
    open_error_ = owned_ ? 0 : errno;
}

LocalDirectoryStore::LocalDirectoryStore(std::string directory, int dir_fd)
    : directory_(std::move(directory)), dir_fd_(dir_fd), open_error_(dir_fd < 0 ? EBADF : 0) {}

Result<StoreInventory> LocalDirectoryStore::list(const ListOptions& options) const {
    if (dir_fd_ < 0) return runtime_error(directory_ + ": " + errno_text(open_error_));
    // A descriptor of its own: a dup would share the directory offset with other listings.
    const int fd = ::openat(dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
    if (dir == nullptr) {
        const int error = errno;
        if (fd >= 0) ::close(fd);
        return runtime_error(directory_ + ": " + errno_text(error));
    }
    StoreInventory inventory;
    inventory.directory = directory_;
    // Collected first and looked at afterwards: a rename while readdir runs may show an
    // entry twice or not at all.
    std::map<std::string, Present> by_capture;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (layout::final_name_of_in_progress(name)) inventory.in_progress_names.push_back(name);
        else if (layout::final_name_of_temporary(name)) inventory.temporaries.push_back(name);
        else if (layout::is_capture_name(name)) by_capture[name].plain = true;
        else if (auto c = layout::capture_name_of_compressed(name)) by_capture[*c].compressed = true;
        else if (auto m = layout::capture_name_of_manifest(name)) by_capture[*m].manifest = true;
        else if (auto p = layout::capture_name_of_manifest_pending(name)) by_capture[*p].manifest_pending = true;
        else if (auto i = layout::capture_name_of_index(name)) by_capture[*i].index = true;
        else if (auto d = layout::capture_name_of_damaged_marker(name)) by_capture[*d].damaged = true;
        else if (auto a = layout::capture_name_of_archived_marker(name)) by_capture[*a].archived = true;
    }
    const int error = errno;
    ::closedir(dir);
    if (error != 0) return runtime_error(directory_ + ": readdir: " + errno_text(error));
    std::sort(inventory.in_progress_names.begin(), inventory.in_progress_names.end());
    std::sort(inventory.temporaries.begin(), inventory.temporaries.end());
    inventory.in_progress = inventory.in_progress_names.size();

    for (const auto& [capture, present] : by_capture) {
        std::optional<StoredFile> file;
        if (present.plain || present.compressed) file = describe(dir_fd_, directory_, capture, present, options);
        if (file) {
            inventory.files.push_back(std::move(*file));
            continue;
        }
        if (present.manifest) inventory.orphan_manifests.push_back(layout::manifest_name(capture));
        if (present.index) inventory.orphan_indexes.push_back(layout::index_name(capture));
        if (present.manifest_pending) inventory.orphan_pending_markers.push_back(layout::manifest_pending_name(capture));
    }
    if (options.file_template) bound_spans(inventory.files);
    return inventory;
}

std::optional<StoredFile> LocalDirectoryStore::find(const std::string& name, const ListOptions& options) const {
    if (dir_fd_ < 0 || !layout::is_capture_name(name)) return std::nullopt;
    const Present present{
        .plain = layout::exists_at(dir_fd_, name),
        .compressed = layout::exists_at(dir_fd_, layout::compressed_name(name)),
        .manifest = layout::exists_at(dir_fd_, layout::manifest_name(name)),
        .manifest_pending = layout::exists_at(dir_fd_, layout::manifest_pending_name(name)),
        .index = layout::exists_at(dir_fd_, layout::index_name(name)),
        .damaged = layout::exists_at(dir_fd_, layout::damaged_marker_name(name)),
        .archived = layout::exists_at(dir_fd_, layout::archived_marker_name(name)),
    };
    if (!present.plain && !present.compressed) return std::nullopt;
    return describe(dir_fd_, directory_, name, present, options);
}

Result<std::unique_ptr<format::OpenFile>> LocalDirectoryStore::open(const StoredFile& file) const {
    return open_stored_capture(file.path);
}

LoadedIndex LocalDirectoryStore::load_index(const StoredFile& file, uint64_t capture_size,
                                            int64_t capture_mtime_ns) const {
    return linecap::load_index(file.path, capture_size, capture_mtime_ns);
}

ManifestRead LocalDirectoryStore::read_manifest(const StoredFile& file) const {
    if (dir_fd_ < 0) return ManifestRead{};
    return linecap::read_manifest(dir_fd_, file.name);
}

std::unique_ptr<StoreBackend> open_store(const std::string& location) {
    return std::make_unique<LocalDirectoryStore>(location);
}

}  // namespace linecap
