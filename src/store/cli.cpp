#include "store/cli.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_store.hpp"
#include "archive/compress.hpp"
#include "archive/index_format.hpp"
#include "archive/layout.hpp"
#include "archive/store_inventory.hpp"
#include "config/config.hpp"
#include "format/pcap_format.hpp"
#include "linecap_build.h"
#include "packet/community_id.hpp"
#include "store/alert_records.hpp"
#include "store/extract.hpp"
#include "store/holds.hpp"
#include "store/stats.hpp"
#include "store/time_spec.hpp"
#include "util/errno_text.hpp"
#include "util/io_status.hpp"
#include "util/one_line.hpp"
#include "util/utc_time.hpp"

namespace linecap::store {
namespace {

// One entry per command: `linecap --help` prints every synopsis and description,
// `linecap NAME --help` its own; the dispatch in linecap_tool_main knows only these names.
struct CommandHelp {
    const char* name;
    const char* synopsis;     // the usage lines, each starting "  linecap NAME"
    const char* description;  // indented by 10, the first line after the name
};

constexpr CommandHelp kCommands[] = {
    {"extract",
     R"(  linecap extract --dir DIR [--from TIME] [--to TIME] [--filter EXPR] [--community-id ID]
                  [--max-bytes N] -o OUT.pcap|- [--format pcap|pcapng] [--no-index]
                  [--accept-damaged] [--require-synced] [-v]
  linecap extract --dir DIR --alert FILE|- [--margin SECONDS] [--max-bytes N]
                  -o OUT.pcap|- [--format pcap|pcapng] [--no-index] [-v]
  linecap extract --archive s3://BUCKET[/PREFIX] --endpoint URL --credentials FILE
                  [--region R] [--ca-file FILE] [--path-style|--virtual-hosted]
                  [--dir DIR] [the query and output options above]
  linecap extract --remote URL[,URL...] [--cert FILE --key FILE] [--cacert FILE]
                  [--token-file FILE] [--remote-timeout SECONDS] [--format pcapng|pcap]
                  [--from TIME] [--to TIME] [--filter EXPR] [--community-id ID]
                  [--max-bytes N] [--max-answer-bytes N] [--max-total-bytes N]
                  [--remote-deadline SECONDS] [--min-rate BYTES] [--min-free-bytes N]
                  [--config FILE] -o OUT|- [-v]
)",
     R"(Writes the packets with FROM <= timestamp < TO (nanosecond precision) that
          match the libpcap filter EXPR, from every finished capture file in DIR (pcap
          and pcapng; all ports and queues), merged in timestamp order (equal
          timestamps: file name order, then file order) into one nanosecond pcap; "-o -"
          writes to stdout. Files whose timestamps go back are read whole, in file order.
          Only files whose span meets the range are opened, and through their index
          only the blocks that can hold a match are read. A file without a usable index
          is scanned, with a warning.
          TIME: ISO 8601 with a zone (2026-11-30T02:10:00.5Z, 2026-11-30T03:10:00+01:00,
          20261130T021000Z, or a date 2026-11-30 = midnight UTC) or Unix seconds with
          an optional fraction (1700000000.123456789). Default: everything.
          A file whose bytes may not be what was captured is named on stderr, one
          line each ("linecap: integrity: FILE: why"), scanned instead of read
          through its index, and makes the exit status 3: a file the daemon's
          scrub marked damaged (its SHA-256 no longer matches its manifest; the
          marker FILE.damaged says since when and what differs), or a file that
          changed after it was indexed (its mtime may have been set back).
          --community-id ID only the packets of the flow with this Community ID v1
                            ("1:" + base64 SHA-1, as Zeek, Suricata and Security
                            Onion log it); with --filter, both must match
          --max-bytes N     stop before the first packet that would make the output
                            larger than N bytes (said on stderr; exit status 1)
          --format pcapng   write pcapng with one interface per source stream, named
                            "<port>:<queue>" (description "linecap port P queue Q"),
                            so each packet keeps its origin; default pcap
          --no-index        scan every selected file (ignore indexes; then a file
                            that changed after indexing is not noticed)
          --accept-damaged  still name such files, but exit 0 for them
          --require-synced  refuse (nothing written, exit status 1) when a file in
                            the range was not captured on a synchronised host clock
                            as its manifest records it (clock.sync; no manifest:
                            unknown, refused too), naming the files
          -v                print the plan and what was read on stderr (with
                            --archive: the bytes fetched, by kind)
          --archive s3://BUCKET[/PREFIX]
                            read the archive tier in place: the capture files an
                            appliance's archiver uploaded under PREFIX of an
                            S3-compatible object store (Ceph RGW, MinIO, AWS S3),
                            fetching by Range GET only the blocks or zstd frames the
                            query needs (an index checked by its CRCs, a zstd frame
                            by its checksum). A URL naming only the bucket
                            spans every appliance's prefix in it: one answer, merged
                            in time order, each appliance named in the pcapng
                            interface ("APPLIANCE <port>:<queue>"). With --dir too,
                            both are one store (a file in both is read locally).
                            --endpoint URL (http://host:port or https), --credentials
                            FILE (AWS shared-credentials format, [default] profile,
                            mode 600; without it the AWS_* environment), --region R
                            (us-east-1), --ca-file FILE (TLS), --path-style (the
                            default) or --virtual-hosted addressing. An archive that
                            cannot be used (bad URL: 64; credentials refused,
                            endpoint unreachable, bucket or archive missing: 1) is
                            one line on stderr and nothing is written.
          --alert FILE|-    the packets of the flows of alert records, in one
                            answer (one merge: a packet two records share is
                            written once): Suricata EVE JSON (alert, flow or any
                            event with src_ip/dest_ip) and Zeek conn.log JSON
                            (LogAscii::use_json), one record a line, from FILE or
                            stdin. Each flow by its community_id when the record
                            has one, else by its 5-tuple (both directions), over
                            its span: EVE flow.start to flow.end (an alert without
                            flow.end: to its timestamp), Zeek ts to ts + duration,
                            widened by --margin SECONDS on both sides (default 60:
                            an alert is logged while its flow goes on, and a log's
                            clock may differ from the capture's). Other events
                            (no src_ip nor id.orig_h, such as stats) are skipped
                            and counted. A broken line (not JSON, a flow record
                            whose addresses or times do not read) refuses the
                            whole input, naming each such line: nothing is
                            written (exit status 64), as an answer silently
                            missing a flow would look complete. Not with --from,
                            --to, --filter, --community-id.
          --remote URL,...  ask the retrieval APIs (`linecap serve`) of these
                            appliances instead of a local store, all at once, and
                            merge their answers in timestamp order: pcapng with one
                            interface per appliance and source stream (named
                            "host:port <port>:<queue>"), or --format pcap.
                            Credentials: --cert/--key (client certificate), --cacert
                            (CA of the servers), --token-file (a file holding a bearer
                            token, mode 600). An appliance that fails is reported
                            and left out; exit status 1. No appliance is trusted to
                            bound its answer: one is cut (its packets received whole
                            kept, reported on one line) when it grows past
                            --max-answer-bytes, all together past --max-total-bytes
                            (both default to api.max_bytes of --config FILE, else
                            4GiB), it runs past --remote-deadline seconds (900), it
                            sends under --min-rate bytes/s (1024) for
                            --remote-timeout seconds (30), or the temporary
                            directory ($TMPDIR, /tmp) has under --min-free-bytes
                            (256MiB) free. Answers wait in files without a name:
                            nothing is left behind, even after SIGKILL.
)"},
    {"serve",
     R"(  linecap serve   --config FILE [--dir DIR] [--template TEMPLATE]
                  [--archive s3://BUCKET[/PREFIX] --endpoint URL --credentials FILE [--region R]
                  [--ca-file FILE] [--path-style|--virtual-hosted]]
)",
     R"(The retrieval API: HTTP(S) endpoints /api/v1/packets, /api/v1/size,
          /api/v1/files, /api/v1/status, /metrics and a page at /, configured by
          the api: section of the configuration (doc/api.md). --archive (as for
          extract): answer over the archive tier, or with --dir over both; /metrics
          then counts the bytes fetched (linecap_archive_read_bytes_total by kind).
)"},
    {"index",
     R"(  linecap index   --dir DIR [--force] [--jobs N] [--block-kb N] [-v]
)",
     R"(Builds NAME.pcap.idx (NAME.pcapng.idx) for every finished capture file
          whose index is missing, stale, damaged or of an older version (--force:
          all), and removes indexes whose capture file is gone. --jobs N files at a time (default 1); --block-kb
          N index block size (default 256).
)"},
    {"stats",
     R"(  linecap stats   --dir DIR [--per-file] [--gaps N] [--gap-threshold SECONDS] [--json]
  linecap stats   --archive s3://BUCKET[/PREFIX] --endpoint URL --credentials FILE [--region R]
                  [--ca-file FILE] [--path-style|--virtual-hosted] [--dir DIR] [the options above]
)",
     R"(Time span, files, bytes and packets per stream, the largest gaps between
          consecutive files of each stream (--gaps N, default 3; --gap-threshold S
          counts gaps longer than S seconds, default the configured rotation interval),
          drops per file where a manifest reports them, and the files the scrub
          marked damaged. --per-file lists every file; --json prints the same as JSON.
          --archive (as for extract): over the archive tier, or with --dir over both.
)"},
    {"hold",
     R"(  linecap hold create --dir DIR (--from TIME --to TIME [--filter EXPR] [--community-id ID]
                  | --alert FILE|- [--margin SECONDS]) --reason TEXT [--expires WHEN]
                  [--max-bytes N] [--no-index]
  linecap hold list --dir DIR [--json]
  linecap hold release --dir DIR ID
)",
     R"(Keeps the packets of a query past retention, as an evidence bundle in
          DIR/holds/ID/: packets.pcap (what extract writes for the same query),
          hold.json (who made it, when, why, the query, the expiry, packets, bytes,
          SHA-256, integrity findings) and SHA256SUMS (`sha256sum -c` checks both).
          Retention never deletes a hold; it goes when released, or once its
          expiry has passed (removed by the next hold list or create, here or
          through the API; never counted after it). create prints the new ID on
          stdout and refuses a query with no packets (nothing held, exit status
          1); the creator is the local user. --expires WHEN: a TIME as for --from, or N followed by s, m, h or d
          from now (default: until released). list: ID, creation, expiry, packets,
          bytes, creator, reason (--json: the records). Held bytes are not counted
          in output.retention.max_bytes or max_percent (those bound the capture
          history); they take room on the same filesystem, which min_free_bytes
          keeps free.
)"},
    {"compress",
     R"(  linecap compress --dir DIR [--level N] [-v]
)",
     R"(Replaces every finished capture file that has a manifest by its compressed
          form NAME.zst, as the daemon does with output.compress: zstd's seekable
          format (`zstd -d` gives back the exact file), frames cut at the blocks of
          the file's index when it has a current one (run `linecap index` first), the
          result read back and checked against the manifest's SHA-256 before the
          original is deleted, the manifest extended with the compressed file's size
          and SHA-256. extract, stats, index and `linecapd verify` read compressed
          files like plain ones. --level N: zstd level 1..19 (default 3). Files
          without a manifest are left as they are (named with -v).
)"},
};

