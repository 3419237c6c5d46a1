#include "metrics/filesystem_usage.hpp"

#include <sys/statvfs.h>

namespace linecap {

std::optional<FilesystemUsage> read_filesystem_usage(const std::string& directory) {
    struct statvfs fs {};
    if (statvfs(directory.c_str(), &fs) != 0) return std::nullopt;
    // f_bavail, not f_bfree: the writer gets ENOSPC when the blocks available to
    // unprivileged users run out (unless it runs as root, when this errs on the safe side).
    return FilesystemUsage{
        .free_bytes = uint64_t{fs.f_bavail} * fs.f_frsize,
        .size_bytes = uint64_t{fs.f_blocks} * fs.f_frsize,
    };
}

}  // namespace linecap
