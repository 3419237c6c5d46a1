#include "store/cli.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "linecap_build.h"
#include "output/io_status.hpp"
#include "api/query.hpp"
#include "api/remote.hpp"
#include "api/server.hpp"
#include "store/catalog.hpp"
#include "store/community_id.hpp"
#include "store/extract.hpp"
#include "store/index_format.hpp"
#include "store/stats.hpp"
#include "store/time_spec.hpp"

namespace linecap::store {
namespace {

constexpr const char* kHelp = R"(linecap - forensic retrieval over a linecapd capture store

usage:
  linecap extract --dir DIR [--from TIME] [--to TIME] [--filter EXPR] [--community-id ID]
                  [--max-bytes N] -o OUT.pcap|- [--no-index] [-v]
  linecap extract --remote URL[,URL...] [--cert FILE --key FILE] [--cacert FILE]
                  [--token-file FILE] [--remote-timeout SECONDS] [--format pcapng|pcap]
                  [--from TIME] [--to TIME] [--filter EXPR] [--community-id ID]
                  [--max-bytes N] -o OUT|-
  linecap serve   --config FILE [--dir DIR] [--template TEMPLATE]
  linecap index   --dir DIR [--force] [--jobs N] [--block-kb N] [-v]
  linecap stats   --dir DIR [--per-file] [--gaps N] [--gap-threshold SECONDS] [--json]
  linecap --help | --version

  Every command also takes --template TEMPLATE (the daemon's output.file_template;
  default "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}") or --config FILE (a linecapd
  configuration: output.directory, output.file_template and output.rotate.interval are
  taken from it; --dir and --template override).

extract   Writes the packets with FROM <= timestamp < TO (nanosecond precision) that
          match the libpcap filter EXPR, from every finished capture file in DIR (all
          ports and queues), merged in timestamp order (equal timestamps: file name
          order, then file order) into one nanosecond pcap; "-o -" writes to stdout.
          Only files whose span meets the range are opened, and through their index
          only the blocks that can hold a match are read. A file without a usable index
          is scanned, with a warning.
          TIME: ISO 8601 with a zone (2026-11-30T02:10:00.5Z, 2026-11-30T03:10:00+01:00,
          20261130T021000Z, or a date 2026-11-30 = midnight UTC) or Unix seconds with
          an optional fraction (1700000000.123456789). Default: everything.
          --community-id ID  only the packets of the flow with this Community ID v1
                      ("1:" + base64 SHA-1, as Zeek, Suricata and Security Onion log it)
          --max-bytes N  stop before the first packet that would make the output
                      larger than N bytes (said on stderr; exit status 1)
          --no-index  scan every selected file (ignore indexes)
          -v          print the plan and what was read on stderr
          --remote    ask the retrieval APIs (`linecap serve`) of these appliances
                      instead of a local store, all at once, and merge their answers
                      in timestamp order: pcapng with one interface per appliance
                      (named host:port), or --format pcap. Credentials: --cert/--key
                      (client certificate), --cacert (CA of the servers), --token-file
                      (a file holding a bearer token, mode 600). An appliance that
                      fails, or sends nothing for --remote-timeout seconds (default
                      30), is reported and left out; exit status 1.
serve     The retrieval API: HTTP(S) endpoints /api/v1/packets, /api/v1/size,
          /api/v1/files, /api/v1/status and a page at /, configured by the api:
          section of the configuration (doc/api.md).
index     Builds NAME.pcap.idx for every finished capture file whose index is missing,
          stale or damaged (--force: all), and removes indexes whose capture file is
          gone. --jobs N files at a time (default 1); --block-kb N index block size
          (default 256).
stats     Time span, files, bytes and packets per stream, the largest gaps between
          consecutive files of each stream (--gaps N, default 3; --gap-threshold S
          counts gaps longer than S seconds, default the configured rotation interval),
          drops per file where a manifest reports them. --per-file lists every file;
          --json prints the same as JSON.

exit status: 0 ok; 1 some files could not be read (the rest was processed, the output
is a valid pcap); 64 usage error.
)";

struct Args {
    std::string command;
    std::vector<std::pair<std::string, std::string>> options;  // name → value ("" for flags)
    std::string error;
};

bool takes_value(const std::string& name) {
    static const char* with_value[] = {"--dir",  "--from",     "--to",   "--filter",        "-o",
                                       "--output", "--template", "--config", "--jobs",      "--block-kb",
                                       "--gaps", "--gap-threshold", "--community-id", "--max-bytes",
                                       "--remote", "--cert", "--key", "--cacert", "--token-file",
                                       "--remote-timeout", "--format"};
    for (const char* w : with_value)
        if (name == w) return true;
    return false;
}

bool known_flag(const std::string& name) {
    static const char* flags[] = {"--no-index", "-v", "--verbose", "--force", "--per-file", "--json"};
    for (const char* f : flags)
        if (name == f) return true;
    return false;
}

Args parse_args(int argc, char** argv) {
    Args a;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        const size_t eq = arg.find('=');
        const bool has_eq = arg.starts_with("--") && eq != std::string::npos;
        if (has_eq) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        if (takes_value(arg)) {
            if (!has_eq) {
                if (i + 1 >= argc) {
                    a.error = "option " + arg + " needs a value";
                    return a;
                }
                value = argv[++i];
            }
            if (arg == "--output") arg = "-o";
            a.options.emplace_back(arg, value);
        } else if (known_flag(arg) && !has_eq) {
            if (arg == "--verbose") arg = "-v";
            a.options.emplace_back(arg, "");
        } else {
            a.error = "unknown option '" + std::string(argv[i]) + "'";
            return a;
        }
    }
    return a;
}

