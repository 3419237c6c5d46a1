#include "output/verify.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "config/values.hpp"
#include "format/zstd_seekable.hpp"
#include "output/capture_scan.hpp"
#include "output/layout.hpp"
#include "output/manifest.hpp"
#include "output/scrub.hpp"
#include "output/unique_fd.hpp"
#include "util/command_line.hpp"

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

Result<VerifyReport> verify_directory(const VerifyOptions& options, const std::function<void(const std::string&)>& out) {
    UniqueFd dir_fd(::open(options.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) return runtime_error(options.directory + ": " + errno_text(errno));
    DIR* dir = ::fdopendir(::dup(dir_fd.get()));
    if (dir == nullptr) return runtime_error(options.directory + ": " + errno_text(errno));
    std::set<std::string> captures, manifests, pending;
    VerifyReport report;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (const auto capture = layout::stored_capture_name(name)) captures.insert(*capture);
        else if (layout::capture_name_of_manifest(name)) manifests.insert(name);
        else if (layout::capture_name_of_manifest_pending(name)) pending.insert(name);
        else if (layout::final_name_of_in_progress(name)) ++report.in_progress;
    }
    ::closedir(dir);

    std::map<std::string, std::vector<Link>> streams;
    for (const std::string& capture : captures) {
        // The plain file while it exists (a compression not finished), else the
        // compressed one: its own bytes are checked against the manifest's "compressed",
        // and its decompressed bytes like a plain file's.
        const auto regular = [&](const std::string& n) {
            struct stat st {};
            return ::fstatat(dir_fd.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
        };
        const bool compressed = !regular(capture);
        const std::string name = compressed ? layout::compressed_name(capture) : capture;
        if (compressed && !regular(name)) continue;
        ++report.files;
        const std::optional<std::string> marker = read_damaged_marker(dir_fd.get(), capture);
        if (marker) {
            ++report.damaged;
            out("DAMAGED " + name + ": marked by the scrub" + (marker->empty() ? "" : " (" + *marker + ")"));
        }
        UniqueFd fd(::openat(dir_fd.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) {
            ++report.invalid;
            out("INVALID " + name + ": " + errno_text(errno));
            continue;
        }
        CaptureScan stored;  // compressed: the .zst file's own bytes
        CaptureScan scan;
        if (compressed) {
            stored = scan_capture(fd.get(), ScanOptions{.hash = true});
            auto source = format::open_capture_file(options.directory + "/" + name);
            if (!stored.io.ok() || !source) {
                ++report.invalid;
                out("INVALID " + name + ": " + (stored.io.ok() ? source.error().message : stored.io.message()));
                continue;
            }
            scan = scan_capture(*source.value(), ScanOptions{.hash = true});
            if (!scan.io.ok()) {
                const auto* seekable = dynamic_cast<const format::SeekableSource*>(source.value().get());
                ++report.invalid;
                out("INVALID " + name + ": " + scan.io.message() +
                    (seekable && !seekable->last_error().empty() ? " (" + seekable->last_error() + ")" : ""));
                continue;
            }
        } else {
            scan = scan_capture(fd.get(), ScanOptions{.hash = true});
        }
        if (!scan.io.ok()) {
            ++report.invalid;
            out("INVALID " + name + ": " + scan.io.message());
            continue;
        }
        bool file_ok = true;
        if (!scan.header_valid) {
            ++report.invalid;
            file_ok = false;
            out("INVALID " + name + ": " + scan.header_problem);
        } else if (!scan.complete()) {
            ++report.invalid;
            file_ok = false;
            out("INVALID " + name + ": only the first " + std::to_string(scan.valid_bytes) + " of " +
                std::to_string(scan.file_bytes) + " bytes are complete records (" + std::to_string(scan.packets) +
                " packets)");
        }

        const std::string mname = layout::manifest_name(capture);
        if (!manifests.contains(mname) && pending.contains(layout::manifest_pending_name(capture))) {
            ++report.pending;
            out("PENDING " + name + ": its manifest is not written yet (the daemon hashes finished files at idle "
                "priority; a stopped daemon completes them at its next start)");
            continue;
        }
        if (!manifests.contains(mname)) {
            ++report.missing_manifests;
            out("NO-MANIFEST " + name);
            continue;
        }
        manifests.erase(mname);
        ManifestRead read = read_manifest(dir_fd.get(), capture);
        if (!read.ok()) {
            ++report.bad_manifests;
            out("BAD-MANIFEST " + (read.state == ManifestRead::State::missing ? mname + ": removed meanwhile" : read.problem));
            continue;
        }
        const Manifest& m = read.manifest;
        std::vector<std::string> diffs = content_differences(m, scan.file_bytes, scan.sha256);
        differ(diffs, "file", capture, m.file);
        if (compressed)
            for (std::string& d : compressed_differences(m, name, stored.file_bytes, stored.sha256))
                diffs.push_back(std::move(d));
        if (scan.header_valid) {
            differ(diffs, "format", format_name(scan), m.format);
            differ(diffs, "packets", std::to_string(scan.packets), std::to_string(m.packets));
            if (scan.packets > 0 || m.packets > 0) {
                differ(diffs, "first_ns", std::to_string(scan.first_ns), std::to_string(m.first_ns));
                differ(diffs, "last_ns", std::to_string(scan.last_ns), std::to_string(m.last_ns));
            }
        }
        if (!diffs.empty()) {
            ++report.mismatched;
            std::string line = "MISMATCH " + name + ":";
            for (const std::string& d : diffs) line += " " + d + ";";
            line.pop_back();
            out(line);
            continue;
        }
        if (!file_ok) continue;
        ++report.verified;
        if (marker)
            out("note: " + name + " matches its manifest again (restored?); the scrub's next check of it removes "
                "the marker");
        if (options.verbose)
            out("ok " + name + " (" + std::to_string(scan.packets) + " packets, " + format_utc_ns(scan.first_ns) +
                " .. " + format_utc_ns(scan.last_ns) + ")");
        if (m.recovered) {
            ++report.recovered;
            out("RECOVERED " + name + ": finished by crash recovery; packets the daemon held in memory at the crash "
                "are not in it (how many is unknown)");
        }
        if (m.drops && m.drops->total() > 0) {
            ++report.losses;
            out("LOSS " + name + ": " + std::to_string(m.drops->total()) +
                " packets dropped in this file's span (writer_full=" + std::to_string(m.drops->writer_full) +
                " write_error=" + std::to_string(m.drops->write_error) +
                " disk_full=" + std::to_string(m.drops->disk_full) + ")");
        }
        if (m.stream && !m.run.empty() && m.seq) {
            const std::string stream = m.stream->port + ":" + std::to_string(m.stream->queue);
            streams[stream].push_back(Link{name, std::move(read.manifest)});
        }
    }
    for (const std::string& orphan : manifests) {
        ++report.orphan_manifests;
        out("ORPHAN " + orphan + ": its capture file " + *layout::capture_name_of_manifest(orphan) + " is missing");
    }
    for (auto& [stream, links] : streams) check_stream(stream, links, options, report, out);

    if (report.in_progress > 0)
        out("note: " + std::to_string(report.in_progress) +
            " in-progress file(s): being written, or left by a crash until the daemon's next start");
    out("verify " + options.directory + ": " + std::to_string(report.files) + " capture files, " +
        std::to_string(report.verified) + " match their manifests, " + std::to_string(report.pending) +
        " manifests pending; " + std::to_string(report.mismatched) +
        " mismatched, " + std::to_string(report.invalid) + " invalid, " + std::to_string(report.missing_manifests) +
        " without manifest, " + std::to_string(report.bad_manifests) + " bad manifests, " +
        std::to_string(report.damaged) + " marked damaged, " +
        std::to_string(report.orphan_manifests) + " orphan manifests, " + std::to_string(report.losses) +
        " with losses, " + std::to_string(report.recovered) + " recovered, " + std::to_string(report.gaps) +
        " gaps: " + (report.findings() == 0 ? "OK" : "FINDINGS"));
    return report;
}

int verify_command(int argc, char** argv) {
    const auto usage = [](FILE* f) {
        std::fprintf(f,
                     "Usage: linecapd verify [--max-gap DURATION] [--verbose] DIR\n"
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
    if (args.operands.size() != 1) {
        usage(stderr);
        return kExitUsage;
    }
    options.directory = args.operands[0];
    const Result<VerifyReport> report = verify_directory(options, [](const std::string& line) {
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
