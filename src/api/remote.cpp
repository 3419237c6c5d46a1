#include "api/remote.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "api/remote_merge.hpp"
#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "linecap_build.h"
#include "util/curl_library.hpp"
#include "util/secret_file.hpp"
#include "util/unique_fd.hpp"
#include "util/errno_text.hpp"

namespace linecap::api {
namespace {

// An easy handle's membership of a multi handle: removed when this goes, so that the
// easy handle can be cleaned up after it.
class CurlAdded {
public:
    CurlAdded() = default;
    CurlAdded(CURLM* multi, CURL* easy) : multi_(multi), easy_(easy) {}
    CurlAdded(CurlAdded&& other) noexcept
        : multi_(std::exchange(other.multi_, nullptr)), easy_(std::exchange(other.easy_, nullptr)) {}
    CurlAdded& operator=(CurlAdded&& other) noexcept {
        if (this != &other) {
            remove();
            multi_ = std::exchange(other.multi_, nullptr);
            easy_ = std::exchange(other.easy_, nullptr);
        }
        return *this;
    }
    ~CurlAdded() { remove(); }

private:
    void remove() {
        if (multi_ != nullptr) curl::multi_remove_handle(multi_, easy_);
        multi_ = nullptr;
    }
    CURLM* multi_ = nullptr;
    CURL* easy_ = nullptr;
};

// What all transfers share: the bounds on what they may write together.
struct Budget {
    const RemoteOptions* options = nullptr;
    std::string tmpdir;
    uint64_t total = 0;              // bytes written by all transfers
    uint64_t since_space_check = 0;
    std::string stop_all;            // set: every transfer is cut, saying this
};

struct Transfer {
    std::string base;      // as given
    std::string name;      // host:port
    std::string url;       // with the query
    UniqueFd file;         // the answer, in a file without a name
    CURL* easy = nullptr;  // owned by `handle`
    CurlEasy handle;
    CurlAdded in_multi;    // declared after `handle`: leaves the multi handle first
    Budget* budget = nullptr;
    std::string cut;       // why the client cut the answer ("" = not cut)
    long http_status = 0;
    std::string outcome;   // X-Linecap-Outcome trailer
    std::string body_head; // first bytes of an error body
    uint64_t bytes = 0;
    bool write_failed = false;
    std::string error;     // "" = usable
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    if (t->http_status == 0) curl::easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->http_status);
    if (t->http_status != 200) {  // an error body: keep its start for the message
        if (t->body_head.size() < 512) t->body_head.append(data, std::min<size_t>(len, 512 - t->body_head.size()));
        return len;
    }
    Budget& b = *t->budget;
    const RemoteOptions& o = *b.options;
    if (!b.stop_all.empty()) t->cut = b.stop_all;
    else if (t->bytes + len > o.max_answer_bytes)
        t->cut = "larger than " + std::to_string(o.max_answer_bytes) + " bytes (--max-answer-bytes)";
    else if (b.total + len > o.max_total_bytes)
        t->cut = b.stop_all = "all answers together larger than " + std::to_string(o.max_total_bytes) +
                              " bytes (--max-total-bytes)";
    if (b.since_space_check + len >= (16u << 20) && t->cut.empty()) {
        b.since_space_check = 0;
        struct statvfs vfs {};
        if (::fstatvfs(t->file.get(), &vfs) == 0 &&
            static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < o.min_free_bytes)
            t->cut = b.stop_all = "the temporary directory " + b.tmpdir + " has less than " +
                                  std::to_string(o.min_free_bytes) + " bytes free (--min-free-bytes)";
    }
    if (!t->cut.empty()) return 0;  // curl ends this transfer (CURLE_WRITE_ERROR)
    b.since_space_check += len;
    b.total += len;
    size_t done = 0;
    while (done < len) {
        const ssize_t w = ::write(t->file.get(), data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            t->write_failed = true;
            t->error = "temporary file: " + errno_text(errno);
            return 0;
        }
        done += static_cast<size_t>(w);
    }
    t->bytes += len;
    return len;
}

// Headers and, after the body, the trailer.
size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string line(data, size * n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    constexpr std::string_view kOutcome = "x-linecap-outcome:";
    if (line.size() > kOutcome.size()) {
        std::string lower = line.substr(0, kOutcome.size());
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower == kOutcome) {
            t->outcome = line.substr(kOutcome.size());
            t->outcome.erase(0, t->outcome.find_first_not_of(' '));
        }
    }
    return size * n;
}

