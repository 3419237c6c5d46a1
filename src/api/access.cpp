#include "api/access.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "api/query.hpp"
#include "store/time_spec.hpp"
#include "util/secret_file.hpp"
#include "util/io_status.hpp"

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
    auto contents = read_secret_file("tokens file", path, {.max_bytes = 1u << 20});
    if (!contents) return contents.error();
    const std::string& text = contents.value();
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
        const auto digest = sha256(words[1]);
        for (const Entry& e : table.entries_) {
            if (e.name == words[0]) return config_error(where + "name '" + words[0] + "' given twice");
            // One token under two names would make the audit log name either of them.
            if (e.digest == digest)
                return config_error(where + "the token of '" + words[0] + "' is also the token of '" + e.name +
                                    "': every name needs a token of its own");
        }
        table.entries_.push_back({words[0], digest});
        if (std::find(table.lengths_.begin(), table.lengths_.end(), words[1].size()) == table.lengths_.end())
            table.lengths_.push_back(words[1].size());
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

std::string TokenTable::redact(std::string text) const {
    constexpr std::string_view kRedacted = "[redacted]";
    for (const size_t len : lengths_) {
        for (size_t i = 0; i + len <= text.size();) {
            if (name_for(std::string_view(text).substr(i, len))) {
                text.replace(i, len, kRedacted);
                i += kRedacted.size();
            } else {
                ++i;
            }
        }
    }
    return text;
}

std::string audit_target(std::string_view path, std::string_view raw_query, const TokenTable* tokens) {
    static constexpr std::string_view kCredentialNames[] = {
        "access_token", "token", "bearer", "authorization", "auth", "api_key", "apikey", "key",
        "password", "passwd", "secret", "client_secret", "id_token", "refresh_token", "session"};
    std::string out(path);
    std::string query;
    size_t start = 0;
    while (start <= raw_query.size() && !raw_query.empty()) {
        size_t end = raw_query.find('&', start);
        if (end == std::string_view::npos) end = raw_query.size();
        const std::string_view part = raw_query.substr(start, end - start);
        start = end + 1;
        if (part.empty()) continue;
        const size_t eq = part.find('=');
        // An undecodable part is kept as received.
        auto name = percent_decode(part.substr(0, eq), true);
        std::string n = name ? name.value() : std::string(part.substr(0, eq));
        std::string lower_name = n;
        for (char& c : lower_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string v;
        if (eq != std::string_view::npos) {
            auto value = percent_decode(part.substr(eq + 1), true);
            v = value ? value.value() : std::string(part.substr(eq + 1));
            if (std::find(std::begin(kCredentialNames), std::end(kCredentialNames), lower_name) != std::end(kCredentialNames))
                v = "[redacted]";
        }
        query += (query.empty() ? "" : "&") + n + (eq == std::string_view::npos ? "" : "=" + v);
    }
    if (!query.empty()) out += "?" + query;
    if (tokens) out = tokens->redact(std::move(out));
    if (out.size() > 4096) out = out.substr(0, 4096) + "...";
    return out;
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
    if (!r.credential_refused.empty()) j["credential_refused"] = r.credential_refused;
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