constexpr const char* kHelpTitle = "linecap - forensic retrieval over a linecapd capture store\n\nusage:\n";

constexpr const char* kHelpCommon = R"(
  Every command also takes --template TEMPLATE (the daemon's output.file_template;
  default "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}") or --config FILE (a linecapd
  configuration: output.directory (or every output.volumes directory),
  output.file_template and output.rotate.interval_s are taken from it; --dir and
  --template override); --help prints a command's own usage. --dir may be given several
  times: the capture volumes are one store (index and compress do each in turn).

)";

constexpr const char* kHelpExit = R"(
exit status: 0 ok; 1 some files could not be read (the rest was processed, the output
is a valid pcap); 3 (extract) files were read whose bytes may not be what was captured,
see above (takes precedence over 1; the output is complete); 64 usage error.
)";

const CommandHelp* find_command(const std::string& name) {
    for (const CommandHelp& c : kCommands)
        if (name == c.name) return &c;
    return nullptr;
}

// `linecap --help` (command == nullptr) or `linecap COMMAND --help`.
void print_help(FILE* out, const CommandHelp* command) {
    std::fputs(kHelpTitle, out);
    for (const CommandHelp& c : kCommands)
        if (command == nullptr || command == &c) std::fputs(c.synopsis, out);
    if (command == nullptr) std::fputs("  linecap --help | --version\n", out);
    std::fputs(kHelpCommon, out);
    for (const CommandHelp& c : kCommands)
        if (command == nullptr || command == &c) std::fprintf(out, "%-9s %s", c.name, c.description);
    std::fputs(kHelpExit, out);
}

