// The `linecap` command-line tool: extract, index, stats over a capture store.
// Exit statuses (util/command_line.hpp): kExitOk; kExitFailure (some files unreadable,
// the rest still processed); kExitUntrusted when extract read files whose bytes may not
// be what was captured (marked damaged by the scrub, or changed after they were indexed)
// and --accept-damaged was not given, taking precedence over kExitFailure; kExitUsage.
//
// The store layer's commands (extract, index, stats) live here; the commands the program
// adds from the layer above the store (src/api/: `serve`, `extract --remote`) are passed
// in as ToolCommands, parsed by the same option parser, and share the helpers below
// (error lines, counts, the -o output), so every command reads and fails alike.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive_store.hpp"
#include "util/command_line.hpp"

namespace linecap::store {

struct ToolCommands {
    std::function<int(const CommandOptions&)> serve;           // `linecap serve`
    std::function<int(const CommandOptions&)> extract_remote;  // `linecap extract --remote`
};

int linecap_tool_main(int argc, char** argv, const ToolCommands& above = {});

// "linecap: MESSAGE (see 'linecap --help')" on stderr.
void print_usage_error(const std::string& message);
// "linecap: LEVEL: MESSAGE" on stderr.
void print_line(const char* level, const std::string& message);
// A decimal count in [min, max].
bool parse_count(const std::string& text, uint64_t min, uint64_t max, uint64_t* out);

// The options that say where an archive is and how to reach it (--archive, --endpoint,
// --credentials, --region, --ca-file, --path-style, --virtual-hosted).
bool is_archive_option(std::string_view name);

// The store a query reads: the capture volumes `directories` (one store, open_volumes),
// the archive of --archive, or both as one.
// `archive` is the archive's backend (for the bytes it fetched), nullptr without one.
struct QueryStore {
    std::unique_ptr<StoreBackend> backend;
    const ArchiveStore* archive = nullptr;
};
// kExitOk, or the exit status after printing in one line why the store cannot be used
// (an archive option without --archive is a usage error).
int open_query_store(const CommandOptions& options, const std::vector<std::string>& directories, QueryStore& out);

// Writes a capture answer to `out` (-o): "-" is stdout (refused when a terminal); a path
// is an AtomicFile from open_extract_output (refused inside `store_directory`, if given),
// removed if a signal ends the tool, and committed only when `produce(fd)` returns true.
// Returns kExitOk, or the exit status after printing why the output failed.
int write_extract_output(const std::string& out, const std::string& store_directory,
                         const std::function<bool(int fd)>& produce);

}  // namespace linecap::store
