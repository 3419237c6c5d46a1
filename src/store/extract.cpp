#include "store/extract.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>

#include "format/capture_merge.hpp"
#include "format/pcapng_blocks.hpp"
#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "util/unique_fd.hpp"
#include "packet/community_id.hpp"
#include "store/filter_plan.hpp"
#include "archive/index_format.hpp"
#include "packet/packet_keys.hpp"

namespace linecap::store {
namespace {

struct Range {
    uint64_t begin, end;
    // The time span the index gives the blocks of the range; every record read from it
    // must lie inside (else the file changed after it was indexed). Scans: everything.
    uint64_t min_ts = 0, max_ts = UINT64_MAX;
};

// A Selection ready to match: a packet is one of its packets when from <= ts < to, the
// filter accepts it and its Community ID is the one asked for (if any).
struct CompiledSelection {
    uint64_t from_ns = 0, to_ns = UINT64_MAX;
    CompiledFilter filter;
    std::optional<CommunityIdDigest> community_id;
    FilterPlan plan;  // what the index may prune by: the filter's, else the index hint's

    bool meets(uint64_t lower_ns, uint64_t upper_ns) const { return upper_ns > from_ns && lower_ns < to_ns; }
};

// The selections of a query: its any_of, or the one its time range, filter and Community ID
// make. Errors are the filter's or the Community ID's.
Result<std::vector<CompiledSelection>> compile_selections(const ExtractOptions& o) {
    std::vector<Selection> wanted = o.any_of;
    if (wanted.empty())
        wanted.push_back({.from_ns = o.from_ns, .to_ns = o.to_ns, .filter = o.filter, .community_id = o.community_id,
                          .index_hint = ""});
    std::vector<CompiledSelection> out;
    out.reserve(wanted.size());
    for (const Selection& w : wanted) {
        auto filter = CompiledFilter::compile(w.filter);
        if (!filter) return filter.error();
        CompiledSelection c{.from_ns = w.from_ns, .to_ns = w.to_ns, .filter = std::move(filter.value()),
                            .community_id = std::nullopt, .plan = {}};
        c.plan = c.filter.plan();
        if (!w.community_id.empty()) {
            auto id = parse_community_id(w.community_id);
            if (!id) return id.error();
            c.community_id = id.value();
        }
        if (c.filter.empty() && !w.index_hint.empty()) {
            auto hint = CompiledFilter::compile(w.index_hint);
            if (!hint) return hint.error();
            c.plan = hint->plan();
        }
        out.push_back(std::move(c));
    }
    return out;
}

using SelectionRefs = std::vector<const CompiledSelection*>;

// The span [from, to) of the selections together.
std::pair<uint64_t, uint64_t> envelope(const SelectionRefs& selections) {
    uint64_t from = UINT64_MAX, to = 0;
    for (const CompiledSelection* s : selections) {
        if (s->from_ns >= s->to_ns) continue;
        from = std::min(from, s->from_ns);
        to = std::max(to, s->to_ns);
    }
    return from < to ? std::pair{from, to} : std::pair{uint64_t{0}, uint64_t{0}};
}

struct FilePlan {
    size_t rank = 0;               // name order
    const StoredFile* info = nullptr;
    const StoreBackend* store = nullptr;  // that listed it
    format::CaptureHeader header;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    uint64_t start_bound = 0;      // no packet read from it is earlier
    bool indexed = false;
    uint64_t rescan_end = 0;       // indexed: where a scan of the rest would stop
    std::vector<Range> ranges;     // record byte ranges to read, in file order
    // The selections whose range meets the file's name-derived span: the only ones its
    // packets are matched against, so several selections answer what each would alone.
    SelectionRefs selections;
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
    void concern(FileConcern c) {
        if (o_.on_concern) o_.on_concern(c);
        r_.concerns.push_back(std::move(c));
    }

private:
    const ExtractOptions& o_;
    ExtractReport& r_;
};

// The interface a source file says its packets came from, before the first packet: the
// pcap header, or the first pcapng interface (read up to the first packet). nullopt when
// a pcapng file describes none.
std::optional<format::Interface> first_interface(const format::OpenFile& file, const format::CaptureHeader& header) {
    format::CaptureReader reader(file, header, 64u << 10);
    format::Record r;
    if (header.kind == FileKind::pcapng) (void)reader.next(r);  // pcap: from the header
    if (reader.interfaces().empty()) return std::nullopt;
    return reader.interfaces().front();
}

// pcapng output: one interface per (source stream, source interface, link type,
// snaplen), described when its first packet goes out.
class OutputInterfaces {
public:
    // `limit`: the output's max_bytes (0 = none), which an interface description counts
    // against like a record.
    OutputInterfaces(format::CaptureWriter& writer, uint64_t limit) : writer_(writer), limit_(limit) {}