// Every option of every command; each command refuses those it does not take.
constexpr OptionSpec kOptions[] = {
    {"--dir", true},           {"--from", true},          {"--to", true},
    {"--filter", true},        {"-o", true},              {"--output", true, "-o"},
    {"--format", true},        {"--template", true},      {"--config", true},
    {"--jobs", true},          {"--block-kb", true},      {"--gaps", true},
    {"--gap-threshold", true}, {"--community-id", true},  {"--max-bytes", true},
    {"--remote", true},        {"--cert", true},          {"--key", true},
    {"--cacert", true},        {"--token-file", true},    {"--remote-timeout", true},
    {"--level", true},         {"--alert", true},         {"--margin", true},
    {"--reason", true},        {"--expires", true},         {"--max-answer-bytes", true}, {"--max-total-bytes", true},
    {"--remote-deadline", true}, {"--min-rate", true},    {"--min-free-bytes", true},
    {"--archive", true},       {"--endpoint", true},      {"--credentials", true},
    {"--region", true},        {"--ca-file", true},       {"--path-style"},
    {"--virtual-hosted"},
    {"--no-index"},            {"--accept-damaged"},      {"--require-synced"},
    {"-v"},                    {"--verbose", false, "-v"}, {"--force"},
    {"--per-file"},            {"--json"},                {"--help"},
    {"-h", false, "--help"},
};

// The options that say where an archive is and how to reach it.
constexpr const char* kArchiveOptions[] = {"--archive", "--endpoint", "--credentials", "--region",
                                           "--ca-file", "--path-style", "--virtual-hosted"};

struct Common {
    std::string dir;                // the first of dirs
    std::vector<std::string> dirs;  // every capture volume: --dir (repeatable) or the config's
    std::string file_template = kDefaultFileTemplate;
    uint64_t rotate_interval_s = 0;
};

class Cli {
public:
    Cli(const CommandLine& a) : args_(a) {}

    std::optional<std::string> get(const std::string& name) const { return args_.value(name); }
    bool flag(const std::string& name) const { return args_.has(name); }
    const CommandOptions& options() const { return args_.options; }

    // --dir/--template/--config (archive_ok: or --archive alone); false (usage message
    // printed) when unusable.
    bool common(Common& c, bool archive_ok = false) const {
        if (!archive_ok)
            for (const char* archive_only : kArchiveOptions)
                if (get(archive_only) || flag(archive_only)) {
                    usage_error(std::string(archive_only) + " is for extract, stats and serve, not this command");
                    return false;
                }
        if (auto cfg = get("--config")) {
            auto config = load_config(*cfg);
            if (!config) {
                usage_error(config.error().message);
                return false;
            }
            for (const VolumeConfig& volume : config->output.volume_list()) c.dirs.push_back(volume.directory);
            c.file_template = config->output.file_template;
            c.rotate_interval_s = config->output.rotate_interval_s;
        }
        std::vector<std::string> given;
        for (const auto& [name, value] : args_.options)
            if (name == "--dir") given.push_back(value);
        if (!given.empty()) c.dirs = std::move(given);
        for (std::string& d : c.dirs)
            while (d.size() > 1 && d.back() == '/') d.pop_back();
        if (!c.dirs.empty()) c.dir = c.dirs.front();
        if (auto t = get("--template")) c.file_template = *t;
        if (c.dir.empty() && !(archive_ok && get("--archive"))) {
            usage_error(archive_ok ? "--dir DIR or --archive URL is required (or --config FILE)"
                                   : "--dir DIR is required (or --config FILE)");
            return false;
        }
        auto tmpl = FileTemplate::compile(c.file_template);
        if (!tmpl) {
            usage_error(tmpl.error().message);
            return false;
        }
        return true;
    }

    static void usage_error(const std::string& m) { print_usage_error(m); }

private:
    const CommandLine& args_;
};

// The temporary of `extract -o PATH` while it is being written, for the signal handler
// that removes it: an interrupted extract leaves nothing behind. Set and cleared with the
// signals blocked; the handler only reads it.
struct PendingTemporary {
    int dir_fd = -1;  // a descriptor of its own, valid until cleared
    char name[256] = {};
};
PendingTemporary g_pending;
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Async-signal-safe: unlinkat, then the signal again with its default action, so the exit
// status still says which signal ended the tool.
void remove_pending_and_die(int signal) {
    if (g_pending.dir_fd >= 0) ::unlinkat(g_pending.dir_fd, g_pending.name, 0);
    ::raise(signal);
}

class SignalsBlocked {
public:
    SignalsBlocked() {
        sigset_t set;
        sigemptyset(&set);
        for (const int s : kCleanupSignals) sigaddset(&set, s);
        ::sigprocmask(SIG_BLOCK, &set, &old_);
    }
    ~SignalsBlocked() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }

