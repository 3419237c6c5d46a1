#include "store/stats.hpp"

#include "archive/holds.hpp"
#include "util/utc_time.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "archive/index_format.hpp"
#include "archive/manifest.hpp"
#include "archive/store_inventory.hpp"
#include "format/capture_reader.hpp"
#include "store/time_spec.hpp"
#include "util/human_bytes.hpp"

namespace linecap::store {
namespace {

std::string human_duration(uint64_t ns) {
    char text[48];
    const double s = static_cast<double>(ns) / 1e9;
    if (s < 1) std::snprintf(text, sizeof text, "%.3f ms", s * 1e3);
    else if (s < 120) std::snprintf(text, sizeof text, "%.3f s", s);
    else if (s < 7200) std::snprintf(text, sizeof text, "%.1f min", s / 60);
    else std::snprintf(text, sizeof text, "%.2f h", s / 3600);
    return text;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if (static_cast<unsigned char>(c) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
        } else out += c;
    }
    return out + "\"";
}

}  // namespace

Result<StoreStats> collect_stats(const StatsOptions& o) {
    auto tmpl = FileTemplate::compile(o.file_template);
    if (!tmpl) return tmpl.error();
    std::unique_ptr<StoreBackend> opened;
    const StoreBackend* store = o.store;
    if (store == nullptr) store = (opened = open_store(o.directory)).get();
    auto catalog = store->list(ListOptions::catalog(tmpl.value()));
    if (!catalog) return catalog.error();
    StoreStats st;
    st.directory = o.directory;
    const HoldListing holds = list_holds(o.directory, utc_now_ns(), false);
    st.holds = holds.holds.size();
    st.hold_bytes = holds.bytes;
    st.files = catalog->files.size();
    st.in_progress = catalog->in_progress;
    auto error = [&](const std::string& m) {
        st.errors.push_back(m);
        if (o.on_error) o.on_error(m);
    };

    for (const StoredFile& f : catalog->files) {
        FileStats fs;
        fs.name = f.name;
        fs.stream = f.stream;
        fs.size = f.size;
        const ManifestRead manifest = store->read_manifest(f);
        if (manifest.ok() && manifest.manifest.drops) fs.drops = manifest.manifest.drops->total();
        if (manifest.ok()) fs.clock = manifest.manifest.clock;
        const std::string& sync = manifest.clock_sync();
        ++(sync == "synced" ? st.clock_synced : sync == "unsynchronised" ? st.clock_unsynchronised : st.clock_unknown);
        if (manifest.state != ManifestRead::State::missing) st.any_manifest = true;
        if (manifest.state == ManifestRead::State::missing && f.manifest_pending) {
            fs.manifest_pending = true;
            ++st.manifest_pending;
            st.any_manifest = true;  // a store with manifests on
        }
        if (!manifest.ok() && manifest.state != ManifestRead::State::missing)
            error(o.directory + "/" + manifest.problem);
        fs.damaged = f.damaged;
        if (fs.damaged) ++st.damaged;
        bool done = false;
        if (o.use_index && !fs.damaged) {  // an index describes the bytes before the damage
            LoadedIndex li = store->load_index(f, f.size, f.mtime_ns);
            if (li.state == IndexState::valid) {
                const IndexHeader& h = li.index.header();
                fs.packets = h.packets;
                fs.first_ts_ns = h.min_ts_ns;
                fs.last_ts_ns = h.max_ts_ns;
                fs.source = "index";
                ++st.indexed;
                done = true;
                if (h.flags & (kIndexTruncatedTail | kIndexCorruptTail))
                    error(f.path + ": " + ((h.flags & kIndexTruncatedTail) ? "truncated" : "corrupt") +
                          " record at offset " + std::to_string(damage_offset_of(h)));
            }
        }
        if (!done) {
            auto file = store->open(f);
            auto header = file ? format::read_header(*file.value()) : Result<format::CaptureHeader>(file.error());
            if (!header) {
                error(f.path + ": " + header.error().message);
                fs.source = "error";
                ++st.unreadable;
                st.file_list.push_back(std::move(fs));
                continue;
            }
            file.value()->advise_sequential();
            format::CaptureReader reader(*file.value(), header.value(), 4u << 20);
            format::Record r;
            fs.first_ts_ns = UINT64_MAX;
            while (reader.next(r)) {
                ++fs.packets;
                fs.first_ts_ns = std::min(fs.first_ts_ns, r.ts_ns);
                fs.last_ts_ns = std::max(fs.last_ts_ns, r.ts_ns);
            }
            if (fs.packets == 0) fs.first_ts_ns = 0;
            if (reader.failed()) error(f.path + ": " + reader.error());
            fs.source = "scan";
            ++st.scanned;
        }
        st.file_list.push_back(std::move(fs));
    }

    std::map<std::string, std::vector<const FileStats*>> by_stream;
    for (const FileStats& fs : st.file_list) {
        st.bytes += fs.size;
        st.packets += fs.packets;
        if (fs.packets) {
            st.first_ts_ns = std::min(st.first_ts_ns, fs.first_ts_ns);
            st.last_ts_ns = std::max(st.last_ts_ns, fs.last_ts_ns);
        }
        by_stream[fs.stream].push_back(&fs);
    }
    for (auto& [name, files] : by_stream) {
        StreamStats ss;
        ss.stream = name;
        std::vector<const FileStats*> with_packets;
        for (const FileStats* f : files) {
            ++ss.files;
            ss.bytes += f->size;
            ss.packets += f->packets;
            if (f->drops) ss.drops = ss.drops.value_or(0) + *f->drops;
            if (f->packets) {
                ss.first_ts_ns = std::min(ss.first_ts_ns, f->first_ts_ns);
                ss.last_ts_ns = std::max(ss.last_ts_ns, f->last_ts_ns);
                with_packets.push_back(f);
            }
        }
        std::stable_sort(with_packets.begin(), with_packets.end(),
                         [](const FileStats* a, const FileStats* b) { return a->first_ts_ns < b->first_ts_ns; });
        std::vector<Gap> gaps;
        for (size_t i = 0; i + 1 < with_packets.size(); ++i) {
            const FileStats* a = with_packets[i];
            const FileStats* b = with_packets[i + 1];
            const uint64_t len = b->first_ts_ns > a->last_ts_ns ? b->first_ts_ns - a->last_ts_ns : 0;
            gaps.push_back({len, a->name, b->name});
            if (o.gap_threshold_ns && len > o.gap_threshold_ns) ++ss.gaps_over_threshold;
        }
        std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) { return a.length_ns > b.length_ns; });
        if (gaps.size() > o.largest_gaps) gaps.resize(o.largest_gaps);
        ss.largest_gaps = std::move(gaps);
        st.streams.push_back(std::move(ss));
    }
    return st;
}

