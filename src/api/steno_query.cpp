#include "api/steno_query.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <vector>

#include "store/time_spec.hpp"
#include "util/one_line.hpp"

namespace linecap::api {

namespace {

constexpr size_t kMaxQueryBytes = 64 * 1024;
constexpr unsigned kMaxDepth = 64;

// A parsed query: a term, or two operands joined by "and" or "or".
struct Node {
    enum class Kind { term, time, both, either } kind;
    std::string filter;          // term: its libpcap expression
    bool before = false;         // time: "before" (upper bound) or "after" (lower bound)
    uint64_t time_ns = 0;
    size_t at = 0;               // time: where the term starts (0-based), for an error
    std::unique_ptr<Node> left, right;
};

// One line naming the position (0-based AT): it goes into a 400 body and the audit log, and
// the words it quotes are the client's.
Error steno_error(const std::string& what, size_t at) {
    return config_error(one_line("stenographer query: " + what + " at character " + std::to_string(at + 1)));
}

// An IP address as inet_pton read it.
struct Address {
    int family = AF_INET;
    unsigned char bytes[16] = {};

    bool v6() const { return family == AF_INET6; }
    // In inet_ntop's canonical form, the one libpcap's scanner is sure to read.
    std::string text() const {
        char buf[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(family, bytes, buf, sizeof buf);
        return buf;
    }
};

class Parser {
public:
    Parser(std::string_view text, uint64_t now_ns) : text_(text), now_ns_(now_ns) {}

    Result<std::unique_ptr<Node>> parse() {
        auto node = expression(0);
        if (!node) return node;
        skip_space();
        if (pos_ < text_.size()) return fail("unexpected '" + std::string(peek_word()) + "'");
        return node;
    }

private:
    // expression: primary (("and" | "&&" | "or" | "||") primary)*, left to right.
    Result<std::unique_ptr<Node>> expression(unsigned depth) {
        if (depth > kMaxDepth) return fail("parentheses nested deeper than " + std::to_string(kMaxDepth));
        auto left = primary(depth);
        if (!left) return left;
        std::unique_ptr<Node> node = std::move(left.value());
        for (;;) {
            skip_space();
            Node::Kind kind;
            if (take("and") || take("&&")) kind = Node::Kind::both;
            else if (take("or") || take("||")) kind = Node::Kind::either;
            else return node;
            auto right = primary(depth);
            if (!right) return right;
            auto joined = std::make_unique<Node>(Node{.kind = kind});
            joined->left = std::move(node);
            joined->right = std::move(right.value());
            node = std::move(joined);
        }
    }

    Result<std::unique_ptr<Node>> primary(unsigned depth) {
        skip_space();
        if (pos_ >= text_.size()) return fail("the query ends where a term is expected");
        if (text_[pos_] == '(') {
            ++pos_;
            auto inner = expression(depth + 1);
            if (!inner) return inner;
            skip_space();
            if (pos_ >= text_.size() || text_[pos_] != ')') return fail("missing ')'");
            ++pos_;
            return inner;
        }
        const size_t at = pos_;
        const std::string word(next_word());
        auto term = [](std::string filter) { return std::make_unique<Node>(Node{.kind = Node::Kind::term, .filter = std::move(filter)}); };
        if (word == "host") {
            auto ip = address();
            if (!ip) return ip.error();
            return term("host " + ip->text());
        }
        if (word == "net") return network();
        if (word == "port") {
            auto n = number(65535, "port");
            if (!n) return n.error();
            const std::string p = std::to_string(n.value());
            return term("(tcp port " + p + " or udp port " + p + ")");
        }
        if (word == "ip") {
            if (next_word() != "proto") return fail_at(at, "'ip' must be followed by 'proto'");
            auto n = number(255, "protocol");
            if (!n) return n.error();
            const std::string p = std::to_string(n.value());
            return term("(ip proto " + p + " or ip6 proto " + p + ")");
        }
        if (word == "tcp" || word == "udp") return term("(ip proto " + std::string(word == "tcp" ? "6" : "17") +
                                                        " or ip6 proto " + (word == "tcp" ? "6" : "17") + ")");
        if (word == "icmp") return term("(ip proto 1)");
        // Tags and labels by their place in the frame (ether[] offsets, which libpcap's
        // `vlan` does not move: through_vlan_tags can wrap them like every other term).
        if (word == "vlan") {
            auto n = number(4095, "VLAN id");
            if (!n) return n.error();
            const std::string v = std::to_string(n.value());
            return term("((ether[12:2] = 0x8100 or ether[12:2] = 0x88a8) and (ether[14:2] & 0xfff = " + v +
                        " or (ether[16:2] = 0x8100 and ether[18:2] & 0xfff = " + v + ")))");
        }
        if (word == "mpls") {
            auto n = number(1048575, "MPLS label");
            if (!n) return n.error();
            const std::string l = std::to_string(n.value());
            return term("((ether[12:2] = 0x8847 and ether[14:4] >> 12 = " + l +
                        ") or ((ether[12:2] = 0x8100 or ether[12:2] = 0x88a8) and ether[16:2] = 0x8847 and ether[18:4] >> 12 = " +
                        l + "))");
        }
        if (word == "before" || word == "after") return time_term(word == "before", at);
        if (word.empty()) return fail_at(at, "unexpected '" + std::string(1, text_[at]) + "'");
        return fail_at(at, "'" + word + "' is not a word of Stenographer's query language (host, net, port, ip "
                               "proto, tcp, udp, icmp, vlan, mpls, before, after, and, or)");
    }