    // The interface id for a packet of `source`, described now when new; nullopt when the
    // description and then `record_bytes` would take the output past the limit.
    Result<std::optional<uint32_t>> id(const StoredFile& file, uint32_t source_id, const format::Interface& source,
                                       uint64_t record_bytes) {
        const std::string key = file.stream + '\x1f' + std::to_string(source_id) + '\x1f' +
                                std::to_string(source.link_field) + '\x1f' + std::to_string(source.snaplen);
        if (auto it = ids_.find(key); it != ids_.end()) return std::optional<uint32_t>(it->second);
        pcapng::InterfaceInfo info;
        info.link_type = format::link_type(source.link_field);
        info.snaplen = source.snaplen;
        const std::string suffix = source_id > 0 ? "/" + std::to_string(source_id) : "";
        if (file.parsed && file.parsed->has_stream) {
            // As the daemon names its own interface (output/stream_writer.cpp), so an
            // extraction shows the same names as the files it came from.
            const ParsedName& p = *file.parsed;
            info.name = p.port + (p.queue >= 0 ? ":" + std::to_string(p.queue) : "") + suffix;
            if (!file.origin.empty()) info.name = appliance_interface_name(file.origin, info.name);
            info.description = "linecap port " + p.port + (p.queue >= 0 ? " queue " + std::to_string(p.queue) : "") +
                               (source.description.empty() ? "" : " (" + source.description + ")");
        } else {
            // A name the template does not parse: the file is the origin.
            info.name = file.stream + suffix;
            info.description = source.name.empty() && source.description.empty()
                                   ? "from " + file.name
                                   : source.name + (source.description.empty() ? "" : " " + source.description);
        }
        if (limit_ && writer_.size() + writer_.interface_size(info) + record_bytes > limit_)
            return std::optional<uint32_t>();
        auto id = writer_.add_interface(info);
        if (!id) return id.error();
        ids_.emplace(key, id.value());
        return std::optional<uint32_t>(id.value());
    }
    uint32_t count() const { return static_cast<uint32_t>(ids_.size()); }

private:
    format::CaptureWriter& writer_;
    const uint64_t limit_;
    std::map<std::string, uint32_t> ids_;
};

// How far ahead of the range being read a cursor asks the kernel for the next ones.
constexpr uint64_t kReadAheadBytes = 4u << 20;

// One file's packets as an input of the merge: the ranges of its plan, read in file order,
// filtered.
class Cursor final : public format::MergeInput {
public:
    Cursor(FilePlan plan, const ExtractOptions& o, OutputInterfaces& interfaces, Reporter& rep, ExtractReport& report)
        : plan_(std::move(plan)),
          o_(o),
          interfaces_(interfaces),
          rep_(rep),
          report_(report) {}

    const format::Record& current() const override { return cur_; }
    // Cached per source interface; nullopt when describing it would take the output past
    // max_bytes.
    Result<std::optional<uint32_t>> output_interface(format::CaptureWriter&, uint64_t record_bytes) override {
        if (auto known = output_ids_.find(*reader_, cur_.interface)) return known;
        auto id = interfaces_.id(*plan_.info, cur_.interface, reader_->interfaces()[cur_.interface], record_bytes);
        if (id && *id) output_ids_.set(cur_.interface, **id);
        return id;
    }