std::string host_port(const std::string& url) {
    size_t start = url.find("://");
    start = start == std::string::npos ? 0 : start + 3;
    const size_t end = url.find('/', start);
    return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

Result<std::string> read_token(const std::string& path) {
    auto contents = read_secret_file("--token-file", path, {.max_bytes = 1024, .follow_symlinks = true});
    if (!contents) return runtime_error(contents.error().message);
    if (contents->empty()) return runtime_error("--token-file " + path + ": empty");
    std::string token = std::move(contents.value());
    token = token.substr(0, token.find_first_of("\r\n"));
    if (token.empty()) return runtime_error("--token-file " + path + ": the first line is empty");
    return token;
}

// A file in `dir` that no name points to: O_TMPFILE, or where the file system lacks it,
// a named file unlinked at once.
Result<UniqueFd> nameless_file(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (fd) return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return runtime_error("temporary file in " + dir + ": " + errno_text(errno));
    std::string path = dir + "/.linecap-remote.XXXXXX";
    fd.reset(::mkostemp(path.data(), O_CLOEXEC));
    if (!fd) return runtime_error("temporary file " + path + ": " + errno_text(errno));
    ::unlink(path.c_str());
    return fd;
}

// The query string every appliance is asked, with format= the output's: pcapng answers
// name their interfaces ("<port>:<queue>"), which the merged file keeps.
Result<std::string> query_string(const RemoteOptions& o) {
    CurlEasy escaper(curl::easy_init());
    if (!escaper) return runtime_error("curl_easy_init failed");
    Params params = o.params;
    params.emplace_back("format", o.pcapng ? "pcapng" : "pcap");
    std::string query;
    for (const auto& [k, v] : params) {
        char* e = curl::easy_escape(escaper.get(), v.c_str(), static_cast<int>(v.size()));
        query += (query.empty() ? "" : "&") + k + "=" + (e ? e : "");
        curl::free(e);
    }
    return query;
}

// $TMPDIR (else /tmp), refused when it has less than --min-free-bytes free already.
Result<std::string> temporary_directory(uint64_t min_free_bytes) {
    const char* env = std::getenv("TMPDIR");
    std::string dir = env && *env ? env : "/tmp";
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) != 0) return runtime_error("temporary directory " + dir + ": " + errno_text(errno));
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (free_bytes < min_free_bytes)
        return runtime_error("temporary directory " + dir + ": " + std::to_string(free_bytes) + " bytes free, less than " +
                             std::to_string(min_free_bytes) + " (--min-free-bytes)");
    return dir;
}

// Prepares the transfer of one appliance's answer into a nameless file and adds it to
// `multi`; the Transfer removes it again when it goes.
Status start_transfer(Transfer& t, const std::string& url, const std::string& query, Budget& budget,
                      const curl_slist* headers, CURLM* multi) {
    const RemoteOptions& o = *budget.options;
    t.base = url;
    while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
    t.name = host_port(t.base);
    t.url = t.base + "/api/v1/packets" + (query.empty() ? "" : "?" + query);
    t.budget = &budget;
    auto file = nameless_file(budget.tmpdir);
    if (!file) return file.error();
    t.file = std::move(file.value());
    t.handle.reset(curl::easy_init());
    t.easy = t.handle.get();
    if (!t.easy) return runtime_error("curl_easy_init failed");
    curl::easy_setopt(t.easy, CURLOPT_URL, t.url.c_str());
    curl::easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, on_body);
    curl::easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
    curl::easy_setopt(t.easy, CURLOPT_HEADERFUNCTION, on_header);
    curl::easy_setopt(t.easy, CURLOPT_HEADERDATA, &t);
    curl::easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
    curl::easy_setopt(t.easy, CURLOPT_CONNECTTIMEOUT, static_cast<long>(o.connect_timeout_s));
    curl::easy_setopt(t.easy, CURLOPT_TIMEOUT, static_cast<long>(o.deadline_s));
    curl::easy_setopt(t.easy, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(std::max<uint64_t>(o.min_rate, 1)));
    curl::easy_setopt(t.easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_timeout_s));
    curl::easy_setopt(t.easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl::easy_setopt(t.easy, CURLOPT_USERAGENT, "linecap/" LINECAP_VERSION);
    if (headers) curl::easy_setopt(t.easy, CURLOPT_HTTPHEADER, headers);
    if (!o.cert.empty()) curl::easy_setopt(t.easy, CURLOPT_SSLCERT, o.cert.c_str());
    if (!o.key.empty()) curl::easy_setopt(t.easy, CURLOPT_SSLKEY, o.key.c_str());
    if (!o.cacert.empty()) curl::easy_setopt(t.easy, CURLOPT_CAINFO, o.cacert.c_str());
    if (curl::multi_add_handle(multi, t.easy) != CURLM_OK) return runtime_error("curl_multi_add_handle failed");
    t.in_multi = CurlAdded(multi, t.easy);
    return {};
}

