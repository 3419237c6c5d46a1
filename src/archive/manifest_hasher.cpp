#include "archive/manifest_hasher.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>
#include <utility>
#include <vector>

#include "archive/layout.hpp"
#include "archive/recovery.hpp"
#include "archive/store_inventory.hpp"

namespace linecap {
namespace {

constexpr auto kRetryInterval = std::chrono::seconds(1);
// How long the thread sleeps when there is nothing to hash: the backlog is bookkeeping,
// a few milliseconds of latency cost nothing, and an idle hasher stays near 0 % CPU.
constexpr auto kIdlePoll = std::chrono::milliseconds(2);
// Read back and hashed per step: large enough for few syscalls, small enough that every
// stream advances in turn and the bytes are read while still cached.
constexpr size_t kChunkBytes = 1 << 20;

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void remove_name(int dir_fd, const std::string& name) {
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT)
        spdlog::warn("manifest hasher: cannot remove {}: {}", name, errno_text(errno));
}

void close_handoff(std::atomic<int>& handoff) {
    if (const int fd = handoff.exchange(-1); fd >= 0) ::close(fd);
}

void sub(std::atomic<uint64_t>& counter, uint64_t n) { counter.fetch_sub(n, std::memory_order_relaxed); }
void add(std::atomic<uint64_t>& counter, uint64_t n) { counter.fetch_add(n, std::memory_order_relaxed); }

// Reads [offset, offset + bytes.size()) of `fd` completely. An error or a file shorter than
// that is an IoStatus failure (EIO for "shorter": bytes the writer said are there are not).
IoStatus read_exactly(int fd, uint64_t offset, std::span<uint8_t> bytes) {
    size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return IoStatus::failure("read back", errno);
        if (n == 0) return IoStatus::failure("read back (the file is shorter than written)", EIO);
        got += static_cast<size_t>(n);
    }
    return {};
}

}  // namespace

ManifestHasher::ManifestHasher(HasherContext context, size_t streams, ManifestCounters& counters)
    : BackgroundService({.name = "lc-hash", .who = "manifest hasher"}), context_(std::move(context)), counters_(counters) {
    for (size_t i = 0; i < streams; ++i) lanes_.push_back(std::make_unique<Lane>(kTrackedFiles));
}

ManifestHasher::~ManifestHasher() {
    stop();
    for (auto& lane : lanes_) {
        delete lane->current;
        while (Tracked* t = lane->ring.pop()) delete t;
    }
}

std::string ManifestHasher::path_of(const std::string& name) const { return context_.config.directory + "/" + name; }

// The sweep (before_start) runs here, before any writer thread: every marker there now is a
// previous run's.
Status ManifestHasher::start() {
    try {
        BackgroundService::start();
    } catch (const std::system_error& e) {
        return runtime_error(std::string("manifest hasher: starting thread: ") + e.what());
    }
    return {};
}

// --- the writer's side ------------------------------------------------------------------