    // Opens the file; false (with an error reported) when it cannot be read.
    bool open() override {
        auto f = plan_.store->open(*plan_.info);  // compressed meanwhile: the same bytes
        if (!f) {
            rep_.error(plan_.info->path + ": " + f.error().message);
            return false;
        }
        file_ = std::move(f.value());
        if (file_->size() != plan_.size || file_->mtime_ns() != plan_.mtime_ns) {
            rep_.error(plan_.info->path + ": the file changed during the query; its packets are left out");
            return false;
        }
        if (plan_.indexed) file_->advise_random();
        else file_->advise_sequential();
        return true;
    }

    // The next packet to output.
    Next advance() override {
        const std::string& path = plan_.info->path;
        for (;;) {
            if (!in_range_) {
                if (range_ >= plan_.ranges.size()) return Next::end;
                if (plan_.indexed) read_ahead();
                const Range& r = plan_.ranges[range_++];
                if (!reader_)  // indexed: ranges of a few blocks; scans: the whole file
                    reader_ = std::make_unique<format::CaptureReader>(*file_, plan_.header, r.begin, r.end,
                                                                      plan_.indexed ? 1u << 20 : 4u << 20);
                else
                    reader_->seek(r.begin, r.end);
                in_range_ = true;
            }
            format::Record r;
            if (!reader_->next(r)) {
                if (reader_->failed()) {
                    std::string m = path + ": " + reader_->error();
                    if (reader_->problem() == format::CaptureReader::Problem::range_mismatch)
                        m += " (the index does not match the file); re-index with 'linecap index --force'";
                    rep_.error(m);
                    return Next::end;
                }
                in_range_ = false;
                continue;
            }
            if (auto problem = link_type_problem(reader_->interfaces()[r.interface], r.offset); !problem.empty()) {
                rep_.error(path + ": " + problem);
                return Next::end;
            }
            ++report_.packets_examined;
            // A scan over many packets that do not match writes nothing for a long time:
            // the stop request is looked at here too, not only between output records.
            if ((report_.packets_examined & 4095) == 0 && o_.should_stop && o_.should_stop()) return Next::stop;
            report_.bytes_read += r.end - r.offset;
            const Range& range = plan_.ranges[range_ - 1];
            if (r.ts_ns < range.min_ts || r.ts_ns > range.max_ts) read_the_rest(r);
            if (seen_ && r.ts_ns < last_ts_ && !warned_order_) {
                warned_order_ = true;
                rep_.warning(path + ": timestamps go back at offset " + std::to_string(r.offset) +
                             "; the output follows file order there");
            }
            seen_ = true;
            last_ts_ = r.ts_ns;
            // No early stop at ts >= to: a later record of the same file may be earlier.
            if (!selected(r)) continue;
            cur_ = r;
            return Next::record;
        }
    }

private:
    bool selected(const format::Record& r) const {
        std::optional<std::optional<CommunityIdDigest>> digest;  // computed once, when a selection asks
        for (const CompiledSelection* s : plan_.selections) {
            if (r.ts_ns < s->from_ns || r.ts_ns >= s->to_ns || !s->filter.matches(r)) continue;
            if (!s->community_id) return true;
            if (!digest) digest = community_id_digest(r.data, r.caplen);
            if (*digest == s->community_id) return true;
        }
        return false;
    }

    // Asks the kernel for the ranges from the one about to be read on, up to
    // kReadAheadBytes of them, so that the disk works on them all while the merge takes
    // them in turn: a conversation spread over a file is a thousand reads of a record
    // each, and one at a time each waits for the disk (cold, the spread query of
    // bench/store/README.md: 108 ms without, 63 ms with).
    void read_ahead() {
        if (range_ > 0 && range_ - 1 < ahead_) asked_ -= plan_.ranges[range_ - 1].end - plan_.ranges[range_ - 1].begin;
        for (ahead_ = std::max(ahead_, range_); ahead_ < plan_.ranges.size() && asked_ < kReadAheadBytes; ++ahead_) {
            const Range& r = plan_.ranges[ahead_];
            file_->will_need(r.begin, r.end - r.begin);
            asked_ += r.end - r.begin;
        }
    }

