#include "config/yaml_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "config/values.hpp"
#include "util/one_line.hpp"

namespace linecap::config_detail {
namespace {

// yaml-cpp counts lines from 0 and has no mark for values it made up (an empty document).
int line_of_mark(const YAML::Mark& mark, int fallback) { return mark.is_null() ? fallback : mark.line + 1; }
int line_of(const YAML::Node& node, int fallback) { return line_of_mark(node.Mark(), fallback); }

std::string join(KeyList names) {
    std::string joined;
    for (const std::string_view name : names) {
        if (!joined.empty()) joined += ", ";
        joined += name;
    }
    return joined;
}

std::string format_number(double value) {
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            diagonal = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
        }
    }
    return row[b.size()];
}

// The valid key a typo most likely meant, if one is close enough to be a good guess.
std::optional<std::string_view> closest_key(std::string_view unknown, KeyList valid_keys) {
    constexpr size_t max_typo_distance = 2;
    std::optional<std::string_view> best;
    size_t best_distance = max_typo_distance + 1;
    for (const std::string_view key : valid_keys) {
        const size_t distance = edit_distance(unknown, key);
        if (distance < best_distance) {
            best = key;
            best_distance = distance;
        }
    }
    return best;
}

std::string unknown_key_message(std::string_view key, KeyList valid_keys) {
    std::string message = "unknown key '" + std::string(key) + "'";
    if (const auto guess = closest_key(key, valid_keys)) message += " (did you mean '" + std::string(*guess) + "'?)";
    return message + "; valid keys here: " + join(valid_keys);
}

std::string lower_case(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// Long values are cut so that an error stays a readable line.
std::string quoted_excerpt(std::string_view text) {
    constexpr size_t max_shown = 60;
    if (text.size() <= max_shown) return "'" + std::string(text) + "'";
    return "'" + std::string(text.substr(0, max_shown)) + "...'";
}

[[noreturn]] void fail_at(std::string_view source, int line, std::string_view path, std::string_view what) {
    throw ConfigProblem{format_problem(source, line, path, what)};
}

}  // namespace

std::string format_problem(std::string_view source, int line, std::string_view path, std::string_view what) {
    std::string message(source);
    if (line > 0) message.append(":").append(std::to_string(line));
    message.append(": ");
    if (!path.empty()) message.append(path).append(": ");
    // Values and keys can hold line breaks (quoted YAML strings); an error must not.
    return one_line(message.append(what));
}

// --- YamlValue ------------------------------------------------------------------

YamlValue::YamlValue(YAML::Node node, std::string path, int line, std::string_view source)
    : node_(std::move(node)), path_(std::move(path)), line_(line), source_(source) {}

void YamlValue::fail(std::string_view what) const { fail_at(source_, line_, path_, what); }

void YamlValue::fail_expected(std::string_view expected) const {
    fail("expected " + std::string(expected) + ", got " + describe());
}

std::string YamlValue::describe() const {
    switch (node_.Type()) {
        case YAML::NodeType::Scalar:
            return quoted_excerpt(node_.Scalar());
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a mapping";
        default:
            return "nothing";
    }
}

std::string YamlValue::as_string() const {
    if (node_.IsNull()) return {};
    if (!node_.IsScalar()) fail_expected("a single value");
    return node_.Scalar();
}

std::string YamlValue::as_non_empty_string(std::string_view expected) const {
    std::string text = as_string();
    if (text.empty()) fail_expected(expected);
    return text;
}

bool YamlValue::as_bool() const {
    // The spellings yaml-cpp itself accepts for booleans, in any case.
    constexpr NamedValue<bool> spellings[] = {
        {"true", true}, {"false", false}, {"yes", true}, {"no", false}, {"on", true}, {"off", false},
    };
    if (node_.IsScalar()) {
        const std::string text = lower_case(node_.Scalar());
        for (const auto& [name, value] : spellings) {
            if (text == name) return value;
        }
    }
    fail_expected("true or false");
}

std::optional<uint64_t> YamlValue::scalar_uint() const {
    if (!node_.IsScalar()) return std::nullopt;
    return parse_uint(node_.Scalar());
}

unsigned YamlValue::as_uint(unsigned min, unsigned max) const {
    return as_uint_where("an integer " + std::to_string(min) + ".." + std::to_string(max),
                         [=](uint64_t n) { return n >= min && n <= max; });
}

unsigned YamlValue::uint_or_fail(std::optional<uint64_t> number, bool valid, std::string_view expected) const {
    if (!number || *number > UINT_MAX || !valid) fail_expected(expected);
    return static_cast<unsigned>(*number);
}

double YamlValue::as_number(double min, double max) const {
    const std::string expected = "a number " + format_number(min) + ".." + format_number(max);
    if (!node_.IsScalar()) fail_expected(expected);
    const std::string& text = node_.Scalar();
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
    const bool whole_text = error == std::errc() && end == text.data() + text.size();
    if (!whole_text || !std::isfinite(value) || value < min || value > max) fail_expected(expected);
    return value;
}

std::string YamlValue::as_one_of(KeyList names) const {
    if (node_.IsScalar() && std::find(names.begin(), names.end(), node_.Scalar()) != names.end()) {
        return node_.Scalar();
    }
    fail_expected("one of " + join(names));
}

YamlMap YamlValue::as_map(KeyList valid_keys) const {
    if (node_.IsNull()) return YamlMap(path_, line_, source_);
    if (!node_.IsMap()) fail_expected("a mapping with the keys " + join(valid_keys));
    return YamlMap::checked(node_, path_, line_, source_, valid_keys);
}