struct Common {
    std::string dir;
    std::string file_template = kDefaultFileTemplate;
    uint64_t rotate_interval_s = 0;
};

class Cli {
public:
    Cli(const Args& a) : args_(a) {}

    std::optional<std::string> get(const std::string& name) const {
        std::optional<std::string> v;
        for (const auto& [n, val] : args_.options)
            if (n == name) v = val;
        return v;
    }
    bool flag(const std::string& name) const { return get(name).has_value(); }

    // --dir/--template/--config; false (usage message printed) when unusable.
    bool common(Common& c) const {
        if (auto cfg = get("--config")) {
            auto config = load_config(*cfg);
            if (!config) {
                usage_error(config.error().message);
                return false;
            }
            c.dir = config->output.directory;
            c.file_template = config->output.file_template;
            c.rotate_interval_s = config->output.rotate_interval_s;
        }
        if (auto d = get("--dir")) c.dir = *d;
        if (auto t = get("--template")) c.file_template = *t;
        if (c.dir.empty()) {
            usage_error("--dir DIR is required (or --config FILE)");
            return false;
        }
        while (c.dir.size() > 1 && c.dir.back() == '/') c.dir.pop_back();
        auto tmpl = NameTemplate::compile(c.file_template);
        if (!tmpl) {
            usage_error(tmpl.error().message);
            return false;
        }
        return true;
    }

    static void usage_error(const std::string& m) {
        std::fprintf(stderr, "linecap: %s (see 'linecap --help')\n", m.c_str());
    }

private:
    const Args& args_;
};

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

// True when `path` names an existing file that is one of the store's files.
bool is_store_file(const std::string& dir, const std::string& path) {
    struct stat out {};
    if (::stat(path.c_str(), &out) != 0) return false;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return false;
    bool same = false;
    while (const dirent* e = ::readdir(d)) {
        struct stat st {};
        const std::string p = dir + "/" + e->d_name;
        if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
            same = true;
            break;
        }
    }
    ::closedir(d);
    return same;
}

int cmd_serve(const Cli& cli) {
    const auto config = cli.get("--config");
    if (!config) return Cli::usage_error("serve needs --config FILE (its api: section)"), kExitUsage;
    return api::serve_main(*config, cli.get("--dir").value_or(""), cli.get("--template").value_or(""));
}

