#include "output/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "output/unique_fd.hpp"

namespace linecap {
namespace {

constexpr std::string_view kManifestSuffix = ".manifest";
constexpr std::string_view kTempSuffix = ".manifest.tmp";
constexpr size_t kMaxManifestBytes = 1 << 20;
constexpr mode_t kManifestMode = 0640;  // like the capture files it describes

// --- writing --------------------------------------------------------------------------

std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", u);
            out += esc;
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

class ObjectWriter {
public:
    explicit ObjectWriter(std::string indent) : indent_(std::move(indent)) {}
    void raw(std::string_view key, const std::string& value) {
        out_ += first_ ? "" : ",\n";
        out_ += indent_ + "  " + quoted(key) + ": " + value;
        first_ = false;
    }
    void str(std::string_view key, std::string_view value) { raw(key, quoted(value)); }
    void num(std::string_view key, uint64_t value) { raw(key, std::to_string(value)); }
    void boolean(std::string_view key, bool value) { raw(key, value ? "true" : "false"); }
    std::string inline_object(std::initializer_list<std::pair<std::string_view, std::string>> fields) {
        std::string s = "{";
        bool first = true;
        for (const auto& [k, v] : fields) {
            s += first ? "" : ", ";
            s += quoted(k) + ": " + v;
            first = false;
        }
        return s + "}";
    }
    std::string finish() { return "{\n" + out_ + "\n" + indent_ + "}\n"; }

private:
    std::string indent_;
    std::string out_;
    bool first_ = true;
};

// --- a small JSON reader (objects, strings, unsigned integers, true/false/null) -------

struct Json;
using JsonObject = std::map<std::string, Json, std::less<>>;
struct Json {
    std::variant<std::monostate, bool, uint64_t, std::string, std::shared_ptr<JsonObject>, double> v;
};

class Parser {
public:
    explicit Parser(std::string_view text) : s_(text) {}

    Result<Json> document() {
        Json value;
        if (!parse_value(value, 0)) return runtime_error(error_);
        skip_space();
        if (i_ != s_.size()) return runtime_error("unexpected text after the JSON value at byte " + std::to_string(i_));
        return value;
    }

private:
    bool fail(const std::string& what) {
        error_ = what + " at byte " + std::to_string(i_);
        return false;
    }
    void skip_space() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
    }
    bool literal(std::string_view word) {
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }
    bool parse_value(Json& out, int depth) {
        if (depth > 16) return fail("nested too deeply");
        skip_space();
        if (i_ >= s_.size()) return fail("unexpected end");
        const char c = s_[i_];
        if (c == '{') return parse_object(out, depth);
        if (c == '"') {
            std::string text;
            if (!parse_string(text)) return false;
            out.v = std::move(text);
            return true;
        }
        if (literal("true")) return out.v = true, true;
        if (literal("false")) return out.v = false, true;
        if (literal("null")) return out.v = std::monostate{}, true;
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
        if (c == '[') return fail("arrays are not expected in a manifest");
        return fail(std::string("unexpected '") + c + "'");
    }
    bool parse_number(Json& out) {
        const size_t start = i_;
        bool integer = s_[i_] != '-';
        if (s_[i_] == '-') ++i_;
        while (i_ < s_.size() && ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' ||
                                  s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
            if (s_[i_] < '0' || s_[i_] > '9') integer = false;
            ++i_;
        }
        const std::string text(s_.substr(start, i_ - start));
        if (integer) {
            uint64_t v = 0;
            for (const char d : text) {
                const uint64_t digit = static_cast<uint64_t>(d - '0');
                if (v > (UINT64_MAX - digit) / 10) return fail("integer out of range");
                v = v * 10 + digit;
            }
            out.v = v;
            return true;
        }
        char* end = nullptr;
        const double d = std::strtod(text.c_str(), &end);
        if (end == nullptr || *end != '\0') return fail("bad number");
        out.v = d;
        return true;
    }
    bool parse_string(std::string& out) {
        ++i_;  // opening quote
        while (i_ < s_.size()) {
            const char c = s_[i_++];
            if (c == '"') return true;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) break;
            const char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    if (i_ + 4 > s_.size()) return fail("short \\u escape");
                    const unsigned cp = static_cast<unsigned>(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
                    i_ += 4;
                    // Enough for what to_json writes (control characters); others as UTF-8.
                    if (cp < 0x80) {
                        out += static_cast<char>(cp);
                    } else if (cp < 0x800) {
                        out += static_cast<char>(0xc0 | (cp >> 6));
                        out += static_cast<char>(0x80 | (cp & 0x3f));
                    } else {
                        out += static_cast<char>(0xe0 | (cp >> 12));
                        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
                        out += static_cast<char>(0x80 | (cp & 0x3f));
                    }
                    break;
                }
                default: return fail("bad escape");
            }
        }
        return fail("unterminated string");
    }
    bool parse_object(Json& out, int depth) {
        ++i_;
        auto object = std::make_shared<JsonObject>();
        skip_space();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            out.v = object;
            return true;
        }
        while (true) {
            skip_space();
            if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a key");
            std::string key;
            if (!parse_string(key)) return false;
            skip_space();
            if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':'");
            ++i_;
            Json value;
            if (!parse_value(value, depth + 1)) return false;
            (*object)[key] = std::move(value);
            skip_space();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < s_.size() && s_[i_] == '}') {
                ++i_;
                out.v = object;
                return true;
            }
            return fail("expected ',' or '}'");
        }
    }

    std::string_view s_;
    size_t i_ = 0;
    std::string error_;
};

