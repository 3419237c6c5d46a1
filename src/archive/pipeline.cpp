#include "archive/pipeline.hpp"

#include <spdlog/spdlog.h>

namespace linecap {

ArchivePipeline::ArchivePipeline(const OutputConfig& config, NameHook sidecar_changed)
    : config_(config), sidecar_changed_(std::move(sidecar_changed)) {
    if (config.archive.enabled())
        archiver_ = std::make_unique<ArchiveService>(
            ArchiveServiceOptions{.directory = config.directory,
                                  .file_template = config.file_template,
                                  .rotate_interval_s = config.rotate_interval_s,
                                  .archive = config.archive,
                                  .require_index = config.index,
                                  .require_compressed = config.compress.enabled,
                                  .hold_file = config.retention.hold_file},
            [this](const std::string& name) {
                sidecar_changed_(name);
                done(Stage::archived, name);
            },
            archiving_);
    if (config.compress.enabled)
        compressor_ = std::make_unique<CompressService>(
            CompressServiceOptions{.directory = config.directory,
                                   .after_ns = config.compress.after_s * 1'000'000'000ull,
                                   .level = config.compress.level,
                                   .require_index = config.index},
            [this](const std::string& name) {
                sidecar_changed_(name);
                done(Stage::compressed, name);
            },
            compressing_);
    if (config.index)  // pcap and pcapng alike
        indexer_ = std::make_unique<IndexService>(
            IndexServiceOptions{.directory = config.directory, .file_template = config.file_template},
            [this](const std::string& name, uint64_t) {
                sidecar_changed_(name);
                done(Stage::indexed, name);
            },
            indexing_);
    // Independent of the writer: it reads finished files and their manifests only.
    if (config.scrub.enabled)
        scrubber_ = std::make_unique<ScrubService>(
            ScrubOptions{.directory = config.directory, .period_ns = config.scrub.period_s * 1'000'000'000ull},
            [this](const std::string& name) { sidecar_changed_(name); }, scrub_counters_);
}

ArchivePipeline::~ArchivePipeline() { stop(); }

void ArchivePipeline::done(Stage stage, const std::string& name) {
    switch (stage) {
        case Stage::finished:
            if (indexer_) return indexer_->file_finished(name);
            [[fallthrough]];
        case Stage::indexed:
            // Its frames follow the index's blocks; without an index, a finished file may be
            // compressed once of age. It looks at the directory, not at `name` alone.
            if (compressor_) return compressor_->wake();
            [[fallthrough]];
        case Stage::compressed:
            // It looks at the directory: the file's age, its index and compressed form.
            if (archiver_) return archiver_->wake();
            [[fallthrough]];
        case Stage::archived:
            return;
    }
}

ArchivePipeline::NameHook ArchivePipeline::finished_hook() {
    if (!indexer_ && !compressor_ && !archiver_) return {};
    return [this](const std::string& name) { done(Stage::finished, name); };
}

void ArchivePipeline::start() {
    if (indexer_) indexer_->start();
    if (compressor_) compressor_->start();
    if (archiver_) archiver_->start();
    if (scrubber_) {
        if (!config_.manifest)
            spdlog::info("output.scrub: output.manifest is off; only files that have a manifest can be checked");
        scrubber_->start();
    }
}

void ArchivePipeline::stop_scrub() {
    if (scrubber_) scrubber_->stop();
}

void ArchivePipeline::stop() {
    stop_scrub();
    if (indexer_) indexer_->stop();  // after the writer: the files it finished while stopping
    if (compressor_) compressor_->stop();
    if (archiver_) archiver_->stop();  // an upload in hand is abandoned: redone at the next start
}

}  // namespace linecap
