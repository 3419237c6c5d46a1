// Free and total space of the filesystem holding the capture files (statvfs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "util/metric.hpp"

namespace linecap {

struct FilesystemUsage {
    uint64_t free_bytes = 0;   // available to the daemon (f_bavail: root's reserve excluded)
    uint64_t size_bytes = 0;
};

// Unlabelled; absent when statvfs fails.
inline constexpr MetricDecl kFilesystemFreeMetric{
    "linecap_output_filesystem_free_bytes", "Bytes available to the daemon on the output directory's filesystem.",
    MetricType::gauge};
inline constexpr MetricDecl kFilesystemSizeMetric{"linecap_output_filesystem_size_bytes",
                                                  "Size of the output directory's filesystem.", MetricType::gauge};

// nullopt when statvfs fails (directory missing, permission).
std::optional<FilesystemUsage> read_filesystem_usage(const std::string& directory);

// Injectable for tests, which want exact numbers.
using FilesystemProbe = std::function<std::optional<FilesystemUsage>(const std::string& directory)>;

}  // namespace linecap
