// Free and total space of the filesystem holding the capture files (statvfs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace linecap {

struct FilesystemUsage {
    uint64_t free_bytes = 0;   // available to the daemon (f_bavail: root's reserve excluded)
    uint64_t size_bytes = 0;
};

// nullopt when statvfs fails (directory missing, permission).
std::optional<FilesystemUsage> read_filesystem_usage(const std::string& directory);

// Injectable for tests, which want exact numbers.
using FilesystemProbe = std::function<std::optional<FilesystemUsage>(const std::string& directory)>;

}  // namespace linecap
