#include "util/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "util/errno_text.hpp"
#include "util/unique_fd.hpp"

namespace linecap {

Result<std::string> read_secret_file(const std::string& what, const std::string& path, SecretFileRules rules) {
    const std::string where = what + " " + path;
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (rules.follow_symlinks ? 0 : O_NOFOLLOW)));
    if (!fd) return config_error(where + ": " + errno_text(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return config_error(where + ": " + errno_text(errno));
    if (!S_ISREG(st.st_mode)) return config_error(where + ": not a regular file");
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return config_error(where + " is accessible by group or others (mode " + mode + "); chmod 600 " + path);
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return config_error(where + ": " + errno_text(errno));
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > rules.max_bytes)
            return config_error(where + ": larger than " + std::to_string(rules.max_bytes / 1024) + " KiB");
    }
    return text;
}

}  // namespace linecap