    // The network's address keeps only the bits of its prefix or mask, as Stenographer's
    // does (net 10.1.2.3/8 is 10.0.0.0/8): libpcap refuses others ("non-network bits set").
    Result<std::unique_ptr<Node>> network() {
        auto ip = address();
        if (!ip) return ip.error();
        skip_space();
        const bool v6 = ip->v6();
        if (pos_ < text_.size() && text_[pos_] == '/') {
            ++pos_;
            auto bits = number(v6 ? 128 : 32, "prefix length");
            if (!bits) return bits.error();
            for (unsigned i = 0; i < (v6 ? 16u : 4u); ++i) {
                const unsigned kept = std::min(8u, bits.value() - std::min(bits.value(), 8 * i));
                ip->bytes[i] &= static_cast<unsigned char>(0xff00u >> kept);
            }
            return std::make_unique<Node>(Node{.kind = Node::Kind::term,
                                               .filter = "net " + ip->text() + "/" + std::to_string(bits.value())});
        }
        const size_t at = pos_;
        if (next_word() != "mask") return fail_at(at, "'net ADDRESS' needs '/BITS' or 'mask MASK'");
        auto mask = address();
        if (!mask) return mask.error();
        if (v6 || mask->v6()) return fail_at(at, "'mask' is for IPv4; use net ADDRESS/BITS");
        for (unsigned i = 0; i < 4; ++i) ip->bytes[i] &= mask->bytes[i];
        return std::make_unique<Node>(
            Node{.kind = Node::Kind::term, .filter = "net " + ip->text() + " mask " + mask->text()});
    }

    Result<std::unique_ptr<Node>> time_term(bool before, size_t term_at) {
        skip_space();
        const size_t at = pos_;
        std::string value;
        while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != ')') {
            value += text_[pos_++];
        }
        if (value.empty()) return fail_at(at, std::string(before ? "'before'" : "'after'") + " needs a time");
        uint64_t ns = 0;
        const size_t after_value = pos_;
        if (next_word() == "ago") {
            auto d = duration_ns(value);
            if (!d) return fail_at(at, d.error().message);
            ns = d.value() > now_ns_ ? 0 : now_ns_ - d.value();
        } else {
            pos_ = after_value;
            auto t = store::parse_time(value);
            if (!t) return fail_at(at, t.error().message);
            ns = t.value();
        }
        return std::make_unique<Node>(Node{.kind = Node::Kind::time, .before = before, .time_ns = ns, .at = term_at});
    }

    // "45m", "3h", "1h30m", "90s": what Stenographer's relative times are. Saturating: a
    // span past what 64 bits of ns hold reaches back to 1970.
    static Result<uint64_t> duration_ns(const std::string& text) {
        uint64_t total = 0;
        size_t i = 0;
        while (i < text.size()) {
            uint64_t n = 0;
            const size_t digits = i;
            while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000000) {
                n = n * 10 + uint64_t(text[i++] - '0');
            }
            if (i == digits || i >= text.size()) return runtime_error("'" + text + "': a relative time is like 45m or 3h");
            const char unit = text[i++];
            const uint64_t scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
            if (!scale) return runtime_error("'" + text + "': units are s, m and h");
            uint64_t part = 0;
            if (__builtin_mul_overflow(n, scale * 1000000000ull, &part) || __builtin_add_overflow(total, part, &total))
                total = UINT64_MAX;
        }
        return total;
    }