private:
    sigset_t old_;
};

void set_pending(const layout::AtomicFile* file) {
    const SignalsBlocked blocked;
    if (g_pending.dir_fd >= 0) ::close(g_pending.dir_fd);
    g_pending.dir_fd = -1;
    if (file == nullptr || file->temporary_name().size() >= sizeof g_pending.name) return;
    std::memcpy(g_pending.name, file->temporary_name().c_str(), file->temporary_name().size() + 1);
    g_pending.dir_fd = ::fcntl(file->directory_fd(), F_DUPFD_CLOEXEC, 0);
    struct sigaction action {};
    action.sa_handler = remove_pending_and_die;
    action.sa_flags = SA_RESETHAND;  // the raise() in the handler then takes the default action
    for (const int s : kCleanupSignals) ::sigaction(s, &action, nullptr);
}

// `records_read`: the bytes of the records the query parsed (of the blocks its plan read).
void print_archive_bytes(const ArchiveReadBytes& b, uint64_t records_read) {
    std::fprintf(stderr,
                 "linecap: archive: fetched %llu bytes of indexes, %llu bytes of capture data for %llu bytes of "
                 "records read, %llu bytes of manifests, in %llu requests\n",
                 static_cast<unsigned long long>(b.index.load()), static_cast<unsigned long long>(b.data.load()),
                 static_cast<unsigned long long>(records_read), static_cast<unsigned long long>(b.manifest.load()),
                 static_cast<unsigned long long>(b.requests.load()));
}

constexpr uint64_t kDefaultAlertMarginS = 60;

// `extract --alert`: the records of FILE (or stdin) as the query's selections. kExitOk, or
// the exit status after a message naming what is wrong.
int alert_selections(const Cli& cli, const std::string& input, std::vector<Selection>& out) {
    for (const char* single : {"--from", "--to", "--filter", "--community-id"})
        if (cli.get(single)) return Cli::usage_error(std::string(single) + " does not go with --alert"), kExitUsage;
    uint64_t margin_s = kDefaultAlertMarginS;
    if (auto m = cli.get("--margin"); m && !parse_count(*m, 0, 86400, &margin_s))
        return Cli::usage_error("--margin: expected whole seconds 0..86400"), kExitUsage;
    std::ifstream file;
    if (input != "-") {
        file.open(input);
        if (!file) return Cli::usage_error("--alert " + input + ": " + errno_text(errno)), kExitUsage;
    }
    auto records = read_alert_records(input == "-" ? std::cin : file, margin_s * 1000000000ull);
    if (!records) return Cli::usage_error("--alert " + input + ": " + records.error().message), kExitUsage;
    auto selections = flow_selections(records.value());
    if (!selections) return Cli::usage_error("--alert " + input + ": " + selections.error().message), kExitUsage;
    out = std::move(selections.value());
    const size_t other = records->skipped.size();
    if (other > 0)
        print_line("info", "--alert " + input + ": " + std::to_string(other) + " lines without a flow skipped (" +
                               records->skipped.front() + (other > 1 ? ", ..." : "") + ")");
    if (cli.flag("-v"))
        for (const FlowQuery& q : records->queries)
            print_line("info", q.source + ": " + (q.community_id.empty() ? q.filter : "community id " + q.community_id) +
                                   " over " + format_time(q.from_ns) + " .. " + format_time(q.to_ns));
    return kExitOk;
}

// What extract and hold create select: the store, --alert records or --from, --to,
// --filter and --community-id, --max-bytes, --no-index. kExitOk, or the exit status after
// the message.
int query_options(const Cli& cli, const Common& c, ExtractOptions& o) {
    if (cli.get("--margin") && !cli.get("--alert")) return Cli::usage_error("--margin goes with --alert"), kExitUsage;
    o.directory = c.dir;
    o.file_template = c.file_template;
    if (auto alert = cli.get("--alert"))
        if (const int rc = alert_selections(cli, *alert, o.any_of); rc != kExitOk) return rc;
    if (auto f = cli.get("--from")) {
        auto t = parse_time(*f);
        if (!t) return Cli::usage_error("--from: " + t.error().message), kExitUsage;
        o.from_ns = t.value();
    }
    if (auto f = cli.get("--to")) {
        auto t = parse_time(*f);
        if (!t) return Cli::usage_error("--to: " + t.error().message), kExitUsage;
        o.to_ns = t.value();
    }
    if (o.from_ns > o.to_ns) return Cli::usage_error("--from is after --to"), kExitUsage;
    o.filter = cli.get("--filter").value_or("");
    o.community_id = cli.get("--community-id").value_or("");
    if (!o.community_id.empty())
        if (auto id = parse_community_id(o.community_id); !id) return Cli::usage_error(id.error().message), kExitUsage;
    if (auto m = cli.get("--max-bytes"); m && !parse_count(*m, sizeof(pcap::FileHeader), UINT64_MAX / 2, &o.max_bytes))
        return Cli::usage_error("--max-bytes: expected a byte count of at least 24 (the pcap file header)"), kExitUsage;
    o.use_index = !cli.flag("--no-index");
    return kExitOk;
}

