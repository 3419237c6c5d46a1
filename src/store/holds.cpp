#include "store/holds.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "util/errno_text.hpp"
#include "util/sha256.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap::store {
namespace {

// The pcap as it goes to the file, hashed on the way (never read back).
class HashingSink final : public format::ByteSink {
public:
    explicit HashingSink(int fd) : file_(fd) {}
    Status write(const uint8_t* data, size_t n) override {
        hash_.update({data, n});
        return file_.write(data, n);
    }
    std::string hex() { return Sha256::hex(hash_.finish()); }

private:
    format::FdSink file_;
    Sha256 hash_;
};

Status write_file(const std::string& path, const std::string& text) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640));
    if (!fd) return runtime_error(path + ": " + errno_text(errno));
    format::FdSink sink(fd.get());
    if (auto s = sink.write(reinterpret_cast<const uint8_t*>(text.data()), text.size()); !s) return s.error();
    if (::fsync(fd.get()) != 0) return runtime_error(path + ": fsync: " + errno_text(errno));
    return {};
}

Status sync_directory(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0) return runtime_error(path + ": fsync: " + errno_text(errno));
    return {};
}

// "20261130T021000Z-1a2b3c4d": when, and 32 random bits so two holds of one second differ.
Result<std::string> new_hold_id(uint64_t now_ns) {
    uint32_t random = 0;
    UniqueFd fd(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    if (!fd || ::read(fd.get(), &random, sizeof random) != sizeof random)
        return runtime_error("/dev/urandom: " + errno_text(errno));
    const time_t seconds = static_cast<time_t>(now_ns / 1000000000ull);
    struct tm tm {};
    ::gmtime_r(&seconds, &tm);
    char id[64];
    const size_t n = std::strftime(id, sizeof id, "%Y%m%dT%H%M%SZ", &tm);
    std::snprintf(id + n, sizeof id - n, "-%08x", random);
    return std::string(id);
}

// The query as hold.json keeps it: each selection's range, filter and Community ID.
std::string query_json(const HoldRequest& r) {
    nlohmann::ordered_json selections = nlohmann::ordered_json::array();
    auto add = [&](uint64_t from, uint64_t to, const std::string& filter, const std::string& community_id) {
        nlohmann::ordered_json s;
        s["from"] = from ? nlohmann::ordered_json(format_utc_ns(from)) : nlohmann::ordered_json(nullptr);
        s["to"] = to != UINT64_MAX ? nlohmann::ordered_json(format_utc_ns(to)) : nlohmann::ordered_json(nullptr);
        s["filter"] = filter;
        s["community_id"] = community_id;
        selections.push_back(std::move(s));
    };
    const ExtractOptions& q = r.query;
    if (q.any_of.empty()) add(q.from_ns, q.to_ns, q.filter, q.community_id);
    for (const Selection& s : q.any_of) add(s.from_ns, s.to_ns, s.filter, s.community_id);
    nlohmann::ordered_json j;
    j["origin"] = r.origin;
    j["selections"] = std::move(selections);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Result<HoldMade> create_hold(const HoldRequest& request, uint64_t now_ns) {
    if (request.reason.empty()) return config_error("a hold needs a reason");
    const ExtractOptions& q = request.query;
    if (q.any_of.empty() && q.from_ns == 0 && q.to_ns == UINT64_MAX && q.filter.empty() && q.community_id.empty())
        return config_error("a hold needs a time range, a filter, a Community ID or alert records: this would "
                            "copy the whole store");
    if (request.expires_ns != 0 && request.expires_ns <= now_ns)
        return config_error("the expiry " + format_utc_ns(request.expires_ns) + " is not in the future");
    const std::string holds = holds_path(request.query.directory);
    if (::mkdir(holds.c_str(), 0750) != 0 && errno != EEXIST) return runtime_error(holds + ": " + errno_text(errno));
    std::string temporary = holds + "/.new-XXXXXX";
    if (::mkdtemp(temporary.data()) == nullptr) return runtime_error(holds + ": " + errno_text(errno));
    const std::string temporary_name = temporary.substr(holds.size() + 1);
    auto made = [&]() -> Result<HoldMade> {
        HoldMade m;
        const std::string packets = temporary + "/" + kHoldPacketsName;
        UniqueFd fd(::open(packets.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640));
        if (!fd) return runtime_error(packets + ": " + errno_text(errno));
        HashingSink sink(fd.get());
        ExtractOptions query = q;
        query.output_format = FileKind::pcap;
        auto report = extract(query, sink);
        if (!report) return report.error();
        if (report->packets_written == 0)
            return runtime_error("no packets in the store match the query: nothing held");
        if (!report->ended_early.empty())
            return config_error("the answer was cut (" + report->ended_early +
                                "): a hold keeps whole answers; narrow the query");
        if (::fsync(fd.get()) != 0) return runtime_error(packets + ": fsync: " + errno_text(errno));
        auto id = new_hold_id(now_ns);
        if (!id) return id.error();
        Hold& h = m.hold;
        h.id = id.value();
        h.created_by = request.created_by;
        h.created_ns = now_ns;
        h.expires_ns = request.expires_ns;
        h.reason = request.reason;
        h.query_json = query_json(request);
        h.packets = report->packets_written;
        h.packet_bytes = report->bytes_written;
        h.sha256 = sink.hex();
        for (const FileConcern& c : report->concerns) h.findings.push_back("integrity: " + c.path + ": " + c.reason);
        for (const std::string& e : report->errors) h.findings.push_back("error: " + e);
        const std::string record = hold_record_json(h);
        if (auto s = write_file(temporary + "/" + kHoldRecordName, record); !s) return s.error();
        const std::string sums = h.sha256 + "  " + kHoldPacketsName + "\n" +
                                 Sha256::of({reinterpret_cast<const uint8_t*>(record.data()), record.size()}) + "  " +
                                 kHoldRecordName + "\n";
        if (auto s = write_file(temporary + "/" + kHoldSumsName, sums); !s) return s.error();
        if (auto s = sync_directory(temporary); !s) return s.error();
        if (::rename(temporary.c_str(), (holds + "/" + h.id).c_str()) != 0)
            return runtime_error(holds + "/" + h.id + ": " + errno_text(errno));
        if (auto s = sync_directory(holds); !s) return s.error();
        m.report = std::move(report.value());
        return m;
    }();
    if (!made) (void)remove_bundle(holds, temporary_name);
    return made;
}

}  // namespace linecap::store