std::string format_stats(const StoreStats& st, bool per_file, uint64_t gap_threshold_ns) {
    std::string out;
    char line[512];
    auto add = [&](const char* fmt, auto... args) {
        std::snprintf(line, sizeof line, fmt, args...);
        out += line;
    };
    add("store      %s\n", st.directory.c_str());
    add("files      %zu finished (%zu indexed, %zu scanned, %zu unreadable), %zu in progress\n", st.files, st.indexed,
        st.scanned, st.unreadable, st.in_progress);
    add("size       %s (%llu bytes)\n", human_bytes(st.bytes, 2).c_str(), static_cast<unsigned long long>(st.bytes));
    add("packets    %llu\n", static_cast<unsigned long long>(st.packets));
    if (st.packets)
        add("span       %s .. %s (%s)\n", format_time(st.first_ts_ns).c_str(), format_time(st.last_ts_ns).c_str(),
            human_duration(st.last_ts_ns - st.first_ts_ns).c_str());
    else
        out += "span       (no packets)\n";
    if (!st.any_manifest) out += "drops      (no manifests in the store)\n";
    add("clock      %zu file(s) on a synced host clock, %zu unsynchronised, %zu unknown (manifests' clock.sync)\n",
        st.clock_synced, st.clock_unsynchronised, st.clock_unknown);
    if (st.manifest_pending)
        add("manifests  %zu pending (finished files the daemon has not hashed yet; their drops are not counted yet)\n",
            st.manifest_pending);
    if (st.damaged) {
        add("damaged    %zu file(s) marked by the scrub: their bytes no longer match their manifest\n", st.damaged);
        for (const FileStats& f : st.file_list)
            if (f.damaged) out += "  " + f.name + ": " + (f.damaged->empty() ? "marked" : *f.damaged) + "\n";
    }
    if (st.holds)
        add("holds      %zu (%s in %s; kept past retention, not counted above)\n", st.holds,
            human_bytes(st.hold_bytes, 2).c_str(), holds_path(st.directory).c_str());
    out += "\nstreams\n";
    for (const StreamStats& s : st.streams) {
        add("  %-24s %5zu files  %12s  %12llu packets", s.stream.c_str(), s.files, human_bytes(s.bytes, 2).c_str(),
            static_cast<unsigned long long>(s.packets));
        if (s.drops) add("  %llu dropped", static_cast<unsigned long long>(*s.drops));
        out += "\n";
        if (s.packets)
            add("      span %s .. %s\n", format_time(s.first_ts_ns).c_str(), format_time(s.last_ts_ns).c_str());
        if (gap_threshold_ns)
            add("      gaps longer than %s: %zu\n", human_duration(gap_threshold_ns).c_str(), s.gaps_over_threshold);
        for (const Gap& g : s.largest_gaps)
            add("      gap %s between %s and %s\n", human_duration(g.length_ns).c_str(), g.after.c_str(),
                g.before.c_str());
    }
    if (per_file) {
        out += "\nfiles\n";
        for (const FileStats& f : st.file_list) {
            add("  %s  %s  %llu packets  %s", f.name.c_str(), human_bytes(f.size, 2).c_str(),
                static_cast<unsigned long long>(f.packets), f.source.c_str());
            if (f.packets)
                add("  %s .. %s", format_time(f.first_ts_ns).c_str(), format_time(f.last_ts_ns).c_str());
            if (f.drops) add("  %llu dropped", static_cast<unsigned long long>(*f.drops));
            if (f.damaged) out += "  DAMAGED";
            if (f.manifest_pending) out += "  manifest pending";
            if (f.clock)
                add("  clock %s%s %s est_error %s steps %llu", f.clock->source.c_str(),
                    f.clock->port_clock.empty() ? "" : ("(" + f.clock->port_clock + ")").c_str(), f.clock->sync.c_str(),
                    human_duration(f.clock->est_error_ns).c_str(), static_cast<unsigned long long>(f.clock->steps));
            out += "\n";
        }
    }
    return out;
}