void ManifestHasher::opened(uint32_t stream, const std::string& in_progress_name, uint64_t size) {
    Lane& lane = *lanes_[stream];
    if (lane.writing != nullptr) abandoned(stream);  // not reached: the writer ends a file first
    auto file = std::make_unique<Tracked>();
    file->in_progress_name = in_progress_name;
    // Opened here, under the in-progress name only the writer uses: while the file is written
    // renames do not matter. Without a descriptor the file is opened by name once finished.
    UniqueFd fd(::openat(context_.dir_fd, in_progress_name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        spdlog::warn("manifest hasher: cannot open {} to read it back ({}); it is read once finished",
                     path_of(in_progress_name), errno_text(errno));
    } else {
        file->dev = st.st_dev;
        file->ino = st.st_ino;
        file->handoff.store(fd.release(), std::memory_order_relaxed);
    }
    file->written.store(size, std::memory_order_relaxed);
    if (!lane.ring.push(file.get())) return;  // kTrackedFiles waiting: by name once finished
    add(counters_.backlog_bytes, size);
    lane.reported = size;
    lane.writing = file.release();
}

void ManifestHasher::appended(uint32_t stream, uint64_t size) {
    Lane& lane = *lanes_[stream];
    if (lane.writing == nullptr || size <= lane.reported) return;
    add(counters_.backlog_bytes, size - lane.reported);
    lane.reported = size;
    lane.writing->written.store(size, std::memory_order_release);
}

bool ManifestHasher::mark_pending(const std::string& final_name) {
    const std::string marker = layout::manifest_pending_name(final_name);
    // Empty and not synced: it only has to survive the daemon, not the machine (after a
    // power loss recovery cannot tell anyway what the page cache still held).
    const int fd = ::openat(context_.dir_fd, marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                            0640);
    if (fd < 0) {
        spdlog::warn("manifest hasher: cannot create {}: {}; if the daemon stops before the manifest is written, "
                     "{} stays without one",
                     path_of(marker), errno_text(errno), final_name);
        return false;
    }
    ::close(fd);
    return true;
}

void ManifestHasher::unmark_pending(const std::string& final_name) {
    remove_name(context_.dir_fd, layout::manifest_pending_name(final_name));
}

void ManifestHasher::finished(uint32_t stream, Manifest manifest) {
    Lane& lane = *lanes_[stream];
    if (lane.writing == nullptr) {
        // Not followed (kTrackedFiles were waiting): hashed by name after those. The lock is
        // taken only in this case, and the hasher holds it for a swap only.
        finished_unfollowed(std::move(manifest));
        return;
    }
    add(counters_.backlog_files, 1);
    lane.writing->manifest = std::move(manifest);
    // Unless the hasher is reading it already: a finished file waiting its turn must not be
    // kept alive by a descriptor when retention deletes it.
    close_handoff(lane.writing->handoff);
    lane.writing->state.store(Tracked::finished, std::memory_order_release);
    lane.writing = nullptr;
    lane.reported = 0;
}

void ManifestHasher::finished_unfollowed(Manifest manifest) {
    add(counters_.backlog_files, 1);
    add(counters_.backlog_bytes, manifest.size);
    const std::lock_guard lock(untracked_mutex_);
    untracked_.push_back(std::move(manifest));
}

void ManifestHasher::abandoned(uint32_t stream) {
    Lane& lane = *lanes_[stream];
    if (lane.writing == nullptr) return;
    close_handoff(lane.writing->handoff);
    lane.writing->state.store(Tracked::abandoned, std::memory_order_release);
    lane.writing = nullptr;
    lane.reported = 0;
}

// --- this thread ------------------------------------------------------------------------

void ManifestHasher::run() {
    buffer_.resize(kChunkBytes);
    while (!stopping_.load(std::memory_order_acquire)) {
        if (!work_round()) {
            // Idle is not "no file followed": a lane may wait for its writer, which may be
            // finishing the file right now. The sweep skips every file a lane, by_name_,
            // untracked_ or unwritten_ has.
            if (rescan_.exchange(false, std::memory_order_acq_rel)) sweep("while the directory failed");
            retry_unwritten(std::chrono::steady_clock::now());
            std::this_thread::sleep_for(kIdlePoll);
        }
    }
    // The writer has finished or abandoned every file by now. Capture has stopped: what is
    // owed runs at normal priority, for the stop budget; the rest is left for the next start.
    // The budget is for reading: a file already read through is completed whatever the
    // time (a manifest write, one per lane at most), so a stop with no backlog leaves none.
    owe_at_normal_priority();
    read_deadline_ = std::chrono::steady_clock::now() + context_.stop_budget;
    while (work_round()) {
    }
    if (!unwritten_.empty()) {
        last_retry_ = {};
        retry_unwritten(std::chrono::steady_clock::now());
    }
    if (const size_t left = leave_drafts(); left > 0)
        spdlog::info("manifest hasher: {} finished file(s) left with their manifest pending at stop; the next start "
                     "completes them",
                     left);
}

// The files not hashed yet at stop. Each finished file whose manifest this run has (the
// writer's record, or one that could not be written) keeps it in its marker as a draft,
// all but the digest, for the next start's sweep. Written in place and not synced: the
// marker only has to survive the daemon, as its being there does; one cut short by a
// crash is not a JSON object, so not a draft, and that file's manifest is made from its
// bytes as after a kill.
size_t ManifestHasher::leave_drafts() {
    size_t left = 0;
    const auto keep = [&](const Manifest& manifest) {
        Manifest draft = manifest;
        draft.sha256.clear();
        const std::string text = to_json(draft);
        const std::string marker = layout::manifest_pending_name(manifest.file);
        UniqueFd fd(::openat(context_.dir_fd, marker.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW));
        if (!fd && errno == ENOENT) return;  // the file went with its marker (retention)
        ++left;
        if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            spdlog::warn("manifest hasher: cannot keep the manifest of {} in {} ({}); the next start makes it from "
                         "the file alone",
                         manifest.file, path_of(marker), errno_text(errno));
    };
    for (auto& lane : lanes_) {
        std::vector<Tracked*> files;
        if (lane->current != nullptr) files.push_back(std::exchange(lane->current, nullptr));
        while (Tracked* file = lane->ring.pop()) files.push_back(file);
        for (Tracked* file : files) {
            // A failed one keeps its empty marker: the next start tries it from its bytes.
            if (file->state.load(std::memory_order_acquire) == Tracked::finished && !file->failed) keep(file->manifest);
            drop(file, Gone::abandoned);
        }
    }
    {
        const std::lock_guard lock(untracked_mutex_);
        for (Manifest& m : untracked_) by_name_.push_back(ByName{std::move(m), false});
        untracked_.clear();
    }
    for (const ByName& item : by_name_) {
        if (item.from_file) ++left;  // a previous run's: its marker stays as it is
        else keep(item.manifest);
    }
    by_name_.clear();
    for (const Manifest& m : unwritten_) keep(m);
    unwritten_.clear();
    return left;
}

bool ManifestHasher::work_round() {
    bool did = false;
    for (auto& lane : lanes_) did |= advance(*lane);
    return did || hash_by_name();
}

bool ManifestHasher::advance(Lane& lane) {
    Tracked* file = lane.current;
    if (file == nullptr) {
        file = lane.ring.pop();
        if (file == nullptr) return false;
        lane.current = file;
    }
    // State first: once it says finished (acquire), `written` is the file's final size.
    const int state = file->state.load(std::memory_order_acquire);
    const uint64_t written = file->written.load(std::memory_order_acquire);
    const auto done = [&](Gone why) {
        drop(file, why);
        lane.current = nullptr;
        return true;
    };
    if (state == Tracked::abandoned) return done(Gone::abandoned);
    // Given up while the writer still had it: kept until the writer lets go of it.
    if (file->failed) return state == Tracked::open ? false : done(Gone::failed);
    if (!file->fd) {
        switch (open_to_read(*file, state)) {
            case Open::ready: break;
            case Open::wait: return false;  // no descriptor from the writer: read once finished
            case Open::gone: return done(Gone::deleted);
            case Open::failed: return done(Gone::failed);
        }
    }
    if (state == Tracked::finished) {
        // Retention took it while it was hashed: its manifest is not needed any more, and
        // this descriptor is all that keeps its space (a whole rotation's worth of page
        // cache or tmpfs) from being freed. Asked before every chunk: a hasher that lags
        // behind a busy writer is the one most likely to be reading a deleted file.
        struct stat st {};
        if (::fstat(file->fd.get(), &st) == 0 && st.st_nlink == 0) return done(Gone::deleted);
    }
    if (file->hashed < written) {
        if (std::chrono::steady_clock::now() >= read_deadline_) return false;  // left for the next start
        const size_t n = static_cast<size_t>(std::min<uint64_t>(written - file->hashed, buffer_.size()));
        if (const IoStatus status = read_exactly(file->fd.get(), file->hashed, {buffer_.data(), n}); !status.ok()) {
            spdlog::error("no manifest for {}: {}",
                          state == Tracked::open ? "a file being written" : path_of(file->manifest.file),
                          status.message());
            file->failed = true;
            return true;
        }
        file->hash.update({buffer_.data(), n});
        file->hashed += n;
        add(counters_.hashed_bytes, n);
        sub(counters_.backlog_bytes, n);
        return true;
    }
    if (state != Tracked::finished) return false;  // waiting for the writer
    if (file->hashed != file->manifest.size) {
        spdlog::error("no manifest for {}: {} bytes read back, {} in the file", path_of(file->manifest.file),
                      file->hashed, file->manifest.size);
        return done(Gone::failed);
    }
    const Sha256::Digest digest = file->hash.finish();
    if (!file->hash.ok()) {
        spdlog::error("SHA-256 of {} failed; no manifest", path_of(file->manifest.file));
        return done(Gone::failed);
    }
    Manifest manifest = std::move(file->manifest);
    manifest.sha256 = Sha256::hex(digest);
    delete file;
    lane.current = nullptr;
    complete(std::move(manifest));
    return true;
}

// The read side: the writer's descriptor while the file is open (if the writer has not
// closed it yet), else the finished file by its name — the same file only if it has the
// inode the writer created (gone otherwise: whatever has its name now is another file).
ManifestHasher::Open ManifestHasher::open_to_read(Tracked& file, int state) {
    if (const int fd = file.handoff.exchange(-1); fd >= 0) {
        file.fd.reset(fd);
        return Open::ready;
    }
    if (state != Tracked::finished) return Open::wait;
    UniqueFd fd(::openat(context_.dir_fd, file.manifest.file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        if (errno == ENOENT) return Open::gone;
        spdlog::error("no manifest for {}: {}", path_of(file.manifest.file), errno_text(errno));
        return Open::failed;
    }
    if (file.ino != 0 && (st.st_dev != file.dev || st.st_ino != file.ino)) return Open::gone;
    file.fd = std::move(fd);
    return Open::ready;
}

// A file given up: what it still counted in the backlog goes.
void ManifestHasher::drop(Tracked* file, Gone why) {
    const uint64_t written = file->written.load(std::memory_order_acquire);
    if (written > file->hashed) sub(counters_.backlog_bytes, written - file->hashed);
    if (why != Gone::abandoned) {  // it was finished: pending until now
        sub(counters_.backlog_files, 1);
        add(why == Gone::deleted ? counters_.deleted_files : counters_.failed_files, 1);
        // A failed file keeps its marker: the next start tries again.
        if (why == Gone::deleted) remove_name(context_.dir_fd, layout::manifest_pending_name(file->manifest.file));
    }
    delete file;
}

void ManifestHasher::sweep(const char* by) {
    const Result<StoreInventory> inventory =
        LocalDirectoryStore(context_.config.directory, context_.dir_fd).list({});
    if (!inventory) {
        spdlog::warn("manifest hasher: cannot list {}; files left pending by a previous run are not completed",
                     inventory.error().message);
        return;
    }
    // No file (a crash before its rename: recovery finished it under this name or
    // another, with a manifest), or only its compressed form, or a manifest already (a
    // crash after it was written): the marker is stale.
    for (const std::string& marker : inventory->orphan_pending_markers) remove_name(context_.dir_fd, marker);
    for (const StoredFile& f : inventory->files) {
        if (!f.manifest_pending) continue;
        if (std::any_of(unwritten_.begin(), unwritten_.end(), [&](const Manifest& m) { return m.file == f.name; }))
            continue;
        // Listed under its final name with its marker, so renamed before the listing: a
        // followed file was queued (opened) before that, and only this thread completes it.
        // So the check after the listing cannot miss it. Queued here too, it would get a
        // manifest from its bytes alone (no run, no sequence: a GAP in verify) written over
        // the writer's, or before it.
        if (followed(f.name)) continue;
        if (f.compressed || f.manifest) {
            remove_name(context_.dir_fd, layout::manifest_pending_name(f.name));
            continue;
        }
        // The draft the stop left, if it is this file's: all of its manifest but the digest.
        ManifestRead draft = read_manifest_draft(context_.dir_fd, f.name);
        if (draft.ok() && (draft.manifest.file != f.name || draft.manifest.size != f.stored_size)) {
            draft.state = ManifestRead::State::damaged;
            draft.problem = layout::manifest_pending_name(f.name) + ": the draft of another file (" +
                            draft.manifest.file + ", " + std::to_string(draft.manifest.size) + " bytes)";
        }
        if (!draft.ok() && draft.state != ManifestRead::State::missing)
            spdlog::warn("manifest hasher: {}; the manifest of {} is made from the file alone", draft.problem,
                         path_of(f.name));
        Manifest m;
        if (draft.ok()) m = std::move(draft.manifest);
        m.file = f.name;
        m.size = f.stored_size;
        add(counters_.backlog_files, 1);
        add(counters_.backlog_bytes, m.size);
        by_name_.push_back(ByName{std::move(m), !draft.ok()});
    }
    if (!by_name_.empty())
        spdlog::info("manifest hasher: {} file(s) left with their manifest pending {} in {}; hashing them",
                     by_name_.size(), by, context_.config.directory);
}

bool ManifestHasher::followed(const std::string& final_name) {
    const std::string in_progress = layout::in_progress_name(final_name);
    bool found = false;
    const auto check = [&](const Tracked* t) { found = found || (t != nullptr && t->in_progress_name == in_progress); };
    for (const auto& lane : lanes_) {
        check(lane->current);
        lane->ring.for_each_queued(check);
    }
    if (found) return true;
    const auto named = [&](const Manifest& m) { return m.file == final_name; };
    if (std::any_of(by_name_.begin(), by_name_.end(), [&](const ByName& b) { return named(b.manifest); }))
        return true;
    // A file finished while kTrackedFiles waited reaches untracked_ only after its rename:
    // one the listing saw in between is queued twice. Its manifest from the file comes
    // first then, and the writer's overwrites it (see hash_by_name).
    const std::lock_guard lock(untracked_mutex_);
    return std::any_of(untracked_.begin(), untracked_.end(), named);
}

bool ManifestHasher::hash_by_name() {
    if (std::chrono::steady_clock::now() >= read_deadline_) return false;  // stopping: left for the next start
    if (by_name_.empty()) {
        const std::lock_guard lock(untracked_mutex_);
        for (Manifest& m : untracked_) by_name_.push_back(ByName{std::move(m), false});
        untracked_.clear();
    }
    if (by_name_.empty()) return false;
    ByName item = std::move(by_name_.front());
    by_name_.pop_front();
    const std::string name = item.manifest.file;
    const uint64_t counted = item.manifest.size;
    const auto finish = [&](std::atomic<uint64_t>* outcome) {
        sub(counters_.backlog_bytes, counted);
        if (outcome != nullptr) {
            sub(counters_.backlog_files, 1);
            add(*outcome, 1);
        }
        return true;
    };
    UniqueFd fd(::openat(context_.dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT) {
            remove_name(context_.dir_fd, layout::manifest_pending_name(name));
            return finish(&counters_.deleted_files);
        }
        spdlog::error("no manifest for {}: {}", path_of(name), errno_text(errno));
        return finish(&counters_.failed_files);
    }
    Manifest manifest;
    if (item.from_file && name_exists(context_.dir_fd, layout::manifest_name(name))) {
        // Written meanwhile by this thread from the writer's record: that one has run,
        // sequence and drops, one from the bytes alone has not. Never replaced by it.
        // Its outcome was counted with that manifest.
        remove_name(context_.dir_fd, layout::manifest_pending_name(name));
        sub(counters_.backlog_files, 1);
        return finish(nullptr);
    }
    if (item.from_file) {
        Result<Manifest> m = manifest_from_file(fd.get(), name);
        if (!m) {
            spdlog::error("no manifest for {}: {}", path_of(name), m.error().message);
            return finish(&counters_.failed_files);
        }
        manifest = std::move(m.value());
    } else {
        Sha256 hash;
        for (uint64_t offset = 0; offset < item.manifest.size;) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(item.manifest.size - offset, buffer_.size()));
            if (const IoStatus status = read_exactly(fd.get(), offset, {buffer_.data(), n}); !status.ok()) {
                spdlog::error("no manifest for {}: {}", path_of(name), status.message());
                return finish(&counters_.failed_files);
            }
            hash.update({buffer_.data(), n});
            offset += n;
        }
        const Sha256::Digest digest = hash.finish();
        if (!hash.ok()) {
            spdlog::error("SHA-256 of {} failed; no manifest", path_of(name));
            return finish(&counters_.failed_files);
        }
        manifest = std::move(item.manifest);
        manifest.sha256 = Sha256::hex(digest);
    }
    add(counters_.hashed_bytes, manifest.size);
    finish(nullptr);
    complete(std::move(manifest));
    return true;
}