// Typed access to an object's fields; the first problem is kept.
class Fields {
public:
    explicit Fields(const JsonObject& o) : o_(o) {}
    const std::string& problem() const { return problem_; }

    const Json* find(std::string_view key) const {
        const auto it = o_.find(key);
        if (it == o_.end() || std::holds_alternative<std::monostate>(it->second.v)) return nullptr;
        return &it->second;
    }
    std::optional<uint64_t> number(std::string_view key, bool required) {
        const Json* j = find(key);
        if (j == nullptr) return missing(key, required), std::nullopt;
        if (const auto* v = std::get_if<uint64_t>(&j->v)) return *v;
        return wrong(key, "an unsigned integer"), std::nullopt;
    }
    std::optional<std::string> text(std::string_view key, bool required) {
        const Json* j = find(key);
        if (j == nullptr) return missing(key, required), std::nullopt;
        if (const auto* v = std::get_if<std::string>(&j->v)) return *v;
        return wrong(key, "a string"), std::nullopt;
    }
    std::optional<bool> boolean(std::string_view key) {
        const Json* j = find(key);
        if (j == nullptr) return std::nullopt;
        if (const auto* v = std::get_if<bool>(&j->v)) return *v;
        return wrong(key, "true or false"), std::nullopt;
    }
    const JsonObject* object(std::string_view key) {
        const Json* j = find(key);
        if (j == nullptr) return nullptr;
        if (const auto* v = std::get_if<std::shared_ptr<JsonObject>>(&j->v)) return v->get();
        return wrong(key, "an object"), nullptr;
    }
    void note(const std::string& problem) {
        if (problem_.empty()) problem_ = problem;
    }

private:
    void missing(std::string_view key, bool required) {
        if (required) note("\"" + std::string(key) + "\" is missing");
    }
    void wrong(std::string_view key, const char* expected) {
        note("\"" + std::string(key) + "\" is not " + expected);
    }
    const JsonObject& o_;
    std::string problem_;
};

}  // namespace

std::string manifest_name(std::string_view capture_name) {
    std::string name(capture_name);
    name.append(kManifestSuffix);
    return name;
}

std::optional<std::string> capture_name_of_manifest(std::string_view name) {
    if (name.size() <= kManifestSuffix.size() || !name.ends_with(kManifestSuffix) || name.starts_with("."))
        return std::nullopt;
    return std::string(name.substr(0, name.size() - kManifestSuffix.size()));
}

std::string manifest_temp_name(std::string_view capture_name) {
    std::string name(".");
    name.append(capture_name).append(kTempSuffix);
    return name;
}

bool is_manifest_temp_name(std::string_view name) {
    return name.size() > 1 + kTempSuffix.size() && name.starts_with(".") && name.ends_with(kTempSuffix);
}

std::string format_utc_ns(uint64_t ns) {
    const time_t seconds = static_cast<time_t>(ns / 1000000000u);
    struct tm utc {};
    gmtime_r(&seconds, &utc);
    char text[64];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09lluZ", static_cast<unsigned long long>(ns % 1000000000u));
    return std::string(text, n) + frac;
}

