#include "s3/xml_answer.hpp"

#include <expat.h>

#include <charconv>
#include <cstring>
#include <vector>

#include "util/human_bytes.hpp"
#include "util/one_line.hpp"

namespace linecap::s3 {
namespace {

// Which text of the answer is kept: the elements the client returns, by where they are.
enum class Field { none, key, size, etag, last_modified, prefix, is_truncated, next_token, upload_key, upload_id,
                   initiated_upload_id, code, message };

// Peer text quoted in an error: one line, and short.
std::string quoted(std::string_view text) {
    constexpr size_t kShown = 64;
    std::string shown = one_line(text.substr(0, kShown));
    if (text.size() > kShown) shown += "...";
    return "'" + shown + "'";
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace

struct XmlAnswerReader::Parser {
    XML_Parser xml = nullptr;
    XmlAnswerReader* owner = nullptr;
    std::vector<std::string> path;  // the open elements, the document element first
    Field field = Field::none;      // the element whose text is being kept, at path.size()
    size_t field_depth = 0;
    std::string text;
    size_t entries = 0;

    ~Parser() {
        if (xml) XML_ParserFree(xml);
    }

    void stop(std::string why) {
        owner->fail(std::move(why));
        XML_StopParser(xml, XML_FALSE);
    }

    // Expat's refusal (its messages are its own constant strings).
    std::string not_xml() const {
        return "answer is not XML: " + std::string(XML_ErrorString(XML_GetErrorCode(xml))) + " at line " +
               std::to_string(XML_GetCurrentLineNumber(xml));
    }

    bool parent_is(const char* name) const { return path.size() >= 2 && path[path.size() - 2] == name; }

    Field field_of(const std::string& name) const {
        const std::string& root = path.front();
        const size_t depth = path.size();
        if (depth == 2) {
            if (root == "ListBucketResult") {
                if (name == "IsTruncated") return Field::is_truncated;
                if (name == "NextContinuationToken") return Field::next_token;
            } else if (root == "InitiateMultipartUploadResult") {
                if (name == "UploadId") return Field::initiated_upload_id;
            } else if (root == "Error") {
                if (name == "Code") return Field::code;
                if (name == "Message") return Field::message;
            }
        } else if (depth == 3) {
            if (root == "ListBucketResult" && parent_is("Contents")) {
                if (name == "Key") return Field::key;
                if (name == "Size") return Field::size;
                if (name == "ETag") return Field::etag;
                if (name == "LastModified") return Field::last_modified;
            } else if (root == "ListBucketResult" && parent_is("CommonPrefixes")) {
                if (name == "Prefix") return Field::prefix;
            } else if (root == "ListMultipartUploadsResult" && parent_is("Upload")) {
                if (name == "Key") return Field::upload_key;
                if (name == "UploadId") return Field::upload_id;
            }
        }
        return Field::none;
    }

    void start(const char* name) {
        if (owner->failed()) return;
        path.emplace_back(name);
        if (path.size() > owner->limits_.depth) {
            stop("answer nests elements deeper than " + std::to_string(owner->limits_.depth));
            return;
        }
        XmlAnswer& a = owner->answer_;
        if (path.size() == 1) {
            a.root = path.front();
            return;
        }
        if (path.size() == 2) {
            const std::string& root = path.front();
            const bool entry = (root == "ListBucketResult" && (path[1] == "Contents" || path[1] == "CommonPrefixes")) ||
                               (root == "ListMultipartUploadsResult" && path[1] == "Upload");
            if (entry) {
                if (++entries > owner->limits_.entries) {
                    stop("answer lists more than " + std::to_string(owner->limits_.entries) + " entries");
                    return;
                }
                if (path[1] == "Contents") a.listing.objects.emplace_back();
                else if (path[1] == "CommonPrefixes") a.listing.common_prefixes.emplace_back();
                else a.uploads.emplace_back();
            }
        }
        if (field == Field::none) {
            field = field_of(path.back());
            field_depth = path.size();
            text.clear();
        }
    }

    void characters(const char* s, int len) {
        if (owner->failed() || field == Field::none || path.size() != field_depth) return;
        if (text.size() + static_cast<size_t>(len) > owner->limits_.text_bytes) {
            stop("<" + path.back() + "> longer than " + human_bytes(owner->limits_.text_bytes, 0));
            return;
        }
        text.append(s, static_cast<size_t>(len));
    }

    void end() {
        if (owner->failed()) return;
        if (field != Field::none && path.size() == field_depth) {
            keep(field, std::move(text));
            field = Field::none;
            text.clear();
        }
        path.pop_back();
    }

    void keep(Field f, std::string value) {
        XmlAnswer& a = owner->answer_;
        switch (f) {
        case Field::none: break;
        case Field::key: a.listing.objects.back().key = std::move(value); break;
        case Field::size: {
            ObjectInfo& o = a.listing.objects.back();
            const std::string_view digits = trim(value);
            uint64_t n = 0;
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
            if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
                stop("<Size> of " + (o.key.empty() ? std::string("an entry") : "key " + quoted(o.key)) +
                     " is not a number of bytes: " + quoted(value));
                return;
            }
            o.size = n;
            break;
        }
        case Field::etag: a.listing.objects.back().etag = unquote(value); break;
        case Field::last_modified: a.listing.objects.back().last_modified = std::move(value); break;
        case Field::prefix: a.listing.common_prefixes.back() = std::move(value); break;
        case Field::is_truncated: {
            const std::string_view v = trim(value);
            if (v != "true" && v != "false") {
                stop("<IsTruncated> is neither true nor false: " + quoted(value));
                return;
            }
            a.truncated = v == "true";
            break;
        }
        case Field::next_token: a.listing.next_token = std::move(value); break;
        case Field::upload_key: a.uploads.back().key = std::move(value); break;
        case Field::upload_id: a.uploads.back().upload_id = std::move(value); break;
        case Field::initiated_upload_id: a.upload_id = std::move(value); break;
        case Field::code: a.code = std::move(value); break;
        case Field::message: a.message = std::move(value); break;
        }
    }
};

namespace {

void XMLCALL on_start(void* p, const XML_Char* name, const XML_Char**) {
    static_cast<XmlAnswerReader::Parser*>(p)->start(name);
}
void XMLCALL on_end(void* p, const XML_Char*) { static_cast<XmlAnswerReader::Parser*>(p)->end(); }
void XMLCALL on_text(void* p, const XML_Char* s, int len) { static_cast<XmlAnswerReader::Parser*>(p)->characters(s, len); }

}  // namespace

XmlAnswerReader::XmlAnswerReader(XmlLimits limits) : limits_(limits), parser_(std::make_unique<Parser>()) {
    parser_->owner = this;
    parser_->xml = XML_ParserCreate(nullptr);
    if (!parser_->xml) {
        error_ = "answer not read: expat could not create a parser";
        return;
    }
    XML_SetUserData(parser_->xml, parser_.get());
    XML_SetElementHandler(parser_->xml, on_start, on_end);
    XML_SetCharacterDataHandler(parser_->xml, on_text);
}

XmlAnswerReader::~XmlAnswerReader() = default;

void XmlAnswerReader::fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
}

bool XmlAnswerReader::feed(std::string_view bytes) {
    if (failed() || finished_) return false;
    // What fits the bound is parsed first, so an answer is refused for the same reason
    // however it was split.
    const uint64_t room = limits_.answer_bytes - bytes_;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(room, bytes.size()));
    bytes_ += take;
    for (size_t at = 0; at < take && !failed();) {
        const int n = static_cast<int>(std::min<size_t>(take - at, 1u << 20));
        if (XML_Parse(parser_->xml, bytes.data() + at, n, XML_FALSE) != XML_STATUS_OK) fail(parser_->not_xml());
        at += static_cast<size_t>(n);
    }
    if (!failed() && take < bytes.size()) fail("answer longer than " + human_bytes(limits_.answer_bytes, 0));
    return !failed();
}

bool XmlAnswerReader::finish() {
    if (failed()) return false;
    if (finished_) return true;
    finished_ = true;
    if (XML_Parse(parser_->xml, nullptr, 0, XML_TRUE) != XML_STATUS_OK) fail(parser_->not_xml());
    return !failed();
}

}  // namespace linecap::s3