int cmd_extract(const Cli& cli, const ToolCommands& above) {
    if (cli.get("--remote")) {
        if (cli.get("--alert")) return Cli::usage_error("--alert reads a local store (--dir), not --remote"), kExitUsage;
        if (cli.get("--archive")) return Cli::usage_error("--remote and --archive exclude each other"), kExitUsage;
        if (!above.extract_remote) return Cli::usage_error("--remote is not available in this build"), kExitUsage;
        return above.extract_remote(cli.options());
    }
    for (const char* remote_only : {"--cert", "--key", "--cacert", "--token-file", "--remote-timeout", "--max-answer-bytes",
                                    "--max-total-bytes", "--remote-deadline", "--min-rate", "--min-free-bytes"})
        if (cli.get(remote_only)) return Cli::usage_error(std::string(remote_only) + " goes with --remote"), kExitUsage;
    Common c;
    if (!cli.common(c, true)) return kExitUsage;
    ExtractOptions o;
    if (const int rc = query_options(cli, c, o); rc != kExitOk) return rc;
    o.require_synced = cli.flag("--require-synced");
    if (auto f = cli.get("--format")) {
        if (*f == "pcapng") o.output_format = FileKind::pcapng;
        else if (*f != "pcap") return Cli::usage_error("--format: expected pcap or pcapng, not '" + *f + "'"), kExitUsage;
    }
    const bool verbose = cli.flag("-v");
    o.on_warning = [](const std::string& m) { print_line("warning", m); };
    o.on_error = [](const std::string& m) { print_line("error", m); };
    o.on_concern = [](const FileConcern& c) { print_line("integrity", c.path + ": " + c.reason); };
    const bool accept_damaged = cli.flag("--accept-damaged");
    const auto out = cli.get("-o");
    if (!out || out->empty()) return Cli::usage_error("-o OUT.pcap (or -o - for stdout) is required"), kExitUsage;
    QueryStore store;
    if (const int rc = open_query_store(cli.options(), c.dirs, store); rc != kExitOk) return rc;
    o.store = store.backend.get();

    Result<ExtractReport> report = runtime_error("not run");
    const int rc = write_extract_output(*out, c.dir, [&](int fd) {
        report = extract(o, fd);
        return report.ok();
    });
    if (rc != kExitOk) return rc;
    if (!report) {
        const std::string& m = report.error().message;
        // Problems with the query itself (filter, directory, template) are usage errors.
        const bool usage = m.starts_with("filter ") || m.starts_with("file template") || m.starts_with("max_bytes ");
        if (usage) return Cli::usage_error(m), kExitUsage;
        return print_line("error", m), kExitFailure;
    }
    const ExtractReport& r = report.value();
    if (r.ended_early == "max_bytes")
        print_line("error", "output cut at --max-bytes " + std::to_string(o.max_bytes) + " after " +
                                std::to_string(r.packets_written) + " packets; the answer is incomplete");
    if (verbose) {
        std::fprintf(stderr, "linecap: filter plan: %s\n", r.plan.c_str());
        std::fprintf(stderr,
                     "linecap: %llu packets written; files: %zu in store, %zu in time range, %zu indexed "
                     "(%llu of %llu blocks read, %llu records of them alone, %zu files skipped), %zu scanned; %llu "
                     "packets / %.1f MiB examined\n",
                     static_cast<unsigned long long>(r.packets_written), r.files_in_store, r.files_selected,
                     r.files_indexed, static_cast<unsigned long long>(r.blocks_read),
                     static_cast<unsigned long long>(r.blocks_total),
                     static_cast<unsigned long long>(r.records_read_alone), r.files_skipped_by_index, r.files_scanned,
                     static_cast<unsigned long long>(r.packets_examined), static_cast<double>(r.bytes_read) / (1 << 20));
        if (store.archive) print_archive_bytes(store.archive->read_bytes(), r.bytes_read);
    }
    if (!r.concerns.empty() && !accept_damaged) return kExitUntrusted;
    return r.errors.empty() && r.ended_early.empty() ? kExitOk : kExitFailure;
}

// Housekeeping after `linecap index`: indexes whose capture file is gone (neither plain
// nor compressed), and index temporaries a crash left over an hour ago. Returns how many
// were removed.
size_t remove_stale_index_files(const LocalDirectoryStore& store) {
    const Result<StoreInventory> inventory = store.list({.follow_symlinks = true});
    if (!inventory) return 0;
    size_t removed = 0;
    for (const std::string& index : inventory->orphan_indexes) {
        const std::string path = store.location() + "/" + index;
        char magic[8] = {};
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        const bool ours = fd >= 0 && ::read(fd, magic, 8) == 8 && std::memcmp(magic, kIndexMagic, 8) == 0;
        if (fd >= 0) ::close(fd);
        if (ours && ::unlink(path.c_str()) == 0) ++removed;
    }
    const time_t now = ::time(nullptr);
    for (const std::string& temporary : inventory->temporaries) {
        const std::optional<std::string> final_name = layout::final_name_of_temporary(temporary);
        if (!final_name || !layout::capture_name_of_index(*final_name)) continue;
        const std::string path = store.location() + "/" + temporary;
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && now - st.st_mtim.tv_sec > 3600 && ::unlink(path.c_str()) == 0) ++removed;
    }
    return removed;
}

int cmd_index_volume(const Cli& cli, const Common& c);
int cmd_compress_volume(const Cli& cli, const Common& c);

// index and compress work on each capture volume in turn (they change its directory).
int for_each_volume(const Cli& cli, int (*command)(const Cli&, const Common&)) {
    Common c;
    if (!cli.common(c)) return kExitUsage;
    int rc = kExitOk;
    for (const std::string& dir : c.dirs) {
        Common volume = c;
        volume.dir = dir;
        volume.dirs = {dir};
        if (const int r = command(cli, volume); r != kExitOk && rc == kExitOk) rc = r;
    }
    return rc;
}

int cmd_index(const Cli& cli) { return for_each_volume(cli, cmd_index_volume); }
int cmd_compress(const Cli& cli) { return for_each_volume(cli, cmd_compress_volume); }

