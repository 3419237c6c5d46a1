#include "archive/holds.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/errno_text.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

using json = nlohmann::ordered_json;

constexpr int64_t kLeftoverAgeS = 3600;

std::string read_small_file(const std::string& path, size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::string text(limit, '\0');
    in.read(text.data(), static_cast<std::streamsize>(limit));
    text.resize(static_cast<size_t>(in.gcount()));
    return text;
}

// The bytes of the regular files of a bundle directory.
uint64_t bundle_bytes(const std::string& path) {
    std::error_code ec;
    uint64_t total = 0;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
    return total;
}

}  // namespace

namespace {

json hold_object(const Hold& h) {
    json j;
    j["id"] = h.id;
    j["created_by"] = h.created_by;
    j["created"] = format_utc_ns(h.created_ns);
    j["created_ns"] = h.created_ns;
    j["expires"] = h.expires_ns ? json(format_utc_ns(h.expires_ns)) : json(nullptr);
    j["expires_ns"] = h.expires_ns;
    j["reason"] = h.reason;
    j["query"] = h.query_json.empty() ? json(nullptr) : json::parse(h.query_json, nullptr, false);
    j["packets"] = h.packets;
    j["packet_bytes"] = h.packet_bytes;
    j["sha256"] = h.sha256;
    j["findings"] = h.findings;
    return j;
}

}  // namespace

std::string hold_record_json(const Hold& h) {
    return hold_object(h).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string holds_json(const std::vector<Hold>& holds) {
    json list = json::array();
    uint64_t total = 0;
    for (const Hold& h : holds) {
        json j = hold_object(h);
        j["bytes"] = h.bytes;
        total += h.bytes;
        list.push_back(std::move(j));
    }
    json out;
    out["holds"] = std::move(list);
    out["count"] = holds.size();
    out["bytes"] = total;
    return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Hold> parse_hold_record(std::string_view text) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return runtime_error("hold.json is not a JSON object");
    Hold h;
    auto text_at = [&](const char* key, std::string& out) {
        const auto it = j.find(key);
        if (it == j.end() || !it->is_string()) return false;
        out = it->get<std::string>();
        return true;
    };
    auto count_at = [&](const char* key, uint64_t& out) {
        const auto it = j.find(key);
        if (it == j.end() || !it->is_number_unsigned()) return false;
        out = it->get<uint64_t>();
        return true;
    };
    if (!text_at("id", h.id) || !text_at("created_by", h.created_by) || !text_at("reason", h.reason) ||
        !text_at("sha256", h.sha256) || !count_at("created_ns", h.created_ns) || !count_at("expires_ns", h.expires_ns) ||
        !count_at("packets", h.packets) || !count_at("packet_bytes", h.packet_bytes))
        return runtime_error("hold.json lacks id, created_by, reason, sha256, created_ns, expires_ns, packets or "
                             "packet_bytes");
    if (const auto q = j.find("query"); q != j.end() && !q->is_null()) h.query_json = q->dump();
    if (const auto f = j.find("findings"); f != j.end() && f->is_array())
        for (const auto& x : *f)
            if (x.is_string()) h.findings.push_back(x.get<std::string>());
    return h;
}

bool valid_hold_id(std::string_view id) {
    if (id.empty() || id.size() > 64 || id.front() == '-') return false;
    return std::all_of(id.begin(), id.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
}

std::string holds_path(const std::string& store_directory) { return store_directory + "/" + kHoldsDirectory; }

Status remove_bundle(const std::string& holds_directory, const std::string& name) {
    std::string path = holds_directory + "/" + name;
    if (name.front() != '.') {
        const std::string hidden = holds_directory + "/.gone-" + name;
        if (::rename(path.c_str(), hidden.c_str()) != 0) return runtime_error(path + ": " + errno_text(errno));
        path = hidden;
    }
    // A bundle holds files only; remove_all deletes a symlink, never what it points to.
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return runtime_error(path + ": " + ec.message());
    return {};
}

HoldListing list_holds(const std::string& store_directory, uint64_t now_ns, bool remove_expired) {
    HoldListing out;
    const std::string dir = holds_path(store_directory);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        if (errno != ENOENT) out.problems.push_back(dir + ": " + errno_text(errno));
        return out;
    }
    std::vector<std::string> names, leftovers;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (name.front() == '.') {
            if (::time(nullptr) - st.st_mtim.tv_sec > kLeftoverAgeS) leftovers.push_back(name);
        } else {
            names.push_back(name);
        }
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        const std::string path = dir + "/" + name;
        auto hold = parse_hold_record(read_small_file(path + "/" + kHoldRecordName, 1 << 20));
        if (!hold || hold->id != name) {
            out.problems.push_back(name + ": " + (hold ? "hold.json names another id" : hold.error().message));
            continue;
        }
        if (hold->expires_ns != 0 && hold->expires_ns <= now_ns) {
            if (!remove_expired) continue;
            if (auto removed = remove_bundle(dir, name); !removed)
                out.problems.push_back(name + ": expired, not removed: " + removed.error().message);
            else
                out.removed.push_back(name + ": expired at " + format_utc_ns(hold->expires_ns));
            continue;
        }
        hold->bytes = bundle_bytes(path);
        out.bytes += hold->bytes;
        out.holds.push_back(std::move(hold.value()));
    }
    if (remove_expired)
        for (const std::string& name : leftovers) (void)remove_bundle(dir, name);
    std::stable_sort(out.holds.begin(), out.holds.end(),
                     [](const Hold& a, const Hold& b) { return a.created_ns < b.created_ns; });
    return out;
}

Status release_hold(const std::string& store_directory, const std::string& id) {
    if (!valid_hold_id(id)) return config_error("'" + id + "' is not a hold id");
    const std::string dir = holds_path(store_directory);
    struct stat st {};
    if (::stat((dir + "/" + id + "/" + kHoldRecordName).c_str(), &st) != 0)
        return config_error("no hold " + id + " in " + dir);
    return remove_bundle(dir, id);
}

}  // namespace linecap
