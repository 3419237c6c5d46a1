#include "archive/recovery.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "linecap_build.h"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "util/unique_fd.hpp"

namespace linecap {
namespace {

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// `preferred` if free, else `alternative`, else `alternative` numbered -1, -2, …;
// nullopt when every name up to layout::kMaxAlternatives is taken.
std::optional<std::string> free_name(int dir_fd, const std::string& preferred, const std::string& alternative) {
    if (!name_exists(dir_fd, preferred)) return preferred;
    for (unsigned n = 0; n < layout::kMaxAlternatives; ++n) {
        std::string candidate = layout::numbered_name(alternative, n);
        if (!name_exists(dir_fd, candidate)) return candidate;
    }
    return std::nullopt;
}

class Recoverer {
public:
    Recoverer(std::string directory, int dir_fd, RecoveryOptions options)
        : directory_(std::move(directory)), dir_fd_(dir_fd), options_(options) {}

    RecoveredFile recover(const std::string& part_name) {
        RecoveredFile file;
        file.in_progress_name = part_name;
        const std::string final_name = *layout::final_name_of_in_progress(part_name);

        struct stat st {};
        if (::fstatat(dir_fd_, part_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return failed(std::move(file), IoStatus::failure("stat", errno));
        if (!S_ISREG(st.st_mode)) {
            file.reason = "not a regular file";
            return failed(std::move(file), {});
        }
        UniqueFd fd(::openat(dir_fd_, part_name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) return failed(std::move(file), IoStatus::failure("open", errno));

        const CaptureScan scan = scan_capture(fd.get());
        if (!scan.io.ok()) return failed(std::move(file), scan.io);
        if (!scan.header_valid) {
            file.reason = scan.header_problem;
            return move_aside(std::move(file), final_name);
        }

        if (scan.valid_bytes < scan.file_bytes &&
            ::ftruncate(fd.get(), static_cast<off_t>(scan.valid_bytes)) != 0)
            return failed(std::move(file), IoStatus::failure("ftruncate", errno));
        if (::fsync(fd.get()) != 0) return failed(std::move(file), IoStatus::failure("fsync", errno));

        const std::optional<std::string> target = free_name(dir_fd_, final_name, layout::recovered_name(final_name));
        if (!target) return failed(std::move(file), IoStatus::failure("find a free name", EEXIST));
        if (IoStatus status = rename(part_name, *target); !status.ok()) return failed(std::move(file), status);

        file.outcome = RecoveredFile::Outcome::recovered;
        file.new_name = *target;
        file.packets = scan.packets;
        file.truncated_bytes = scan.file_bytes - scan.valid_bytes;
        spdlog::info("recovered {}: {} packets, {} bytes truncated (was {})", path_of(*target), file.packets,
                     file.truncated_bytes, part_name);
        if (scan.format == FileKind::pcapng && !scan.statistics)
            spdlog::warn("recovered {} has no interface statistics block (the daemon stopped before finishing it): "
                         "its received and dropped counts are unknown",
                         path_of(*target));
        if (options_.write_manifests) file.manifest_written = write_recovered_manifest(fd.get(), *target);
        return file;
    }

private:
    bool write_recovered_manifest(int fd, const std::string& name) {
        const Result<Manifest> m = manifest_from_file(fd, name);
        if (!m) {
            spdlog::error("recovery: no manifest for {}: {}", path_of(name), m.error().message);
            return false;
        }
        if (const IoStatus status = write_manifest(dir_fd_, m.value()); !status.ok()) {
            spdlog::error("recovery: manifest for {}: {}", path_of(name), status.message());
            return false;
        }
        return true;
    }

    RecoveredFile move_aside(RecoveredFile file, const std::string& final_name) {
        const std::string corrupt = layout::corrupt_name(final_name);
        const std::optional<std::string> target = free_name(dir_fd_, corrupt, corrupt);
        if (!target) return failed(std::move(file), IoStatus::failure("find a free name", EEXIST));
        if (IoStatus status = rename(file.in_progress_name, *target); !status.ok())
            return failed(std::move(file), status);
        file.outcome = RecoveredFile::Outcome::moved_aside;
        file.new_name = *target;
        spdlog::warn("recovery: {} is not a pcap file ({}); moved aside to {}",
                     path_of(file.in_progress_name), file.reason, *target);
        return file;
    }

    RecoveredFile failed(RecoveredFile file, const IoStatus& status) {
        file.outcome = RecoveredFile::Outcome::failed;
        if (!status.ok()) file.reason = status.message();
        spdlog::error("recovery: {}: {}; left as it is", path_of(file.in_progress_name), file.reason);
        return file;
    }

    IoStatus rename(const std::string& from, const std::string& to) {
        if (::renameat(dir_fd_, from.c_str(), dir_fd_, to.c_str()) != 0) return IoStatus::failure("rename", errno);
        if (::fsync(dir_fd_) != 0) return IoStatus::failure("fsync directory", errno);
        return {};
    }

    std::string path_of(const std::string& name) const { return directory_ + "/" + name; }

    std::string directory_;
    int dir_fd_;
    RecoveryOptions options_;
};

}  // namespace

Manifest manifest_from_scan(const std::string& name, const CaptureScan& scan) {
    Manifest m;
    m.file = name;
    m.format = format_name(scan);
    m.size = scan.file_bytes;
    m.sha256 = scan.sha256;
    m.packets = scan.packets;
    m.first_ns = scan.first_ns;
    m.last_ns = scan.last_ns;
    m.linecap_version = LINECAP_VERSION;
    return m;
}

Result<Manifest> manifest_from_file(int fd, const std::string& name) {
    const CaptureScan scan = scan_capture(fd, ScanOptions{.hash = true});
    if (!scan.io.ok()) return runtime_error(scan.io.message());
    if (!scan.complete()) return runtime_error("the file does not read back completely");
    Manifest m = manifest_from_scan(name, scan);
    m.recovered = true;
    // pcapng names its interface "<port>:<queue>"; pcap files carry no stream identity.
    if (const size_t colon = scan.interface_name.rfind(':'); colon != std::string::npos) {
        char* end = nullptr;
        const unsigned long queue = std::strtoul(scan.interface_name.c_str() + colon + 1, &end, 10);
        if (end != nullptr && *end == '\0' && colon > 0 && queue <= 0xffff)
            m.stream = ManifestStream{scan.interface_name.substr(0, colon), 0, static_cast<uint16_t>(queue)};
    }
    return m;
}

size_t RecoveryReport::count(RecoveredFile::Outcome outcome) const {
    return static_cast<size_t>(
        std::count_if(files.begin(), files.end(), [&](const RecoveredFile& f) { return f.outcome == outcome; }));
}

Result<RecoveryReport> recover_in_progress(const std::string& directory, RecoveryOptions options) {
    UniqueFd dir_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return runtime_error("recovery: " + directory + ": " + errno_text(errno));
    const Result<StoreInventory> inventory = LocalDirectoryStore(directory, dir_fd.get()).list({});
    if (!inventory) return runtime_error("recovery: " + inventory.error().message);

    // A manifest or index temporary (of layout::AtomicFile) is derived data a kill
    // interrupted, never finished: the file it describes gets its manifest again (or is
    // reported without one by verify), and its index from the indexer's start-up sweep.
    // Removed without an age check (unlike `linecap index`, which waits an hour): the
    // daemon owns its output directory.
    for (const std::string& temp : inventory->temporaries) {
        if (::unlinkat(dir_fd.get(), temp.c_str(), 0) == 0)
            spdlog::info("recovery: removed stale temporary {}/{}", directory, temp);
        else
            spdlog::warn("recovery: cannot remove {}/{}: {}", directory, temp, errno_text(errno));
    }

    RecoveryReport report;
    // An interrupted compression (NAME.zst complete beside NAME, which a kill left
    // undeleted: store/compress.hpp) is undone: the capture file is what the manifest's
    // "size" and "sha256" describe and stays; the compressed copy goes (the compressor
    // makes it again), and so does its entry in the manifest, if it was written.
    for (const StoredFile& file : inventory->files) {
        if (!file.compression_unfinished) continue;
        const std::string& capture = file.name;
        const std::string compressed = layout::compressed_name(capture);
        if (::unlinkat(dir_fd.get(), compressed.c_str(), 0) != 0) {
            spdlog::warn("recovery: cannot remove {}/{}: {}", directory, compressed, errno_text(errno));
            continue;
        }
        spdlog::info("recovery: {}/{}: compression interrupted; the compressed copy was removed, {} is kept",
                     directory, compressed, capture);
        report.compressions_undone.push_back(compressed);
        ManifestRead read = read_manifest(dir_fd.get(), capture);
        if (!read.ok() || !read.manifest.compressed) continue;
        read.manifest.compressed.reset();
        if (const IoStatus written = write_manifest(dir_fd.get(), read.manifest); !written.ok())
            spdlog::error("recovery: {}/{}: {}", directory, layout::manifest_name(capture), written.message());
    }
    Recoverer recoverer(directory, dir_fd.get(), options);
    for (const std::string& name : inventory->in_progress_names) report.files.push_back(recoverer.recover(name));
    return report;
}

}  // namespace linecap
