#include "api/remote_merge.hpp"

#include <optional>
#include <utility>

#include "format/capture_merge.hpp"
#include "format/pcapng_blocks.hpp"
#include "linecap_build.h"
#include "store/extract.hpp"

namespace linecap::api {
namespace {

// One appliance's answer as an input of the merge. pcapng output: one output interface per
// interface of the answer, described before its first packet, named after both, so every
// packet says where it was captured.
class Answer final : public format::MergeInput {
public:
    Answer(ReceivedAnswer answer, const format::CaptureHeader& header, ErrorLine error)
        : answer_(std::move(answer)), reader_(*answer_.bytes, header), error_(std::move(error)) {}

    const format::Record& current() const override { return current_; }
    Next advance() override {
        if (reader_.next(current_)) return Next::record;
        // A cut answer ends inside a record: that is the cut, already said. Damage before
        // the cut is the answer's own.
        const bool the_cut = answer_.cut && reader_.problem() == format::CaptureReader::Problem::truncated;
        if (reader_.failed() && !the_cut) error_(answer_.base + ": its answer: " + reader_.error());
        return Next::end;
    }
    Result<std::optional<uint32_t>> output_interface(format::CaptureWriter& writer, uint64_t) override {
        const uint32_t in = current_.interface;
        if (auto known = ids_.find(reader_, in)) return known;
        const format::Interface& from = reader_.interfaces()[in];
        pcapng::InterfaceInfo info;
        info.name = store::appliance_interface_name(answer_.name, from.name);
        info.description = answer_.base + (from.description.empty() ? "" : ": " + from.description);
        info.snaplen = from.snaplen;
        info.link_type = format::link_type(from.link_field);
        auto id = writer.add_interface(info);
        if (!id) return id.error();
        ids_.set(in, id.value());
        return std::optional<uint32_t>(id.value());
    }

private:
    const ReceivedAnswer answer_;  // before reader_, which reads its bytes
    format::CaptureReader reader_;
    const ErrorLine error_;
    format::Record current_;
    format::InterfaceIds ids_;
};

}  // namespace

Status merge_answers(std::vector<ReceivedAnswer> answers, FileKind output, format::ByteSink& sink, RemoteReport& report,
                     const ErrorLine& error) {
    format::MergedHeader output_header;  // pcap output: the answers' snaplen and link type
    std::vector<format::MergeEntry> inputs;
    for (ReceivedAnswer& a : answers) {
        auto header = format::read_header(*a.bytes);
        if (!header) {
            if (a.cut && a.bytes->size() == 0) continue;  // the cut is said
            error(a.base + ": its answer is not a capture file: " + header.error().message);
            ++report.appliances_failed;
            continue;
        }
        ++report.appliances_ok;
        if (header->kind == FileKind::pcap) output_header.add(header->snaplen, header->link_field);
        // Appliance order: ties in time go to the earlier.
        inputs.push_back({0, inputs.size(), std::make_unique<Answer>(std::move(a), header.value(), error)});
    }
    format::CaptureWriter writer(sink, output);
    if (auto s = writer.begin(output_header.snaplen(), output_header.link_field(),
                              "linecap " LINECAP_VERSION " extract --remote");
        !s)
        return s.error().context("output");
    if (auto merged = format::merge_by_time(std::move(inputs), writer, {}); !merged) return merged.error();
    if (auto s = writer.flush(); !s) return s.error().context("output");
    report.packets_written = writer.packets();
    return {};
}

}  // namespace linecap::api
