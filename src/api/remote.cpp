#include "api/remote.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <queue>

#include "linecap_build.h"
#include "output/io_status.hpp"
#include "output/pcapng_blocks.hpp"
#include "output/pcapng_format.hpp"
#include "store/pcap_file.hpp"

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

struct Source {
    size_t interface = 0;
    std::unique_ptr<store::PcapFile> file;
    std::unique_ptr<store::RecordReader> reader;
    store::RawRecord current;
};

class Output {
public:
    explicit Output(int fd) : fd_(fd) {}
    Status put(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        buf_.insert(buf_.end(), b, b + n);
        return buf_.size() >= (1u << 20) ? flush() : Status{};
    }
    Status flush() {
        size_t done = 0;
        while (done < buf_.size()) {
            const ssize_t w = ::write(fd_, buf_.data() + done, buf_.size() - done);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) return runtime_error("output: " + errno_text(errno));
            done += static_cast<size_t>(w);
        }
        buf_.clear();
        return {};
    }

private:
    int fd_;
    std::vector<uint8_t> buf_;
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
        for (const auto& [k, v] : o.params) {
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
    Output out(out_fd);
    uint32_t snaplen = 0;
    std::vector<const Transfer*> used;
    for (Transfer& t : transfers) {
        ::close(t.fd);
        if (!t.error.empty()) {
            error(t.base + ": " + t.error + "; its packets are left out");
            ++report.appliances_failed;
            ::unlink(t.tmp_path.c_str());
            continue;
        }
        if (t.outcome != "complete") error(t.base + ": answer " + t.outcome);
        auto f = store::PcapFile::open(t.tmp_path);
        ::unlink(t.tmp_path.c_str());  // the open descriptor keeps it readable
        if (!f) {
            error(t.base + ": its answer is not a pcap: " + f.error().message);
            ++report.appliances_failed;
            continue;
        }
        ++report.appliances_ok;
        auto s = std::make_unique<Source>();
        s->interface = used.size();
        snaplen = std::max(snaplen, f.value()->header().snaplen);
        s->file = std::move(f.value());
        s->reader = std::make_unique<store::RecordReader>(*s->file, s->file->header(), store::kPcapFileHeaderSize,
                                                          s->file->size());
        used.push_back(&t);
        sources.push_back(std::move(s));
    }
    if (!snaplen) snaplen = pcap::kMaxSnaplen;
    if (o.pcapng) {
        const auto shb = pcapng::section_header("linecap " LINECAP_VERSION " extract --remote");
        if (auto s = out.put(shb.data(), shb.size()); !s) return s.error();
        for (const Transfer* t : used) {
            const auto idb = pcapng::interface_block({t->name, t->base, snaplen});
            if (auto s = out.put(idb.data(), idb.size()); !s) return s.error();
        }
    } else {
        const pcap::FileHeader h = pcap::file_header(snaplen);
        if (auto s = out.put(&h, sizeof h); !s) return s.error();
    }
    auto later = [](const Source* a, const Source* b) {
        return a->current.ts_ns != b->current.ts_ns ? a->current.ts_ns > b->current.ts_ns : a->interface > b->interface;
    };
    std::priority_queue<Source*, std::vector<Source*>, decltype(later)> heap(later);
    auto advance = [&](Source* s) {
        if (s->reader->next(s->current)) return true;
        if (s->reader->failed()) error(used[s->interface]->base + ": " + s->reader->error());
        return false;
    };
    for (auto& s : sources)
        if (advance(s.get())) heap.push(s.get());
    std::vector<uint8_t> block;
    while (!heap.empty()) {
        Source* s = heap.top();
        heap.pop();
        const store::RawRecord& r = s->current;
        if (o.pcapng) {
            block.resize(pcapng::record_size(r.caplen));
            pcapng::encode_epb_header(block.data(), r.ts_ns, r.caplen, r.len, static_cast<uint32_t>(s->interface));
            std::memcpy(block.data() + pcapng::kEpbHeaderSize, r.data, r.caplen);
            pcapng::encode_epb_trailer(block.data() + pcapng::kEpbHeaderSize + r.caplen, r.caplen);
        } else {
            block.resize(store::kPcapRecordHeaderSize + r.caplen);
            pcap::encode_record_header(block.data(), r.ts_ns, r.caplen, r.len);
            std::memcpy(block.data() + store::kPcapRecordHeaderSize, r.data, r.caplen);
        }
        if (auto st = out.put(block.data(), block.size()); !st) return st.error();
        ++report.packets_written;
        if (advance(s)) heap.push(s);
    }
    if (auto s = out.flush(); !s) return s.error();
    return report;
}

}  // namespace linecap::api