// -o: stdout (never a terminal), or a hidden temporary renamed to OUT when complete.
struct OutputFile {
    std::string path;
    int fd = -1;
    std::string tmp;

    // 0, or the exit code after saying what is wrong.
    int open(const std::string& out, const std::string& store_dir) {
        path = out;
        if (out == "-") {
            if (::isatty(STDOUT_FILENO))
                return Cli::usage_error("refusing to write a capture to a terminal (redirect stdout or use -o FILE)"),
                       kExitUsage;
            fd = STDOUT_FILENO;
            return 0;
        }
        if (!store_dir.empty() && is_store_file(store_dir, out))
            return Cli::usage_error("output '" + out + "' is a file of the store; choose another name"), kExitUsage;
        const size_t slash = out.rfind('/');
        const std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
        const std::string base = slash == std::string::npos ? out : out.substr(slash + 1);
        tmp = dir + "/." + base + ".tmp.XXXXXX";
        fd = ::mkostemp(tmp.data(), O_CLOEXEC);
        if (fd < 0) return print_line("error", out + ": " + errno_text(errno)), kExitErrors;
        (void)::fchmod(fd, 0644);
        return 0;
    }

    // Renames the temporary into place when `complete`, removes it otherwise. 0, or the
    // exit code after saying what went wrong.
    int close(bool complete) {
        if (tmp.empty()) return 0;
        const bool closed = ::close(fd) == 0;
        if (!complete || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
            const int e = errno;
            ::unlink(tmp.c_str());
            if (complete) return print_line("error", path + ": " + errno_text(e)), kExitErrors;
        }
        return 0;
    }
};

int cmd_extract_remote(const Cli& cli) {
    api::RemoteOptions r;
    const std::string list = *cli.get("--remote");
    for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) r.urls.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    if (r.urls.empty()) return Cli::usage_error("--remote: expected URL[,URL...]"), kExitUsage;
    for (const auto& u : r.urls)
        if (!u.starts_with("http://") && !u.starts_with("https://"))
            return Cli::usage_error("--remote: '" + u + "' is not an http:// or https:// URL"), kExitUsage;
    if (cli.get("--dir") || cli.get("--config")) return Cli::usage_error("--remote and --dir/--config exclude each other"), kExitUsage;
    r.cert = cli.get("--cert").value_or("");
    r.key = cli.get("--key").value_or("");
    r.cacert = cli.get("--cacert").value_or("");
    r.token_file = cli.get("--token-file").value_or("");
    if (auto t = cli.get("--remote-timeout"); t && !parse_count(*t, 1, 86400, &r.stall_timeout_s))
        return Cli::usage_error("--remote-timeout: expected 1..86400 seconds"), kExitUsage;
    const std::string format = cli.get("--format").value_or("pcapng");
    if (format != "pcapng" && format != "pcap") return Cli::usage_error("--format: pcapng or pcap"), kExitUsage;
    r.pcapng = format == "pcapng";
    // The query is checked here as the servers will check it, so a typo fails at once.
    for (const char* name : {"--from", "--to", "--filter", "--community-id", "--max-bytes"}) {
        if (auto v = cli.get(name)) {
            std::string key = std::string(name).substr(2);
            for (char& ch : key)
                if (ch == '-') ch = '_';
            r.params.emplace_back(key, *v);
        }
    }
    if (auto q = api::parse_query(api::QueryKind::packets, r.params); !q) return Cli::usage_error(q.error().message), kExitUsage;
    r.on_error = [](const std::string& m) { print_line("error", m); };
    const auto out = cli.get("-o");
    if (!out || out->empty()) return Cli::usage_error("-o OUT (or -o - for stdout) is required"), kExitUsage;
    OutputFile file;
    if (const int rc = file.open(*out, ""); rc != 0) return rc;
    auto report = api::extract_remote(r, file.fd);
    if (const int rc = file.close(report.ok()); rc != 0) return rc;
    if (!report) return print_line("error", report.error().message), kExitErrors;
    if (cli.flag("-v"))
        std::fprintf(stderr, "linecap: %llu packets from %zu appliance(s); %zu failed\n",
                     static_cast<unsigned long long>(report->packets_written), report->appliances_ok,
                     report->appliances_failed);
    return report->errors.empty() ? kExitOk : kExitErrors;
}

