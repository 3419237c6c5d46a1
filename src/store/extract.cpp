#include "store/extract.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <queue>

#include "store/community_id.hpp"
#include "store/filter_plan.hpp"
#include "store/index_format.hpp"
#include "store/pcap_file.hpp"

namespace linecap::store {
namespace {

struct Range {
    uint64_t begin, end;
};

struct FilePlan {
    size_t rank = 0;               // name order
    std::string path;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    uint64_t start_bound = 0;      // no packet read from it is earlier
    bool indexed = false;
    bool monotonic = true;         // indexed: known; scanned: the store's contract
    std::vector<Range> ranges;     // record byte ranges to read, in file order
};

class Reporter {
public:
    Reporter(const ExtractOptions& o, ExtractReport& r) : o_(o), r_(r) {}
    void warning(const std::string& m) {
        r_.warnings.push_back(m);
        if (o_.on_warning) o_.on_warning(m);
    }
    void error(const std::string& m) {
        r_.errors.push_back(m);
        if (o_.on_error) o_.on_error(m);
    }

private:
    const ExtractOptions& o_;
    ExtractReport& r_;
};

class Cursor {
public:
    Cursor(FilePlan plan, const ExtractOptions& o, const CompiledFilter& filter,
           const std::optional<CommunityIdDigest>& community_id, Reporter& rep, ExtractReport& report)
        : plan_(std::move(plan)), o_(o), filter_(filter), community_id_(community_id), rep_(rep), report_(report) {}

    const FilePlan& plan() const { return plan_; }
    const RawRecord& current() const { return cur_; }

    // Opens the file; false (with an error reported) when it cannot be read.
    bool open() {
        auto f = PcapFile::open(plan_.path);
        if (!f) {
            rep_.error(plan_.path + ": " + f.error().message);
            return false;
        }
        file_ = std::move(f.value());
        if (plan_.indexed && (file_->size() != plan_.size || file_->mtime_ns() != plan_.mtime_ns)) {
            rep_.error(plan_.path + ": the file changed during the query; its packets are left out");
            return false;
        }
        if (plan_.indexed) file_->advise_random();
        else file_->advise_sequential();
        return true;
    }

