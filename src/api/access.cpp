#include "api/access.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "output/io_status.hpp"
#include "store/time_spec.hpp"

namespace linecap::api {
namespace {

std::array<uint8_t, 32> sha256(std::string_view text) {
    std::array<uint8_t, 32> d{};
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d.data());
    return d;
}

bool valid_name(std::string_view n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.' || c == '@'))
            return false;
    return true;
}

}  // namespace

Result<TokenTable> TokenTable::load(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return config_error("tokens file " + path + ": " + errno_text(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return config_error("tokens file " + path + ": not a regular file");
    }
    if (st.st_mode & 077) {
        ::close(fd);
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return config_error("tokens file " + path + " is accessible by group or others (mode " + mode +
                            "); refusing to start: chmod 600 " + path);
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            return config_error("tokens file " + path + ": " + errno_text(e));
        }
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > (1u << 20)) {
            ::close(fd);
            return config_error("tokens file " + path + ": larger than 1 MiB");
        }
    }
    ::close(fd);
    TokenTable table;
    size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::vector<std::string> words;
        size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
            size_t j = i;
            while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
            if (j > i) words.push_back(line.substr(i, j - i));
            i = j;
        }
        if (words.empty()) continue;
        const std::string where = path + ":" + std::to_string(line_no) + ": ";
        if (words.size() != 2) return config_error(where + "expected \"NAME TOKEN\"");
        if (!valid_name(words[0])) return config_error(where + "name: 1..64 of A-Z a-z 0-9 - _ . @");
        if (words[1].size() < 16) return config_error(where + "token shorter than 16 characters");
        for (const Entry& e : table.entries_)
            if (e.name == words[0]) return config_error(where + "name '" + words[0] + "' given twice");
        table.entries_.push_back({words[0], sha256(words[1])});
    }
    if (table.entries_.empty()) return config_error("tokens file " + path + ": no tokens");
    return table;
}

std::optional<std::string> TokenTable::name_for(std::string_view token) const {
    const auto d = sha256(token);
    std::optional<std::string> found;
    for (const Entry& e : entries_)  // every entry compared: the time says nothing about which
        if (CRYPTO_memcmp(e.digest.data(), d.data(), d.size()) == 0) found = e.name;
    return found;
}

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) return config_error("audit log " + path + ": " + errno_text(errno));
    std::unique_ptr<AuditLog> log(new AuditLog());
    log->fd_ = fd;
    log->path_ = path;
    return log;
}

AuditLog::~AuditLog() {
    if (fd_ >= 0) ::close(fd_);
}

std::string AuditLog::format(const AuditRecord& r) {
    nlohmann::ordered_json j;
    j["time"] = store::format_time(r.start_ns);
    j["who"] = r.who;
    j["peer"] = r.peer;
    j["method"] = r.method;
    j["request"] = r.target;
    j["status"] = r.status;
    j["bytes"] = r.bytes;
    j["packets"] = r.packets;
    j["seconds"] = static_cast<double>(static_cast<int64_t>(r.seconds * 1e6)) / 1e6;
    j["outcome"] = r.outcome;
    // Invalid UTF-8 in a request is replaced, not a reason to lose the record.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void AuditLog::write(const AuditRecord& r) {
    const std::string line = format(r);
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n != static_cast<ssize_t>(line.size())) {
        const int e = n < 0 ? errno : EIO;
        std::lock_guard lock(mu_);
        if (!reported_failure_)
            std::fprintf(stderr, "linecap serve: error: audit log %s: %s (requests are still logged here)\n",
                         path_.c_str(), errno_text(e).c_str());
        reported_failure_ = true;
        std::fputs(line.c_str(), stderr);
    }
}

}  // namespace linecap::api