int cmd_index_volume(const Cli& cli, const Common& c) {
    uint64_t jobs = 1, block_kb = kDefaultIndexBlockBytes / 1024;
    if (auto j = cli.get("--jobs"); j && !parse_count(*j, 1, 64, &jobs))
        return Cli::usage_error("--jobs: expected 1..64"), kExitUsage;
    if (auto b = cli.get("--block-kb"); b && !parse_count(*b, 4, 65536, &block_kb))
        return Cli::usage_error("--block-kb: expected 4..65536"), kExitUsage;
    const bool force = cli.flag("--force"), verbose = cli.flag("-v");
    auto tmpl = FileTemplate::compile(c.file_template);
    const LocalDirectoryStore store(c.dir);
    auto catalog = store.list(ListOptions::catalog(tmpl.value()));
    if (!catalog) return print_line("error", catalog.error().message), kExitFailure;

    std::vector<const StoredFile*> todo;
    size_t up_to_date = 0;
    for (const auto& f : catalog->files) {
        if (!force) {
            LoadedIndex li = store.load_index(f, f.size, f.mtime_ns);
            if (li.state == IndexState::valid) {
                // A query checks only what it reads of an index; this checks all of it.
                if (auto whole = li.index.verify(); !whole) {
                    li.state = IndexState::corrupt;
                    li.problem = whole.error().message;
                }
            }
            if (li.state == IndexState::valid && li.index.version() >= kIndexVersion) {
                ++up_to_date;
                continue;
            }
            if (verbose && li.state == IndexState::valid)
                print_line("info", f.path + ": index version " + std::to_string(li.index.version()) + ", upgrading");
            else if (verbose && li.state != IndexState::missing)
                print_line("info", f.path + ": index " + (li.state == IndexState::stale ? "stale" : "damaged") + " (" +
                                       li.problem + "), rebuilding");
        }
        todo.push_back(&f);
    }
    std::atomic<size_t> next{0};
    std::mutex mu;
    size_t built = 0, failed = 0;
    uint64_t pcap_bytes = 0, index_bytes = 0;
    double seconds = 0;
    IndexBuildOptions bo;
    bo.block_bytes = static_cast<uint32_t>(block_kb * 1024);
    auto worker = [&] {
        for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
            auto r = build_index(todo[i]->path, bo);
            std::lock_guard lock(mu);
            if (!r) {
                ++failed;
                print_line("error", r.error().message);
                continue;
            }
            ++built;
            pcap_bytes += r->pcap_bytes;
            index_bytes += r->index_bytes;
            seconds += r->seconds;
            if (!r->warning.empty()) {
                ++failed;
                print_line("error", todo[i]->path + ": " + r->warning);
            }
            if (verbose)
                std::fprintf(stderr, "linecap: indexed %s: %llu packets, %llu blocks, %llu keys, index %llu bytes, %.3f s\n",
                             todo[i]->path.c_str(), static_cast<unsigned long long>(r->packets),
                             static_cast<unsigned long long>(r->blocks), static_cast<unsigned long long>(r->keys),
                             static_cast<unsigned long long>(r->index_bytes), r->seconds);
        }
    };
    std::vector<std::thread> threads;
    for (uint64_t k = 1; k < std::min<uint64_t>(jobs, todo.size()); ++k) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();

    const size_t removed = remove_stale_index_files(store);
    std::fprintf(stderr, "linecap: %zu indexed, %zu up to date, %zu failed; %zu stale files removed",
                 built, up_to_date, failed, removed);
    if (pcap_bytes)
        std::fprintf(stderr, "; index/pcap size %.4f%% (%llu / %llu bytes), %.0f MB/s",
                     100.0 * static_cast<double>(index_bytes) / static_cast<double>(pcap_bytes),
                     static_cast<unsigned long long>(index_bytes), static_cast<unsigned long long>(pcap_bytes),
                     seconds > 0 ? static_cast<double>(pcap_bytes) / 1e6 / seconds * static_cast<double>(std::min<uint64_t>(jobs, todo.size())) : 0.0);
    std::fprintf(stderr, "\n");
    return failed ? kExitFailure : kExitOk;
}

int cmd_compress_volume(const Cli& cli, const Common& c) {
    uint64_t level = kDefaultCompressLevel;
    if (auto l = cli.get("--level"); l && !parse_count(*l, 1, 19, &level))
        return Cli::usage_error("--level: expected 1..19"), kExitUsage;
    const bool verbose = cli.flag("-v");
    auto tmpl = FileTemplate::compile(c.file_template);
    auto catalog = open_store(c.dir)->list(ListOptions::catalog(tmpl.value()));
    if (!catalog) return print_line("error", catalog.error().message), kExitFailure;
    size_t compressed = 0, already = 0, skipped = 0, failed = 0;
    uint64_t pcap_bytes = 0, compressed_bytes = 0;
    double cpu = 0;
    for (const StoredFile& f : catalog->files) {
        if (f.compressed) {
            ++already;
            continue;
        }
        if (!f.manifest) {
            ++skipped;
            if (verbose) print_line("info", f.path + ": no manifest; left as it is");
            continue;
        }
        bool vanished = false;
        auto r = compress_capture(c.dir, f.name, {.level = static_cast<int>(level)}, &vanished);
        if (!r) {
            if (vanished) continue;
            ++failed;
            print_line("error", r.error().message);
            continue;
        }
        ++compressed;
        pcap_bytes += r->pcap_bytes;
        compressed_bytes += r->compressed_bytes;
        cpu += r->cpu_seconds;
        if (verbose)
            std::fprintf(stderr, "linecap: compressed %s: %llu -> %llu bytes, %llu frames%s, %.3f s CPU\n",
                         f.path.c_str(), static_cast<unsigned long long>(r->pcap_bytes),
                         static_cast<unsigned long long>(r->compressed_bytes), static_cast<unsigned long long>(r->frames),
                         r->index_aligned ? " at index blocks" : "", r->cpu_seconds);
    }
    std::fprintf(stderr, "linecap: %zu compressed, %zu already compressed, %zu without manifest, %zu failed", compressed,
                 already, skipped, failed);
    if (pcap_bytes)
        std::fprintf(stderr, "; ratio %.3f (%llu -> %llu bytes), %.2f CPU s/GB", static_cast<double>(pcap_bytes) /
                     static_cast<double>(compressed_bytes), static_cast<unsigned long long>(pcap_bytes),
                     static_cast<unsigned long long>(compressed_bytes), cpu / (static_cast<double>(pcap_bytes) / 1e9));
    std::fprintf(stderr, "\n");
    return failed ? kExitFailure : kExitOk;
}

