// The background scrub: re-reads every finished capture file once per period and checks
// its bytes against its manifest (size and SHA-256), ZFS-style, so that a file whose
// bytes changed after it was finished — bit rot, a bad sector, an edit — is found before
// someone draws conclusions from it.
//
// A file whose bytes no longer match is MARKED: "NAME.pcap.damaged" beside it
// (file_naming.hpp), one line saying when the scrub found what. `linecap extract` reports
// every marked file it reads and exits non-zero unless told to accept them, `linecap
// stats` lists them and `linecapd verify` reports them; retention deletes a marker with
// its file. A marked file that matches again (restored from a copy) loses its marker on
// the next check. A file without manifest, or with one that cannot be parsed, cannot be
// checked: counted (linecap_scrub_files_total{result="no_manifest"|"bad_manifest"}), not
// marked.
//
// Pacing: a pass lists the directory's finished files (name order, which is time order
// for the default template) and reads them in chunks; before each chunk it waits until
// pass start + period × (bytes read so far / bytes of the pass), so the whole store is
// read once per period at an even rate instead of in a burst. A pass that falls behind
// (a restart, a store that grew) catches up at full speed — still at idle priority. The
// next pass starts one period after the previous one started, or when it ends if later.
// Files finished during a pass are left to the next: the writer hashed them as it wrote.
//
// Reading: O_DIRECT where the file system allows it, so the scrub checks what is on the
// device rather than a cached copy, and does not push the recent files (which the
// indexer and queries want) out of the page cache; otherwise buffered, dropped from the
// cache behind it. The thread runs at idle CPU and I/O priority (idle_priority.hpp) and
// never touches the writer: it cannot make capture wait.
//
// Restarts: the pass's start and the last file checked are kept in "linecap-scrub.state"
// (file_naming.hpp), so a daemon restarted more often than once a period still covers
// the whole store, and the last completed pass survives the restart. The state is
// advisory: a state file that cannot be read starts a new pass.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "util/background_service.hpp"
#include "util/counter.hpp"
#include "util/metric.hpp"

namespace linecap {

// Written by the scrub thread, read by metrics (relaxed).
// Counter is std::atomic for the scrub's live counters, uint64_t for a snapshot
// (ScrubCounts; util/counter.hpp).
template <class Counter>
struct ScrubCountersOf {
    // Files checked, by result.
    Counter ok_files{};
    Counter mismatched_files{};    // bytes differ from the manifest: marked
    Counter missing_manifests{};
    Counter bad_manifests{};       // unreadable or unparsable manifest
    Counter unreadable_files{};    // read error (logged)
    Counter bytes_read{};
    Counter damaged_files{};       // gauge: capture files carrying a marker
    Counter passes{};              // completed passes (this run)
    Counter last_pass_end_ns{};    // wall clock of the last completed pass; 0: none yet
    Counter period_s{};            // as configured

