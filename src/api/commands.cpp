#include "api/commands.hpp"

#include <cstdio>
#include <optional>
#include <string>

#include "api/query.hpp"
#include "api/remote.hpp"
#include "api/server.hpp"
#include "config/config.hpp"
#include "config/values.hpp"

namespace linecap::api {
namespace {

int usage(const std::string& message) {
    store::print_usage_error(message);
    return kExitUsage;
}

}  // namespace

int serve_command(const CommandOptions& options) {
    for (const auto& [name, value] : options)
        if (name != "--config" && name != "--dir" && name != "--template" && !store::is_archive_option(name))
            return usage("serve takes --config, --dir, --template and --archive with its options, not " + name);
    const auto config = option_value(options, "--config");
    if (!config) return usage("serve needs --config FILE (its api: section)");
    return serve_main(*config, option_value(options, "--dir").value_or(""), option_value(options, "--template").value_or(""),
                      options);
}

int extract_remote_command(const CommandOptions& options) {
    RemoteOptions r;
    const std::string list = option_value(options, "--remote").value_or("");
    for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) r.urls.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    if (r.urls.empty()) return usage("--remote: expected URL[,URL...]");
    for (const auto& u : r.urls)
        if (!u.starts_with("http://") && !u.starts_with("https://"))
            return usage("--remote: '" + u + "' is not an http:// or https:// URL");
    for (const char* local_only : {"--dir", "--template", "--no-index", "--accept-damaged"})
        if (option_value(options, local_only)) return usage(std::string("--remote and ") + local_only + " exclude each other");
    r.cert = option_value(options, "--cert").value_or("");
    r.key = option_value(options, "--key").value_or("");
    r.cacert = option_value(options, "--cacert").value_or("");
    r.token_file = option_value(options, "--token-file").value_or("");
    if (auto t = option_value(options, "--remote-timeout"); t && !store::parse_count(*t, 1, 86400, &r.stall_timeout_s))
        return usage("--remote-timeout: expected 1..86400 seconds");
    if (auto t = option_value(options, "--remote-deadline"); t && !store::parse_count(*t, 1, 7 * 86400, &r.deadline_s))
        return usage("--remote-deadline: expected 1..604800 seconds");
    if (auto t = option_value(options, "--min-rate"); t && !store::parse_count(*t, 1, uint64_t{1} << 40, &r.min_rate))
        return usage("--min-rate: expected bytes per second, at least 1");
    // The bounds on the answers default to what this appliance's own API would send.
    if (auto path = option_value(options, "--config")) {
        auto config = load_config(*path);
        if (!config) return store::print_line("error", config.error().message), 78;
        r.max_answer_bytes = r.max_total_bytes = config->api.max_bytes;
    } else {
        r.max_answer_bytes = r.max_total_bytes = ApiConfig{}.max_bytes;
    }
    for (auto [name, out] : {std::pair{"--max-answer-bytes", &r.max_answer_bytes}, std::pair{"--max-total-bytes", &r.max_total_bytes},
                             std::pair{"--min-free-bytes", &r.min_free_bytes}}) {
        if (auto v = option_value(options, name)) {
            auto n = parse_size(*v);
            if (!n) return usage(std::string(name) + ": " + n.error().message);
            *out = n.value();
        }
    }
    const std::string format = option_value(options, "--format").value_or("pcapng");
    if (format != "pcapng" && format != "pcap") return usage("--format: expected pcap or pcapng, not '" + format + "'");
    r.pcapng = format == "pcapng";
    // The query is checked here as the servers will check it, so a typo fails at once.
    for (const char* name : {"--from", "--to", "--filter", "--community-id", "--max-bytes"}) {
        if (auto v = option_value(options, name)) {
            std::string key = std::string(name).substr(2);
            for (char& ch : key)
                if (ch == '-') ch = '_';
            r.params.emplace_back(key, *v);
        }
    }
    if (auto q = parse_query(QueryKind::packets, r.params); !q) return usage(q.error().message);
    r.on_error = [](const std::string& m) { store::print_line("error", m); };
    const auto out = option_value(options, "-o");
    if (!out || out->empty()) return usage("-o OUT (or -o - for stdout) is required");
    Result<RemoteReport> report = runtime_error("not run");
    const int rc = store::write_extract_output(*out, "", [&](int fd) {
        report = extract_remote(r, fd);
        return report.ok();
    });
    if (rc != kExitOk) return rc;
    if (!report) return store::print_line("error", report.error().message), kExitFailure;
    if (option_value(options, "-v"))
        std::fprintf(stderr, "linecap: %llu packets from %zu appliance(s); %zu failed\n",
                     static_cast<unsigned long long>(report->packets_written), report->appliances_ok,
                     report->appliances_failed);
    return report->errors.empty() ? kExitOk : kExitFailure;
}

}  // namespace linecap::api