// What became of a finished transfer: cut by the client, failed, or usable.
void judge_transfer(Transfer& t, CURLcode result, const RemoteOptions& o) {
    curl::easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.http_status);
    if (!t.cut.empty() || !t.error.empty()) return;  // said by the callbacks
    if (result == CURLE_OPERATION_TIMEDOUT && t.bytes > 0) {
        double elapsed = 0;
        curl::easy_getinfo(t.easy, CURLINFO_TOTAL_TIME, &elapsed);
        t.cut = elapsed + 1 >= static_cast<double>(o.deadline_s)
                    ? "still running after " + std::to_string(o.deadline_s) + " s (--remote-deadline)"
                    : "slower than " + std::to_string(o.min_rate) + " bytes/s for " +
                          std::to_string(o.stall_timeout_s) + " s (--min-rate, --remote-timeout)";
    } else if (result != CURLE_OK) {
        t.error = std::string(curl::easy_strerror(result)) + " after " + std::to_string(t.bytes) + " bytes";
    } else if (t.http_status != 200) {
        std::string body = t.body_head;
        while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
        t.error = "HTTP " + std::to_string(t.http_status) + (body.empty() ? "" : ": " + body);
    } else if (t.outcome.empty()) {
        t.error = "the answer ended without its trailer (cut off)";
    }
}

// Runs every transfer to its end, at once.
void run_transfers(CURLM* multi, std::vector<Transfer>& transfers, const RemoteOptions& o) {
    for (int running = 1; running;) {
        if (curl::multi_perform(multi, &running) != CURLM_OK) break;
        if (running) curl::multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    for (int left = 0; CURLMsg* m = curl::multi_info_read(multi, &left);) {
        if (m->msg != CURLMSG_DONE) continue;
        for (Transfer& t : transfers)
            if (t.easy == m->easy_handle) judge_transfer(t, m->data.result, o);
    }
}

// The received answers, in appliance order; the problems of the others reported, one line
// each.
std::vector<ReceivedAnswer> received_answers(std::vector<Transfer>& transfers, RemoteReport& report,
                                             const ErrorLine& error) {
    std::vector<ReceivedAnswer> answers;
    for (Transfer& t : transfers) {
        if (!t.error.empty()) {
            error(t.base + ": " + t.error + "; its packets are left out");
            ++report.appliances_failed;
            continue;
        }
        if (!t.cut.empty()) {
            ++report.answers_cut;
            error(t.base + ": answer cut after " + std::to_string(t.bytes) + " bytes: " + t.cut +
                  "; the packets received whole before the cut are kept");
        } else if (t.outcome != "complete") {
            error(t.base + ": answer " + t.outcome);
        }
        // A second descriptor on the nameless file, through /proc (the reader opens a path).
        auto f = format::FileSource::open("/proc/self/fd/" + std::to_string(t.file.get()));
        t.file.reset();
        if (!f) {
            if (!t.cut.empty() && t.bytes == 0) continue;  // said above
            error(t.base + ": its answer is not a capture file: " + f.error().message);
            ++report.appliances_failed;
            continue;
        }
        answers.push_back({t.base, t.name, !t.cut.empty(), std::move(f.value())});
    }
    return answers;
}

}  // namespace

Result<RemoteReport> extract_remote(const RemoteOptions& o, int out_fd) {
    RemoteReport report;
    const ErrorLine error = [&](const std::string& m) {
        report.errors.push_back(m);
        if (o.on_error) o.on_error(m);
    };
    if (o.urls.empty()) return runtime_error("--remote: no URL");
    std::string token;
    if (!o.token_file.empty()) {
        auto t = read_token(o.token_file);
        if (!t) return t.error();
        token = t.value();
    }
    if (auto library = curl::load(); !library) return library.error();
    auto query = query_string(o);
    if (!query) return query.error();
    Budget budget;
    budget.options = &o;
    auto tmpdir = temporary_directory(o.min_free_bytes);
    if (!tmpdir) return tmpdir.error();
    budget.tmpdir = tmpdir.value();
    // Declared before the transfers, which leave it when they go.
    CurlMulti multi(curl::multi_init());
    CurlList headers;
    if (!token.empty()) headers.reset(curl::slist_append(nullptr, ("Authorization: Bearer " + token).c_str()));
    if (!multi || (!token.empty() && !headers)) return runtime_error("curl: out of memory");
    std::vector<Transfer> transfers(o.urls.size());
    for (size_t i = 0; i < o.urls.size(); ++i)
        if (auto s = start_transfer(transfers[i], o.urls[i], query.value(), budget, headers.get(), multi.get()); !s)
            return s.error();
    run_transfers(multi.get(), transfers, o);
    for (Transfer& t : transfers) t.in_multi = {};

    std::vector<ReceivedAnswer> answers = received_answers(transfers, report, error);
    format::FdSink sink(out_fd);
    if (auto s = merge_answers(std::move(answers), o.pcapng ? FileKind::pcapng : FileKind::pcap, sink, report, error);
        !s)
        return s.error();
    return report;
}

}  // namespace linecap::api
