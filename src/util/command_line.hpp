// How linecapd, `linecapd verify` and linecap read their command lines and what they
// exit with: one table of exit statuses, and one option parser over a table of options.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linecap {

// Every program's exit statuses, sysexits(3) where one fits; doc/troubleshooting.md says
// which program uses which, and for what.
inline constexpr int kExitOk = 0;
// linecapd: a runtime failure (systemd restarts it); `linecapd verify`: findings;
// linecap: some files could not be read (the rest was processed), the output was cut at
// --max-bytes, or an appliance of --remote failed.
inline constexpr int kExitFailure = 1;
// linecap extract: files were read whose bytes may not be what was captured.
inline constexpr int kExitUntrusted = 3;
inline constexpr int kExitUsage = 64;   // EX_USAGE
inline constexpr int kExitConfig = 78;  // EX_CONFIG: systemd does not restart on it

struct OptionSpec {
    std::string_view name;             // "--dir", "-o"
    bool takes_value = false;          // "--dir DIR" or "--dir=DIR"
    std::string_view stands_for = {};  // an alias: recorded under this name ("--output" as "-o")
};

// The options of one command line, in order: name → value ("" for a flag).
using CommandOptions = std::vector<std::pair<std::string, std::string>>;

struct CommandLine {
    enum class Problem { none, unknown_option, missing_value };

    CommandOptions options;             // up to the first problem
    std::vector<std::string> operands;  // the arguments that are not options ("-" is one)
    Problem problem = Problem::none;
    std::string argument;               // the one with the problem, as given

    bool ok() const { return problem == Problem::none; }
    // "unknown option 'ARG'", "option ARG needs a value".
    std::string error() const;
    // The value of the last `name`, if given.
    std::optional<std::string> value(std::string_view name) const;
    bool has(std::string_view name) const { return value(name).has_value(); }
};

// Reads argv[first..argc) against `table`. Without `operands_allowed`, an argument that is
// not an option is an unknown option. Stops at the first problem.
CommandLine parse_command_line(int argc, char** argv, int first, std::span<const OptionSpec> table,
                               bool operands_allowed);

// The value of the last `name` in `options`, if given.
std::optional<std::string> option_value(const CommandOptions& options, std::string_view name);

}  // namespace linecap