int cmd_extract(const Cli& cli) {
    if (cli.get("--remote")) return cmd_extract_remote(cli);
    for (const char* remote_only : {"--cert", "--key", "--cacert", "--token-file", "--remote-timeout", "--format"})
        if (cli.get(remote_only)) return Cli::usage_error(std::string(remote_only) + " goes with --remote"), kExitUsage;
    Common c;
    if (!cli.common(c)) return kExitUsage;
    ExtractOptions o;
    o.directory = c.dir;
    o.file_template = c.file_template;
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
    if (auto m = cli.get("--max-bytes"); m && !parse_count(*m, kPcapFileHeaderSize, UINT64_MAX / 2, &o.max_bytes))
        return Cli::usage_error("--max-bytes: expected a byte count of at least 24 (the pcap file header)"), kExitUsage;
    o.use_index = !cli.flag("--no-index");
    const bool verbose = cli.flag("-v");
    o.on_warning = [](const std::string& m) { print_line("warning", m); };
    o.on_error = [](const std::string& m) { print_line("error", m); };
    const auto out = cli.get("-o");
    if (!out || out->empty()) return Cli::usage_error("-o OUT.pcap (or -o - for stdout) is required"), kExitUsage;

    OutputFile file;
    if (const int rc = file.open(*out, c.dir); rc != 0) return rc;
    auto report = extract(o, file.fd);
    if (const int rc = file.close(report.ok()); rc != 0) return rc;
    if (!report) {
        const std::string& m = report.error().message;
        // Problems with the query itself (filter, directory, template) are usage errors.
        const bool usage = m.starts_with("filter ") || m.starts_with("file template");
        if (usage) return Cli::usage_error(m), kExitUsage;
        return print_line("error", m), kExitErrors;
    }
    const ExtractReport& r = report.value();
    if (r.ended_early == "max_bytes")
        print_line("error", "output cut at --max-bytes " + std::to_string(o.max_bytes) + " after " +
                                std::to_string(r.packets_written) + " packets; the answer is incomplete");
    if (verbose) {
        std::fprintf(stderr, "linecap: filter plan: %s\n", r.plan.c_str());
        std::fprintf(stderr,
                     "linecap: %llu packets written; files: %zu in store, %zu in time range, %zu indexed "
                     "(%llu of %llu blocks read, %zu files skipped), %zu scanned; %llu packets / %.1f MiB examined\n",
                     static_cast<unsigned long long>(r.packets_written), r.files_in_store, r.files_selected,
                     r.files_indexed, static_cast<unsigned long long>(r.blocks_read),
                     static_cast<unsigned long long>(r.blocks_total), r.files_skipped_by_index, r.files_scanned,
                     static_cast<unsigned long long>(r.packets_examined), static_cast<double>(r.bytes_read) / (1 << 20));
    }
    return r.errors.empty() && r.ended_early.empty() ? kExitOk : kExitErrors;
}

