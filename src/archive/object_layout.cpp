#include "archive/object_layout.hpp"

namespace linecap::object_layout {

Result<ArchiveLocation> parse_url(std::string_view url) {
    auto refuse = [&](const char* why) { return config_error("archive URL '" + std::string(url) + "': " + why); };
    constexpr std::string_view scheme = "s3://";
    if (!url.starts_with(scheme)) return refuse("must start with s3://");
    std::string_view rest = url.substr(scheme.size());
    while (rest.ends_with('/')) rest.remove_suffix(1);
    const size_t slash = rest.find('/');
    ArchiveLocation location;
    location.bucket = std::string(rest.substr(0, slash));
    if (location.bucket.empty()) return refuse("no bucket");
    if (slash != std::string_view::npos) location.prefix = std::string(rest.substr(slash + 1));
    // An empty segment ("a//b") would name a key no listing under "a/b" finds.
    if (location.prefix.find("//") != std::string::npos || location.prefix.starts_with('/'))
        return refuse("empty path segment");
    return location;
}

std::string object_key(std::string_view prefix, std::string_view name) {
    if (prefix.empty()) return std::string(name);
    std::string key;
    key.reserve(prefix.size() + 1 + name.size());
    key.append(prefix).append("/").append(name);
    return key;
}

std::string_view name_under(std::string_view prefix, std::string_view key) {
    if (!prefix.empty()) {
        if (!key.starts_with(prefix) || key.size() <= prefix.size() + 1 || key[prefix.size()] != '/') return {};
        key.remove_prefix(prefix.size() + 1);
    }
    if (key.empty() || key.find('/') != std::string_view::npos) return {};
    return key;
}

}  // namespace linecap::object_layout
