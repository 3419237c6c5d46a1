#include "archive/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "archive/layout.hpp"
#include "util/clock_quality.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxManifestBytes = 1 << 20;
constexpr mode_t kManifestMode = 0640;  // like the capture files it describes
// A manifest nests two levels (the root, then "stream", "drops_by_reason", "flow_cap", "dedup", "clock"). Deeper
// input is refused while it is parsed, so hostile nesting costs neither memory nor time.
constexpr int kMaxDepth = 4;
struct TooDeep {};

bool is_hex_digest(const std::string& s) {
    return s.size() == 64 &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "invalid JSON at byte N: <what>" from nlohmann's message, without its prefix
// ("[json.exception.parse_error.101] parse error at line 1, column 5: ") and without the
// echo of the input it ends with ("; last read: '…'"), which may hold any byte.
std::string syntax_error(const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (const size_t column = what.find(", column "); column != std::string::npos) {
        if (const size_t colon = what.find(": ", column); colon != std::string::npos) what.erase(0, colon + 2);
    }
    if (const size_t echo = what.find("; last read"); echo != std::string::npos) what.erase(echo);
    return "invalid JSON at byte " + std::to_string(e.byte) + ": " + what;
}

// Typed access to one object's keys; the first problem is kept, prefixed with the path
// of the object ("stream: \"queue\" is not …").
class Fields {
public:
    Fields(const Json& object, std::string prefix) : o_(object), prefix_(std::move(prefix)) {}
    const std::string& problem() const { return problem_; }

    std::optional<uint64_t> number(const char* key, bool required, uint64_t max = UINT64_MAX) {
        const Json* j = find(key, required);
        if (j == nullptr) return std::nullopt;
        if (!j->is_number_unsigned()) return wrong(key, "an unsigned integer");
        const uint64_t v = j->get<uint64_t>();
        if (v > max) return wrong(key, ("at most " + std::to_string(max)).c_str());
        return v;
    }
    std::optional<std::string> text(const char* key, bool required) {
        const Json* j = find(key, required);
        if (j == nullptr) return std::nullopt;
        if (!j->is_string()) return wrong(key, "a string");
        return j->get_ref<const std::string&>();
    }
    std::optional<bool> boolean(const char* key) {
        const Json* j = find(key, false);
        if (j == nullptr) return std::nullopt;
        if (!j->is_boolean()) return wrong(key, "true or false");
        return j->get<bool>();
    }
    const Json* object(const char* key) {
        const Json* j = find(key, false);
        if (j == nullptr) return nullptr;
        if (!j->is_object()) return wrong(key, "an object"), nullptr;
        return j;
    }
    void note(const std::string& problem) {
        if (problem_.empty()) problem_ = prefix_ + problem;
    }

private:
    // Absent: nullptr (a problem when required). Null is never written for a key, so a
    // null is damage: a "seq": null must not read as a file without a sequence number.
    const Json* find(const char* key, bool required) {
        const auto it = o_.find(key);
        if (it == o_.end()) {
            if (required) note(std::string("\"") + key + "\" is missing");
            return nullptr;
        }
        if (it->is_null()) {
            note(std::string("\"") + key + "\" is null");
            return nullptr;
        }
        return &*it;
    }
    std::nullopt_t wrong(const char* key, const char* expected) {
        note(std::string("\"") + key + "\" is not " + expected);
        return std::nullopt;
    }

    const Json& o_;
    std::string prefix_;
    std::string problem_;
};

Json clock_object(const ManifestClock& clock) {
    Json c{{"source", clock.source}};
    if (!clock.port_clock.empty()) c["port_clock"] = clock.port_clock;
    c["sync"] = clock.sync;
    c["est_error_ns"] = clock.est_error_ns;
    c["max_error_ns"] = clock.max_error_ns;
    c["steps"] = clock.steps;
    c["status_source"] = clock.status_source;
    return c;
}

}  // namespace