    template <class F, class... Group>
    static void fields(F&& f, Group&... g) {
        f(g.ok_files...);
        f(g.mismatched_files...);
        f(g.missing_manifests...);
        f(g.bad_manifests...);
        f(g.unreadable_files...);
        f(g.bytes_read...);
        f(g.damaged_files...);
        f(g.passes...);
        f(g.last_pass_end_ns...);
        f(g.period_s...);
    }
};
struct ScrubCounters : ScrubCountersOf<std::atomic<uint64_t>> {};
using ScrubCounts = ScrubCountersOf<uint64_t>;

// The metrics read from ScrubCounts (only with output.scrub.enabled). damaged_files is
// what the alert watches: a capture file whose bytes no longer match its manifest answers
// queries with what it holds now, not with what was captured.
inline constexpr FamilyMetric<ScrubCounts, 5> kScrubFilesMetric{
    {"linecap_scrub_files_total",
     "Finished capture files the background scrub checked against their manifests, by result: ok, mismatch (bytes "
     "differ: marked damaged), no_manifest and bad_manifest (cannot be checked), unreadable (read error, logged).",
     MetricType::counter},
    "result",
    {{"ok", &ScrubCounts::ok_files},
     {"mismatch", &ScrubCounts::mismatched_files},
     {"no_manifest", &ScrubCounts::missing_manifests},
     {"bad_manifest", &ScrubCounts::bad_manifests},
     {"unreadable", &ScrubCounts::unreadable_files}}};
inline constexpr FieldMetric<ScrubCounts> kScrubReadBytesMetric{
    {"linecap_scrub_read_bytes_total", "Bytes of capture files the scrub read.", MetricType::counter},
    &ScrubCounts::bytes_read};
inline constexpr FieldMetric<ScrubCounts> kScrubDamagedFilesMetric{
    {"linecap_scrub_damaged_files",
     "Capture files marked damaged (NAME.damaged): their bytes no longer match their manifest.", MetricType::gauge},
    &ScrubCounts::damaged_files};
inline constexpr FieldMetric<ScrubCounts> kScrubPassesMetric{
    {"linecap_scrub_passes_total", "Scrub passes over the whole store completed by this run.", MetricType::counter},
    &ScrubCounts::passes};
inline constexpr FieldMetric<ScrubCounts> kScrubLastPassMetric{
    {"linecap_scrub_last_pass_completed_timestamp_seconds",
     "When the last scrub pass over the whole store completed (Unix time, kept across restarts); 0: none yet.",
     MetricType::gauge},
    &ScrubCounts::last_pass_end_ns,
    1e9};
inline constexpr FieldMetric<ScrubCounts> kScrubPeriodMetric{
    {"linecap_scrub_period_seconds", "output.scrub.period: the store is re-read once per period.", MetricType::gauge},
    &ScrubCounts::period_s};

struct ScrubOptions {
    std::string directory;
    uint64_t period_ns = 7 * 86400 * 1'000'000'000ull;
    size_t chunk_bytes = 1u << 20;                // read (and pacing) unit
    bool idle_priority = true;                    // tests may turn it off
};

// The scrub's notion of time, so that tests can run passes without sleeping.
class ScrubClock {
public:
    virtual ~ScrubClock() = default;
    // Wall clock, ns since the epoch: pass times are reported and kept across restarts.
    virtual uint64_t now_ns() = 0;
    // Returns true at `deadline_ns` (at once if it has passed), false as soon as the
    // scrub is to stop.
    virtual bool wait_until(uint64_t deadline_ns) = 0;
};

// What one check of one file found.
// pending: the file's manifest is not written yet (NAME.manifest-pending); checked next pass.
enum class ScrubResult { ok, mismatch, no_manifest, pending, bad_manifest, unreadable, vanished, stopped };

// The passes, on the caller's thread: ScrubService runs them on a thread of its own,
// tests call run_pass() directly with their clock.
class Scrubber {
public:
    // `marked(name)` is called after a marker was created or removed beside `name`
    // (retention re-reads the sidecars' size).
    using MarkHook = std::function<void(const std::string& name)>;

    Scrubber(ScrubOptions options, ScrubClock& clock, ScrubCounters& counters, MarkHook marked = {});
    ~Scrubber();
    Scrubber(const Scrubber&) = delete;
    Scrubber& operator=(const Scrubber&) = delete;

    // One pass over the directory, paced over the period from its start (a new pass, or
    // the one a previous run left unfinished). False when stopped (clock) or the
    // directory cannot be read (logged).
    bool run_pass();
    // Passes, one period apart, until the clock says stop.
    void run();

private:
    // One file of the pass, its reads paced within the pass's bytes.
    ScrubResult check(const std::string& name, uint64_t done_before, uint64_t pass_bytes);
    void set_marker(const std::string& name, const std::string& why);
    void clear_marker(const std::string& name);
    void count_markers();
    void load_state();
    void save_state(const std::string& position, bool completed);

    const ScrubOptions options_;
    ScrubClock& clock_;
    ScrubCounters& counters_;
    const MarkHook marked_;
    int dir_fd_ = -1;
    int dir_error_ = 0;               // why dir_fd_ could not be opened
    struct AlignedFree {
        void operator()(void* p) const;
    };
    std::unique_ptr<uint8_t[], AlignedFree> buffer_;  // chunk_bytes, aligned for O_DIRECT
    uint64_t pass_start_ns_ = 0;      // 0: no pass under way
    std::string resume_after_;        // the last file the interrupted pass checked
    uint64_t next_pass_ns_ = 0;       // run(): when the next pass is due
    uint64_t markers_counted_ns_ = 0;
    bool stopped_ = false;
};

// The daemon's scrub thread (SCHED_IDLE, idle I/O class), "lc-scrub". stop() interrupts
// the file in hand at its next chunk; the state keeps the place.
class ScrubService final : public BackgroundService {
public:
    ScrubService(ScrubOptions options, Scrubber::MarkHook marked, ScrubCounters& counters);
    ~ScrubService();

private:
    void work() override;

    class WallClock final : public ScrubClock {
    public:
        explicit WallClock(ScrubService& service) : service_(service) {}
        uint64_t now_ns() override;
        bool wait_until(uint64_t deadline_ns) override;

    private:
        ScrubService& service_;
    };

    const ScrubOptions options_;
    const Scrubber::MarkHook marked_;
    ScrubCounters& counters_;
    WallClock clock_{*this};
};

}  // namespace linecap