std::string to_json(const Manifest& m) {
    ObjectWriter w("");
    w.num("manifest_version", Manifest::kVersion);
    w.str("file", m.file);
    w.str("format", m.format);
    w.num("size", m.size);
    w.str("sha256", m.sha256);
    w.num("packets", m.packets);
    w.num("first_ns", m.first_ns);
    w.num("last_ns", m.last_ns);
    w.str("first_time", format_utc_ns(m.first_ns));
    w.str("last_time", format_utc_ns(m.last_ns));
    if (m.drops) {
        w.num("drops", m.drops->total());
        w.raw("drops_by_reason", w.inline_object({{"writer_full", std::to_string(m.drops->writer_full)},
                                                  {"write_error", std::to_string(m.drops->write_error)},
                                                  {"disk_full", std::to_string(m.drops->disk_full)}}));
    }
    if (m.received) w.num("received", *m.received);
    if (m.filtered) w.num("filtered", *m.filtered);
    if (m.span_start_ns) w.num("span_start_ns", *m.span_start_ns);
    if (m.span_end_ns) w.num("span_end_ns", *m.span_end_ns);
    if (m.stream)
        w.raw("stream", w.inline_object({{"port", quoted(m.stream->port)},
                                         {"port_id", std::to_string(m.stream->port_id)},
                                         {"queue", std::to_string(m.stream->queue)}}));
    if (!m.run.empty()) w.str("run", m.run);
    if (m.seq) w.num("seq", *m.seq);
    w.boolean("recovered", m.recovered);
    w.str("linecap_version", m.linecap_version);
    return w.finish();
}

Result<Manifest> parse_manifest(std::string_view json) {
    Result<Json> doc = Parser(json).document();
    if (!doc) return doc.error();
    const auto* root = std::get_if<std::shared_ptr<JsonObject>>(&doc->v);
    if (root == nullptr) return runtime_error("not a JSON object");
    Fields f(**root);

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
    if (const JsonObject* d = f.object("drops_by_reason")) {
        Fields df(*d);
        m.drops = ManifestDrops{df.number("writer_full", true).value_or(0), df.number("write_error", true).value_or(0),
                                df.number("disk_full", true).value_or(0)};
        if (!df.problem().empty()) f.note("drops_by_reason: " + df.problem());
        if (const auto total = f.number("drops", false); total && *total != m.drops->total())
            f.note("\"drops\" is not the sum of drops_by_reason");
    }
    m.received = f.number("received", false);
    m.filtered = f.number("filtered", false);
    m.span_start_ns = f.number("span_start_ns", false);
    m.span_end_ns = f.number("span_end_ns", false);
    if (const JsonObject* s = f.object("stream")) {
        Fields sf(*s);
        ManifestStream stream;
        stream.port = sf.text("port", true).value_or("");
        stream.port_id = static_cast<uint16_t>(sf.number("port_id", true).value_or(0));
        stream.queue = static_cast<uint16_t>(sf.number("queue", true).value_or(0));
        if (!sf.problem().empty()) f.note("stream: " + sf.problem());
        m.stream = stream;
    }
    m.run = f.text("run", false).value_or("");
    m.seq = f.number("seq", false);
    m.recovered = f.boolean("recovered").value_or(false);
    m.linecap_version = f.text("linecap_version", false).value_or("");
    if (!f.problem().empty()) return runtime_error(f.problem());
    if (m.sha256.size() != 64) return runtime_error("\"sha256\" is not 64 hex digits");
    return m;
}

IoStatus write_manifest(int dir_fd, const Manifest& manifest, bool durable, uint64_t* bytes_written) {
    const std::string text = to_json(manifest);
    const std::string temp = manifest_temp_name(manifest.file);
    const std::string final_name = manifest_name(manifest.file);

    // O_TRUNC rather than O_EXCL: a temporary left by a crash is simply rewritten.
    UniqueFd fd(::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kManifestMode));
    if (!fd) return IoStatus::failure("create manifest", errno);
    const auto fail = [&](const char* what, int error) {
        fd.reset();
        ::unlinkat(dir_fd, temp.c_str(), 0);
        return IoStatus::failure(what, error);
    };
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail("write manifest", n < 0 ? errno : EIO);
        done += static_cast<size_t>(n);
    }
    if (durable && ::fsync(fd.get()) != 0) return fail("fsync manifest", errno);
    fd.reset();
    if (::renameat(dir_fd, temp.c_str(), dir_fd, final_name.c_str()) != 0) return fail("rename manifest", errno);
    if (durable && ::fsync(dir_fd) != 0) return IoStatus::failure("fsync directory", errno);
    if (bytes_written != nullptr) *bytes_written = text.size();
    return {};
}

Result<Manifest> read_manifest(int dir_fd, const std::string& capture_name) {
    const std::string name = manifest_name(capture_name);
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return runtime_error(name + ": " + errno_text(errno));
    std::string text;
    char buffer[16384];
    while (text.size() <= kMaxManifestBytes) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return runtime_error(name + ": " + errno_text(errno));
        if (n == 0) break;
        text.append(buffer, static_cast<size_t>(n));
    }
    if (text.size() > kMaxManifestBytes) return runtime_error(name + ": larger than a manifest can be");
    Result<Manifest> m = parse_manifest(text);
    if (!m) return m.error().context(name);
    return m;
}

}  // namespace linecap
