// Reading a YAML document with the place of every value at hand, so that any problem
// can be reported as "<source>:<line>: <key path>: <what is wrong, what is expected>".
// Private to the configuration loader.
//
// The first problem ends the walk: the readers throw ConfigProblem, and parse_config()
// catches it and returns it as a configuration error. That keeps the schema walk in
// config.cpp reading like the schema instead of being buried under error plumbing. No
// exception leaves the loader.
#pragma once

#include <yaml-cpp/yaml.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.hpp"

namespace linecap::config_detail {

// The message is complete: "<source>:<line>: <key path>: <what>".
struct ConfigProblem {
    std::string message;
};

// "<source>:<line>: <path>: <what>"; the path is left out for the document itself and
// the line when it is unknown (line <= 0).
std::string format_problem(std::string_view source, int line, std::string_view path, std::string_view what);

// The keys a mapping may hold, in the order they are listed in error messages.
using KeyList = std::span<const std::string_view>;

// A name and the value it stands for, e.g. {"pcapng", FileKind::pcapng}.
template <typename T>
using NamedValue = std::pair<std::string_view, T>;

class YamlMap;

// One value in the document plus what is needed to report on it: its key path
// ("ports[0].rx_queues") and the line to point at. `source` must outlive the value.
class YamlValue {
public:
    YamlValue(YAML::Node node, std::string path, int line, std::string_view source);

    const std::string& path() const { return path_; }
    int line() const { return line_; }

    [[noreturn]] void fail(std::string_view what) const;
    // "expected <expected>, got 'two'" (or "got a list", "got nothing").
    [[noreturn]] void fail_expected(std::string_view expected) const;

    // Any single value as text; nothing (a key without a value) reads as "".
    std::string as_string() const;
    std::string as_non_empty_string(std::string_view expected) const;
    bool as_bool() const;
    unsigned as_uint(unsigned min, unsigned max) const;
    double as_number(double min, double max) const;

    // An integer for which `valid` holds; `expected` describes the valid ones.
    template <std::predicate<uint64_t> Valid>
    unsigned as_uint_where(std::string_view expected, Valid valid) const {
        const std::optional<uint64_t> number = scalar_uint();
        return uint_or_fail(number, number && valid(*number), expected);
    }

    // One of `names`.
    std::string as_one_of(KeyList names) const;
    // One of the names in `choices`, as the value it stands for.
    template <typename T>
    T as_one_of(std::span<const NamedValue<T>> choices) const {
        if (node_.IsScalar()) {
            for (const auto& [name, value] : choices) {
                if (node_.Scalar() == name) return value;
            }
        }
        std::string names;
        for (const auto& choice : choices) names.append(names.empty() ? "" : ", ").append(choice.first);
        fail_expected("one of " + names);
    }

    // The text of this value run through one of the parsers in values.hpp; its error
    // message is reported at this value.
    template <typename T>
    T parsed_by(Result<T> (*parse)(std::string_view)) const {
        if (!node_.IsScalar()) fail_expected("a single value");
        Result<T> result = parse(node_.Scalar());
        if (!result) fail(result.error().message);
        return std::move(result).value();
    }

    // A mapping with no key outside `valid_keys` and no key twice; nothing reads as an
    // empty mapping, so a section left empty takes its defaults.
    YamlMap as_map(KeyList valid_keys) const;
    // A list; nothing reads as an empty list.
    std::vector<YamlValue> as_list() const;

private:
    std::optional<uint64_t> scalar_uint() const;
    unsigned uint_or_fail(std::optional<uint64_t> number, bool valid, std::string_view expected) const;
    std::string describe() const;

    YAML::Node node_;
    std::string path_;
    int line_;
    std::string_view source_;
};

// A mapping whose keys have been checked: none unknown, none repeated.
class YamlMap {
public:
    // The document itself; it must be a mapping with keys from `valid_keys`.
    static YamlMap document(const YAML::Node& root, KeyList valid_keys, std::string_view source);

    [[noreturn]] void fail(std::string_view what) const;

    std::optional<YamlValue> get(std::string_view key) const;
    // `expected` describes the value, for the message when the key is missing.
    YamlValue require(std::string_view key, std::string_view expected) const;
    // A nested mapping; an absent one reads as empty, so its defaults apply.
    YamlMap section(std::string_view key, KeyList valid_keys) const;

private:
    friend class YamlValue;
    struct Entry {
        std::string key;
        int key_line;
        YAML::Node value;
    };

    YamlMap(std::string path, int line, std::string_view source)
        : path_(std::move(path)), line_(line), source_(source) {}
    static YamlMap checked(const YAML::Node& node, std::string path, int line, std::string_view source,
                           KeyList valid_keys);
    // The name of `key`, once it is known to be a valid key given for the first time.
    std::string checked_key(const YAML::Node& key, int key_line, KeyList valid_keys) const;
    std::string path_of(std::string_view key) const;
    YamlValue value_of(const Entry& entry) const;

    std::vector<Entry> entries_;
    std::string path_;
    int line_;
    std::string_view source_;
};

// The one document in `text`; fails when there are several. An empty text reads as a
// null node.
YAML::Node load_single_document(const std::string& text, std::string_view source);

// A yaml-cpp syntax error as "<source>:<line>: invalid YAML: <what>".
std::string describe_yaml_error(const YAML::Exception& error, std::string_view source);

}  // namespace linecap::config_detail