std::string to_json(const ManifestClock& clock) {
    return clock_object(clock).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string to_json(const Manifest& m) {
    Json j;
    j["manifest_version"] = Manifest::kVersion;
    j["file"] = m.file;
    j["format"] = m.format;
    j["size"] = m.size;
    j["sha256"] = m.sha256;
    j["packets"] = m.packets;
    j["first_ns"] = m.first_ns;
    j["last_ns"] = m.last_ns;
    j["first_time"] = format_utc_ns(m.first_ns);
    j["last_time"] = format_utc_ns(m.last_ns);
    if (m.drops) {
        j["drops"] = m.drops->total();
        j["drops_by_reason"] = Json{{"writer_full", m.drops->writer_full},
                                    {"write_error", m.drops->write_error},
                                    {"disk_full", m.drops->disk_full}};
    }
    if (m.received) j["received"] = *m.received;
    if (m.filtered) j["filtered"] = *m.filtered;
    if (m.flow_cap) {
        j["flow_cap"] = Json{{"bytes", m.flow_cap->bytes},   {"packets", m.flow_cap->packets},
                             {"snaplen_after", m.flow_cap->snaplen_after}, {"filter", m.flow_cap->filter},
                             {"cut", m.flow_cap->cut},       {"dropped", m.flow_cap->dropped}};
    }
    if (m.dedup) j["dedup"] = Json{{"window_us", m.dedup->window_us}, {"suppressed", m.dedup->suppressed}};
    if (m.clock) j["clock"] = clock_object(*m.clock);
    if (m.span_start_ns) j["span_start_ns"] = *m.span_start_ns;
    if (m.span_end_ns) j["span_end_ns"] = *m.span_end_ns;
    if (m.stream) j["stream"] = Json{{"port", m.stream->port}, {"port_id", m.stream->port_id}, {"queue", m.stream->queue}};
    if (!m.run.empty()) j["run"] = m.run;
    if (m.seq) j["seq"] = *m.seq;
    j["recovered"] = m.recovered;
    j["linecap_version"] = m.linecap_version;
    if (m.compressed)
        j["compressed"] = Json{{"file", m.compressed->file},
                               {"format", ManifestCompressed::kFormat},
                               {"size", m.compressed->size},
                               {"sha256", m.compressed->sha256}};
    // A name that is not UTF-8 (the directory may hold any bytes) must not make the writer
    // throw: such bytes are written as U+FFFD, and verify then reports the name mismatch.
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

// A manifest, or with `draft` one whose digest is still to come ("sha256": "").
Result<Manifest> parse(std::string_view text, bool draft) {
    Json doc;
    try {
        doc = Json::parse(text.begin(), text.end(), [](int depth, Json::parse_event_t, Json&) {
            if (depth > kMaxDepth) throw TooDeep{};
            return true;
        });
    } catch (const Json::parse_error& e) {
        return runtime_error(syntax_error(e));
    } catch (const TooDeep&) {
        return runtime_error("nested deeper than a manifest is");
    } catch (const std::exception& e) {  // bad_alloc; nlohmann throws nothing else here
        return runtime_error(std::string("cannot parse: ") + e.what());
    }
    if (!doc.is_object()) return runtime_error("not a JSON object");
    Fields f(doc, "");

    Manifest m;
    if (const auto version = f.number("manifest_version", true); version && *version != Manifest::kVersion)
        f.note("manifest_version " + std::to_string(*version) + " is not supported");
    m.file = f.text("file", true).value_or("");
    m.format = f.text("format", true).value_or("");
    m.size = f.number("size", true).value_or(0);
    m.sha256 = f.text("sha256", true).value_or("");
    m.packets = f.number("packets", true).value_or(0);
    m.first_ns = f.number("first_ns", true).value_or(0);
    m.last_ns = f.number("last_ns", true).value_or(0);
    if (const Json* d = f.object("drops_by_reason")) {
        Fields df(*d, "drops_by_reason: ");
        m.drops = ManifestDrops{df.number("writer_full", true).value_or(0), df.number("write_error", true).value_or(0),
                                df.number("disk_full", true).value_or(0)};
        f.note(df.problem());
        if (const auto total = f.number("drops", false); total && *total != m.drops->total())
            f.note("\"drops\" is not the sum of drops_by_reason");
    } else if (f.number("drops", false)) {
        f.note("\"drops\" without drops_by_reason");
    }
    m.received = f.number("received", false);
    m.filtered = f.number("filtered", false);
    if (const Json* c = f.object("flow_cap")) {
        Fields cf(*c, "flow_cap: ");
        ManifestFlowCap cap;
        cap.bytes = cf.number("bytes", true).value_or(0);
        cap.packets = cf.number("packets", true).value_or(0);
        cap.snaplen_after = cf.number("snaplen_after", true).value_or(0);
        cap.filter = cf.text("filter", true).value_or("");
        cap.cut = cf.number("cut", true).value_or(0);
        cap.dropped = cf.number("dropped", true).value_or(0);
        f.note(cf.problem());
        m.flow_cap = cap;
    }
    if (const Json* d = f.object("dedup")) {
        Fields df(*d, "dedup: ");
        m.dedup = ManifestDedup{df.number("window_us", true).value_or(0), df.number("suppressed", true).value_or(0)};
        f.note(df.problem());
    }
    if (const Json* c = f.object("clock")) {
        Fields cf(*c, "clock: ");
        ManifestClock clock;
        clock.source = cf.text("source", true).value_or("tsc");
        if (clock.source != "port" && clock.source != "tsc") cf.note("\"source\" is not port or tsc");
        clock.port_clock = cf.text("port_clock", false).value_or("");
        clock.sync = cf.text("sync", true).value_or("unknown");
        if (!parse_clock_sync(clock.sync)) cf.note("\"sync\" is not synced, unknown or unsynchronised");
        clock.est_error_ns = cf.number("est_error_ns", true).value_or(0);
        clock.max_error_ns = cf.number("max_error_ns", true).value_or(0);
        clock.steps = cf.number("steps", true).value_or(0);
        clock.status_source = cf.text("status_source", true).value_or("");
        f.note(cf.problem());
        m.clock = clock;
    }
    m.span_start_ns = f.number("span_start_ns", false);
    m.span_end_ns = f.number("span_end_ns", false);
    if (const Json* s = f.object("stream")) {
        Fields sf(*s, "stream: ");
        ManifestStream stream;
        stream.port = sf.text("port", true).value_or("");
        stream.port_id = static_cast<uint16_t>(sf.number("port_id", true, UINT16_MAX).value_or(0));
        stream.queue = static_cast<uint16_t>(sf.number("queue", true, UINT16_MAX).value_or(0));
        f.note(sf.problem());
        m.stream = stream;
    }
    m.run = f.text("run", false).value_or("");
    m.seq = f.number("seq", false);
    m.recovered = f.boolean("recovered").value_or(false);
    m.linecap_version = f.text("linecap_version", false).value_or("");
    if (const Json* c = f.object("compressed")) {
        Fields cf(*c, "compressed: ");
        ManifestCompressed compressed;
        compressed.file = cf.text("file", true).value_or("");
        const std::string format = cf.text("format", true).value_or("");
        compressed.size = cf.number("size", true).value_or(0);
        compressed.sha256 = cf.text("sha256", true).value_or("");
        if (cf.problem().empty() && format != ManifestCompressed::kFormat)
            cf.note("\"format\" is '" + format.substr(0, 16) + "', not " + ManifestCompressed::kFormat);
        if (cf.problem().empty() && !is_hex_digest(compressed.sha256))
            cf.note("\"sha256\" is not 64 lower-case hex digits");
        f.note(cf.problem());
        m.compressed = std::move(compressed);
    }
    if (draft) {
        if (f.problem().empty() && !m.sha256.empty()) f.note("\"sha256\" is set: not a draft");
    } else if (f.problem().empty() && !is_hex_digest(m.sha256)) {
        f.note("\"sha256\" is not 64 lower-case hex digits");
    }
    if (f.problem().empty() && m.format != "pcap" && m.format != "pcapng")
        f.note("\"format\" is '" + m.format.substr(0, 16) + "', not pcap or pcapng");
    if (!f.problem().empty()) return runtime_error(f.problem());
    return m;
}

}  // namespace

Result<Manifest> parse_manifest(std::string_view text) { return parse(text, false); }
Result<Manifest> parse_manifest_draft(std::string_view text) { return parse(text, true); }

IoStatus write_manifest(int dir_fd, const Manifest& manifest, uint64_t* bytes_written) {
    const std::string text = to_json(manifest);
    const IoStatus status = layout::atomic_write(dir_fd, layout::manifest_name(manifest.file),
                                                 {reinterpret_cast<const uint8_t*>(text.data()), text.size()},
                                                 kManifestMode);
    if (status.ok() && bytes_written != nullptr) *bytes_written = text.size();
    return status;
}

namespace {

// `name` in `dir_fd` read as `parser` wants it (a draft: an empty file is none).
ManifestRead read_as(int dir_fd, const std::string& name, bool draft) {
    ManifestRead out;
    const auto fail = [&](ManifestRead::State state, const std::string& problem) {
        out.state = state;
        out.problem = name + ": " + problem;
        return out;
    };
    // O_NONBLOCK: a FIFO planted under the name is refused below, not waited on.
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) {
        if (errno == ENOENT) return out;
        return fail(ManifestRead::State::unreadable, errno == ELOOP ? "a symbolic link" : errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(ManifestRead::State::unreadable, errno_text(errno));
    if (!S_ISREG(st.st_mode)) return fail(ManifestRead::State::unreadable, "not a regular file");
    if (static_cast<uint64_t>(st.st_size) > kMaxManifestBytes)
        return fail(ManifestRead::State::damaged, std::to_string(st.st_size) + " bytes, more than a manifest can be");
    std::string text(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::pread(fd.get(), text.data() + got, text.size() - got, static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ManifestRead::State::unreadable, errno_text(errno));
        if (n == 0) break;  // shrank meanwhile: what is there is parsed
        got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (draft && text.empty()) return out;
    Result<Manifest> m = parse(text, draft);
    if (!m) return fail(ManifestRead::State::damaged, m.error().message);
    out.state = ManifestRead::State::ok;
    out.manifest = std::move(m.value());
    return out;
}

}  // namespace

ManifestRead read_manifest(int dir_fd, std::string_view capture_name) {
    return read_as(dir_fd, layout::manifest_name(capture_name), false);
}

ManifestRead read_manifest_draft(int dir_fd, std::string_view capture_name) {
    return read_as(dir_fd, layout::manifest_pending_name(capture_name), true);
}

}  // namespace linecap
