#include "store/catalog.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "store/time_spec.hpp"
#include "util/errno_text.hpp"
#include "output/capture_scan.hpp"
#include "output/io_status.hpp"
#include "output/layout.hpp"

namespace linecap::store {

Result<Catalog> scan_catalog(const std::string& dir, const FileTemplate& file_template) {
    Catalog cat;
    cat.directory = dir;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return runtime_error(dir + ": " + errno_text(errno));
    errno = 0;
    std::set<std::string> names;  // a compressed file under its capture name, once
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (layout::final_name_of_in_progress(name)) ++cat.in_progress;
        if (const auto capture = layout::stored_capture_name(name)) names.insert(*capture);
    }
    const int e = errno;
    ::closedir(d);
    if (e != 0) return runtime_error(dir + ": readdir: " + errno_text(e));
    for (const std::string& name : names) {
        CaptureFileInfo f;
        f.name = name;
        f.path = dir + "/" + name;
        f.pcapng = layout::capture_format(name) == FileKind::pcapng;
        const std::optional<StoredStat> st = stat_stored_capture(f.path);
        if (!st) continue;  // vanished, or not a file
        f.size = st->size;
        f.stored_size = st->stored_size;
        f.compressed = st->compressed;
        f.mtime_ns = st->mtime_ns;
        f.parsed = layout::parse_capture_name(file_template, name);
        if (f.parsed && f.parsed->has_stream)
            f.stream = f.parsed->port + "/q" + (f.parsed->queue >= 0 ? std::to_string(f.parsed->queue) : "?");
        else
            f.stream = name;
        cat.files.push_back(std::move(f));
    }
    std::sort(cat.files.begin(), cat.files.end(),
              [](const CaptureFileInfo& a, const CaptureFileInfo& b) { return a.name < b.name; });

    // Time bounds per stream, from consecutive names.
    std::map<std::string, std::vector<CaptureFileInfo*>> streams;
    for (auto& f : cat.files)
        if (f.parsed && f.parsed->has_time) streams[f.stream].push_back(&f);
    for (auto& [stream, files] : streams) {
        std::stable_sort(files.begin(), files.end(), [](const CaptureFileInfo* a, const CaptureFileInfo* b) {
            return a->parsed->time_ns < b->parsed->time_ns;
        });
        // Files with the same name time (a "-1" duplicate) share the bound of the next
        // file with a later name time.
        for (size_t i = 0; i < files.size(); ++i) {
            files[i]->lower_ns = files[i]->parsed->time_ns;
            size_t j = i + 1;
            while (j < files.size() && files[j]->parsed->time_ns == files[i]->parsed->time_ns) ++j;
            if (j < files.size()) {
                const ParsedName& next = *files[j]->parsed;
                const uint64_t up = next.time_ns + next.precision_ns;
                files[i]->upper_ns = up < next.time_ns ? UINT64_MAX : up;
            }
        }
    }
    return cat;
}

}  // namespace linecap::store