    // Moves to the next packet to output; false when the file has no more.
    bool advance() {
        for (;;) {
            if (!in_range_) {
                if (range_ >= plan_.ranges.size()) return false;
                const Range& r = plan_.ranges[range_++];
                if (!reader_)  // indexed: ranges of a few blocks; scans: the whole file
                    reader_ = std::make_unique<RecordReader>(*file_, file_->header(), r.begin, r.end,
                                                             plan_.indexed ? 1u << 20 : 4u << 20);
                else
                    reader_->reset(r.begin, r.end);
                in_range_ = true;
            }
            RawRecord r;
            if (!reader_->next(r)) {
                if (reader_->failed()) {
                    std::string m = plan_.path + ": " + reader_->error();
                    if (reader_->problem() == RecordReader::Problem::index_mismatch)
                        m += "; re-index with 'linecap index --force'";
                    rep_.error(m);
                    return false;
                }
                in_range_ = false;
                continue;
            }
            ++report_.packets_examined;
            // A scan over many packets that do not match writes nothing for a long time:
            // the stop request is looked at here too, not only between output records.
            if ((report_.packets_examined & 4095) == 0 && o_.should_stop && o_.should_stop()) {
                report_.ended_early = "stopped";
                return false;
            }
            report_.bytes_read += kPcapRecordHeaderSize + r.caplen;
            if (seen_ && r.ts_ns < last_ts_ && plan_.monotonic) {
                plan_.monotonic = false;
                rep_.warning(plan_.path + ": timestamps go back at offset " + std::to_string(r.offset) +
                             "; the output follows file order there");
            }
            seen_ = true;
            last_ts_ = r.ts_ns;
            if (r.ts_ns < o_.from_ns) continue;
            if (r.ts_ns >= o_.to_ns) {
                if (plan_.monotonic) return false;
                continue;
            }
            if (!filter_.matches(r)) continue;
            if (community_id_ && community_id_digest(r.data, r.caplen) != community_id_) continue;
            cur_ = r;
            return true;
        }
    }

private:
    FilePlan plan_;
    const ExtractOptions& o_;
    const CompiledFilter& filter_;
    const std::optional<CommunityIdDigest>& community_id_;
    Reporter& rep_;
    ExtractReport& report_;
    std::unique_ptr<PcapFile> file_;
    std::unique_ptr<RecordReader> reader_;
    size_t range_ = 0;
    bool in_range_ = false;
    RawRecord cur_;
    bool seen_ = false;
    uint64_t last_ts_ = 0;
};

}  // namespace

Result<ExtractReport> extract(const ExtractOptions& o, int out_fd) {
    ExtractReport report;
    Reporter rep(o, report);
    auto tmpl = NameTemplate::compile(o.file_template);
    if (!tmpl) return tmpl.error();
    auto filter = CompiledFilter::compile(o.filter);
    if (!filter) return filter.error();
    std::optional<CommunityIdDigest> community_id;
    if (!o.community_id.empty()) {
        auto id = parse_community_id(o.community_id);
        if (!id) return id.error();
        community_id = id.value();
    }
    report.plan = filter->plan().describe();
    if (community_id) report.plan += "; then community id " + o.community_id + " per packet";
    auto catalog = scan_catalog(o.directory, tmpl.value());
    if (!catalog) return catalog.error();
    report.files_in_store = catalog->files.size();

    // --- plan ---
    std::vector<FilePlan> plans;
    uint32_t snaplen = 0;
    const uint64_t from = o.from_ns, to = o.to_ns;
    for (size_t rank = 0; rank < catalog->files.size(); ++rank) {
        const CaptureFileInfo& f = catalog->files[rank];
        if (from >= to) break;
        if (f.upper_ns <= from || f.lower_ns >= to) continue;
        ++report.files_selected;
        if (f.pcapng) {
            rep.error(f.path + ": pcapng files are not supported yet");
            continue;
        }
        auto file = PcapFile::open(f.path);
        if (!file) {
            rep.error(f.path + ": " + file.error().message);
            continue;
        }
        FilePlan p;
        p.rank = rank;
        p.path = f.path;
        p.size = file.value()->size();
        p.mtime_ns = file.value()->mtime_ns();
        p.start_bound = std::max(f.lower_ns, from);
        const uint32_t file_snaplen = file.value()->header().snaplen;
        file.value().reset();  // reopened when the merge reaches it

        LoadedIndex li;
        if (o.use_index) {
            li = load_index(f.path, p.size, p.mtime_ns);
            if (li.state == IndexState::missing)
                rep.warning(f.path + ": no index; scanning the file");
            else if (li.state != IndexState::valid)
                rep.warning(f.path + ": index " + (li.state == IndexState::stale ? "stale" : "unusable") + " (" +
                            li.problem + "); scanning the file");
        }
        if (li.state == IndexState::valid) {
            const Index& ix = li.index;
            const IndexHeader& h = ix.header();
            p.indexed = true;
            p.monotonic = (h.flags & kIndexMonotonic) != 0;
            ++report.files_indexed;
            report.blocks_total += h.block_count;
            // A damaged tail was not indexed; report it when the range reaches it.
            if ((h.flags & (kIndexTruncatedTail | kIndexCorruptTail)) && (h.packets == 0 || to > h.max_ts_ns))
                rep.error(f.path + ": " +
                          ((h.flags & kIndexTruncatedTail) ? "truncated record" : "corrupt record") +
                          " at offset " + std::to_string(h.data_end) + " (the rest of the file is unreadable)");
            if (h.packets == 0 || h.max_ts_ns < from || h.min_ts_ns >= to) {
                ++report.files_skipped_by_index;
                continue;
            }
            BlockSet blocks = candidate_blocks(ix, filter->plan());
            if (ix.damaged())
                rep.warning(f.path + ": index postings damaged; reading every block in the time range "
                                     "(rebuild with 'linecap index --force')");
            uint64_t first_ts = UINT64_MAX;
            const auto entries = ix.blocks();
            for (uint32_t b = 0; b < entries.size(); ++b) {
                const BlockEntry& e = entries[b];
                if (!blocks.test(b) || e.max_ts_ns < from || e.min_ts_ns >= to) continue;
                ++report.blocks_read;
                first_ts = std::min(first_ts, e.min_ts_ns);
                if (!p.ranges.empty() && p.ranges.back().end == e.offset && p.ranges.back().end - p.ranges.back().begin < (8u << 20))
                    p.ranges.back().end = e.offset + e.length;
                else
                    p.ranges.push_back({e.offset, e.offset + e.length});
            }
            if (p.ranges.empty()) {
                ++report.files_skipped_by_index;
                continue;
            }
            p.start_bound = std::max(first_ts, from);
        } else {
            ++report.files_scanned;
            p.ranges.push_back({kPcapFileHeaderSize, p.size});
        }
        snaplen = std::max(snaplen, file_snaplen);
        plans.push_back(std::move(p));
    }
    report.snaplen = snaplen ? snaplen : pcap::kMaxSnaplen;

    // --- merge ---
    PcapWriter writer(out_fd);
    if (auto s = writer.write_header(report.snaplen); !s) return s.error().context("output");
    std::stable_sort(plans.begin(), plans.end(), [](const FilePlan& a, const FilePlan& b) {
        return a.start_bound != b.start_bound ? a.start_bound < b.start_bound : a.rank < b.rank;
    });
    std::vector<std::unique_ptr<Cursor>> cursors;
    auto later = [](const Cursor* a, const Cursor* b) {
        const uint64_t ta = a->current().ts_ns, tb = b->current().ts_ns;
        return ta != tb ? ta > tb : a->plan().rank > b->plan().rank;
    };
    std::priority_queue<Cursor*, std::vector<Cursor*>, decltype(later)> heap(later);
    size_t next_plan = 0;
    auto activate = [&](size_t i) {
        auto c = std::make_unique<Cursor>(std::move(plans[i]), o, filter.value(), community_id, rep, report);
        if (c->open() && c->advance()) heap.push(c.get());
        cursors.push_back(std::move(c));
    };
    while (report.ended_early.empty()) {
        // Open every file that may hold a packet at or before the heap's head.
        while (next_plan < plans.size() &&
               (heap.empty() || plans[next_plan].start_bound <= heap.top()->current().ts_ns) &&
               report.ended_early.empty())
            activate(next_plan++);
        if (heap.empty()) break;
        Cursor* c = heap.top();
        const RawRecord& r = c->current();
        if (o.max_bytes && kPcapFileHeaderSize + writer.bytes() + kPcapRecordHeaderSize + r.caplen > o.max_bytes) {
            report.ended_early = "max_bytes";
            break;
        }
        if (o.should_stop && o.should_stop()) {
            report.ended_early = "stopped";
            break;
        }
        heap.pop();
        if (auto s = writer.write_record(r.ts_ns, r.caplen, r.len, r.data); !s) return s.error().context("output");
        if (c->advance()) heap.push(c);
        else if (!report.ended_early.empty()) break;
        else {
            // Release the file and its buffer as soon as it is done.
            for (auto& owned : cursors)
                if (owned.get() == c) owned.reset();
        }
    }
    if (auto s = writer.flush(); !s) return s.error().context("output");
    report.packets_written = writer.packets();
    report.bytes_written = kPcapFileHeaderSize + writer.bytes();
    return report;
}

}  // namespace linecap::store
