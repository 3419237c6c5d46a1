#include "api/remote.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <queue>

#include "format/capture_reader.hpp"
#include "format/capture_writer.hpp"
#include "format/pcapng_blocks.hpp"
#include "linecap_build.h"
#include "util/errno_text.hpp"

namespace linecap::api {
namespace {

struct Transfer {
    std::string base;      // as given
    std::string name;      // host:port
    std::string url;       // with the query
    std::string tmp_path;
    int fd = -1;
    CURL* easy = nullptr;
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
    if (t->http_status == 0) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->http_status);
    if (t->http_status != 200) {  // an error body: keep its start for the message
        if (t->body_head.size() < 512) t->body_head.append(data, std::min<size_t>(len, 512 - t->body_head.size()));
        return len;
    }
    size_t done = 0;
    while (done < len) {
        const ssize_t w = ::write(t->fd, data + done, len - done);
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
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return runtime_error("--token-file " + path + ": " + errno_text(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || (st.st_mode & 077)) {
        ::close(fd);
        return runtime_error("--token-file " + path + " is accessible by group or others; chmod 600 it");
    }
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return runtime_error("--token-file " + path + ": empty");
    std::string token(buf, static_cast<size_t>(n));
    token = token.substr(0, token.find_first_of("\r\n"));
    if (token.empty()) return runtime_error("--token-file " + path + ": the first line is empty");
    return token;
}

// One appliance's answer being merged: its reader, and the output interface of each of
// its interfaces (per section: an answer may start a new section, with new ids).
struct Source {
    size_t rank = 0;               // appliance order: ties in time go to the earlier
    const Transfer* transfer = nullptr;
    std::unique_ptr<format::FileSource> file;
    std::unique_ptr<format::CaptureReader> reader;
    format::Record current;
    uint32_t section = 0;
    std::vector<int64_t> output_ids;
};

}  // namespace

Result<RemoteReport> extract_remote(const RemoteOptions& o, int out_fd) {
    RemoteReport report;
    auto error = [&](const std::string& m) {
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
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return runtime_error("curl_global_init failed");
    std::string query;
    {
        CURL* esc = curl_easy_init();
        // Each appliance answers in the output's format: pcapng answers name their
        // interfaces ("<port>:<queue>"), which the merged file keeps.
        Params params = o.params;
        params.emplace_back("format", o.pcapng ? "pcapng" : "pcap");
        for (const auto& [k, v] : params) {
            char* e = curl_easy_escape(esc, v.c_str(), static_cast<int>(v.size()));
            query += (query.empty() ? "" : "&") + k + "=" + (e ? e : "");
            curl_free(e);
        }
        curl_easy_cleanup(esc);
    }
    const char* tmpdir = std::getenv("TMPDIR");
    std::vector<Transfer> transfers(o.urls.size());
    CURLM* multi = curl_multi_init();
    curl_slist* headers = nullptr;
    if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
    for (size_t i = 0; i < o.urls.size(); ++i) {
        Transfer& t = transfers[i];
        t.base = o.urls[i];
        while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
        t.name = host_port(t.base);
        t.url = t.base + "/api/v1/packets" + (query.empty() ? "" : "?" + query);
        t.tmp_path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/linecap-remote.XXXXXX";
        t.fd = ::mkostemp(t.tmp_path.data(), O_CLOEXEC);
        if (t.fd < 0) return runtime_error("temporary file " + t.tmp_path + ": " + errno_text(errno));
        t.easy = curl_easy_init();
        curl_easy_setopt(t.easy, CURLOPT_URL, t.url.c_str());
        curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(t.easy, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(t.easy, CURLOPT_HEADERDATA, &t);
        curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(t.easy, CURLOPT_CONNECTTIMEOUT, static_cast<long>(o.connect_timeout_s));
        curl_easy_setopt(t.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(t.easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_timeout_s));
        curl_easy_setopt(t.easy, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(t.easy, CURLOPT_USERAGENT, "linecap/" LINECAP_VERSION);
        if (headers) curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, headers);
        if (!o.cert.empty()) curl_easy_setopt(t.easy, CURLOPT_SSLCERT, o.cert.c_str());
        if (!o.key.empty()) curl_easy_setopt(t.easy, CURLOPT_SSLKEY, o.key.c_str());
        if (!o.cacert.empty()) curl_easy_setopt(t.easy, CURLOPT_CAINFO, o.cacert.c_str());
        curl_multi_add_handle(multi, t.easy);
    }
    for (int running = 1; running;) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) break;
        if (running) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    for (int left = 0; CURLMsg* m = curl_multi_info_read(multi, &left);) {
        if (m->msg != CURLMSG_DONE) continue;
        for (Transfer& t : transfers) {
            if (t.easy != m->easy_handle) continue;
            curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.http_status);
            if (m->data.result != CURLE_OK && t.error.empty())
                t.error = std::string(curl_easy_strerror(m->data.result)) + " after " + std::to_string(t.bytes) + " bytes";
            else if (t.http_status != 200 && t.error.empty()) {
                std::string body = t.body_head;
                while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
                t.error = "HTTP " + std::to_string(t.http_status) + (body.empty() ? "" : ": " + body);
            } else if (t.error.empty() && t.outcome.empty())
                t.error = "the answer ended without its trailer (cut off)";
        }
    }
    for (Transfer& t : transfers) {
        curl_multi_remove_handle(multi, t.easy);
        curl_easy_cleanup(t.easy);
    }
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);

