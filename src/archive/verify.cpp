#include "archive/verify.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "config/values.hpp"
#include "format/zstd_seekable.hpp"
#include "util/command_line.hpp"
#include "util/unique_fd.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {


std::string seconds_text(uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
    return text;
}

void differ(std::vector<std::string>& diffs, const char* field, const std::string& actual, const std::string& expected) {
    if (actual != expected) diffs.push_back(std::string(field) + " " + actual + " (manifest: " + expected + ")");
}

// A manifest that agrees with its file, as far as the chain of a stream is concerned.
struct Link {
    std::string file;
    Manifest manifest;
};

uint64_t run_order(const std::string& run) {
    uint64_t v = 0;
    for (const char c : run) {
        if (c < '0' || c > '9') return 0;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
}

void check_stream(const std::string& stream, std::vector<Link>& links, const VerifyOptions& options,
                  VerifyReport& report, const std::function<void(const std::string&)>& out) {
    std::sort(links.begin(), links.end(), [](const Link& a, const Link& b) {
        const uint64_t ra = run_order(a.manifest.run), rb = run_order(b.manifest.run);
        if (ra != rb) return ra < rb;
        if (a.manifest.run != b.manifest.run) return a.manifest.run < b.manifest.run;
        return a.manifest.seq.value_or(0) < b.manifest.seq.value_or(0);
    });
    const auto gap = [&](const std::string& text) {
        ++report.gaps;
        out("GAP " + stream + ": " + text);
    };
    for (size_t i = 1; i < links.size(); ++i) {
        const Manifest& prev = links[i - 1].manifest;
        const Manifest& next = links[i].manifest;
        if (prev.run == next.run) {
            const uint64_t a = prev.seq.value_or(0), b = next.seq.value_or(0);
            if (b == a) {
                gap("two files claim sequence " + std::to_string(b) + " of run " + next.run + ": " + links[i - 1].file +
                    ", " + links[i].file);
            } else if (b > a + 1) {
                gap(std::to_string(b - a - 1) + " file(s) missing (sequence " + std::to_string(a + 1) +
                    (b - a > 2 ? ".." + std::to_string(b - 1) : "") + " of run " + next.run + ") between " +
                    links[i - 1].file + " and " + links[i].file + ": no capture from " +
                    format_utc_ns(prev.span_end_ns.value_or(prev.last_ns)) + " to " +
                    format_utc_ns(next.span_start_ns.value_or(next.first_ns)));
            } else if (options.max_gap_ns > 0 && next.packets > 0 && prev.packets > 0 &&
                       next.first_ns > prev.last_ns && next.first_ns - prev.last_ns > options.max_gap_ns) {
                gap("no packet for " + seconds_text(next.first_ns - prev.last_ns) + " between " + links[i - 1].file +
                    " and " + links[i].file + " (files are consecutive; the traffic paused)");
            }
            continue;
        }
        // Another run: the daemon was stopped (or died) in between.
        std::string text = "the daemon was not capturing between " +
                           format_utc_ns(prev.span_end_ns.value_or(prev.last_ns)) + " (run " + prev.run + ", " +
                           links[i - 1].file + ") and " +
                           (next.seq.value_or(0) == 0 && next.span_start_ns
                                ? format_utc_ns(*next.span_start_ns) + " (start of run " + next.run + ")"
                                : "run " + next.run + " (its first " + std::to_string(next.seq.value_or(0)) +
                                      " file(s) are missing; " + links[i].file + " starts at " +
                                      format_utc_ns(next.first_ns) + ")");
        gap(text);
    }
}

}  // namespace

std::vector<std::string> content_differences(const Manifest& manifest, uint64_t size, const std::string& sha256) {
    std::vector<std::string> diffs;
    differ(diffs, "size", std::to_string(size), std::to_string(manifest.size));
    differ(diffs, "sha256", sha256, manifest.sha256);
    return diffs;
}

std::vector<std::string> compressed_differences(const Manifest& manifest, const std::string& file, uint64_t size,
                                               const std::string& sha256) {
    std::vector<std::string> diffs;
    if (!manifest.compressed) {
        diffs.push_back("compressed: the manifest does not describe " + file);
        return diffs;
    }
    differ(diffs, "compressed file", file, manifest.compressed->file);
    differ(diffs, "compressed size", std::to_string(size), std::to_string(manifest.compressed->size));
    differ(diffs, "compressed sha256", sha256, manifest.compressed->sha256);
    return diffs;
}