int cmd_stats(const Cli& cli) {
    Common c;
    if (!cli.common(c, true)) return kExitUsage;
    QueryStore store;
    if (const int rc = open_query_store(cli.options(), c.dirs, store); rc != kExitOk) return rc;
    StatsOptions o;
    o.directory = store.backend->location();
    o.store = store.backend.get();
    o.file_template = c.file_template;
    uint64_t gaps = 3, threshold_s = c.rotate_interval_s;
    if (auto g = cli.get("--gaps"); g && !parse_count(*g, 0, 1000000, &gaps))
        return Cli::usage_error("--gaps: expected a count"), kExitUsage;
    if (auto g = cli.get("--gap-threshold"); g && !parse_count(*g, 0, 100000000, &threshold_s))
        return Cli::usage_error("--gap-threshold: expected whole seconds"), kExitUsage;
    o.largest_gaps = gaps;
    o.gap_threshold_ns = threshold_s * 1000000000ull;
    const bool json = cli.flag("--json");
    o.on_error = [](const std::string& m) { print_line("error", m); };
    auto st = collect_stats(o);
    if (!st) return print_line("error", st.error().message), kExitFailure;
    const std::string text = json ? format_stats_json(st.value()) : format_stats(st.value(), cli.flag("--per-file"), o.gap_threshold_ns);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return st->errors.empty() ? kExitOk : kExitFailure;
}

// "user:NAME" of the account running the tool (and who it was before sudo).
std::string local_user() {
    const passwd* pw = ::getpwuid(::geteuid());
    std::string who = "user:" + (pw ? std::string(pw->pw_name) : std::to_string(::geteuid()));
    if (const char* sudo = std::getenv("SUDO_USER"); sudo != nullptr && *sudo) who += " (sudo from " + std::string(sudo) + ")";
    return who;
}

std::string hold_line(const Hold& h) {
    char columns[256];
    std::snprintf(columns, sizeof columns, "%-26s %-30s %-30s %10llu %12llu  ", h.id.c_str(),
                  format_utc_ns(h.created_ns).c_str(), h.expires_ns ? format_utc_ns(h.expires_ns).c_str() : "until released",
                  static_cast<unsigned long long>(h.packets), static_cast<unsigned long long>(h.bytes));
    return columns + h.created_by + "  " + one_line(h.reason) + "\n";
}

// Lists the holds (removing the expired ones, each said on stderr); problems on stderr.
HoldListing listed_holds(const std::string& dir) {
    HoldListing listing = list_holds(dir, utc_now_ns(), true);
    for (const std::string& r : listing.removed) print_line("info", "hold " + r + "; removed");
    for (const std::string& p : listing.problems) print_line("error", "hold " + p);
    return listing;
}

int cmd_hold(const Cli& cli, const std::vector<std::string>& operands) {
    const std::string action = operands.empty() ? "" : operands[0];
    if (action != "create" && action != "list" && action != "release")
        return Cli::usage_error("hold: expected create, list or release" + (action.empty() ? "" : ", not '" + action + "'")),
               kExitUsage;
    if (operands.size() != (action == "release" ? 2u : 1u))
        return Cli::usage_error(action == "release" ? "hold release: expected one hold ID"
                                                    : "hold " + action + ": unexpected '" + operands.back() + "'"),
               kExitUsage;
    Common c;
    if (!cli.common(c)) return kExitUsage;
    if (action == "release") {
        if (auto released = release_hold(c.dir, operands[1]); !released)
            return released.error().config ? (Cli::usage_error(released.error().message), kExitUsage)
                                              : (print_line("error", released.error().message), kExitFailure);
        print_line("info", "hold " + operands[1] + " released by " + local_user());
        return kExitOk;
    }
    if (action == "list") {
        const HoldListing listing = listed_holds(c.dir);
        if (cli.flag("--json")) {
            std::fputs(holds_json(listing.holds).c_str(), stdout);
        } else {
            std::printf("%-26s %-30s %-30s %10s %12s  %s\n", "ID", "CREATED", "EXPIRES", "PACKETS", "BYTES", "BY  REASON");
            for (const Hold& h : listing.holds) std::fputs(hold_line(h).c_str(), stdout);
        }
        return listing.problems.empty() ? kExitOk : kExitFailure;
    }
    ExtractOptions o;
    if (const int rc = query_options(cli, c, o); rc != kExitOk) return rc;
    o.on_warning = [](const std::string& m) { print_line("warning", m); };
    o.on_error = [](const std::string& m) { print_line("error", m); };
    o.on_concern = [](const FileConcern& f) { print_line("integrity", f.path + ": " + f.reason); };
    // The bundle is kept in the first volume; its packets come from every volume.
    const std::unique_ptr<StoreBackend> volumes = open_volumes(c.dirs);
    o.store = volumes.get();
    HoldRequest request;
    request.query = o;
    request.origin = cli.get("--alert") ? "alert records of " + *cli.get("--alert") : "linecap hold create";
    request.created_by = local_user();
    request.reason = cli.get("--reason").value_or("");
    if (request.reason.empty()) return Cli::usage_error("hold create: --reason TEXT is required"), kExitUsage;
    const uint64_t now = utc_now_ns();
    if (auto e = cli.get("--expires")) {
        auto t = parse_expiry(*e, now);
        if (!t) return Cli::usage_error("--expires: " + t.error().message), kExitUsage;
        request.expires_ns = t.value();
    }
    (void)listed_holds(c.dir);  // expired holds go before a new one is counted
    auto made = create_hold(request, now);
    if (!made) {
        return made.error().config ? (Cli::usage_error("hold create: " + made.error().message), kExitUsage)
                                      : (print_line("error", "hold create: " + made.error().message), kExitFailure);
    }
    const Hold& h = made->hold;
    std::printf("%s\n", h.id.c_str());
    print_line("info", "hold " + h.id + ": " + std::to_string(h.packets) + " packets, " +
                           std::to_string(h.packet_bytes) + " bytes, sha256 " + h.sha256 + ", " +
                           (h.expires_ns ? "expires " + format_utc_ns(h.expires_ns) : "until released") + ", in " +
                           holds_path(c.dir) + "/" + h.id);
    return h.findings.empty() ? kExitOk : kExitFailure;
}

}  // namespace

