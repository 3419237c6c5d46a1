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
#include <cstring>
#include <sys/resource.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "api/access.hpp"
#include "api/hold_request.hpp"
#include "api/http_front.hpp"
#include "api/page.hpp"
#include "api/query.hpp"
#include "api/status.hpp"
#include "api/steno_query.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "config/values.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_format.hpp"
#include "archive/holds.hpp"
#include "store/extract.hpp"
#include "store/holds.hpp"
#include "store/time_spec.hpp"
#include "util/errno_text.hpp"
#include "util/idle_priority.hpp"
#include "util/one_line.hpp"
#include "util/tls_server.hpp"
#include "util/utc_time.hpp"

namespace linecap::api {
namespace {

using Clock = std::chrono::steady_clock;

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

std::string json_error(const std::string& message) {
    return nlohmann::json({{"error", message}}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// How many packet queries run (api.max_queries). A Slot holds one place until it is
// released: when the query's work is done, before its answer's last bytes are sent, or at
// the latest when the Slot goes.
class Slots {
public:
    class Slot {
    public:
        Slot() = default;
        Slot(Slot&& other) noexcept : slots_(std::exchange(other.slots_, nullptr)) {}
        Slot& operator=(Slot&&) = delete;
        ~Slot() { release(); }

        explicit operator bool() const { return slots_ != nullptr; }
        void release() {
            if (slots_ != nullptr) std::exchange(slots_, nullptr)->used_.fetch_sub(1);
        }

    private:
        friend class Slots;
        explicit Slot(Slots* slots) : slots_(slots) {}
        Slots* slots_ = nullptr;
    };

    explicit Slots(unsigned limit) : limit_(limit) {}
    // An empty Slot when all are taken.
    Slot try_take() {
        unsigned n = used_.load();
        do {
            if (n >= limit_) return Slot();
        } while (!used_.compare_exchange_weak(n, n + 1));
        return Slot(this);
    }
    unsigned used() const { return used_.load(); }
    unsigned limit() const { return limit_; }

private:
    const unsigned limit_;
    std::atomic<unsigned> used_{0};
};

// One streaming answer: extract() on its own thread writes the pcap into a pipe; the
// handler thread reads it and streams it to the client.
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
    std::string outcome(bool client_gone, uint64_t body_bytes) const {
        if (client_gone) return "client disconnected (" + std::to_string(body_bytes) + " bytes sent before)";
        if (!error.empty()) return "error: " + error;
        std::string o;
        if (report.ended_early == "max_bytes") o = "truncated: max_bytes";
        else if (report.ended_early == "max_packets") o = "truncated: max_packets";
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

// Counts the packet records wholly inside the bytes of an answer sent so far (the
// server's own writer's output: host byte order), for the audit record of an answer the
// client did not take to its end.
class RecordCounter {
public:
    explicit RecordCounter(bool pcapng) : pcapng_(pcapng), skip_(pcapng ? 0 : sizeof(pcap::FileHeader)) {}
    void add(const char* data, size_t n) {
        while (n > 0) {
            if (skip_ > 0) {
                const size_t k = std::min<uint64_t>(skip_, n);
                skip_ -= k, data += k, n -= k;
                if (skip_ == 0 && counting_) ++records_;
                continue;
            }
            const size_t need = pcapng_ ? 8 : sizeof(pcap::RecordHeader);
            const size_t k = std::min(need - have_, n);
            std::memcpy(head_ + have_, data, k);
            have_ += k, data += k, n -= k;
            if (have_ < need) break;
            have_ = 0;
            uint32_t a, b;
            std::memcpy(&a, head_, 4);
            std::memcpy(&b, head_ + (pcapng_ ? 4 : 8), 4);
            if (pcapng_) {  // block type, total length (header included)
                counting_ = a == pcapng::kEnhancedPacketBlock || a == pcapng::kSimplePacketBlock;
                skip_ = b >= 8 ? b - 8 : 0;
            } else {        // caplen follows the two time words
                counting_ = true;
                skip_ = b;
            }
            if (skip_ == 0 && counting_) ++records_;
        }
    }
    uint64_t records() const { return records_; }

private:
    bool pcapng_;
    uint64_t skip_;
    char head_[16] = {};
    size_t have_ = 0;
    bool counting_ = false;
    uint64_t records_ = 0;
};

}  // namespace

struct ApiServer::Impl final : HttpHandler {
    Config config;
    ListenAddress address;
    bool tls = false;
    std::optional<TokenTable> tokens;
    std::unique_ptr<AuditLog> audit;
    SslCtx tls_ctx;
    std::unique_ptr<HttpFront> front;
    std::unique_ptr<Slots> slots;
    std::unique_ptr<StatusSource> status;
    store::QueryStore store;  // backend nullptr: the configuration's directory, opened per request
    int port = 0;

    ~Impl() override {
        front.reset();
    }

    // Who the request is from, and the credential it presented that was not accepted.
    // A request that presents a wrong credential is refused even if it has another that
    // holds (a valid certificate with a wrong token): a stale or guessed token must not
    // pass unnoticed.
    struct Identity {
        std::optional<std::string> who;  // accepted identity; nullopt = refused
        std::string shown = "-";         // for the audit record: the valid part, if any
        std::string refused;             // the credential refused, "" if none
    };

    Identity identify(SSL* ssl, const std::optional<std::string>& authorization) const {
        Identity id;
        std::optional<std::string> cert_who;
        if (tls && ssl) {
            if (X509* cert = SSL_get1_peer_certificate(ssl)) {
                if (SSL_get_verify_result(ssl) == X509_V_OK) {
                    char subject[512] = {};
                    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
                    cert_who = std::string("cert:") + subject;
                }
                X509_free(cert);
            }
        }
        std::optional<std::string> token_who;
        if (authorization) {
            const std::string_view auth(*authorization);
            if (auth.starts_with("Bearer ")) {
                if (!tokens) id.refused = "bearer token (this server takes none: api.tokens_file is not set)";
                else if (auto name = tokens->name_for(auth.substr(7))) token_who = "token:" + *name;
                else id.refused = "bearer token not in api.tokens_file";
            } else {
                std::string scheme(auth.substr(0, std::min<size_t>(auth.find(' '), 16)));
                for (char& c : scheme)
                    if (!std::isalnum(static_cast<unsigned char>(c))) c = '?';
                id.refused = "Authorization scheme '" + scheme + "' (only Bearer)";
            }
        }
        id.shown = cert_who ? *cert_who : token_who ? *token_who : "-";
        if (!id.refused.empty()) return id;
        if (cert_who) id.who = cert_who;
        else if (token_who) id.who = token_who;
        else if (config.api.unauthenticated == "loopback") id.who = "unauthenticated";
        if (id.who) id.shown = *id.who;
        return id;
    }

    AuditRecord begin_audit(const std::string& peer_address, int peer_port, const std::string& method,
                            const std::string& path, const std::string& query) const {
        AuditRecord a;
        a.start_ns = utc_now_ns();
        a.peer = peer_address + ":" + std::to_string(peer_port);
        a.method = method.size() > 32 ? method.substr(0, 32) + "..." : method;
        a.target = audit_target(path, query, tokens ? &*tokens : nullptr);
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

    void reply(HttpExchange& ex, int status, const std::string& body, const char* type, const std::string& outcome,
               AuditRecord a, Clock::time_point started, const std::vector<std::pair<std::string, std::string>>& headers = {}) {
        const bool sent = ex.respond(status, type, body, headers);
        finish(std::move(a), started, status, sent ? body.size() : 0,
               sent ? outcome : outcome + "; client disconnected before the answer was sent");
    }

    store::ExtractOptions extract_options(const PacketQuery& q) const {
        store::ExtractOptions o;
        o.directory = config.output.directory;
        o.store = store.backend.get();
        o.file_template = config.output.file_template;
        o.from_ns = q.from_ns;
        o.to_ns = q.to_ns;
        o.filter = q.filter;
        o.community_id = q.community_id;
        o.output_format = q.format;
        o.max_bytes = q.max_bytes ? std::min(q.max_bytes, config.api.max_bytes) : config.api.max_bytes;
        return o;
    }

    void serve(const HttpRequest& req, HttpExchange& ex) override;
    void refused(const HttpRefusal& r, HttpExchange& ex) override;
    void connection_refused(const std::string& peer_address, int peer_port, const std::string& reason) override {
        AuditRecord a = begin_audit(peer_address, peer_port, "-", "", "");
        finish(a, Clock::now(), 0, 0, "refused: " + reason);
    }
    // A packet query that may run: parsed, and holding a slot.
    struct Admitted {
        PacketQuery query;
        Slots::Slot slot;
    };
    // nullopt when the query is refused (bad parameters, all slots taken), the reply sent.
    std::optional<Admitted> admit(const HttpRequest& req, HttpExchange& ex, const AuditRecord& a,
                                  Clock::time_point started);
    std::optional<Admitted> admit(Result<PacketQuery> query, HttpExchange& ex, const AuditRecord& a,
                                  Clock::time_point started);
    // One of api.max_queries, or the 503 that says they are all taken (an empty slot).
    Slots::Slot take_slot(HttpExchange& ex, const AuditRecord& a, Clock::time_point started);
    void handle_packets(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void handle_steno_query(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void stream_packets(Admitted admitted, store::ExtractOptions o, HttpExchange& ex, AuditRecord a,
                        Clock::time_point started);
    void handle_size(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void handle_holds(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void handle_files(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void handle_status(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);
    void handle_metrics(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started);

    // Every endpoint behind authentication: its path (ending in '/': everything below it),
    // the methods it answers (the Allow header of a 405) and its handler.
    using Handler = void (Impl::*)(const HttpRequest&, HttpExchange&, AuditRecord, Clock::time_point);
    struct Route {
        std::string_view path;
        std::string_view methods;
        Handler handler;
        bool matches(std::string_view p) const { return path.ends_with('/') ? p.starts_with(path) : p == path; }
        bool allows(std::string_view method) const {
            for (size_t at = 0; at < methods.size();) {
                const size_t end = std::min(methods.find(", ", at), methods.size());
                if (methods.substr(at, end - at) == method) return true;
                at = end + 2;
            }
            return false;
        }
    };
    static constexpr Route kRoutes[] = {
        {"/query", "POST", &Impl::handle_steno_query},  // Stenographer's endpoint: the query in the body
        {"/api/v1/packets", "GET", &Impl::handle_packets},
        {"/api/v1/size", "GET", &Impl::handle_size},
        {"/api/v1/files", "GET", &Impl::handle_files},
        {"/api/v1/holds", "GET, POST", &Impl::handle_holds},
        {"/api/v1/holds/", "DELETE", &Impl::handle_holds},
        {"/api/v1/status", "GET", &Impl::handle_status},
        {"/metrics", "GET", &Impl::handle_metrics},
    };
};

ApiServer::ApiServer() : impl_(std::make_unique<Impl>()) {}
ApiServer::~ApiServer() = default;

void ApiServer::Impl::refused(const HttpRefusal& r, HttpExchange& ex) {
    const auto started = Clock::now();
    const size_t q = r.target.find('?');
    auto path = percent_decode(std::string_view(r.target).substr(0, q), false);
    AuditRecord a = begin_audit(r.peer_address, r.peer_port, r.method, path ? path.value() : r.target.substr(0, q),
                                q == std::string::npos ? "" : r.target.substr(q + 1));
    const Identity id = identify(r.ssl, r.authorization);
    a.who = id.shown;
    a.credential_refused = id.refused;
    if (r.status == 0) return finish(a, started, 0, 0, "refused: " + r.reason);
    reply(ex, r.status, json_error(r.reason), "application/json", "refused: " + r.reason, a, started);
}

void ApiServer::Impl::serve(const HttpRequest& req, HttpExchange& ex) {
    const auto started = Clock::now();
    AuditRecord a = begin_audit(req.peer_address, req.peer_port, req.method, req.path, req.query);
    const Identity id = identify(req.ssl, req.header("authorization"));
    a.who = id.shown;
    a.credential_refused = id.refused;
    const Route* route = nullptr;
    for (const Route& r : kRoutes)
        if (r.matches(req.path)) route = &r;
    const std::string_view allowed = route ? route->methods : "GET";  // "/" and unknown paths: GET
    if (!(route ? route->allows(req.method) : req.method == "GET"))
        return reply(ex, 405, json_error("only " + std::string(allowed)), "application/json",
                     "refused: method " + a.method, a, started, {{"Allow", std::string(allowed)}});
    if (req.path == "/") {
        // The page is public: it holds no data, and a browser that authenticates with a
        // token can only send it from the page's own script.
        return reply(ex, 200, page_html(), "text/html; charset=utf-8", "complete", a, started,
                     {{"Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"}});
    }
    if (!id.who) {
        const std::string why = id.refused.empty() ? "authentication required" : "invalid credentials: " + id.refused;
        return reply(ex, 401, json_error(why), "application/json",
                     id.refused.empty() ? "refused: no credentials" : "refused: " + why, a, started,
                     {{"WWW-Authenticate", tls && !config.api.tls_client_ca.empty() && !tokens ? "Mutual" : "Bearer realm=\"linecap\""}});
    }
    if (route) return (this->*route->handler)(req, ex, std::move(a), started);
    reply(ex, 404, json_error("no such endpoint: " + a.target.substr(0, a.target.find('?'))), "application/json",
          "refused: no such endpoint", a, started);
}

void ApiServer::Impl::handle_status(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    if (!req.query.empty())
        return reply(ex, 400, json_error("status takes no parameters"), "application/json", "refused: parameters", a, started);
    reply(ex, 200, status->json(slots->used(), slots->limit()), "application/json", "complete", a, started);
}

void ApiServer::Impl::handle_metrics(const HttpRequest&, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    static const ArchiveReadBytes none;
    reply(ex, 200, archive_read_exposition(store.archive ? store.archive->read_bytes() : none),
          "text/plain; version=0.0.4", "complete", a, started);
}

Slots::Slot ApiServer::Impl::take_slot(HttpExchange& ex, const AuditRecord& a, Clock::time_point started) {
    Slots::Slot slot = slots->try_take();
    if (!slot)
        reply(ex, 503, json_error("busy: " + std::to_string(slots->limit()) + " queries are running (api.max_queries)"),
              "application/json", "refused: busy", a, started, {{"Retry-After", "5"}});
    return slot;
}

std::optional<ApiServer::Impl::Admitted> ApiServer::Impl::admit(const HttpRequest& req, HttpExchange& ex,
                                                                 const AuditRecord& a, Clock::time_point started) {
    auto params = split_query_string(req.query);
    return admit(params ? parse_query(QueryKind::packets, params.value()) : Result<PacketQuery>(params.error()), ex, a,
                 started);
}

std::optional<ApiServer::Impl::Admitted> ApiServer::Impl::admit(Result<PacketQuery> q, HttpExchange& ex,
                                                                 const AuditRecord& a, Clock::time_point started) {
    if (!q) {
        reply(ex, 400, json_error(q.error().message), "application/json", "refused: " + q.error().message, a, started);
        return std::nullopt;
    }
    Slots::Slot slot = take_slot(ex, a, started);
    if (!slot) return std::nullopt;
    return Admitted{std::move(q.value()), std::move(slot)};
}

// /api/v1/size: the query run into /dev/null, on this handler thread (idle like every
// thread of serve); what it would write, said as JSON.
void ApiServer::Impl::handle_size(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    std::optional<Admitted> admitted = admit(req, ex, a, started);
    if (!admitted) return;
    Slots::Slot& slot = admitted->slot;
    store::ExtractOptions o = extract_options(admitted->query);
    const auto deadline = started + std::chrono::seconds(config.api.max_duration_s);
    std::atomic<bool> timed_out{false};
    o.should_stop = [&] { return Clock::now() > deadline && (timed_out = true); };
    const UniqueFd null_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    Result<store::ExtractReport> r = runtime_error("/dev/null: " + errno_text(errno));
    if (null_fd) r = store::extract(o, null_fd.get());
    slot.release();
    if (!r) return reply(ex, 400, json_error(r.error().message), "application/json", "error: " + r.error().message, a, started);
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
    return reply(ex, 200, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json",
                 "size computed", a, started);
}

// /api/v1/packets: the query's pcap (or pcapng), streamed.
void ApiServer::Impl::handle_packets(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    std::optional<Admitted> admitted = admit(req, ex, a, started);
    if (!admitted) return;
    stream_packets(std::move(*admitted), extract_options(admitted->query), ex, std::move(a), started);
}

// /api/v1/holds: POST makes a hold of the body's query (api/hold_request.hpp), GET lists
// them, DELETE /api/v1/holds/ID releases one. Expired holds are removed by every one of
// these before it answers. The audit record carries the body (its start) and the hold's
// ID, packets and SHA-256: the chain of custody of the evidence kept.
void ApiServer::Impl::handle_holds(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    const std::string& dir = config.output.directory;
    const HoldListing listing = list_holds(dir, utc_now_ns(), true);
    std::string expired;
    for (const std::string& r : listing.removed) expired += "; hold " + r + ", removed";
    if (req.method == "DELETE") {
        const std::string id = req.path.substr(std::string_view("/api/v1/holds/").size());
        if (auto released = release_hold(dir, id); !released) {
            const int status = released.error().config ? 404 : 500;
            return reply(ex, status, json_error(released.error().message), "application/json",
                         "refused: " + released.error().message + expired, a, started);
        }
        return reply(ex, 200, nlohmann::json({{"released", id}}).dump() + "\n", "application/json",
                     "hold " + id + " released by " + a.who + expired, a, started);
    }
    if (req.method == "GET") {
        if (!req.query.empty())
            return reply(ex, 400, json_error("holds takes no parameters"), "application/json", "refused: parameters", a,
                         started);
        return reply(ex, 200, holds_json(listing.holds), "application/json",
                     "listed " + std::to_string(listing.holds.size()) + " holds" + expired, a, started);
    }
    a.target += "?" + one_line(req.body.substr(0, 512));
    const uint64_t now = utc_now_ns();
    store::HoldRequest request;
    request.query.directory = dir;
    request.query.file_template = config.output.file_template;
    request.query.max_bytes = config.api.max_bytes;
    request.created_by = a.who;
    if (auto parsed = parse_hold_request(req.body, now, request); !parsed)
        return reply(ex, 400, json_error(parsed.error().message), "application/json",
                     "refused: " + parsed.error().message + expired, a, started);
    Slots::Slot slot = take_slot(ex, a, started);
    if (!slot) return;
    const auto deadline = started + std::chrono::seconds(config.api.max_duration_s);
    request.query.should_stop = [&] { return Clock::now() > deadline; };
    auto made = store::create_hold(request, now);
    slot.release();
    if (!made) {
        const bool refused = made.error().config || made.error().message.starts_with("no packets") ||
                             made.error().message.starts_with("filter ");
        return reply(ex, refused ? 422 : 500, json_error(made.error().message), "application/json",
                     (refused ? "refused: " : "error: ") + made.error().message + expired, a, started);
    }
    const Hold& h = made->hold;
    a.packets = h.packets;
    return reply(ex, 201, hold_record_json(h), "application/json",
                 "hold " + h.id + " created: " + std::to_string(h.packets) + " packets, " +
                     std::to_string(h.packet_bytes) + " bytes, sha256 " + h.sha256 +
                     (h.expires_ns ? ", expires " + format_utc_ns(h.expires_ns) : ", until released") + expired,
                 a, started, {{"Location", "/api/v1/holds/" + h.id}});
}

// Stenographer's POST /query, as Debian's stenoread and stenocurl send it: the body is a
// query in its language (api/steno_query.hpp), the answer the pcap, the headers
// Steno-Limit-Packets and Steno-Limit-Bytes cap it. Authenticated, limited and audited as
// /api/v1/packets is (the record's target carries the query).
void ApiServer::Impl::handle_steno_query(const HttpRequest& req, HttpExchange& ex, AuditRecord a,
                                          Clock::time_point started) {
    a.target += "?" + one_line(req.body.substr(0, 512));
    auto limit = [&req](const std::string& header) -> Result<uint64_t> {
        std::string lower = header;
        for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
        const auto v = req.header(lower);
        if (!v || v->empty()) return uint64_t(0);
        const std::optional<uint64_t> n = parse_uint(*v);
        if (!n) return config_error(header + ": not a number: " + one_line(*v));
        return *n;
    };
    const auto packets = limit("Steno-Limit-Packets"), bytes = limit("Steno-Limit-Bytes");
    Result<PacketQuery> q = !packets ? Result<PacketQuery>(packets.error())
                            : !bytes ? Result<PacketQuery>(bytes.error())
                                     : [&]() -> Result<PacketQuery> {
        auto steno = compile_steno_query(req.body, utc_now_ns());
        if (!steno) return steno.error();
        Params params;
        if (steno->from_ns) params.push_back({"from", store::format_time(steno->from_ns)});
        if (steno->to_ns != UINT64_MAX) params.push_back({"to", store::format_time(steno->to_ns)});
        if (!steno->filter.empty()) params.push_back({"filter", through_vlan_tags(steno->filter)});
        if (bytes.value()) params.push_back({"max_bytes", std::to_string(bytes.value())});
        return parse_query(QueryKind::packets, params);  // the checks /api/v1/packets makes
    }();
    std::optional<Admitted> admitted = admit(std::move(q), ex, a, started);
    if (!admitted) return;
    store::ExtractOptions o = extract_options(admitted->query);
    o.max_packets = packets.value();
    stream_packets(std::move(*admitted), std::move(o), ex, std::move(a), started);
}

// The query runs on a thread of its own into a pipe; its bytes are sent as they come.
void ApiServer::Impl::stream_packets(Admitted admitted, store::ExtractOptions o, HttpExchange& ex, AuditRecord a,
                                     Clock::time_point started) {
    const PacketQuery& q = admitted.query;
    Slots::Slot& slot = admitted.slot;
    const auto deadline = started + std::chrono::seconds(config.api.max_duration_s);

    Answer answer;
    answer.deadline = deadline;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        slot.release();
        return reply(ex, 500, json_error("pipe: " + errno_text(errno)), "application/json", "error: pipe", a, started);
    }
    (void)::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);  // fewer wake-ups; a smaller pipe only costs speed
    answer.read_fd = fds[0];
    Answer* raw = &answer;
    o.should_stop = [raw] {
        if (raw->stop.load(std::memory_order_relaxed)) return true;
        if (Clock::now() > raw->deadline) return raw->timed_out = true;
        return false;
    };
    answer.worker = std::thread([raw, o = std::move(o), wfd = fds[1]] {
        auto r = store::extract(o, wfd);
        if (r) raw->report = std::move(r.value());
        else raw->error = r.error().message;
        raw->finished = true;  // published by the close below (the reader sees EOF after it)
        ::close(wfd);
    });
    // Waits for bytes from the query; a client that goes away meanwhile ends it.
    auto wait_for_output = [&] {
        pollfd p{answer.read_fd, POLLIN, 0};
        for (;;) {
            const int r = ::poll(&p, 1, 1000);
            if (r > 0) return true;
            if (r < 0 && errno != EINTR) return true;  // the read says what
            if (ex.client_gone()) return false;
        }
    };

    // Wait for the first bytes or the end: a query that fails before writing anything
    // (store unreadable) still gets an error status instead of an empty 200.
    if (!wait_for_output()) {
        answer.join();
        slot.release();
        return finish(a, started, 200, 0, answer.outcome(true, 0));
    }
    int avail = 0;
    if (::ioctl(answer.read_fd, FIONREAD, &avail) == 0 && avail == 0) {
        answer.join();
        slot.release();
        const std::string m = answer.error.empty() ? "no output" : answer.error;
        // A limit below the format's file header is the request's fault, as is a filter.
        const int status = m.starts_with("max_bytes ") ? 400 : 500;
        return reply(ex, status, json_error(m), "application/json", "error: " + m, a, started);
    }

    const std::string from = store::format_time(q.from_ns), to = q.to_ns == UINT64_MAX ? "end" : store::format_time(q.to_ns);
    const bool pcapng = q.format == FileKind::pcapng;
    // Streamed: to a 1.1 client chunked, ending with trailers that say whether the answer
    // is complete; to a 1.0 client as it comes, the outcome only in the audit record.
    bool gone = !ex.begin_stream(200, {
        {"Content-Type", pcapng ? "application/x-pcapng" : "application/vnd.tcpdump.pcap"},
        {"Content-Disposition", pcapng ? "attachment; filename=\"linecap.pcapng\"" : "attachment; filename=\"linecap.pcap\""},
        {"X-Linecap-Query", "from=" + from + " to=" + to},
        {"X-Linecap-Max-Bytes", std::to_string(o.max_bytes)},
    }, "X-Linecap-Outcome, X-Linecap-Packets");
    RecordCounter sent_records(pcapng);
    uint64_t body_bytes = 0;
    std::vector<char> buf(64 << 10);
    while (!gone) {
        const ssize_t n = ::read(answer.read_fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (!ex.send_stream(std::string_view(buf.data(), static_cast<size_t>(n)))) {
            gone = true;
            break;
        }
        body_bytes += static_cast<uint64_t>(n);
        sent_records.add(buf.data(), static_cast<size_t>(n));
        if (!wait_for_output()) gone = true;
    }
    answer.join();
    slot.release();
    if (!gone)
        gone = !ex.end_stream({{"X-Linecap-Outcome", answer.outcome(false, 0)},
                               {"X-Linecap-Packets", std::to_string(answer.report.packets_written)}});
    a.packets = sent_records.records();
    finish(a, started, 200, body_bytes, answer.outcome(gone, body_bytes));
}

void ApiServer::Impl::handle_files(const HttpRequest& req, HttpExchange& ex, AuditRecord a, Clock::time_point started) {
    auto params = split_query_string(req.query);
    Result<PacketQuery> q = params ? parse_query(QueryKind::files, params.value()) : Result<PacketQuery>(params.error());
    if (!q) return reply(ex, 400, json_error(q.error().message), "application/json", "refused: " + q.error().message, a, started);
    auto tmpl = FileTemplate::compile(config.output.file_template);
    std::unique_ptr<StoreBackend> opened;
    const StoreBackend* store =
        this->store.backend ? this->store.backend.get() : (opened = open_store(config.output.directory)).get();
    auto catalog = tmpl ? store->list(ListOptions::catalog(tmpl.value())) : Result<StoreInventory>(tmpl.error());
    if (!catalog) return reply(ex, 500, json_error(catalog.error().message), "application/json", "error: " + catalog.error().message, a, started);
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : catalog->files) {
        if (f.upper_ns <= q->from_ns || f.lower_ns >= q->to_ns) continue;
        nlohmann::ordered_json j;
        j["name"] = f.name;
        j["stream"] = f.stream;
        j["format"] = f.format == FileKind::pcapng ? "pcapng" : "pcap";
        j["bytes"] = f.size;
        j["first_packet_from_name"] = f.parsed && f.parsed->has_time ? store::format_time(f.lower_ns) : "";
        j["span_upper_bound"] = f.upper_ns == UINT64_MAX ? "" : store::format_time(f.upper_ns);
        const LoadedIndex li = store->load_index(f, f.size, f.mtime_ns);
        j["index"] = li.state == IndexState::valid ? "valid"
                     : li.state == IndexState::missing ? "missing"
                     : li.state == IndexState::stale ? "stale" : "damaged";
        if (li.state == IndexState::valid) {
            j["packets"] = li.index.header().packets;
            if (li.index.header().packets) {
                j["first_packet"] = store::format_time(li.index.header().min_ts_ns);
                j["last_packet"] = store::format_time(li.index.header().max_ts_ns);
            }
        }
        // The manifest's state, and what it says about the file's completeness.
        const ManifestRead m = store->read_manifest(f);
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
        if (f.damaged) j["damaged"] = f.damaged->empty() ? "marked damaged" : *f.damaged;
        files.push_back(std::move(j));
    }
    nlohmann::ordered_json out;
    out["directory"] = config.output.directory;
    out["in_progress"] = catalog->in_progress;
    out["files"] = std::move(files);
    reply(ex, 200, out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json", "complete", a, started);
}

Result<std::unique_ptr<ApiServer>> ApiServer::create(const Config& config, store::QueryStore store) {
    std::unique_ptr<ApiServer> server(new ApiServer());
    Impl& s = *server->impl_;
    s.config = config;
    s.store = std::move(store);
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
        // Client certificates are asked for when tls_client_ca is set; with tokens as
        // well, a client may come without one, but one that presents a certificate must
        // present a valid one either way.
        auto ctx = tls_server_context({"api", api.tls_cert, api.tls_key, api.tls_client_ca},
                                      s.tokens ? ClientCertificate::optional : ClientCertificate::required);
        if (!ctx) return ctx.error();
        s.tls_ctx = std::move(ctx.value());
    }
    s.slots = std::make_unique<Slots>(api.max_queries);
    s.status = std::make_unique<StatusSource>(config, s.store.backend.get());
    HttpLimits limits;
    limits.max_request_bytes = api.max_request_bytes;
    limits.header_timeout_ms = api.header_timeout_s * 1000;
    limits.body_timeout_ms = api.body_timeout_s * 1000;
    limits.client_timeout_ms = api.client_timeout_s * 1000;
    limits.max_connections = api.max_connections;
    limits.max_connections_per_client = api.max_connections_per_client;
    limits.threads = api.threads;
    // Every connection is a descriptor: make room for max_connections of them.
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < api.max_connections + 256u) {
        nofile.rlim_cur = std::min<rlim_t>(nofile.rlim_max, api.max_connections + 256u);
        (void)::setrlimit(RLIMIT_NOFILE, &nofile);
    }
    const std::string host = s.address.host == "localhost" ? "127.0.0.1" : s.address.host;
    auto front = HttpFront::create(host, s.address.port, s.tls_ctx.get(), limits, s);
    if (!front) return config_error("api.listen " + api.listen + ": " + front.error().message);
    s.front = std::move(front.value());
    s.port = s.front->port();
    return server;
}

Status ApiServer::run() { return impl_->front->run(); }

void ApiServer::stop() { impl_->front->stop(); }

std::string ApiServer::url() const {
    const std::string host = impl_->address.host.find(':') != std::string::npos ? "[" + impl_->address.host + "]"
                                                                                 : impl_->address.host;
    return std::string(impl_->tls ? "https://" : "http://") + host + ":" + std::to_string(impl_->port);
}

int serve_main(const std::string& config_path, const std::string& dir_override, const std::string& template_override,
               const CommandOptions& options) {
    auto config = load_config(config_path);
    if (!config) {
        std::fprintf(stderr, "linecap serve: %s\n", config.error().message.c_str());
        return 78;
    }
    if (!dir_override.empty()) config->output.directory = dir_override;
    if (!template_override.empty()) config->output.file_template = template_override;
    store::QueryStore store;
    if (option_value(options, "--archive")) {
        // The archive alone, unless --dir names local files to join it: the configuration's
        // directory may be another machine's (an analyst serving an archive).
        std::vector<std::string> local;
        if (!dir_override.empty()) local.push_back(dir_override);
        if (const int rc = store::open_query_store(options, local, store); rc != kExitOk) return rc;
    } else {
        for (const auto& [name, value] : options)
            if (store::is_archive_option(name)) return store::print_usage_error(name + " goes with --archive"), kExitUsage;
        // Several capture volumes are one store (a --dir names one directory instead).
        if (dir_override.empty() && config->output.volumes.size() > 1) {
            std::vector<std::string> volumes;
            for (const VolumeConfig& volume : config->output.volumes) volumes.push_back(volume.directory);
            store.backend = open_volumes(volumes);
        }
    }
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
    const std::string location = store.backend ? store.backend->location() : config->output.directory;
    auto server = ApiServer::create(config.value(), std::move(store));
    if (!server) {
        std::fprintf(stderr, "linecap serve: %s\n", server.error().message.c_str());
        return server.error().config ? 78 : 1;
    }
    std::fprintf(stderr, "linecap serve: listening on %s (store %s, audit log %s)\n", server.value()->url().c_str(),
                 location.c_str(), config->api.audit_log.c_str());
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