namespace {

// One verify run over one directory: the report, the lines, and what is kept across files
// (the report and the streams across the directories of one store, too).
struct Verification {
    const VerifyOptions& options;
    const std::function<void(const std::string&)>& out;
    int dir_fd;
    VerifyReport& report;
    std::set<std::string> manifests;             // not yet matched with their capture file: orphans at the end
    std::map<std::string, std::vector<Link>>& streams;

    void invalid(const std::string& line) {
        ++report.invalid;
        out("INVALID " + line);
    }
};

// A file's bytes read back: `scan` of its capture bytes, `stored` of a compressed file's
// own bytes. nullopt (reported INVALID) when they cannot be read at all.
struct ReadBack {
    CaptureScan scan;
    CaptureScan stored;
};

std::optional<ReadBack> read_back(Verification& v, const StoredFile& f) {
    const std::string& name = f.stored_name;
    UniqueFd fd(::openat(v.dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        v.invalid(name + ": " + errno_text(errno));
        return std::nullopt;
    }
    ReadBack r;
    if (f.compressed) {
        r.stored = scan_capture(fd.get(), ScanOptions{.hash = true});
        auto source = format::open_capture_file(v.options.directory + "/" + name);
        if (!r.stored.io.ok() || !source) {
            v.invalid(name + ": " + (r.stored.io.ok() ? source.error().message : r.stored.io.message()));
            return std::nullopt;
        }
        r.scan = scan_capture(*source.value(), ScanOptions{.hash = true});
        if (!r.scan.io.ok()) {
            const auto* seekable = dynamic_cast<const format::SeekableSource*>(source.value().get());
            v.invalid(name + ": " + r.scan.io.message() +
                      (seekable && !seekable->last_error().empty() ? " (" + seekable->last_error() + ")" : ""));
            return std::nullopt;
        }
    } else {
        r.scan = scan_capture(fd.get(), ScanOptions{.hash = true});
    }
    if (!r.scan.io.ok()) {
        v.invalid(name + ": " + r.scan.io.message());
        return std::nullopt;
    }
    return r;
}

// Whether the capture bytes read back completely (reported INVALID if not).
bool complete(Verification& v, const std::string& name, const CaptureScan& scan) {
    if (!scan.header_valid) {
        v.invalid(name + ": " + scan.header_problem);
        return false;
    }
    if (!scan.complete()) {
        v.invalid(name + ": only the first " + std::to_string(scan.valid_bytes) + " of " +
                  std::to_string(scan.file_bytes) + " bytes are complete records (" + std::to_string(scan.packets) +
                  " packets)");
        return false;
    }
    return true;
}

// Every field in which the file read back differs from its manifest.
std::vector<std::string> manifest_differences(const StoredFile& f, const ReadBack& r, const Manifest& m) {
    std::vector<std::string> diffs = content_differences(m, r.scan.file_bytes, r.scan.sha256);
    differ(diffs, "file", f.name, m.file);
    if (f.compressed)
        for (std::string& d : compressed_differences(m, f.stored_name, r.stored.file_bytes, r.stored.sha256))
            diffs.push_back(std::move(d));
    if (r.scan.header_valid) {
        differ(diffs, "format", format_name(r.scan), m.format);
        differ(diffs, "packets", std::to_string(r.scan.packets), std::to_string(m.packets));
        if (r.scan.packets > 0 || m.packets > 0) {
            differ(diffs, "first_ns", std::to_string(r.scan.first_ns), std::to_string(m.first_ns));
            differ(diffs, "last_ns", std::to_string(r.scan.last_ns), std::to_string(m.last_ns));
        }
    }
    return diffs;
}

// What a matching manifest says about the file: recovered, losses; and its place in its
// stream's chain.
void manifest_findings(Verification& v, const std::string& name, Manifest&& m) {
    if (m.recovered) {
        ++v.report.recovered;
        v.out("RECOVERED " + name + ": finished by crash recovery; packets the daemon held in memory at the crash "
              "are not in it (how many is unknown)");
    }
    if (m.drops && m.drops->total() > 0) {
        ++v.report.losses;
        v.out("LOSS " + name + ": " + std::to_string(m.drops->total()) +
              " packets dropped in this file's span (writer_full=" + std::to_string(m.drops->writer_full) +
              " write_error=" + std::to_string(m.drops->write_error) +
              " disk_full=" + std::to_string(m.drops->disk_full) + ")");
    }
    if (m.stream && !m.run.empty() && m.seq) {
        const std::string stream = m.stream->port + ":" + std::to_string(m.stream->queue);
        v.streams[stream].push_back(Link{name, std::move(m)});
    }
}

// The plain file while it exists (a compression not finished), else the compressed one:
// its own bytes are checked against the manifest's "compressed", and its decompressed
// bytes like a plain file's.
void verify_file(Verification& v, const LocalDirectoryStore& store, const StoredFile& f) {
    const std::string& name = f.stored_name;
    ++v.report.files;
    if (f.damaged) {
        ++v.report.damaged;
        v.out("DAMAGED " + name + ": marked by the scrub" + (f.damaged->empty() ? "" : " (" + *f.damaged + ")"));
    }
    const std::optional<ReadBack> read = read_back(v, f);
    if (!read) return;
    const bool file_ok = complete(v, name, read->scan);

    const std::string mname = layout::manifest_name(f.name);
    if (!f.manifest && f.manifest_pending) {
        ++v.report.pending;
        v.out("PENDING " + name + ": its manifest is not written yet (the daemon hashes finished files at idle "
              "priority; a stopped daemon completes them at its next start)");
        return;
    }
    if (!f.manifest) {
        ++v.report.missing_manifests;
        v.out("NO-MANIFEST " + name);
        return;
    }
    v.manifests.erase(mname);
    ManifestRead manifest = store.read_manifest(f);
    if (!manifest.ok()) {
        ++v.report.bad_manifests;
        v.out("BAD-MANIFEST " +
              (manifest.state == ManifestRead::State::missing ? mname + ": removed meanwhile" : manifest.problem));
        return;
    }
    const std::vector<std::string> diffs = manifest_differences(f, *read, manifest.manifest);
    if (!diffs.empty()) {
        ++v.report.mismatched;
        std::string line = "MISMATCH " + name + ":";
        for (const std::string& d : diffs) line += " " + d + ";";
        line.pop_back();
        v.out(line);
        return;
    }
    if (!file_ok) return;
    ++v.report.verified;
    if (f.damaged)
        v.out("note: " + name + " matches its manifest again (restored?); the scrub's next check of it removes "
              "the marker");
    if (v.options.verbose)
        v.out("ok " + name + " (" + std::to_string(read->scan.packets) + " packets, " +
              format_utc_ns(read->scan.first_ns) + " .. " + format_utc_ns(read->scan.last_ns) + ")");
    manifest_findings(v, name, std::move(manifest.manifest));
}

std::string summary(const std::string& directory, const VerifyReport& report) {
    return "verify " + directory + ": " + std::to_string(report.files) + " capture files, " +
           std::to_string(report.verified) + " match their manifests, " + std::to_string(report.pending) +
           " manifests pending; " + std::to_string(report.mismatched) +
           " mismatched, " + std::to_string(report.invalid) + " invalid, " + std::to_string(report.missing_manifests) +
           " without manifest, " + std::to_string(report.bad_manifests) + " bad manifests, " +
           std::to_string(report.damaged) + " marked damaged, " +
           std::to_string(report.orphan_manifests) + " orphan manifests, " + std::to_string(report.losses) +
           " with losses, " + std::to_string(report.recovered) + " recovered, " + std::to_string(report.gaps) +
           " gaps: " + (report.findings() == 0 ? "OK" : "FINDINGS");
}

}  // namespace

Result<VerifyReport> verify_directory(const VerifyOptions& options, const std::function<void(const std::string&)>& out) {
    return verify_volumes(options, {options.directory}, out);
}

Result<VerifyReport> verify_volumes(const VerifyOptions& options, const std::vector<std::string>& directories,
                                    const std::function<void(const std::string&)>& out) {
    VerifyReport report;
    std::map<std::string, std::vector<Link>> streams;
    std::string all;
    for (const std::string& directory : directories) {
        all += (all.empty() ? "" : " and ") + directory;
        VerifyOptions one = options;
        one.directory = directory;
        const LocalDirectoryStore store(directory);
        const Result<StoreInventory> inventory = store.list({});
        if (!inventory) return inventory.error();
        Verification v{.options = one, .out = out, .dir_fd = store.directory_fd(), .report = report, .streams = streams};
        v.report.in_progress += inventory->in_progress;
        // Every manifest: a file's is matched when the file is checked (not when it cannot be
        // read back at all); what is left is an orphan.
        v.manifests.insert(inventory->orphan_manifests.begin(), inventory->orphan_manifests.end());
        for (const StoredFile& f : inventory->files)
            if (f.manifest) v.manifests.insert(layout::manifest_name(f.name));

        for (const StoredFile& f : inventory->files) verify_file(v, store, f);
        for (const std::string& orphan : v.manifests) {
            ++v.report.orphan_manifests;
            out("ORPHAN " + orphan + ": its capture file " + *layout::capture_name_of_manifest(orphan) + " is missing");
        }
    }
    // A stream's files are in sequence across the volumes (it moves when one fails).
    for (auto& [stream, links] : streams) check_stream(stream, links, options, report, out);

    if (report.in_progress > 0)
        out("note: " + std::to_string(report.in_progress) +
            " in-progress file(s): being written, or left by a crash until the daemon's next start");
    out(summary(all, report));
    return report;
}

int verify_command(int argc, char** argv) {
    const auto usage = [](FILE* f) {
        std::fprintf(f,
                     "Usage: linecapd verify [--max-gap DURATION] [--verbose] DIR...\n"
                     "\n"
                     "Checks every finished capture file in DIR against its manifest (size, SHA-256,\n"
                     "packets, first and last packet time), and reports files without manifest,\n"
                     "files whose manifest is pending (NAME.manifest-pending: the daemon has not\n"
                     "hashed them yet; not a finding),\n"
                     "manifests without file, files the daemon's scrub marked damaged (FILE.damaged),\n"
                     "drops recorded in manifests, files recovered after a crash, and gaps per stream\n"
                     "(missing files, the daemon not running; with --max-gap also pauses in the\n"
                     "traffic longer than DURATION, e.g. 10s or 5m).\n"
                     "One line per finding, then a summary. Exit: 0 no findings, 1 findings, 64 usage.\n");
    };
    static constexpr OptionSpec kOptions[] = {
        {"--max-gap", true}, {"-v"}, {"--verbose", false, "-v"}, {"-h"}, {"--help", false, "-h"},
    };
    const CommandLine args = parse_command_line(argc, argv, 1, kOptions, true);
    VerifyOptions options;
    for (const auto& [name, value] : args.options) {  // in order: --help acts where it stands
        if (name == "-h") {
            usage(stdout);
            return kExitOk;
        }
        if (name == "-v") options.verbose = true;
        if (name != "--max-gap") continue;
        const Result<uint64_t> seconds = parse_duration(value);
        if (!seconds || seconds.value() == 0) {
            std::fprintf(stderr, "linecapd verify: --max-gap: expected a duration like 30s or 5m, got '%s'\n",
                         value.c_str());
            return kExitUsage;
        }
        options.max_gap_ns = seconds.value() * 1000000000ull;
    }
    if (args.problem == CommandLine::Problem::missing_value) {
        std::fprintf(stderr, "linecapd verify: --max-gap needs a duration\n");
        return kExitUsage;
    }
    if (!args.ok()) {
        std::fprintf(stderr, "linecapd verify: %s\n", args.error().c_str());
        usage(stderr);
        return kExitUsage;
    }
    if (args.operands.empty()) {
        usage(stderr);
        return kExitUsage;
    }
    options.directory = args.operands[0];
    const Result<VerifyReport> report = verify_volumes(options, args.operands, [](const std::string& line) {
        std::fputs(line.c_str(), stdout);
        std::fputc('\n', stdout);
    });
    std::fflush(stdout);
    if (!report) {
        std::fprintf(stderr, "linecapd verify: %s\n", report.error().message.c_str());
        return kExitFailure;
    }
    return report->findings() == 0 ? kExitOk : kExitFailure;
}

}  // namespace linecap