void print_line(const char* level, const std::string& m) {
    std::fprintf(stderr, "linecap: %s: %s\n", level, m.c_str());
}

bool parse_count(const std::string& text, uint64_t min, uint64_t max, uint64_t* out) {
    if (text.empty() || text.size() > 12) return false;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v < min || v > max) return false;
    *out = v;
    return true;
}

bool is_archive_option(std::string_view name) {
    for (const char* option : kArchiveOptions)
        if (name == option) return true;
    return false;
}

int open_query_store(const CommandOptions& options, const std::vector<std::string>& directories, QueryStore& out) {
    const auto get = [&](const char* name) { return option_value(options, name); };
    const auto url = get("--archive");
    if (!url) {
        for (const char* archive_only : kArchiveOptions)
            if (get(archive_only))
                return print_usage_error(std::string(archive_only) + " goes with --archive"), kExitUsage;
        out.backend = open_volumes(directories);
        return kExitOk;
    }
    if (get("--path-style") && get("--virtual-hosted"))
        return print_usage_error("--path-style and --virtual-hosted exclude each other"), kExitUsage;
    const auto endpoint = get("--endpoint");
    if (!endpoint) return print_usage_error("--archive needs --endpoint URL"), kExitUsage;
    if (!endpoint->starts_with("http://") && !endpoint->starts_with("https://"))
        return print_usage_error("--endpoint: expected http://HOST[:PORT] or https://..., not '" + *endpoint + "'"),
               kExitUsage;
    ArchiveAccess access;
    access.url = *url;
    access.endpoint.url = *endpoint;
    while (access.endpoint.url.ends_with('/')) access.endpoint.url.pop_back();
    if (auto r = get("--region")) access.endpoint.region = *r;
    if (auto f = get("--ca-file")) access.endpoint.ca_file = *f;
    access.endpoint.path_style = !get("--virtual-hosted");
    access.credentials_file = get("--credentials").value_or("");
    auto archive = ArchiveStore::open(access);
    if (!archive) {
        if (archive.error().config) return print_usage_error(archive.error().message), kExitUsage;
        return print_line("error", archive.error().message), kExitFailure;
    }
    out.archive = archive.value().get();
    if (directories.empty()) out.backend = std::move(archive.value());
    else out.backend = std::make_unique<StoreUnion>(open_volumes(directories), std::move(archive.value()));
    return kExitOk;
}

void print_usage_error(const std::string& m) { std::fprintf(stderr, "linecap: %s (see 'linecap --help')\n", m.c_str()); }

int write_extract_output(const std::string& out, const std::string& store_directory,
                         const std::function<bool(int fd)>& produce) {
    if (out == "-") {
        if (::isatty(STDOUT_FILENO))
            return print_usage_error("refusing to write a capture to a terminal (redirect stdout or use -o FILE)"),
                   kExitUsage;
        (void)produce(STDOUT_FILENO);
        return kExitOk;
    }
    layout::AtomicFile file;
    {
        const SignalsBlocked blocked;  // until the handler knows the temporary
        auto opened = open_extract_output(out, store_directory);
        if (!opened) return print_usage_error(opened.error().message), kExitUsage;
        file = std::move(opened.value());
        set_pending(&file);
    }
    const bool keep = produce(file.fd());
    const IoStatus committed = keep ? file.commit() : IoStatus{};
    set_pending(nullptr);
    file.discard();  // after a failed query or commit: the temporary goes
    if (!committed.ok()) return print_line("error", out + ": " + committed.message()), kExitFailure;
    return kExitOk;
}

int linecap_tool_main(int argc, char** argv, const ToolCommands& above) {
    if (argc < 2) {
        print_help(stderr, nullptr);
        return kExitUsage;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        const CommandHelp* topic = argc > 2 ? find_command(argv[2]) : nullptr;
        if (argc > 2 && topic == nullptr) return Cli::usage_error("no command '" + std::string(argv[2]) + "'"), kExitUsage;
        print_help(stdout, topic);
        return kExitOk;
    }
    if (command == "--version") {
        std::printf("linecap %s\n", LINECAP_VERSION);
        return kExitOk;
    }
    const CommandHelp* help = find_command(command);
    if (help == nullptr) {
        Cli::usage_error("unknown command '" + command + "'");
        return kExitUsage;
    }
    const CommandLine args = parse_command_line(argc, argv, 2, kOptions, command == "hold");
    if (!args.ok()) {
        Cli::usage_error(args.error());
        return kExitUsage;
    }
    if (args.has("--help")) {
        print_help(stdout, help);
        return kExitOk;
    }
    const Cli cli(args);
    if (command == "extract") return cmd_extract(cli, above);
    if (command == "index") return cmd_index(cli);
    if (command == "compress") return cmd_compress(cli);
    if (command == "serve") {
        if (!above.serve) return Cli::usage_error("serve is not available in this build"), kExitUsage;
        return above.serve(args.options);
    }
    if (command == "stats") return cmd_stats(cli);
    if (command == "hold") return cmd_hold(cli, args.operands);
    print_line("error", "command '" + command + "' is described but not implemented");
    return kExitFailure;
}

}  // namespace linecap::store