// The digest is in: the manifest is written, then the file checked (retention may have
// deleted it meanwhile: then the manifest goes too), then the marker removed.
void ManifestHasher::complete(Manifest manifest) {
    const IoStatus status = write_manifest(context_.dir_fd, manifest);
    if (!status.ok()) {
        if (unwritten_.empty())
            spdlog::warn("manifest for {}: {}; retrying every second", path_of(manifest.file), status.message());
        if (status.disk_full() && context_.retention != nullptr) context_.retention->request_room(context_.room_bytes);
        unwritten_.push_back(std::move(manifest));
        return;
    }
    written(manifest.file);
}

void ManifestHasher::written(const std::string& name) {
    sub(counters_.backlog_files, 1);
    if (!name_exists(context_.dir_fd, name)) {
        remove_name(context_.dir_fd, layout::manifest_name(name));
        remove_name(context_.dir_fd, layout::manifest_pending_name(name));
        add(counters_.deleted_files, 1);
        return;
    }
    remove_name(context_.dir_fd, layout::manifest_pending_name(name));
    add(counters_.written_files, 1);
    if (context_.retention != nullptr) context_.retention->sidecar_changed(name);
}

void ManifestHasher::retry_unwritten(std::chrono::steady_clock::time_point now) {
    if (unwritten_.empty() || now - last_retry_ < kRetryInterval) return;
    last_retry_ = now;
    std::vector<Manifest> still;
    for (Manifest& m : unwritten_) {
        if (!name_exists(context_.dir_fd, m.file)) {  // deleted meanwhile
            remove_name(context_.dir_fd, layout::manifest_pending_name(m.file));
            sub(counters_.backlog_files, 1);
            add(counters_.deleted_files, 1);
            continue;
        }
        if (write_manifest(context_.dir_fd, m).ok()) {
            spdlog::info("manifest for {} written", path_of(m.file));
            written(m.file);
        } else {
            still.push_back(std::move(m));
        }
    }
    unwritten_ = std::move(still);
}

}  // namespace linecap