int cmd_index(const Cli& cli) {
    Common c;
    if (!cli.common(c)) return kExitUsage;
    uint64_t jobs = 1, block_kb = kDefaultIndexBlockBytes / 1024;
    if (auto j = cli.get("--jobs"); j && !parse_count(*j, 1, 64, &jobs))
        return Cli::usage_error("--jobs: expected 1..64"), kExitUsage;
    if (auto b = cli.get("--block-kb"); b && !parse_count(*b, 4, 65536, &block_kb))
        return Cli::usage_error("--block-kb: expected 4..65536"), kExitUsage;
    const bool force = cli.flag("--force"), verbose = cli.flag("-v");
    auto tmpl = NameTemplate::compile(c.file_template);
    auto catalog = scan_catalog(c.dir, tmpl.value());
    if (!catalog) return print_line("error", catalog.error().message), kExitErrors;

    std::vector<const CaptureFileInfo*> todo;
    size_t up_to_date = 0, pcapng = 0;
    for (const auto& f : catalog->files) {
        if (f.pcapng) {
            ++pcapng;
            continue;
        }
        if (!force) {
            LoadedIndex li = load_index(f.path, f.size, f.mtime_ns);
            if (li.state == IndexState::valid) {
                ++up_to_date;
                continue;
            }
            if (verbose && li.state != IndexState::missing)
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

    // Housekeeping: indexes whose capture file is gone, temporaries left by a crash.
    size_t removed = 0;
    if (DIR* d = ::opendir(c.dir.c_str())) {
        const time_t now = ::time(nullptr);
        while (const dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            const std::string path = c.dir + "/" + name;
            struct stat st {};
            if (name.size() > 9 && name[0] != '.' && name.ends_with(".pcap.idx")) {
                const std::string pcap_path = path.substr(0, path.size() - 4);
                if (::stat(pcap_path.c_str(), &st) != 0 && errno == ENOENT) {
                    char magic[8] = {};
                    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
                    const bool ours = fd >= 0 && ::read(fd, magic, 8) == 8 && std::memcmp(magic, kIndexMagic, 8) == 0;
                    if (fd >= 0) ::close(fd);
                    if (ours && ::unlink(path.c_str()) == 0) ++removed;
                }
            } else if (name.starts_with(".") && name.find(".pcap.idx.tmp.") != std::string::npos) {
                if (::stat(path.c_str(), &st) == 0 && now - st.st_mtim.tv_sec > 3600 && ::unlink(path.c_str()) == 0)
                    ++removed;
            }
        }
        ::closedir(d);
    }
    std::fprintf(stderr, "linecap: %zu indexed, %zu up to date, %zu failed%s; %zu stale files removed",
                 built, up_to_date, failed, pcapng ? " (pcapng files skipped: not supported yet)" : "", removed);
    if (pcap_bytes)
        std::fprintf(stderr, "; index/pcap size %.4f%% (%llu / %llu bytes), %.0f MB/s",
                     100.0 * static_cast<double>(index_bytes) / static_cast<double>(pcap_bytes),
                     static_cast<unsigned long long>(index_bytes), static_cast<unsigned long long>(pcap_bytes),
                     seconds > 0 ? static_cast<double>(pcap_bytes) / 1e6 / seconds * static_cast<double>(std::min<uint64_t>(jobs, todo.size())) : 0.0);
    std::fprintf(stderr, "\n");
    return failed ? kExitErrors : kExitOk;
}

int cmd_stats(const Cli& cli) {
    Common c;
    if (!cli.common(c)) return kExitUsage;
    StatsOptions o;
    o.directory = c.dir;
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
    if (!st) return print_line("error", st.error().message), kExitErrors;
    const std::string text = json ? format_stats_json(st.value()) : format_stats(st.value(), cli.flag("--per-file"), o.gap_threshold_ns);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return st->errors.empty() ? kExitOk : kExitErrors;
}

}  // namespace

int linecap_tool_main(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(kHelp, stderr);
        return kExitUsage;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(kHelp, stdout);
        return kExitOk;
    }
    if (command == "--version") {
        std::printf("linecap %s\n", LINECAP_VERSION);
        return kExitOk;
    }
    if (command != "extract" && command != "index" && command != "stats" && command != "serve") {
        Cli::usage_error("unknown command '" + command + "'");
        return kExitUsage;
    }
    const Args args = parse_args(argc, argv);
    if (!args.error.empty()) {
        Cli::usage_error(args.error);
        return kExitUsage;
    }
    for (const auto& [name, value] : args.options) {
        if (name == "--help") {
            std::fputs(kHelp, stdout);
            return kExitOk;
        }
    }
    const Cli cli(args);
    if (command == "extract") return cmd_extract(cli);
    if (command == "index") return cmd_index(cli);
    if (command == "serve") return cmd_serve(cli);
    return cmd_stats(cli);
}

}  // namespace linecap::store
