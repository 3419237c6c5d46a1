// What becomes of a capture file once the writer has finished it: the one chain of stages,
// declared here, each stage a background service of its own at idle priority.
//
//   finished ──▶ indexed ──▶ compressed ──▶ archived
//   (writer)     output.index  output.compress  output.archive
//
// A file done with one stage goes to the next configured one (done()); a stage that is
// off is skipped. The manifest is not a stage of this chain: the writer's hasher
// (archive/manifest_hasher.hpp, output.manifest) follows the file while it is written
// and writes its manifest after the rename; compression waits for it (and, with
// output.index, for the index). Beside the chain, the scrub (output.scrub) re-reads
// finished files against their manifests, a pass at a time.
//
// Every stage that writes beside a file (an index, the compressed form, a damage marker)
// reports it through `sidecar_changed`, so that retention re-reads the file's size.
//
// A new stage: one service here, one case in done(), its counters beside the others.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "archive/archive_service.hpp"
#include "archive/compress.hpp"
#include "archive/index_service.hpp"
#include "archive/scrub.hpp"
#include "config/config.hpp"

namespace linecap {

class ArchivePipeline {
public:
    using NameHook = std::function<void(const std::string& name)>;

    // The stages `config` turns on, not started yet. `sidecar_changed` is called on the
    // stages' threads.
    ArchivePipeline(const OutputConfig& config, NameHook sidecar_changed);
    ~ArchivePipeline();  // stop()
    ArchivePipeline(const ArchivePipeline&) = delete;
    ArchivePipeline& operator=(const ArchivePipeline&) = delete;

    // The writer's file-finished hook (any thread, never blocks); empty when no stage
    // takes finished files. The pipeline must outlive the writer that calls it.
    NameHook finished_hook();

    // After recovery (the capture engine's start), which undoes what a kill left.
    void start();
    // Before capture stops: the scrub (its place in the pass is kept in the directory).
    void stop_scrub();
    // After capture has stopped (the writer has handed over its last files): the indexer
    // works off this run's files (for a while), the compressor abandons the file in hand;
    // the rest waits for the next start.
    void stop();

    // Null when the stage is off.
    const IndexingCounters* indexing() const { return indexer_ ? &indexing_ : nullptr; }
    const CompressCounters* compressing() const { return compressor_ ? &compressing_ : nullptr; }
    const ScrubCounters* scrub() const { return scrubber_ ? &scrub_counters_ : nullptr; }
    const ArchiveCounters* archiving() const { return archiver_ ? &archiving_ : nullptr; }

private:
    enum class Stage { finished, indexed, compressed, archived };
    // `name` is done with `stage`: the next stage that is on takes it.
    void done(Stage stage, const std::string& name);

    const OutputConfig config_;
    const NameHook sidecar_changed_;
    IndexingCounters indexing_;
    CompressCounters compressing_;
    ScrubCounters scrub_counters_;
    ArchiveCounters archiving_;
    // Destroyed in reverse: the scrub first, then the indexer (its hook wakes the
    // compressor), then the compressor (its hook wakes the archiver), then the archiver.
    std::unique_ptr<ArchiveService> archiver_;
    std::unique_ptr<CompressService> compressor_;
    std::unique_ptr<IndexService> indexer_;
    std::unique_ptr<ScrubService> scrubber_;
};

}  // namespace linecap