    // A record outside the time span its index block claims: the index no longer
    // describes the file. Everything the index let the cursor skip, and everything after
    // the current range, is read too (the current range continues as planned).
    void read_the_rest(const format::Record& r) {
        rep_.warning(plan_.info->path + ": the record at offset " + std::to_string(r.offset) +
                     " is stamped outside the time span its index block gives (the file changed after it was "
                     "indexed); reading the whole file. Re-index with 'linecap index --force'");
        std::vector<Range> rest(plan_.ranges.begin(), plan_.ranges.begin() + static_cast<std::ptrdiff_t>(range_));
        uint64_t at = plan_.header.data_begin;
        for (size_t i = 0; i < range_; ++i) {
            if (plan_.ranges[i].begin > at) rest.push_back({at, plan_.ranges[i].begin});
            at = plan_.ranges[i].end;
        }
        if (at < plan_.rescan_end) rest.push_back({at, plan_.rescan_end});
        for (Range& x : rest) x.min_ts = 0, x.max_ts = UINT64_MAX;
        plan_.ranges = std::move(rest);
        ahead_ = range_;  // the ranges after the current one are new
        asked_ = 0;
    }

    FilePlan plan_;
    const ExtractOptions& o_;
    OutputInterfaces& interfaces_;
    Reporter& rep_;
    ExtractReport& report_;
    std::unique_ptr<format::OpenFile> file_;
    std::unique_ptr<format::CaptureReader> reader_;
    size_t range_ = 0;
    size_t ahead_ = 0;   // read_ahead() has asked for the ranges before this one
    uint64_t asked_ = 0;  // bytes of the ranges asked for and not yet read
    bool in_range_ = false;
    format::Record cur_;
    bool seen_ = false;
    bool warned_order_ = false;
    uint64_t last_ts_ = 0;
    format::InterfaceIds output_ids_;
};

// Ranges of records closer than this are read as one (the bytes between are parsed and
// filtered like the rest): one read instead of two where they share a page or two.
constexpr uint64_t kRecordGapBytes = 4096;
// No coalesced range longer than this.
constexpr uint64_t kMaxRangeBytes = 8u << 20;

// Appends [begin, end), whose records the index places in blocks spanning [min_ts,
// max_ts], to the ranges in file order, joined to the last one when the gap between is
// small (the blocks the gap crosses widen the span, so their records are not mistaken for
// a changed file).
void add_range(const Index& ix, std::vector<Range>& ranges, uint64_t begin, uint64_t end, uint64_t min_ts,
               uint64_t max_ts) {
    Range* last = ranges.empty() ? nullptr : &ranges.back();
    if (last && begin >= last->end && begin - last->end <= kRecordGapBytes && end - last->begin <= kMaxRangeBytes) {
        const auto blocks = ix.blocks();
        auto b = std::upper_bound(blocks.begin(), blocks.end(), last->end,
                                  [](uint64_t at, const BlockEntry& e) { return at < e.offset; });
        for (--b; b != blocks.end() && b->offset < begin; ++b) {
            last->min_ts = std::min(last->min_ts, b->min_ts_ns);
            last->max_ts = std::max(last->max_ts, b->max_ts_ns);
        }
        last->end = end;
        last->min_ts = std::min(last->min_ts, min_ts);
        last->max_ts = std::max(last->max_ts, max_ts);
        return;
    }
    ranges.push_back({begin, end, min_ts, max_ts});
}

// Selects the blocks of an indexed file to read — with `by_record` and a version-2 index,
// only the records in them that may match, where it lists them — false when none can hold
// a match.
bool plan_from_index(const Index& ix, FilePlan& p, bool by_record, Reporter& rep, ExtractReport& report) {
    const auto [from, to] = envelope(p.selections);
    const IndexHeader& h = ix.header();
    const std::string& path = p.info->path;
    report.blocks_total += h.block_count;
    // A damaged tail was not indexed; report it when the range reaches it.
    if ((h.flags & (kIndexTruncatedTail | kIndexCorruptTail)) && (h.packets == 0 || to > h.max_ts_ns))
        rep.error(path + ": " + ((h.flags & kIndexTruncatedTail) ? "truncated record" : "corrupt record") +
                  " at offset " + std::to_string(damage_offset_of(h)) + " (the rest of the file is unreadable)");
    p.rescan_end = (h.flags & (kIndexTruncatedTail | kIndexCorruptTail)) ? h.data_end : p.size;
    if (h.packets == 0 || h.max_ts_ns < from || h.min_ts_ns >= to) return false;
    const auto entries = ix.blocks();
    // A block is read when, for some selection, it may hold a match and its span meets the
    // selection's range: whole, or (by_record) only the records the index says may match.
    BlockSet blocks(static_cast<uint32_t>(entries.size()), false);
    std::vector<uint32_t> records;  // file ordinals, in blocks not read whole
    auto meets = [&](const CompiledSelection* s, uint32_t b) {
        return entries[b].max_ts_ns >= s->from_ns && entries[b].min_ts_ns < s->to_ns;
    };
    for (const CompiledSelection* s : p.selections) {
        if (h.max_ts_ns < s->from_ns || h.min_ts_ns >= s->to_ns) continue;
        if (!by_record || ix.version() < 2) {
            const BlockSet candidates = candidate_blocks(ix, s->plan);
            for (uint32_t b = 0; b < entries.size(); ++b)
                if (candidates.test(b) && meets(s, b)) blocks.set(b);
            continue;
        }
        const CandidateRecords candidates = candidate_records(ix, s->plan);
        for (uint32_t b = 0; b < entries.size(); ++b)
            if (candidates.whole.test(b) && meets(s, b)) blocks.set(b);
        for (uint32_t r : candidates.records)
            if (meets(s, ix.block_of_record(r))) records.push_back(r);
    }
    std::sort(records.begin(), records.end());
    records.erase(std::unique(records.begin(), records.end()), records.end());
    if (ix.damaged())
        rep.warning(path + ": index postings damaged; reading every block in the time range "
                           "(rebuild with 'linecap index --force')");
    uint64_t first_ts = UINT64_MAX;
    std::vector<std::pair<uint64_t, uint64_t>> extents;
    size_t next = 0;  // into records
    for (uint32_t b = 0; b < entries.size(); ++b) {
        const BlockEntry& e = entries[b];
        const size_t first = next;
        while (next < records.size() && ix.block_of_record(records[next]) == b) ++next;
        const bool some = next > first && !blocks.test(b);
        if (!blocks.test(b) && !some) continue;
        ++report.blocks_read;
        first_ts = std::min(first_ts, e.min_ts_ns);
        extents.clear();
        if (some && ix.record_extents(b, std::span(records).subspan(first, next - first), extents)) {
            report.records_read_alone += next - first;
            for (const auto& [begin, end] : extents) add_range(ix, p.ranges, begin, end, e.min_ts_ns, e.max_ts_ns);
        } else {
            add_range(ix, p.ranges, e.offset, e.offset + e.length, e.min_ts_ns, e.max_ts_ns);
        }
    }
    if (p.ranges.empty()) return false;
    if (h.flags & kIndexLayoutAfterData) {
        // Interfaces are described between packets: read from the start (the index still
        // decided that the file can hold a match).
        p.ranges = {{data_begin_of(h), h.data_end, h.min_ts_ns, h.max_ts_ns}};
        first_ts = h.min_ts_ns;
    }
    p.start_bound = std::max(first_ts, from);
    return true;
}

// The indexes of the files a query will plan, loaded ahead of the plan on threads of their
// own, at most kIndexesAhead files ahead, each with the lookups the plan will make of it:
// one file after another, a cold query waited for each file's index pages in turn (its
// header and block table, a few pages of key table and postings, a page of record
// lengths per block a spread flow has a record in: a hundred disk round trips for a file
// of a 10 GB store). The lookups here only bring those pages in and check their chunks;
// the plan makes them again, from memory.
class IndexReadAhead {
public:
    struct Loaded {
        uint64_t size = 0;  // of the capture file when its index was loaded
        int64_t mtime_ns = 0;
        LoadedIndex index;
    };
    struct Wanted {
        const StoredFile* file = nullptr;
        SelectionRefs selections;
    };

