#include "output/stream_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstring>
#include <thread>

#include "linecap_build.h"
#include "archive/capture_scan.hpp"
#include "archive/layout.hpp"
#include "format/pcap_format.hpp"
#include "format/pcapng_blocks.hpp"
#include "archive/manifest_hasher.hpp"
#include "archive/retention.hpp"
#include "util/utc_time.hpp"

namespace linecap {
namespace {

using Clock = std::chrono::steady_clock;

// Counters have a single writer (this stream's thread): a relaxed store of load + n is
// enough and cheaper than a locked read-modify-write.
void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

uint64_t since(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

bool name_exists(int dir_fd, const std::string& name) {
    struct stat st {};
    // Any error other than "no such file" is left for the create to report properly.
    return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

bool LossEpisode::add(uint64_t packets) {
    lost_packets_ += packets;
    if (active_) return false;
    active_ = true;
    return true;
}

uint64_t LossEpisode::end() {
    if (!active_) return 0;
    const uint64_t lost = lost_packets_;
    active_ = false;
    lost_packets_ = 0;
    return lost;
}

StreamWriter::StreamWriter(const WriterContext& context, uint32_t index, const StreamSpec& spec, uint32_t snaplen,
                           StreamCounters& counters, uint64_t& next_seq, AlignedBuffer direct_io_staging)
    : context_(context),
      index_(index),
      id_(spec.id),
      device_(spec.device),
      capture_counts_(spec.capture_counts),
      flow_cap_(spec.flow_cap),
      dedup_(spec.dedup),
      clock_(spec.clock),
      clock_quality_(spec.clock_quality),
      label_("port " + spec.id.port + " queue " + std::to_string(spec.id.queue)),
      counters_(counters),
      snaplen_(snaplen),
      header_snaplen_(snaplen),
      direct_io_staging_(std::move(direct_io_staging)),
      next_seq_(next_seq) {
    file_header_ = encode_file_header(snaplen);
    span_.start_ns = context.run_start_ns;
    span_.capture_at_start = capture_counts();
}

StreamWriter::~StreamWriter() = default;

std::vector<uint8_t> StreamWriter::encode_file_header(uint32_t snaplen) const {
    if (context_.config.format == FileKind::pcapng) {
        pcapng::InterfaceInfo interface{id_.port + ":" + std::to_string(id_.queue), device_, snaplen};
        interface.comment = "linecap timestamps: " + clock_.source +
                            (clock_.port_clock.empty() ? "" : " (" + clock_.port_clock + ")") +
                            ", UTC; the host clock's quality over the file is in its statistics block";
        return pcapng::file_header(interface, std::string("linecap ") + LINECAP_VERSION);
    }
    const pcap::FileHeader header = pcap::file_header(snaplen);
    std::vector<uint8_t> bytes(sizeof header);
    std::memcpy(bytes.data(), &header, sizeof header);
    return bytes;
}

CaptureCounts StreamWriter::capture_counts() const { return capture_counts_ ? capture_counts_() : CaptureCounts{}; }

ManifestClock StreamWriter::file_clock() const {
    ManifestClock clock = clock_;
    if (clock_quality_ == nullptr) return clock;
    clock.sync = to_string(clock_span_.worst);
    clock.est_error_ns = clock_span_.est_error_ns;
    clock.max_error_ns = clock_span_.max_error_ns;
    clock.steps = clock_span_.steps;
    clock.status_source = clock_quality_->status_source();
    return clock;
}

void StreamWriter::process(const WriteBlock* block) {
    assert(block->used <= block->capacity && block->data != nullptr);
    follow_snaplen();
    if (block->packets > 0 && block->used > 0) write_records(*block);
    if (block->rotate_after && file_.is_open()) finalise_file();
}

// The acquire pairs with set_snaplen's release through the worker: the control thread
// sets the snap length before it publishes the new capture policy, the worker reads that
// policy before it pushes a block with longer records, and this thread pops the block
// before it gets here. So the raise is always seen before the first longer record.
void StreamWriter::follow_snaplen() {
    const uint32_t snaplen = snaplen_.load(std::memory_order_acquire);
    if (snaplen <= header_snaplen_) return;
    header_snaplen_ = snaplen;
    file_header_ = encode_file_header(snaplen);
    if (file_.is_open()) finalise_file();
}

bool StreamWriter::write_records(const WriteBlock& block) {
    const uint64_t rotate_size = context_.config.rotate_size_bytes;
    // Rotate on size only at a block boundary and only if the file already holds records,
    // so a file never exceeds the limit unless one block alone does.
    if (file_.is_open() && file_.packets() > 0 && rotate_size > 0 &&
        file_.size() + block.used > rotate_size)
        finalise_file();
    if (!file_.is_open() && !open_file(block)) return false;

    const auto start = Clock::now();
    const IoStatus fault = context_.fault != nullptr ? injected_fault() : IoStatus{};
    const IoStatus status = fault.ok() ? file_.append({block.data, block.used}, block.packets) : fault;
    const auto now = Clock::now();
    context_.latency->record(now - start);
    if (!status.ok()) {
        const std::string file_name = file_.in_progress_name();
        // A file that holds no record yet is named after (and its manifest would start at) the
        // block that did not fit: it goes, and the next block that fits opens the stream's
        // next file (same seq), whose span carries this block's drops. It goes before the
        // loss is counted: whoever sees the count sees the directory without it.
        if (file_.packets() == 0) {
            file_.discard();
            open_bytes_.store(0, std::memory_order_relaxed);
            next_seq_ = file_seq_;
            if (context_.hasher != nullptr) context_.hasher->abandoned(index_);
        }
        count_lost(block, status, file_name);
        return false;
    }

    if (clock_quality_ != nullptr) clock_span_.add(*clock_quality_);
    add(counters_.written_packets, block.packets);
    add(counters_.written_bytes, block.wire_bytes);
    add(counters_.file_bytes, block.used);
    file_wire_bytes_ += block.wire_bytes;
    file_counted_bytes_ += block.used;
    if (context_.volume != nullptr) {
        context_.volume->written_packets.fetch_add(block.packets, std::memory_order_relaxed);
        context_.volume->file_bytes.fetch_add(block.used, std::memory_order_relaxed);
    }
    full_since_ = {};
    open_bytes_.store(file_.size(), std::memory_order_relaxed);
    if (context_.hasher != nullptr) context_.hasher->appended(index_, file_.size());
    file_last_ns_ = block.last_ts_ns;
    if (const uint64_t lost = loss_.end(); lost > 0)
        spdlog::warn("{}: writing to {} resumed after {} packets lost", label_,
                     path_of(file_.in_progress_name()), lost);
    unsynced_ = true;
    sync_if_due(now);
    return true;
}

bool StreamWriter::open_file(const WriteBlock& block) {
    std::string name;
    IoStatus status = IoStatus::failure("create", EEXIST);
    // Beyond the last alternative something is badly wrong (a template without any time
    // field?) and the open fails with EEXIST rather than loop.
    for (unsigned n = 0; n < layout::kMaxAlternatives; ++n) {
        name = layout::capture_name(context_.file_template, block.first_ts_ns, id_, next_seq_, context_.config.format, n);
        // In-progress name first, then final name: a file another writer thread finalises
        // meanwhile moves from the first to the second and is seen in one of them. The
        // O_EXCL create settles the remaining race (two threads claiming the same name).
        if (name_exists(context_.dir_fd, layout::in_progress_name(name)) ||
            name_exists(context_.dir_fd, name))
            continue;
        // Preallocated up to the rotation size (files rarely end much before it), or step by
        // step without one.
        const uint64_t rotate = context_.config.rotate_size_bytes;
        status = file_.open(context_.dir_fd, name, file_header_, direct_io_staging_.span(),
                            rotate > 0 ? rotate : UINT64_MAX);
        if (status.ok() || status.error() != EEXIST) break;
    }
    if (!status.ok()) {
        count_lost(block, status, layout::in_progress_name(name));
        return false;
    }

    if (context_.hasher != nullptr) context_.hasher->opened(index_, file_.in_progress_name(), file_.size());
    file_seq_ = next_seq_++;
    if (clock_quality_ != nullptr) clock_span_.begin(*clock_quality_);
    file_first_ns_ = block.first_ts_ns;
    file_last_ns_ = block.first_ts_ns;
    add(counters_.file_bytes, file_.size());
    file_wire_bytes_ = 0;
    file_counted_bytes_ = file_.size();
    if (context_.volume != nullptr) context_.volume->file_bytes.fetch_add(file_.size(), std::memory_order_relaxed);
    open_bytes_.store(file_.size(), std::memory_order_relaxed);
    unsynced_ = true;
    last_sync_ = Clock::now();
    if (file_.direct_io_refused() && !context_.direct_io_warned->exchange(true))
        spdlog::warn("output directory {} does not support O_DIRECT; writing through the page cache",
                     context_.config.directory);
    return true;
}

StreamWriter::SpanCounts StreamWriter::span_counts(const CaptureCounts& capture) const {
    SpanCounts c;
    c.packets = file_.packets();
    c.drops.writer_full = since(capture.writer_full_packets, span_.capture_at_start.writer_full_packets);
    c.drops.write_error = span_.write_error;
    c.drops.disk_full = span_.disk_full;
    c.filtered = since(capture.filtered_packets, span_.capture_at_start.filtered_packets);
    // The capture policies' counts in the span: packets they kept out are, like filtered
    // ones, received and not accepted (pcapng), and not drops.
    c.flow_cap = flow_cap_;
    if (c.flow_cap) {
        c.flow_cap->cut = since(capture.flow_cap_cut_packets, span_.capture_at_start.flow_cap_cut_packets);
        c.flow_cap->dropped = since(capture.flow_cap_dropped_packets, span_.capture_at_start.flow_cap_dropped_packets);
    }
    c.dedup = dedup_;
    if (c.dedup) c.dedup->suppressed = since(capture.dedup_packets, span_.capture_at_start.dedup_packets);
    c.not_accepted = c.filtered + (c.flow_cap ? c.flow_cap->dropped : 0) + (c.dedup ? c.dedup->suppressed : 0);
    c.received = c.packets + c.drops.total() + c.not_accepted;
    return c;
}

void StreamWriter::append_statistics(const SpanCounts& c, const ManifestClock& clock, uint64_t now_ns) {
    const ManifestDrops& drops = c.drops;
    pcapng::IsbCounts isb;
    isb.timestamp_ns = now_ns;
    isb.start_ns = file_first_ns_;
    isb.end_ns = file_last_ns_;
    isb.ifrecv = c.received;
    isb.ifdrop = drops.total();
    isb.filteraccept = c.received - c.not_accepted;
    isb.comment = "linecap drops in this file's span: writer_full=" + std::to_string(drops.writer_full) +
                  " write_error=" + std::to_string(drops.write_error) + " disk_full=" + std::to_string(drops.disk_full) +
                  "; NIC drops (imissed, ierrors, rx_nombuf) are per port and not included";
    if (const auto& flow_cap = c.flow_cap) {
        isb.comment += "; flow cap on (" +
                       (flow_cap->bytes ? std::to_string(flow_cap->bytes) + " bytes"
                                        : std::to_string(flow_cap->packets) + " packets") +
                       " per flow, then " +
                       (flow_cap->snaplen_after ? std::to_string(flow_cap->snaplen_after) + " bytes per packet"
                                                : std::string("not written")) +
                       (flow_cap->filter.empty() ? "" : ", filter '" + flow_cap->filter + "'") +
                       "): cut=" + std::to_string(flow_cap->cut) + " not written=" + std::to_string(flow_cap->dropped);
    }
    if (c.dedup) {
        isb.comment += "; duplicate suppression on (window " + std::to_string(c.dedup->window_us) +
                       " us): not written=" + std::to_string(c.dedup->suppressed);
    }
    isb.comment += "; clock: timestamps " + clock.source + (clock.port_clock.empty() ? "" : " (" + clock.port_clock + ")") +
                   ", host clock " + clock.sync + " est_error_ns=" + std::to_string(clock.est_error_ns) +
                   " max_error_ns=" + std::to_string(clock.max_error_ns) + " steps=" + std::to_string(clock.steps) +
                   (clock.status_source.empty() ? "" : " (status from " + clock.status_source + ")");
    const std::vector<uint8_t> block = pcapng::statistics_block(isb);
    if (const IoStatus status = file_.append(block, 0); !status.ok()) {
        spdlog::warn("{}: {} without its statistics block: {} (the file is complete otherwise)", label_,
                     path_of(file_.in_progress_name()), status.message());
        ask_room_if_full(status);
    } else if (context_.hasher != nullptr) {
        context_.hasher->appended(index_, file_.size());
    }
}

Manifest StreamWriter::manifest_for(const SpanCounts& c, const ManifestClock& clock, uint64_t size,
                                    uint64_t span_start_ns, uint64_t span_end_ns) const {
    Manifest m;
    m.file = file_.final_name();
    m.format = to_string(context_.config.format);
    m.size = size;
    m.packets = c.packets;
    m.first_ns = file_first_ns_;
    m.last_ns = file_last_ns_;
    m.drops = c.drops;
    m.received = c.received;
    m.filtered = c.filtered;
    m.flow_cap = c.flow_cap;
    m.dedup = c.dedup;
    m.clock = clock;
    m.span_start_ns = span_start_ns;
    m.span_end_ns = span_end_ns;
    m.stream = ManifestStream{id_.port, id_.port_id, id_.queue};
    m.run = context_.run_id;
    m.seq = file_seq_;
    m.linecap_version = LINECAP_VERSION;
    return m;
}

void StreamWriter::finalise_file() {
    const uint64_t now_ns = utc_now_ns();
    const CaptureCounts capture = capture_counts();
    const SpanCounts counts = span_counts(capture);
    if (clock_quality_ != nullptr) clock_span_.add(*clock_quality_);
    const ManifestClock clock = file_clock();
    if (context_.config.format == FileKind::pcapng) append_statistics(counts, clock, now_ns);

    // The marker first: a finished file has its manifest or its marker at every moment.
    const bool marked = context_.hasher != nullptr && context_.hasher->mark_pending(file_.final_name());
    // finalise() closes the file and forgets it; a file it cannot finish is kept in mind.
    LeftFile left{file_.final_name(), file_.in_progress_name(), file_header_, file_.size(), file_counted_bytes_,
                  file_.packets(), file_wire_bytes_, {}};
    const FinaliseResult result = file_.finalise(durable());
    unsynced_ = false;
    open_bytes_.store(0, std::memory_order_relaxed);
    const uint64_t span_start = span_.start_ns;
    // The next span starts now, whatever became of this file: an unrenamed one is left for
    // startup recovery, which marks it as recovered (its counts are not known then).
    span_ = Span{now_ns, capture, 0, 0};

    if (!result.status.ok()) volume_error(result.status);
    if (!result.status.ok())
        spdlog::error("{}: finalising {}: {}{}", label_, path_of(file_.in_progress_name()),
                      result.status.message(),
                      result.renamed ? "" : "; left under its in-progress name for recovery");
    if (!result.renamed) {
        if (context_.hasher != nullptr) {
            context_.hasher->abandoned(index_);
            if (marked) context_.hasher->unmark_pending(left.final_name);
        }
        // Finished when the volume is back (finish_left_files), or by startup recovery.
        left.manifest = manifest_for(counts, clock, left.size, span_start, now_ns);
        left.manifest.file = left.final_name;
        left_.push_back(std::move(left));
        return;
    }
    // fetch_add: a file left open on a volume the stream moved away from is finished by
    // that volume's thread, maybe while the stream's new one finishes another.
    spdlog::info("finalised {} ({} packets, {} bytes)", path_of(file_.final_name()), counts.packets, result.size);
    hand_over({file_.final_name(), result.size, file_first_ns_, file_last_ns_},
              manifest_for(counts, clock, result.size, span_start, now_ns), Followed::by_lane);
}

void StreamWriter::hand_over(const FinishedFile& finished, Manifest manifest, Followed followed) {
    counters_.files_finalised.fetch_add(1, std::memory_order_relaxed);
    // The hasher adds the digest once it has read back and hashed the file's last bytes,
    // and writes the manifest (the marker says "pending" until then).
    if (context_.hasher != nullptr) {
        if (followed == Followed::by_lane) context_.hasher->finished(index_, std::move(manifest));
        else context_.hasher->finished_unfollowed(std::move(manifest));
    }
    // Retention has the file from now on, pending manifest or not: its budgets stay exact.
    if (context_.retention != nullptr) context_.retention->add(finished);
    if (context_.file_finished) context_.file_finished(finished.name);
}

// A full disk: retention (when it has a budget) deletes the oldest files to make room.
void StreamWriter::ask_room_if_full(const IoStatus& status) {
    if (status.disk_full() && context_.retention != nullptr) context_.retention->request_room(context_.room_bytes);
}

void StreamWriter::count_lost(const WriteBlock& block, const IoStatus& status,
                              const std::string& file_name) {
    add(status.disk_full() ? counters_.disk_full_packets : counters_.write_error_packets,
        block.packets);
    (status.disk_full() ? span_.disk_full : span_.write_error) += block.packets;
    if (context_.volume != nullptr)
        (status.disk_full() ? context_.volume->disk_full_packets : context_.volume->write_error_packets)
            .fetch_add(block.packets, std::memory_order_relaxed);
    volume_error(status);
    ask_room_if_full(status);
    if (loss_.add(block.packets))
        spdlog::warn("{}: {} {} failed: {}; counting packets as lost ({}) until a write succeeds",
                     label_, status.operation(), path_of(file_name), errno_text(status.error()),
                     status.disk_full() ? "disk_full" : "write_error");
}

void StreamWriter::tick(Clock::time_point now) { sync_if_due(now); }

// FsyncPolicy::interval bounds what a crash can take from an open file; finalise() syncs
// as well, because a renamed file must be complete on disk too.
void StreamWriter::sync_if_due(Clock::time_point now) {
    if (context_.config.fsync != FsyncPolicy::interval || !unsynced_ || !file_.is_open()) return;
    if (now - last_sync_ < std::chrono::seconds(context_.config.fsync_interval_s)) return;
    last_sync_ = now;
    unsynced_ = false;
    if (const IoStatus status = file_.sync(); !status.ok()) {
        volume_error(status);
        spdlog::error("{}: {} {}: {}", label_, status.operation(), path_of(file_.in_progress_name()),
                      errno_text(status.error()));
    }
}

void StreamWriter::volume_error(const IoStatus& status) {
    if (context_.volume != nullptr) context_.volume->count_error(status.error());
    if (!status.disk_full()) {
        failure_ = status.error() != 0 ? status.error() : EIO;
        return;
    }
    // A full disk is retention's to clear; one it has not cleared in the stall bound is
    // the volume's failure.
    const auto now = Clock::now();
    if (full_since_ == Clock::time_point{}) full_since_ = now;
    if (now - full_since_ >= std::chrono::milliseconds(context_.config.volume_stall_timeout_ms)) {
        failure_ = status.error();
        full_since_ = {};
    }
}

IoStatus StreamWriter::injected_fault() const {
    if (const uint32_t ms = context_.fault->stall_ms.load(std::memory_order_relaxed); ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (const int error = context_.fault->error.load(std::memory_order_relaxed); error != 0)
        return IoStatus::failure("write", error);
    return {};
}

bool StreamWriter::near_rotation(uint64_t bytes) const {
    const uint64_t rotate_size = context_.config.rotate_size_bytes;
    return !file_.is_open() || (rotate_size > 0 && file_.packets() > 0 && file_.size() + bytes > rotate_size);
}

void StreamWriter::take_over() {
    span_ = Span{utc_now_ns(), capture_counts(), 0, 0};
    failure_ = 0;
    full_since_ = {};
}

void StreamWriter::finish_left_files() {
    size_t done = 0;
    while (done < left_.size() && finish_left(left_[done])) ++done;
    left_.erase(left_.begin(), left_.begin() + static_cast<std::ptrdiff_t>(done));
}

bool StreamWriter::finish_left(LeftFile& left) {
    const int dir = context_.dir_fd;
    const auto failed = [&](const char* operation, int error) {
        const IoStatus status = IoStatus::failure(operation, error);
        volume_error(status);
        spdlog::error("{}: finishing {} now that its volume is back: {}", label_, path_of(left.in_progress_name),
                      status.message());
        return false;
    };
    // What the file system kept: the file under its in-progress name, shorter than written
    // if it had not committed the rest; or under its final name (a rename reported failed
    // that was done); or nothing (its creation was not committed): then it is made again,
    // header only, so that its sequence number and its drops stay on record.
    bool renamed = false;
    UniqueFd fd(::openat(dir, left.in_progress_name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd && errno == ENOENT) {
        fd.reset(::openat(dir, left.final_name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        renamed = fd.valid();
        if (!fd && errno == ENOENT)
            fd.reset(::openat(dir, left.in_progress_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640));
    }
    if (!fd) return failed("open", errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed("fstat", errno);
    // Beyond what the writer put there: a failed append's remains (counted lost then).
    if (static_cast<uint64_t>(st.st_size) > left.size && ::ftruncate(fd.get(), static_cast<off_t>(left.size)) != 0)
        return failed("ftruncate", errno);
    CaptureScan scan = scan_capture(fd.get());
    if (!scan.io.ok()) return failed("read back", scan.io.error() != 0 ? scan.io.error() : EIO);
    uint64_t keep = scan.valid_bytes;
    if (!scan.header_valid) {
        if (::pwrite(fd.get(), left.header.data(), left.header.size(), 0) != static_cast<ssize_t>(left.header.size()))
            return failed("write header", errno != 0 ? errno : EIO);
        keep = left.header.size();
        scan.packets = 0;
        scan.wire_bytes = 0;
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(keep)) != 0) return failed("ftruncate", errno);
    if (durable() && ::fsync(fd.get()) != 0) return failed("fsync", errno);
    fd.reset();

    const bool marked = context_.hasher != nullptr && context_.hasher->mark_pending(left.final_name);
    if (!renamed && ::renameat(dir, left.in_progress_name.c_str(), dir, left.final_name.c_str()) != 0) {
        const int error = errno;
        if (marked) context_.hasher->unmark_pending(left.final_name);
        return failed("rename", error);
    }
    if (durable() && ::fsync(dir) != 0) return failed("fsync directory", errno);

    const uint64_t lost = since(left.packets, scan.packets);
    const uint64_t lost_wire = since(left.wire_bytes, scan.wire_bytes);
    const uint64_t lost_file = since(left.counted_file_bytes, keep);
    if (context_.volume != nullptr) {
        context_.volume->lost_after_write_packets.fetch_add(lost, std::memory_order_relaxed);
        context_.volume->lost_after_write_bytes.fetch_add(lost_wire, std::memory_order_relaxed);
        context_.volume->lost_after_write_file_bytes.fetch_add(lost_file, std::memory_order_relaxed);
    }
    Manifest m = std::move(left.manifest);
    m.size = keep;
    m.packets = scan.packets;
    if (scan.packets > 0) {
        m.first_ns = scan.first_ns;
        m.last_ns = scan.last_ns;
    }
    if (m.drops) m.drops->write_error += lost;
    if (lost > 0)
        spdlog::warn("{}: {} held {} of the {} packets written to it when its volume failed: {} lost after they "
                     "were written (the file system had not committed them)",
                     label_, path_of(left.final_name), scan.packets, left.packets, lost);
    spdlog::info("finalised {} ({} packets, {} bytes) now that its volume is back", path_of(left.final_name),
                 scan.packets, keep);
    const FinishedFile finished{left.final_name, keep, m.first_ns, m.last_ns};
    hand_over(finished, std::move(m), Followed::not_by_lane);
    return true;
}

void StreamWriter::finish() {
    if (file_.is_open()) finalise_file();
}

std::string StreamWriter::path_of(const std::string& name) const {
    return context_.config.directory + "/" + name;
}

}  // namespace linecap
