#include "s3/credentials.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace linecap::s3 {

namespace {

constexpr off_t kMaxFileBytes = 64 * 1024;

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

Result<Credentials> read_credentials_file(const std::string& path, const std::string& profile) {
    const std::string where = "credentials file " + path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return config_error(where + ": " + std::strerror(errno));
    struct stat st{};
    std::string text;
    const bool stat_ok = ::fstat(fd, &st) == 0;
    if (stat_ok && S_ISREG(st.st_mode) && st.st_size <= kMaxFileBytes && (st.st_mode & 0007) == 0) {
        text.resize(size_t(st.st_size));
        const ssize_t n = ::read(fd, text.data(), text.size());
        text.resize(n > 0 ? size_t(n) : 0);
    }
    ::close(fd);
    if (!stat_ok) return config_error(where + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return config_error(where + ": not a regular file");
    if (st.st_size > kMaxFileBytes) return config_error(where + ": larger than 64 KiB, not a credentials file");
    if ((st.st_mode & 0007) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return config_error(where + ": mode " + mode + " lets every user of this machine read or change the " +
                            "secret key; chmod 600 " + path);
    }

    Credentials c;
    std::istringstream lines(text);
    std::string line, section;
    bool found = false;
    while (std::getline(lines, line)) {
        line = trim(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            section = trim(line.substr(1, line.size() - 2));
            if (section.starts_with("profile ")) section = trim(section.substr(8));  // ~/.aws/config style
            found = found || section == profile;
            continue;
        }
        if (section != profile) continue;
        const size_t eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
        if (key == "aws_access_key_id") c.access_key = value;
        if (key == "aws_secret_access_key") c.secret_key = value;
        if (key == "aws_session_token") c.session_token = value;
    }
    if (!found) return config_error(where + ": no [" + profile + "] profile");
    if (c.access_key.empty() || c.secret_key.empty()) {
        return config_error(where + ": profile [" + profile + "] lacks aws_access_key_id or aws_secret_access_key");
    }
    return c;
}

Result<Credentials> credentials_from_environment() {
    auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v ? v : "");
    };
    Credentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
    if (c.access_key.empty() || c.secret_key.empty()) {
        return config_error("no credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set");
    }
    return c;
}

}  // namespace linecap::s3