    Result<Address> address() {
        skip_space();
        const size_t at = pos_;
        std::string value;
        while (pos_ < text_.size() && (std::isxdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                       text_[pos_] == ':')) {
            value += text_[pos_++];
        }
        Address a;
        if (!value.empty() && inet_pton(AF_INET, value.c_str(), a.bytes) == 1) return a;
        a.family = AF_INET6;
        if (!value.empty() && inet_pton(AF_INET6, value.c_str(), a.bytes) == 1) return a;
        return fail_at(at, "'" + (value.empty() ? std::string(peek_word()) : value) +
                               "' is not an IP address (Stenographer takes no host names)");
    }

    Result<unsigned> number(unsigned max, const std::string& what) {
        skip_space();
        const size_t at = pos_;
        unsigned long n = 0;
        bool any = false;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) && n <= max) {
            n = n * 10 + unsigned(text_[pos_++] - '0');
            any = true;
        }
        if (!any || n > max) return fail_at(at, "invalid " + what + " (0-" + std::to_string(max) + ")");
        return unsigned(n);
    }

    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool take(std::string_view op) {
        skip_space();
        if (!text_.substr(pos_).starts_with(op)) return false;
        const size_t end = pos_ + op.size();
        const bool word = std::isalpha(static_cast<unsigned char>(op[0]));
        if (word && end < text_.size() && std::isalnum(static_cast<unsigned char>(text_[end]))) return false;
        pos_ = end;
        return true;
    }
    std::string_view next_word() {
        skip_space();
        const size_t begin = pos_;
        while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        return text_.substr(begin, pos_ - begin);
    }
    std::string_view peek_word() const {
        size_t end = pos_;
        while (end < text_.size() && !std::isspace(static_cast<unsigned char>(text_[end]))) ++end;
        return text_.substr(pos_, std::min<size_t>(end - pos_, 40));
    }
    Error fail(const std::string& what) const { return fail_at(pos_, what); }
    Error fail_at(size_t at, const std::string& what) const { return steno_error(what, at); }

    std::string_view text_;
    uint64_t now_ns_;
    size_t pos_ = 0;
};

// The libpcap expression of a subtree without time terms.
Result<std::string> filter_of(const Node& node) {
    if (node.kind == Node::Kind::term) return node.filter;
    if (node.kind == Node::Kind::time) {
        return steno_error("'before'/'after' may only narrow the whole query (join it with 'and' at the top level), "
                           "not one side of an 'or'",
                           node.at);
    }
    auto l = filter_of(*node.left);
    if (!l) return l;
    auto r = filter_of(*node.right);
    if (!r) return r;
    return "(" + l.value() + (node.kind == Node::Kind::both ? " and " : " or ") + r.value() + ")";
}

// Splits the top-level "and" chain into the time bounds and the filter of the rest.
Status collect(const Node& node, StenoQuery& q) {
    if (node.kind == Node::Kind::time) {
        if (node.before) q.to_ns = std::min(q.to_ns, node.time_ns);
        else q.from_ns = std::max(q.from_ns, node.time_ns);
        return {};
    }
    if (node.kind == Node::Kind::both) {
        if (auto s = collect(*node.left, q); !s) return s;
        return collect(*node.right, q);
    }
    auto f = filter_of(node);
    if (!f) return f.error();
    q.filter = q.filter.empty() ? f.value() : q.filter + " and " + f.value();
    return {};
}

}  // namespace

Result<StenoQuery> compile_steno_query(std::string_view query, uint64_t now_ns) {
    if (query.size() > kMaxQueryBytes) return steno_error("longer than 64 KiB", kMaxQueryBytes);
    auto tree = Parser(query, now_ns).parse();
    if (!tree) return tree.error();
    StenoQuery q;
    if (auto s = collect(*tree.value(), q); !s) return s.error();
    // Bounds that leave no time ("after 1h ago and before 2h ago") match nothing, as in
    // Stenographer: the empty range at the lower bound.
    q.to_ns = std::max(q.to_ns, q.from_ns);
    return q;
}

std::string through_vlan_tags(const std::string& filter) {
    if (filter.empty()) return filter;
    const std::string f = "(" + filter + ")";
    return f + " or (vlan and (" + f + " or (vlan and " + f + ")))";
}

}  // namespace linecap::api