    // --- merge ---
    std::vector<std::unique_ptr<Source>> sources;
    uint32_t snaplen = 0;
    std::optional<uint32_t> link_field;  // pcap output: the answers', when they agree
    bool link_fields_differ = false;
    for (Transfer& t : transfers) {
        ::close(t.fd);
        if (!t.error.empty()) {
            error(t.base + ": " + t.error + "; its packets are left out");
            ++report.appliances_failed;
            ::unlink(t.tmp_path.c_str());
            continue;
        }
        if (t.outcome != "complete") error(t.base + ": answer " + t.outcome);
        auto f = format::FileSource::open(t.tmp_path);
        ::unlink(t.tmp_path.c_str());  // the open descriptor keeps it readable
        auto header = f ? format::read_header(*f.value()) : Result<format::CaptureHeader>(f.error());
        if (!header) {
            error(t.base + ": its answer is not a capture file: " + header.error().message);
            ++report.appliances_failed;
            continue;
        }
        ++report.appliances_ok;
        auto s = std::make_unique<Source>();
        s->rank = sources.size();
        s->transfer = &t;
        s->file = std::move(f.value());
        s->reader = std::make_unique<format::CaptureReader>(*s->file, header.value());
        if (header->kind == format::FileKind::pcap) {
            snaplen = std::max(snaplen, format::effective_snaplen(header->snaplen));
            if (link_field && *link_field != header->link_field) link_fields_differ = true;
            link_field = header->link_field;
        }
        sources.push_back(std::move(s));
    }
    if (!snaplen) snaplen = pcap::kMaxSnaplen;
    format::FdSink sink(out_fd);
    format::CaptureWriter writer(sink, o.pcapng ? format::FileKind::pcapng : format::FileKind::pcap);
    const uint32_t out_link = link_field && !link_fields_differ ? *link_field : pcap::kLinktypeEthernet;
    if (auto s = writer.begin(snaplen, out_link, "linecap " LINECAP_VERSION " extract --remote"); !s)
        return s.error().context("output");
    // pcapng: one output interface per (appliance, interface of its answer), described
    // before its first packet, named after both, so every packet says where it was captured.
    auto output_interface = [&](Source& s) -> Result<uint32_t> {
        if (s.reader->sections() != s.section) {
            s.section = s.reader->sections();
            s.output_ids.clear();
        }
        const uint32_t in = s.current.interface;
        if (in < s.output_ids.size() && s.output_ids[in] >= 0) return static_cast<uint32_t>(s.output_ids[in]);
        const format::Interface& from = s.reader->interfaces()[in];
        pcapng::InterfaceInfo info;
        info.name = s.transfer->name + (from.name.empty() ? "" : " " + from.name);
        info.description = s.transfer->base + (from.description.empty() ? "" : ": " + from.description);
        info.snaplen = from.snaplen;
        info.link_type = format::link_type(from.link_field);
        auto id = writer.add_interface(info);
        if (!id) return id.error();
        if (s.output_ids.size() <= in) s.output_ids.resize(in + 1, -1);
        s.output_ids[in] = id.value();
        return id;
    };
    auto later = [](const Source* a, const Source* b) {
        return a->current.ts_ns != b->current.ts_ns ? a->current.ts_ns > b->current.ts_ns : a->rank > b->rank;
    };
    std::priority_queue<Source*, std::vector<Source*>, decltype(later)> heap(later);
    auto advance = [&](Source* s) {
        if (s->reader->next(s->current)) return true;
        if (s->reader->failed()) error(s->transfer->base + ": its answer: " + s->reader->error());
        return false;
    };
    for (auto& s : sources)
        if (advance(s.get())) heap.push(s.get());
    while (!heap.empty()) {
        Source* s = heap.top();
        heap.pop();
        uint32_t id = 0;
        if (writer.kind() == format::FileKind::pcapng) {
            auto out_id = output_interface(*s);
            if (!out_id) return out_id.error().context("output");
            id = out_id.value();
        }
        const format::Record& r = s->current;
        if (auto st = writer.write(id, r.ts_ns, r.caplen, r.len, r.data); !st) return st.error().context("output");
        if (advance(s)) heap.push(s);
    }
    if (auto s = writer.flush(); !s) return s.error().context("output");
    report.packets_written = writer.packets();
    return report;
}

}  // namespace linecap::api