std::string format_stats_json(const StoreStats& st) {
    std::string o = "{";
    auto num = [](uint64_t v) { return std::to_string(v); };
    o += "\"directory\":" + json_string(st.directory);
    o += ",\"files\":" + num(st.files) + ",\"in_progress\":" + num(st.in_progress);
    o += ",\"indexed\":" + num(st.indexed) + ",\"scanned\":" + num(st.scanned) + ",\"unreadable\":" + num(st.unreadable);
    o += ",\"bytes\":" + num(st.bytes) + ",\"packets\":" + num(st.packets) + ",\"damaged\":" + num(st.damaged) +
         ",\"manifest_pending\":" + num(st.manifest_pending);
    o += ",\"holds\":" + num(st.holds) + ",\"hold_bytes\":" + num(st.hold_bytes);
    o += ",\"clock\":{\"synced\":" + num(st.clock_synced) + ",\"unsynchronised\":" + num(st.clock_unsynchronised) +
         ",\"unknown\":" + num(st.clock_unknown) + "}";
    o += ",\"first_ts_ns\":" + num(st.packets ? st.first_ts_ns : 0) + ",\"last_ts_ns\":" + num(st.last_ts_ns);
    o += ",\"streams\":[";
    for (size_t i = 0; i < st.streams.size(); ++i) {
        const StreamStats& s = st.streams[i];
        if (i) o += ",";
        o += "{\"stream\":" + json_string(s.stream) + ",\"files\":" + num(s.files) + ",\"bytes\":" + num(s.bytes) +
             ",\"packets\":" + num(s.packets) + ",\"first_ts_ns\":" + num(s.packets ? s.first_ts_ns : 0) +
             ",\"last_ts_ns\":" + num(s.last_ts_ns) + ",\"gaps_over_threshold\":" + num(s.gaps_over_threshold);
        if (s.drops) o += ",\"drops\":" + num(*s.drops);
        o += ",\"largest_gaps\":[";
        for (size_t k = 0; k < s.largest_gaps.size(); ++k) {
            const Gap& g = s.largest_gaps[k];
            if (k) o += ",";
            o += "{\"ns\":" + num(g.length_ns) + ",\"after\":" + json_string(g.after) + ",\"before\":" +
                 json_string(g.before) + "}";
        }
        o += "]}";
    }
    o += "],\"file_list\":[";
    for (size_t i = 0; i < st.file_list.size(); ++i) {
        const FileStats& f = st.file_list[i];
        if (i) o += ",";
        o += "{\"name\":" + json_string(f.name) + ",\"stream\":" + json_string(f.stream) + ",\"bytes\":" + num(f.size) +
             ",\"packets\":" + num(f.packets) + ",\"first_ts_ns\":" + num(f.first_ts_ns) + ",\"last_ts_ns\":" +
             num(f.last_ts_ns) + ",\"source\":" + json_string(f.source);
        if (f.drops) o += ",\"drops\":" + num(*f.drops);
        if (f.damaged) o += ",\"damaged\":" + json_string(*f.damaged);
        if (f.manifest_pending) o += ",\"manifest_pending\":true";
        if (f.clock) o += ",\"clock\":" + to_json(*f.clock);
        o += "}";
    }
    o += "],\"errors\":[";
    for (size_t i = 0; i < st.errors.size(); ++i) o += (i ? "," : "") + json_string(st.errors[i]);
    o += "]}\n";
    return o;
}

}  // namespace linecap::store
