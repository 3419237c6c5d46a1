#include "api/server.hpp"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <httplib.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/access.hpp"
#include "api/query.hpp"
#include "api/page.hpp"
#include "api/status.hpp"
#include "output/idle_priority.hpp"
#include "output/layout.hpp"
#include "output/manifest.hpp"
#include "output/scrub.hpp"
#include "output/unique_fd.hpp"
#include "store/catalog.hpp"
#include "store/extract.hpp"
#include "store/index_format.hpp"
#include "store/time_spec.hpp"
#include "util/errno_text.hpp"

namespace linecap::api {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t wall_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

std::string json_error(const std::string& message) {
    return nlohmann::json({{"error", message}}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// How many packet queries run; a Slot holds one place for its lifetime.
class Slots {
public:
    explicit Slots(unsigned limit) : limit_(limit) {}
    bool try_take() {
        unsigned n = used_.load();
        do {
            if (n >= limit_) return false;
        } while (!used_.compare_exchange_weak(n, n + 1));
        return true;
    }
    void give_back() { used_.fetch_sub(1); }
    unsigned used() const { return used_.load(); }
    unsigned limit() const { return limit_; }

private:
    const unsigned limit_;
    std::atomic<unsigned> used_{0};
};

// One streaming answer: extract() on its own thread writes the pcap into a pipe; the
// HTTP thread reads it and sends chunks. Shared by the content provider and the
// releaser httplib calls when the response is done with (also after a disconnect).
struct Answer {
    int read_fd = -1;
    std::thread worker;
    std::atomic<bool> stop{false};
    Clock::time_point deadline;
    std::atomic<bool> timed_out{false};
    // Written by the worker before it closes its end of the pipe.
    bool finished = false;
    std::string error;            // query-level failure (nothing usable written)
    store::ExtractReport report;
    // HTTP side.
    uint64_t body_bytes = 0;
    bool client_gone = false;
    bool ended = false;           // trailer sent
    AuditRecord audit;
    Clock::time_point started;
    Slots* slots = nullptr;

    ~Answer() {
        if (read_fd >= 0) ::close(read_fd);
    }
    void join() {
        stop = true;
        if (read_fd >= 0) {  // a worker blocked in write() gets EPIPE
            ::close(read_fd);
            read_fd = -1;
        }
        if (worker.joinable()) worker.join();
    }
    std::string outcome() const {
        if (client_gone) return "client disconnected (" + std::to_string(body_bytes) + " bytes sent before)";
        if (!error.empty()) return "error: " + error;
        std::string o;
        if (report.ended_early == "max_bytes") o = "truncated: max_bytes";
        else if (timed_out) o = "truncated: time limit";
        else if (report.ended_early == "stopped") o = "stopped";
        else o = "complete";
        if (!report.errors.empty()) o += "; " + std::to_string(report.errors.size()) + " file error(s): " + report.errors.front();
        // As `linecap extract` exits 3 for them: files whose bytes may not be what was
        // captured (marked damaged by the scrub, changed after indexing) were read.
        if (!report.concerns.empty())
            o += "; integrity: " + std::to_string(report.concerns.size()) + " file(s) may not be as captured: " +
                 report.concerns.front().path + ": " + report.concerns.front().reason;
        return o;
    }
};

}  // namespace

struct ApiServer::Impl {
    Config config;
    ListenAddress address;
    bool tls = false;
    std::optional<TokenTable> tokens;
    std::unique_ptr<AuditLog> audit;
    std::unique_ptr<httplib::Server> http;
    std::unique_ptr<Slots> slots;
    std::unique_ptr<StatusSource> status;
    int port = 0;
    std::string setup_error;

    std::optional<std::string> identify(const httplib::Request& req) const {
        if (tls && req.ssl) {
            if (X509* cert = SSL_get1_peer_certificate(req.ssl)) {
                std::optional<std::string> who;
                if (SSL_get_verify_result(req.ssl) == X509_V_OK) {
                    char subject[512] = {};
                    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
                    who = std::string("cert:") + subject;
                }
                X509_free(cert);
                if (who) return who;
            }
        }
        const std::string auth = req.get_header_value("Authorization");
        if (tokens && auth.starts_with("Bearer ")) {
            if (auto name = tokens->name_for(std::string_view(auth).substr(7))) return "token:" + *name;
            return std::nullopt;
        }
        if (config.api.unauthenticated == "loopback") return "unauthenticated";
        return std::nullopt;
    }

    AuditRecord begin_audit(const httplib::Request& req) const {
        AuditRecord a;
        a.start_ns = wall_ns();
        a.peer = req.remote_addr + ":" + std::to_string(req.remote_port);
        a.method = req.method;
        a.target = req.target.size() > 4096 ? req.target.substr(0, 4096) + "..." : req.target;
        a.who = "-";
        return a;
    }

    void finish(AuditRecord a, Clock::time_point started, int status, uint64_t bytes, const std::string& outcome) {
        a.status = status;
        a.bytes = bytes;
        a.outcome = outcome;
        a.seconds = std::chrono::duration<double>(Clock::now() - started).count();
        audit->write(a);
    }

    void reply(const httplib::Request& req, httplib::Response& res, int status, const std::string& body,
               const char* type, const std::string& outcome, AuditRecord a, Clock::time_point started) {
        res.status = status;
        res.set_content(body, type);
        finish(std::move(a), started, status, body.size(), outcome);
        (void)req;
    }

    store::ExtractOptions extract_options(const PacketQuery& q) const {
        store::ExtractOptions o;
        o.directory = config.output.directory;
        o.file_template = config.output.file_template;
        o.from_ns = q.from_ns;
        o.to_ns = q.to_ns;
        o.filter = q.filter;
        o.community_id = q.community_id;
        o.output_format = q.format;
        o.max_bytes = q.max_bytes ? std::min(q.max_bytes, config.api.max_bytes) : config.api.max_bytes;
        return o;
    }

    void handle_packets(const httplib::Request& req, httplib::Response& res, bool size_only);
    void handle_files(const httplib::Request& req, httplib::Response& res);
    void install_routes();
};

ApiServer::ApiServer() : impl_(std::make_unique<Impl>()) {}
ApiServer::~ApiServer() = default;

void ApiServer::Impl::handle_packets(const httplib::Request& req, httplib::Response& res, bool size_only) {
    const auto started = Clock::now();
    AuditRecord a = begin_audit(req);
    a.who = *identify(req);  // the pre-routing handler refused the unknown
    auto params = split_query_string(req.target.find('?') == std::string::npos
                                         ? std::string()
                                         : req.target.substr(req.target.find('?') + 1));
    Result<PacketQuery> q = params ? parse_query(QueryKind::packets, params.value()) : Result<PacketQuery>(params.error());
    if (!q) return reply(req, res, 400, json_error(q.error().message), "application/json", "refused: " + q.error().message, a, started);
    if (!slots->try_take()) {
        res.set_header("Retry-After", "5");
        return reply(req, res, 503,
                     json_error("busy: " + std::to_string(slots->limit()) + " queries are running (api.max_queries)"),
                     "application/json", "refused: busy", a, started);
    }
    store::ExtractOptions o = extract_options(q.value());
    const auto deadline = started + std::chrono::seconds(config.api.max_duration_s);

    if (size_only) {
        std::atomic<bool> timed_out{false};
        o.should_stop = [&] { return Clock::now() > deadline && (timed_out = true); };
        const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
        Result<store::ExtractReport> r = runtime_error("/dev/null: " + errno_text(errno));
        if (null_fd >= 0) {  // on this HTTP thread, idle like every thread of serve
            r = store::extract(o, null_fd);
            ::close(null_fd);
        }
        slots->give_back();
        if (!r) return reply(req, res, 400, json_error(r.error().message), "application/json", "error: " + r.error().message, a, started);
        nlohmann::ordered_json j;
        j["packets"] = r->packets_written;
        j["bytes"] = r->bytes_written;
        j["truncated"] = r->ended_early == "max_bytes" ? "max_bytes" : (timed_out ? "time limit" : "");
        j["max_bytes"] = o.max_bytes;
        j["files_selected"] = r->files_selected;
        j["files_indexed"] = r->files_indexed;
        j["files_scanned"] = r->files_scanned;
        j["bytes_read"] = r->bytes_read;
        j["errors"] = r->errors;
        nlohmann::ordered_json concerns = nlohmann::ordered_json::array();
        for (const store::FileConcern& c : r->concerns) concerns.push_back({{"file", c.path}, {"reason", c.reason}});
        j["integrity"] = std::move(concerns);
        a.packets = r->packets_written;
        return reply(req, res, 200, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json", "size computed", a, started);
    }

    auto answer = std::make_shared<Answer>();
    answer->audit = a;
    answer->started = started;
    answer->deadline = deadline;
    answer->slots = slots.get();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        slots->give_back();
        return reply(req, res, 500, json_error("pipe: " + errno_text(errno)), "application/json", "error: pipe", a, started);
    }
    (void)::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);  // fewer wake-ups; a smaller pipe only costs speed
    answer->read_fd = fds[0];
    Answer* raw = answer.get();
    o.should_stop = [raw] {
        if (raw->stop.load(std::memory_order_relaxed)) return true;
        if (Clock::now() > raw->deadline) return raw->timed_out = true;
        return false;
    };
    answer->worker = std::thread([raw, o = std::move(o), wfd = fds[1]] {
        auto r = store::extract(o, wfd);
        if (r) raw->report = std::move(r.value());
        else raw->error = r.error().message;
        raw->finished = true;  // published by the close below (the reader sees EOF after it)
        ::close(wfd);
    });

    // Wait for the first bytes or the end: a query that fails before writing anything
    // (store unreadable) still gets an error status instead of an empty 200.
    pollfd p{answer->read_fd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    int avail = 0;
    if (::ioctl(answer->read_fd, FIONREAD, &avail) == 0 && avail == 0) {
        answer->join();
        answer->slots->give_back();
        const std::string m = answer->error.empty() ? "no output" : answer->error;
        // A limit below the format's file header is the request's fault, as is a filter.
        const int status = m.starts_with("max_bytes ") ? 400 : 500;
        return reply(req, res, status, json_error(m), "application/json", "error: " + m, answer->audit, started);
    }

    const std::string from = store::format_time(q->from_ns), to = q->to_ns == UINT64_MAX ? "end" : store::format_time(q->to_ns);
    res.status = 200;
    const bool pcapng = q->format == format::FileKind::pcapng;
    res.set_header("Content-Disposition", pcapng ? "attachment; filename=\"linecap.pcapng\""
                                                 : "attachment; filename=\"linecap.pcap\"");
    res.set_header("X-Linecap-Query", "from=" + from + " to=" + to);
    res.set_header("X-Linecap-Max-Bytes", std::to_string(o.max_bytes));
    // Chunked by hand: only that lets the answer end with a trailer saying whether it is
    // complete (httplib 0.11's own chunked mode has no trailers).
    res.set_header("Transfer-Encoding", "chunked");
    res.set_header("Trailer", "X-Linecap-Outcome, X-Linecap-Packets");
    res.set_content_provider(
        pcapng ? "application/x-pcapng" : "application/vnd.tcpdump.pcap",
        [answer](size_t, httplib::DataSink& sink) {
            static thread_local std::vector<char> buf(64 << 10);
            char head[16];
            const ssize_t n = ::read(answer->read_fd, buf.data(), buf.size());
            if (n > 0) {
                const int hl = std::snprintf(head, sizeof head, "%zx\r\n", static_cast<size_t>(n));
                if (!sink.write(head, static_cast<size_t>(hl)) || !sink.write(buf.data(), static_cast<size_t>(n)) ||
                    !sink.write("\r\n", 2)) {
                    answer->client_gone = true;
                    return false;
                }
                answer->body_bytes += static_cast<uint64_t>(n);
                return true;
            }
            if (n < 0 && errno == EINTR) return true;
            answer->join();  // EOF: the worker is done
            std::string outcome = answer->outcome();
            for (char& c : outcome)  // a header line: file names and messages must not break it
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
            const std::string trailer = "0\r\nX-Linecap-Outcome: " + outcome +
                                        "\r\nX-Linecap-Packets: " + std::to_string(answer->report.packets_written) +
                                        "\r\n\r\n";
            answer->ended = true;
            if (!sink.write(trailer.data(), trailer.size())) answer->client_gone = true;
            sink.done();
            return true;
        },
        [answer, this](bool) {
            answer->join();
            answer->slots->give_back();
            if (!answer->ended) answer->client_gone = true;
            answer->audit.packets = answer->report.packets_written;
            finish(answer->audit, answer->started, 200, answer->body_bytes, answer->outcome());
        });
}

void ApiServer::Impl::handle_files(const httplib::Request& req, httplib::Response& res) {
    const auto started = Clock::now();
    AuditRecord a = begin_audit(req);
    a.who = *identify(req);
    auto params = split_query_string(req.target.find('?') == std::string::npos
                                         ? std::string()
                                         : req.target.substr(req.target.find('?') + 1));
    Result<PacketQuery> q = params ? parse_query(QueryKind::files, params.value()) : Result<PacketQuery>(params.error());
    if (!q) return reply(req, res, 400, json_error(q.error().message), "application/json", "refused: " + q.error().message, a, started);
    auto tmpl = FileTemplate::compile(config.output.file_template);
    auto catalog = tmpl ? store::scan_catalog(config.output.directory, tmpl.value()) : Result<store::Catalog>(tmpl.error());
    if (!catalog) return reply(req, res, 500, json_error(catalog.error().message), "application/json", "error: " + catalog.error().message, a, started);
    const UniqueFd dir_fd(::open(config.output.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : catalog->files) {
        if (f.upper_ns <= q->from_ns || f.lower_ns >= q->to_ns) continue;
        nlohmann::ordered_json j;
        j["name"] = f.name;
        j["stream"] = f.stream;
        j["format"] = f.pcapng ? "pcapng" : "pcap";
        j["bytes"] = f.size;
        j["first_packet_from_name"] = f.parsed && f.parsed->has_time ? store::format_time(f.lower_ns) : "";
        j["span_upper_bound"] = f.upper_ns == UINT64_MAX ? "" : store::format_time(f.upper_ns);
        const store::LoadedIndex li = store::load_index(f.path, f.size, f.mtime_ns);
        j["index"] = li.state == store::IndexState::valid ? "valid"
                     : li.state == store::IndexState::missing ? "missing"
                     : li.state == store::IndexState::stale ? "stale" : "damaged";
        if (li.state == store::IndexState::valid) {
            j["packets"] = li.index.header().packets;
            if (li.index.header().packets) {
                j["first_packet"] = store::format_time(li.index.header().min_ts_ns);
                j["last_packet"] = store::format_time(li.index.header().max_ts_ns);
            }
        }
        // The manifest's state, and what it says about the file's completeness.
        const ManifestRead m = dir_fd ? read_manifest(dir_fd.get(), f.name) : ManifestRead{};
        j["manifest"] = m.state == ManifestRead::State::ok          ? "ok"
                        : m.state == ManifestRead::State::missing   ? "missing"
                        : m.state == ManifestRead::State::unreadable ? "unreadable"
                                                                     : "damaged";
        if (!m.problem.empty()) j["manifest_problem"] = m.problem;
        if (m.ok()) {
            j["sha256"] = m.manifest.sha256;
            if (m.manifest.drops) j["drops"] = m.manifest.drops->total();
            if (m.manifest.clock) j["clock"] = nlohmann::ordered_json::parse(to_json(*m.manifest.clock));
        }
        j["clock_sync"] = m.clock_sync();  // what extract --require-synced goes by
        if (const auto marker = dir_fd ? read_damaged_marker(dir_fd.get(), f.name) : std::nullopt)
            j["damaged"] = marker->empty() ? "marked damaged" : *marker;
        files.push_back(std::move(j));
    }
    nlohmann::ordered_json out;
    out["directory"] = config.output.directory;
    out["in_progress"] = catalog->in_progress;
    out["files"] = std::move(files);
    reply(req, res, 200, out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json", "complete", a, started);
}

void ApiServer::Impl::install_routes() {
    http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        size_t request_bytes = req.method.size() + req.target.size() + 12;
        for (const auto& [k, v] : req.headers) request_bytes += k.size() + v.size() + 4;
        const auto started = Clock::now();
        if (request_bytes > config.api.max_request_bytes) {
            reply(req, res, 431, json_error("request larger than api.max_request_bytes"), "application/json",
                  "refused: request too large", begin_audit(req), started);
            return httplib::Server::HandlerResponse::Handled;
        }
        if (req.method != "GET") {
            reply(req, res, 405, json_error("only GET"), "application/json", "refused: method", begin_audit(req), started);
            return httplib::Server::HandlerResponse::Handled;
        }
        // The page is public: it holds no data, and a browser that authenticates with a
        // token can only send it from the page's own script.
        if (!identify(req) && req.path != "/") {
            res.set_header("WWW-Authenticate", tls && !config.api.tls_client_ca.empty() && !tokens
                                                   ? "Mutual"
                                                   : "Bearer realm=\"linecap\"");
            const bool had = req.has_header("Authorization");
            reply(req, res, 401, json_error(had ? "invalid credentials" : "authentication required"),
                  "application/json", had ? "refused: invalid credentials" : "refused: no credentials",
                  begin_audit(req), started);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    http->Get("/api/v1/packets", [this](const httplib::Request& req, httplib::Response& res) { handle_packets(req, res, false); });
    http->Get("/api/v1/size", [this](const httplib::Request& req, httplib::Response& res) { handle_packets(req, res, true); });
    http->Get("/api/v1/files", [this](const httplib::Request& req, httplib::Response& res) { handle_files(req, res); });
    http->Get("/api/v1/status", [this](const httplib::Request& req, httplib::Response& res) {
        const auto started = Clock::now();
        AuditRecord a = begin_audit(req);
        a.who = *identify(req);
        if (req.target.find('?') != std::string::npos && req.target.size() > req.target.find('?') + 1)
            return reply(req, res, 400, json_error("status takes no parameters"), "application/json", "refused: parameters", a, started);
        const std::string body = status->json(slots->used(), slots->limit());
        reply(req, res, 200, body, "application/json", "complete", a, started);
    });
    http->Get("/", [this](const httplib::Request& req, httplib::Response& res) {
        const auto started = Clock::now();
        AuditRecord a = begin_audit(req);
        a.who = identify(req).value_or("-");
        res.set_header("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'");
        reply(req, res, 200, page_html(), "text/html; charset=utf-8", "complete", a, started);
    });
    http->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (res.status != 404) return;
        res.set_content(json_error("no such endpoint: " + req.path), "application/json");
        AuditRecord a = begin_audit(req);
        if (auto who = identify(req)) a.who = *who;
        finish(a, Clock::now(), 404, 0, "refused: no such endpoint");
    });
}

Result<std::unique_ptr<ApiServer>> ApiServer::create(const Config& config) {
    std::unique_ptr<ApiServer> server(new ApiServer());
    Impl& s = *server->impl_;
    s.config = config;
    const ApiConfig& api = config.api;
    if (api.listen.empty()) return config_error("api.listen is not set: nothing to serve (see config/linecap.yaml)");
    auto address = parse_listen_address(api.listen);
    if (!address) return config_error("api.listen: " + address.error().message);
    s.address = address.value();
    const bool loopback = is_loopback(s.address.host);
    s.tls = !api.tls_cert.empty();
    if (!s.tls && !loopback)
        return config_error("api.listen " + api.listen +
                            " is not a loopback address: set api.tls_cert and api.tls_key (plain HTTP only on loopback)");
    if (!api.unauthenticated.empty() && !loopback)
        return config_error("api.unauthenticated: loopback is allowed only with a loopback api.listen, not " + api.listen);
    if (!api.tls_client_ca.empty() && !s.tls) return config_error("api.tls_client_ca needs api.tls_cert and api.tls_key");
    if (!api.tokens_file.empty()) {
        auto t = TokenTable::load(api.tokens_file);
        if (!t) return t.error();
        s.tokens = std::move(t.value());
    }
    if (api.tls_client_ca.empty() && !s.tokens && api.unauthenticated.empty())
        return config_error("api: no way to authenticate: set api.tls_client_ca, api.tokens_file, or (loopback only) "
                            "api.unauthenticated: loopback");
    auto audit = AuditLog::open(api.audit_log);
    if (!audit) return audit.error();
    s.audit = std::move(audit.value());

    if (s.tls) {
        const bool require_cert = !s.tokens;
        s.http = std::make_unique<httplib::SSLServer>([&s, &api, require_cert](SSL_CTX& ctx) {
            SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
            if (SSL_CTX_use_certificate_chain_file(&ctx, api.tls_cert.c_str()) != 1) {
                s.setup_error = "api.tls_cert " + api.tls_cert + ": cannot load the certificate chain";
                return false;
            }
            if (SSL_CTX_use_PrivateKey_file(&ctx, api.tls_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
                SSL_CTX_check_private_key(&ctx) != 1) {
                s.setup_error = "api.tls_key " + api.tls_key + ": cannot load the key, or it does not match api.tls_cert";
                return false;
            }
            if (!api.tls_client_ca.empty()) {
                STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(api.tls_client_ca.c_str());
                if (!names || SSL_CTX_load_verify_locations(&ctx, api.tls_client_ca.c_str(), nullptr) != 1) {
                    if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
                    s.setup_error = "api.tls_client_ca " + api.tls_client_ca + ": cannot load the CA bundle";
                    return false;
                }
                SSL_CTX_set_client_CA_list(&ctx, names);
                // With tokens as well, a client may come without a certificate; one that
                // presents a certificate must present a valid one either way.
                SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | (require_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), nullptr);
            }
            return true;
        });
        if (!s.http->is_valid())
            return config_error(s.setup_error.empty() ? "api: TLS setup failed" : s.setup_error);
    } else {
        s.http = std::make_unique<httplib::Server>();
    }
    s.slots = std::make_unique<Slots>(api.max_queries);
    s.status = std::make_unique<StatusSource>(config);
    const unsigned threads = api.threads;
    s.http->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    s.http->set_read_timeout(static_cast<time_t>(api.client_timeout_s));
    s.http->set_write_timeout(static_cast<time_t>(api.client_timeout_s));
    s.http->set_keep_alive_timeout(5);
    s.http->set_keep_alive_max_count(100);
    s.http->set_payload_max_length(api.max_request_bytes);
    s.install_routes();
    const std::string host = s.address.host == "localhost" ? "127.0.0.1" : s.address.host;
    if (s.address.port == 0) {
        s.port = s.http->bind_to_any_port(host);
        if (s.port <= 0) return config_error("api.listen " + api.listen + ": cannot bind: " + errno_text(errno));
    } else {
        if (!s.http->bind_to_port(host, s.address.port))
            return config_error("api.listen " + api.listen + ": cannot bind: " + errno_text(errno));
        s.port = s.address.port;
    }
    return server;
}

Status ApiServer::run() {
    if (!impl_->http->listen_after_bind()) return runtime_error("api: the listener stopped with an error");
    return {};
}

void ApiServer::stop() { impl_->http->stop(); }

std::string ApiServer::url() const {
    const std::string host = impl_->address.host.find(':') != std::string::npos ? "[" + impl_->address.host + "]"
                                                                                 : impl_->address.host;
    return std::string(impl_->tls ? "https://" : "http://") + host + ":" + std::to_string(impl_->port);
}

int serve_main(const std::string& config_path, const std::string& dir_override, const std::string& template_override) {
    auto config = load_config(config_path);
    if (!config) {
        std::fprintf(stderr, "linecap serve: %s\n", config.error().message.c_str());
        return 78;
    }
    if (!dir_override.empty()) config->output.directory = dir_override;
    if (!template_override.empty()) config->output.file_template = template_override;
    // Everything this process does is for people asking questions, never for capture:
    // idle CPU and I/O class for this thread and every thread it starts.
    lower_to_idle_priority("linecap serve");
    // Signals are taken by one thread (sigwait) so stop() runs outside a handler; a
    // client that goes away must not kill the process with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    auto server = ApiServer::create(config.value());
    if (!server) {
        std::fprintf(stderr, "linecap serve: %s\n", server.error().message.c_str());
        return server.error().config ? 78 : 1;
    }
    std::fprintf(stderr, "linecap serve: listening on %s (store %s, audit log %s)\n", server.value()->url().c_str(),
                 config->output.directory.c_str(), config->api.audit_log.c_str());
    std::thread waiter([&set, s = server.value().get()] {
        int sig = 0;
        sigwait(&set, &sig);
        s->stop();
    });
    const Status st = server.value()->run();
    if (waiter.joinable()) {
        pthread_kill(waiter.native_handle(), SIGTERM);  // run() may have ended on its own
        waiter.join();
    }
    if (!st) {
        std::fprintf(stderr, "linecap serve: %s\n", st.error().message.c_str());
        return 1;
    }
    std::fprintf(stderr, "linecap serve: stopped\n");
    return 0;
}

}  // namespace linecap::api