    IndexReadAhead(const StoreBackend& store, std::vector<Wanted> wanted) : store_(store), wanted_(std::move(wanted)) {}

    // The index of wanted[i]; nullopt when the file could not be opened. In ascending i:
    // the ones skipped are dropped.
    std::optional<Loaded> take(size_t i) {
        // A thread each, or (no thread to be had) the load runs in get().
        for (; launched_ < wanted_.size() && launched_ < i + kIndexesAhead; ++launched_)
            pending_.push_back(std::async(std::launch::async | std::launch::deferred,
                                          [this, w = &wanted_[launched_]] { return load(*w); }));
        while (first_ < i) {
            pending_.pop_front();  // waits for a load the plan no longer wants
            ++first_;
        }
        std::optional<Loaded> out = pending_.front().get();
        pending_.pop_front();
        ++first_;
        return out;
    }

private:
    static constexpr size_t kIndexesAhead = 8;

    std::optional<Loaded> load(const Wanted& w) const {
        auto file = store_.open(*w.file);
        if (!file) return std::nullopt;
        Loaded l{file.value()->size(), file.value()->mtime_ns(), {}};
        l.index = store_.load_index(*w.file, l.size, l.mtime_ns);
        if (l.index.state != IndexState::valid) return l;
        const Index& ix = l.index.index;
        const bool by_record = file.value()->small_reads_cheap() && ix.version() >= 2;
        for (const CompiledSelection* s : w.selections) {
            if (!by_record) {
                (void)candidate_blocks(ix, s->plan);
                continue;
            }
            // The records' byte ranges too: a page of record lengths per block, asked for
            // together.
            const std::vector<uint32_t> records = candidate_records(ix, s->plan).records;
            std::vector<uint32_t> blocks;
            for (const uint32_t r : records)
                if (blocks.empty() || blocks.back() != ix.block_of_record(r)) blocks.push_back(ix.block_of_record(r));
            ix.will_need_record_lengths(blocks);
            std::vector<std::pair<uint64_t, uint64_t>> extents;
            for (size_t first = 0, next = 0; first < records.size(); first = next) {
                const uint32_t b = ix.block_of_record(records[first]);
                while (next < records.size() && ix.block_of_record(records[next]) == b) ++next;
                (void)ix.record_extents(b, std::span(records).subspan(first, next - first), extents);
            }
        }
        return l;
    }