std::vector<YamlValue> YamlValue::as_list() const {
    if (node_.IsNull()) return {};
    if (!node_.IsSequence()) fail_expected("a list");
    std::vector<YamlValue> items;
    for (size_t i = 0; i < node_.size(); ++i) {
        const YAML::Node item = node_[i];
        const int line = item.IsNull() ? line_ : line_of(item, line_);
        items.emplace_back(item, path_ + "[" + std::to_string(i) + "]", line, source_);
    }
    return items;
}

// --- YamlMap --------------------------------------------------------------------

YamlMap YamlMap::document(const YAML::Node& root, KeyList valid_keys, std::string_view source) {
    const std::string expected = "a mapping with the keys " + join(valid_keys);
    if (root.IsNull()) fail_at(source, 1, "", "the file is empty; expected " + expected);
    return YamlValue(root, "", line_of(root, 1), source).as_map(valid_keys);
}

YamlMap YamlMap::checked(const YAML::Node& node, std::string path, int line, std::string_view source,
                         KeyList valid_keys) {
    YamlMap map(std::move(path), line, source);
    for (const auto& pair : node) {
        const int key_line = line_of(pair.first, line);
        std::string key = map.checked_key(pair.first, key_line, valid_keys);
        map.entries_.push_back(Entry{std::move(key), key_line, pair.second});
    }
    return map;
}

std::string YamlMap::checked_key(const YAML::Node& key, int key_line, KeyList valid_keys) const {
    if (!key.IsScalar()) {
        fail_at(source_, key_line, path_,
                std::string("keys must be plain names, got a ") + (key.IsMap() ? "mapping" : "list"));
    }
    const std::string& name = key.Scalar();
    if (std::find(valid_keys.begin(), valid_keys.end(), name) == valid_keys.end()) {
        fail_at(source_, key_line, path_, unknown_key_message(name, valid_keys));
    }
    const auto same_name = [&](const Entry& entry) { return entry.key == name; };
    if (const auto first = std::find_if(entries_.begin(), entries_.end(), same_name); first != entries_.end()) {
        fail_at(source_, key_line, path_,
                "key '" + name + "' is given twice (first at line " + std::to_string(first->key_line) +
                    "); give each key once");
    }
    return name;
}

void YamlMap::fail(std::string_view what) const { fail_at(source_, line_, path_, what); }

std::string YamlMap::path_of(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

// A scalar is pointed at where it stands; anything else (nothing, or a mapping or list
// that starts on the lines below) at its key.
YamlValue YamlMap::value_of(const Entry& entry) const {
    const int line = entry.value.IsScalar() ? line_of(entry.value, entry.key_line) : entry.key_line;
    return YamlValue(entry.value, path_of(entry.key), line, source_);
}

std::optional<YamlValue> YamlMap::get(std::string_view key) const {
    for (const Entry& entry : entries_) {
        if (entry.key == key) return value_of(entry);
    }
    return std::nullopt;
}

YamlValue YamlMap::require(std::string_view key, std::string_view expected) const {
    if (auto value = get(key)) return *std::move(value);
    fail_at(source_, line_, path_of(key), "required key is missing; expected " + std::string(expected));
}

YamlMap YamlMap::section(std::string_view key, KeyList valid_keys) const {
    if (const auto value = get(key)) return value->as_map(valid_keys);
    return YamlMap(path_of(key), line_, source_);
}

// --- the document ---------------------------------------------------------------

namespace {

// Where each document of a stream starts, without building the documents.
class DocumentStarts final : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark& mark) override {
        stalled = count > 0 && mark.pos == last.pos;
        if (++count == 2) second = mark;
        last = mark;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}

    size_t count = 0;
    YAML::Mark second = YAML::Mark::null_mark();
    YAML::Mark last = YAML::Mark::null_mark();
    bool stalled = false;
};

}  // namespace

// Not YAML::LoadAll: in yaml-cpp 0.7 a token that begins no node (a stray ',' or ']'
// where a document starts: a file holding only ",") is never consumed, and LoadAll then
// adds an empty document per turn of its loop, for ever and without bound in memory
// (yaml-cpp issue 1040, fixed upstream in 0.8's LoadAll). Here every document must start
// past the one before: start positions strictly increase and cannot pass the end of the
// (bounded) text, so the walk ends whatever the input; a document that starts where the
// previous one did is the parser not getting past a token, reported as invalid YAML.
YAML::Node load_single_document(const std::string& text, std::string_view source) {
    DocumentStarts starts;
    {
        std::istringstream in(text);
        YAML::Parser parser(in);
        while (parser.HandleNextDocument(starts)) {
            if (starts.stalled) {
                const size_t pos = static_cast<size_t>(std::max(starts.last.pos, 0));
                const std::string what = pos < text.size() && text[pos] > ' ' && text[pos] < 0x7f
                                             ? "unexpected '" + std::string(1, text[pos]) + "'"
                                             : "cannot read past this point";
                fail_at(source, starts.last.line + 1, "",
                        "invalid YAML: " + what + " (column " + std::to_string(starts.last.column + 1) + ")");
            }
        }
    }
    if (starts.count > 1) {
        fail_at(source, line_of_mark(starts.second, 0), "",
                "the file holds " + std::to_string(starts.count) +
                    " YAML documents (separated by ---); expected one");
    }
    // The one document, built (yaml-cpp's Load reads only the first).
    return starts.count == 0 ? YAML::Node() : YAML::Load(text);
}

std::string describe_yaml_error(const YAML::Exception& error, std::string_view source) {
    const int line = error.mark.is_null() ? 0 : error.mark.line + 1;
    return format_problem(source, line, "", "invalid YAML: " + error.msg);
}

}  // namespace linecap::config_detail
