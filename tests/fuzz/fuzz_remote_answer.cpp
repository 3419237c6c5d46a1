// libFuzzer harness for a remote appliance's answer as `linecap extract --remote` merges it
// (api/remote_merge.hpp): the bytes of an appliance's pcap or pcapng answer, which the client
// does not trust. Byte 0 says how it is merged: bit 0 into pcapng (else pcap), bit 1 beside
// a second appliance that sent the same bytes whole, bits 2-7 where the client cut the first
// answer (0: not cut, else after that many 64ths of it); the rest is the answer.
// Invariants: never a crash or hang; every problem is one line; what parses is written
// again by format::CaptureWriter and reads back to the same records (count, lengths, bytes,
// and times wherever the output holds them: a pcap record's seconds are 32 bits) — what
// parses re-serialises to the same meaning; a cut answer keeps exactly the records whole
// before the cut, and of its problems says only those before the cut; the records of two
// appliances come out by (time, appliance order), each appliance's in its own order, under
// its own interfaces.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "api/remote_merge.hpp"

using namespace linecap;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

struct Seen {
    uint64_t ts_ns;
    uint32_t len;
    std::string bytes;
    uint64_t end;  // in the answer (not compared: the output's offsets are its own)
    int appliance;
    bool operator==(const Seen& o) const {
        return ts_ns == o.ts_ns && len == o.len && bytes == o.bytes && appliance == o.appliance;
    }
};

struct Read {
    std::vector<Seen> records;
    bool header_ok = false;
    bool failed = false;
    bool truncated = false;  // the answer ends inside a record
};

// The records of a capture file; appliance: of the output's interface names ("a:1 ...").
Read read_all(std::span<const uint8_t> bytes, int appliance) {
    Read out;
    const format::MemorySource source(bytes);
    auto header = format::read_header(source);
    if (!header) return out;
    out.header_ok = true;
    format::CaptureReader reader(source, header.value());
    format::Record r;
    while (reader.next(r)) {
        int from = appliance;
        if (from < 0) from = reader.interfaces()[r.interface].name.starts_with("b:2") ? 1 : 0;
        out.records.push_back({r.ts_ns, r.len, std::string(reinterpret_cast<const char*>(r.data), r.caplen), r.end, from});
    }
    out.failed = reader.failed();
    out.truncated = reader.problem() == format::CaptureReader::Problem::truncated;
    return out;
}

class VectorSink final : public format::ByteSink {
public:
    Status write(const uint8_t* data, size_t n) override {
        bytes.insert(bytes.end(), data, data + n);
        return {};
    }
    std::vector<uint8_t> bytes;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const FileKind output = data[0] & 1 ? FileKind::pcapng : FileKind::pcap;
    const bool two = data[0] & 2;
    const unsigned cut_64ths = data[0] >> 2;
    const std::span<const uint8_t> whole(data + 1, size - 1);
    const std::span<const uint8_t> first = whole.first(cut_64ths ? whole.size() * cut_64ths / 64 : whole.size());

    // What the reader makes of the answers on their own; a cut keeps the records whole before it.
    const Read a = read_all(first, 0), b = read_all(whole, 1);
    if (cut_64ths) {
        size_t whole_before = 0;
        while (whole_before < b.records.size() && b.records[whole_before].end <= first.size()) ++whole_before;
        check(a.records.size() == whole_before);
        for (size_t i = 0; i < a.records.size(); ++i) {
            Seen x = b.records[i];
            x.appliance = 0;
            check(a.records[i] == x);
        }
        // Damage it reports is the answer's own, never the cut taken for it.
        if (a.failed && !a.truncated) check(b.failed && !b.truncated);
    }

    std::vector<api::ReceivedAnswer> answers;
    answers.push_back({"https://a:1", "a:1", cut_64ths != 0, std::make_unique<format::MemorySource>(first)});
    if (two) answers.push_back({"https://b:2", "b:2", false, std::make_unique<format::MemorySource>(whole)});
    VectorSink sink;
    api::RemoteReport report;
    std::vector<std::string> errors;
    check(api::merge_answers(std::move(answers), output, sink, report, [&](const std::string& e) { errors.push_back(e); })
              .ok());
    for (const std::string& e : errors)
        for (const char c : e) check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    // Each problem said once: an answer that is no capture file, or whose records end in a
    // problem other than the cut (the truncated end of a cut answer).
    const size_t said = (!a.header_ok && !(cut_64ths && first.empty())) + (a.failed && !(cut_64ths && a.truncated)) +
                        (two ? !b.header_ok + b.failed : 0);
    check(errors.size() == said);
    check(report.appliances_ok == size_t{a.header_ok} + (two && b.header_ok));

    // The merge of the two, by (time, appliance order).
    std::vector<Seen> expected;
    const std::vector<Seen> none;
    const std::vector<Seen>& x = a.records;
    const std::vector<Seen>& y = two ? b.records : none;
    for (size_t i = 0, j = 0; i < x.size() || j < y.size();)
        expected.push_back(j == y.size() || (i < x.size() && x[i].ts_ns <= y[j].ts_ns) ? x[i++] : y[j++]);

    const Read merged = read_all(sink.bytes, output == FileKind::pcapng ? -1 : 0);
    check(merged.header_ok && !merged.failed && merged.records.size() == expected.size());
    check(report.packets_written == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        Seen want = expected[i], got = merged.records[i];
        if (output == FileKind::pcap) {
            got.appliance = want.appliance;  // pcap says nothing of where a packet came from
            if (want.ts_ns / 1000000000u > UINT32_MAX) got.ts_ns = want.ts_ns;
        }
        check(got == want);
    }
    return 0;
}