    const StoreBackend& store_;
    std::vector<Wanted> wanted_;
    std::deque<std::future<std::optional<Loaded>>> pending_;  // wanted_[first_] onwards
    size_t first_ = 0, launched_ = 0;
};

// require_synced refused: how many of the selected files were not captured on a synchronised
// clock, naming the first few.
Error not_synced_error(const std::vector<std::string>& not_synced, size_t files_selected) {
    std::string names;
    for (size_t i = 0; i < not_synced.size() && i < 3; ++i) names += (i ? ", " : "") + not_synced[i];
    if (not_synced.size() > 3) names += ", ...";
    return runtime_error("require-synced: " + std::to_string(not_synced.size()) + " of the " +
                         std::to_string(files_selected) +
                         " files in the range were not captured on a synchronised host clock (their "
                         "manifest's clock.sync): " + names);
}

// Whether the directory `dir_fd` is `ancestor` or lies below it, physically: ".." is
// followed from the directory itself, so a symlinked path cannot hide where it is.
bool is_within(int dir_fd, const struct stat& ancestor) {
    UniqueFd current(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
    struct stat st {};
    while (current && ::fstat(current.get(), &st) == 0) {
        if (st.st_dev == ancestor.st_dev && st.st_ino == ancestor.st_ino) return true;
        UniqueFd parent(::openat(current.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        struct stat up {};
        if (!parent || ::fstat(parent.get(), &up) != 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino))
            return false;  // the root (its ".." is itself), or unreadable
        current = std::move(parent);
    }
    return false;
}

}  // namespace

Result<layout::AtomicFile> open_extract_output(const std::string& path, const std::string& store_directory) {
    constexpr mode_t kOutputMode = 0644;  // less the umask, like any file a tool writes
    struct stat store {};
    if (!store_directory.empty() && ::stat(store_directory.c_str(), &store) != 0)
        return runtime_error(store_directory + ": " + errno_text(errno));
    UniqueFd dir;
    std::string name;
    if (const IoStatus parent = layout::open_parent(path, dir, name); !parent.ok())
        return runtime_error(path + ": " + parent.message());
    if (const auto why = layout::not_replaceable(dir.get(), name)) return runtime_error(path + ": " + *why);
    if (!store_directory.empty() && is_within(dir.get(), store))
        return runtime_error(path + ": inside the store directory " + store_directory +
                             ", where it would be read back as capture data; write it elsewhere");
    layout::AtomicFile out;
    if (const IoStatus opened = out.open(dir.get(), name, kOutputMode); !opened.ok())
        return runtime_error(path + ": " + opened.message());
    return out;
}

Result<ExtractReport> extract(const ExtractOptions& o, int out_fd) {
    format::FdSink sink(out_fd);
    return extract(o, sink);
}

Result<ExtractReport> extract(const ExtractOptions& o, format::ByteSink& out) {
    ExtractReport report;
    Reporter rep(o, report);
    auto tmpl = FileTemplate::compile(o.file_template);
    if (!tmpl) return tmpl.error();
    auto compiled = compile_selections(o);
    if (!compiled) return compiled.error();
    const std::vector<CompiledSelection>& selections = compiled.value();
    const std::string& first_community_id = o.any_of.empty() ? o.community_id : o.any_of.front().community_id;
    report.plan = selections.front().plan.describe();
    if (selections.front().community_id) report.plan += "; then community id " + first_community_id + " per packet";
    if (selections.size() > 1)
        report.plan = "any of " + std::to_string(selections.size()) + " selections, the first: " + report.plan;
    std::unique_ptr<StoreBackend> opened;
    const StoreBackend* store = o.store;
    if (store == nullptr) store = (opened = open_store(o.directory)).get();
    auto catalog = store->list(ListOptions::catalog(tmpl.value()));
    if (!catalog) return catalog.error();
    report.files_in_store = catalog->files.size();

    // --- plan ---
    std::vector<FilePlan> plans;
    format::MergedHeader output_header;  // the sources' snaplen and link type
    SelectionRefs all;
    for (const CompiledSelection& s : selections) all.push_back(&s);
    const auto [from, to] = envelope(all);
    std::vector<std::string> not_synced;  // require_synced: "FILE (state)"
    // The files whose index the plan will read (in the range, not marked damaged).
    std::vector<IndexReadAhead::Wanted> indexed;
    std::vector<size_t> indexed_at(catalog->files.size(), SIZE_MAX);  // by rank: into indexed
    auto meeting_of = [&](const StoredFile& f) {
        SelectionRefs meeting;
        for (const CompiledSelection* s : all)
            if (s->meets(f.lower_ns, f.upper_ns)) meeting.push_back(s);
        return meeting;
    };
    for (size_t rank = 0; o.use_index && from < to && rank < catalog->files.size(); ++rank) {
        const StoredFile& f = catalog->files[rank];
        if (SelectionRefs meeting = meeting_of(f); !meeting.empty() && !f.damaged) {
            indexed_at[rank] = indexed.size();
            indexed.push_back({&f, std::move(meeting)});
        }
    }
    IndexReadAhead indexes(*store, std::move(indexed));
    for (size_t rank = 0; rank < catalog->files.size(); ++rank) {
        const StoredFile& f = catalog->files[rank];
        if (from >= to) break;
        SelectionRefs meeting = meeting_of(f);
        if (meeting.empty()) continue;
        ++report.files_selected;
        if (o.require_synced) {
            const std::string sync = store->read_manifest(f).clock_sync();
            if (sync != "synced") not_synced.push_back(f.path + " (" + sync + ")");
        }
        // Marked damaged: whatever was derived from the old bytes (the index) is not
        // trusted; the file is scanned.
        const std::optional<std::string>& marker = f.damaged;
        if (marker)
            rep.concern(FileConcern{.path = f.path, .damaged = true, .stale_index = false,
                                    .reason = "marked damaged" + (marker->empty() ? "" : " (" + *marker + ")")});
        auto file = store->open(f);
        if (!file) {
            rep.error(f.path + ": " + file.error().message);
            continue;
        }
        FilePlan p;
        p.rank = rank;
        p.info = &f;
        p.store = store;
        p.size = file.value()->size();
        p.mtime_ns = file.value()->mtime_ns();
        p.start_bound = std::max(f.lower_ns, from);
        p.rescan_end = p.size;
        p.selections = std::move(meeting);

        LoadedIndex li;
        if (indexed_at[rank] != SIZE_MAX) {
            std::optional<IndexReadAhead::Loaded> ahead = indexes.take(indexed_at[rank]);
            if (ahead && ahead->size == p.size && ahead->mtime_ns == p.mtime_ns) li = std::move(ahead->index);
            else li = store->load_index(f, p.size, p.mtime_ns);  // changed since (or not opened then)
        }
        if (li.state == IndexState::valid) {
            p.indexed = true;
            ++report.files_indexed;
            if (!plan_from_index(li.index, p, file.value()->small_reads_cheap(), rep, report)) {
                ++report.files_skipped_by_index;
                continue;
            }
        }
        // The header only now: a file the index rules out is not read at all (a compressed
        // one would decompress a frame for it). A file whose header is bad gets that one
        // error, not also a word about its index.
        auto header = format::read_header(*file.value());
        if (!header) {
            rep.error(f.path + ": " + header.error().message);
            continue;
        }
        p.header = header.value();
        if (!p.indexed) {
            if (li.state == IndexState::missing && o.use_index && !marker)
                rep.warning(f.path + ": no index; scanning the file");
            else if (li.state == IndexState::stale)
                rep.concern(FileConcern{.path = f.path, .damaged = false, .stale_index = true,
                                        .reason = "index older than the file (" + li.problem + "); scanned"});
            else if (li.state != IndexState::missing)
                rep.warning(f.path + ": index unusable (" + li.problem + "); scanning the file");
            ++report.files_scanned;
            p.ranges.push_back({p.header.data_begin, p.size});
        }
        if (auto i = first_interface(*file.value(), p.header)) output_header.add(i->snaplen, i->link_field);
        file.value().reset();  // reopened when the merge reaches it
        plans.push_back(std::move(p));
    }
    report.snaplen = output_header.snaplen();
    if (output_header.link_fields_differ() && o.output_format == FileKind::pcap)
        rep.warning("the files differ in their link-type field (FCS bits); the pcap output says plain Ethernet "
                    "(--format pcapng keeps each source's)");
    if (!not_synced.empty()) return not_synced_error(not_synced, report.files_selected);

    // --- merge ---
    format::CaptureWriter writer(out, o.output_format);
    OutputInterfaces interfaces(writer, o.max_bytes);
    if (auto s = writer.begin(report.snaplen, output_header.link_field(), "linecap extract"); !s)
        return s.error().context("output");
    if (o.max_bytes && writer.size() > o.max_bytes)  // nothing is written yet (the writer buffers)
        return runtime_error("max_bytes " + std::to_string(o.max_bytes) + " is smaller than the file header (" +
                             std::to_string(writer.size()) + " bytes)");
    std::vector<format::MergeEntry> inputs;
    for (FilePlan& p : plans) {
        const uint64_t start_bound = p.start_bound;
        const size_t rank = p.rank;
        inputs.push_back({start_bound, rank,
                          std::make_unique<Cursor>(std::move(p), o, interfaces, rep, report)});
    }
    auto end = format::merge_by_time(std::move(inputs), writer, {o.max_bytes, o.max_packets, o.should_stop});
    if (!end) return end.error();
    if (end.value() == format::MergeEnd::max_bytes) report.ended_early = "max_bytes";
    if (end.value() == format::MergeEnd::max_packets) report.ended_early = "max_packets";
    if (end.value() == format::MergeEnd::stopped) report.ended_early = "stopped";
    if (auto s = writer.flush(); !s) return s.error().context("output");
    report.packets_written = writer.packets();
    report.interfaces = interfaces.count();
    report.bytes_written = writer.size();
    return report;
}

}  // namespace linecap::store
