#include "util/command_line.hpp"

#include <algorithm>

namespace linecap {

std::string CommandLine::error() const {
    switch (problem) {
        case Problem::unknown_option: return "unknown option '" + argument + "'";
        case Problem::missing_value: return "option " + argument + " needs a value";
        case Problem::none: break;
    }
    return "";
}

std::optional<std::string> option_value(const CommandOptions& options, std::string_view name) {
    std::optional<std::string> v;
    for (const auto& [n, value] : options)
        if (n == name) v = value;
    return v;
}

std::optional<std::string> CommandLine::value(std::string_view name) const { return option_value(options, name); }

CommandLine parse_command_line(int argc, char** argv, int first, std::span<const OptionSpec> table,
                               bool operands_allowed) {
    CommandLine line;
    for (int i = first; i < argc; ++i) {
        const std::string given = argv[i];
        std::string name = given;
        std::string value;
        const size_t eq = given.find('=');
        const bool has_eq = given.starts_with("--") && eq != std::string::npos;
        if (has_eq) {
            name = given.substr(0, eq);
            value = given.substr(eq + 1);
        }
        const auto spec = std::find_if(table.begin(), table.end(), [&](const OptionSpec& s) { return s.name == name; });
        if (spec == table.end() || (!spec->takes_value && has_eq)) {
            if (operands_allowed && (!given.starts_with("-") || given == "-")) {
                line.operands.push_back(given);
                continue;
            }
            line.problem = CommandLine::Problem::unknown_option;
            line.argument = given;
            return line;
        }
        if (spec->takes_value && !has_eq) {
            if (i + 1 >= argc) {
                line.problem = CommandLine::Problem::missing_value;
                line.argument = name;
                return line;
            }
            value = argv[++i];
        }
        line.options.emplace_back(spec->stands_for.empty() ? spec->name : spec->stands_for, value);
    }
    return line;
}

}  // namespace linecap
