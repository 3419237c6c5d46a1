// linecapd: wiring only. config → preflight → EAL/ports/workers/writer (CaptureEngine)
// → metrics → control loop; errors become exit codes here and nowhere else.
#include <rte_version.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "capture/engine.hpp"
#include "capture/plan.hpp"
#include "config/config.hpp"
#include "control/clock_monitor.hpp"
#include "control/control_loop.hpp"
#include "control/cpu_shield.hpp"
#include "control/preflight.hpp"
#include "control/sd_notify.hpp"
#include "control/signals.hpp"
#include "feed/feed.hpp"
#include "metrics/collector.hpp"
#include "metrics/ethdev_port_stats.hpp"
#include "metrics/exporter.hpp"
#include "archive/pipeline.hpp"
#include "archive/verify.hpp"
#include "util/command_line.hpp"
#include "linecap_build.h"

namespace {

using linecap::kExitConfig;
using linecap::kExitFailure;
using linecap::kExitOk;
using linecap::kExitUsage;

struct Options {
    std::string config_path;
    bool check = false;
    bool print_plan = false;
    bool print_cpus = false;
};

void print_usage(FILE* out) {
    std::fprintf(out,
                 "Usage: linecapd --config FILE [--check | --print-plan | --print-cpus]\n"
                 "       linecapd verify [OPTIONS] DIR   (manifests; linecapd verify --help)\n"
                 "       linecapd --version | --help\n"
                 "\n"
                 "Captures every packet from DPDK ports into rotated pcap files and exports exact\n"
                 "drop accounting to Prometheus.\n"
                 "\n"
                 "  -c, --config FILE  YAML configuration (see %s/linecap/linecap.yaml)\n"
                 "      --check        validate the configuration and this machine (lcores, PCI\n"
                 "                     binding, output directory, filters), print every finding,\n"
                 "                     exit 0 when ready, 78 otherwise\n"
                 "      --print-plan   print the capture plan (ports, lcore map, mbuf pools and write\n"
                 "                     blocks per NUMA socket, hugepages needed) as planned before\n"
                 "                     the devices are probed, and exit; linecap-hugepages reads it\n"
                 "      --print-cpus   print worker_cpus=LIST and other_cpus=LIST (the CPUs of the\n"
                 "                     worker lcores; every other online CPU), one per line, for\n"
                 "                     linecap-shield; exit 0, or 78 for a bad configuration\n"
                 "  -V, --version      print version and the DPDK version\n"
                 "  -h, --help         this text\n"
                 "\n"
                 "Signals: SIGINT/SIGTERM stop (every file finalised, summary logged, exit 0);\n"
                 "SIGHUP reloads filters and snap lengths, finalises the current files and probes failed volumes.\n"
                 "Exit codes: 0 ok, 1 runtime failure, 64 usage, 78 configuration or machine not ready.\n",
                 LINECAP_SYSCONFDIR);
}

// Returns an exit code to stop with, or -1 to go on.
int parse_options(int argc, char** argv, Options& options) {
    static constexpr linecap::OptionSpec kOptions[] = {
        {"-c", true}, {"--config", true, "-c"}, {"--check"},      {"--print-plan"},
        {"--print-cpus"}, {"-V"},              {"--version", false, "-V"}, {"-h"},
        {"--help", false, "-h"},
    };
    const linecap::CommandLine args = linecap::parse_command_line(argc, argv, 1, kOptions, true);
    for (const auto& [name, value] : args.options) {  // in order: --help and --version act where they stand
        if (name == "-c") options.config_path = value;
        if (name == "--check") options.check = true;
        if (name == "--print-plan") options.print_plan = true;
        if (name == "--print-cpus") options.print_cpus = true;
        if (name == "-V") {
            std::printf("linecapd %s (%s)\n", LINECAP_VERSION, rte_version());
            return kExitOk;
        }
        if (name == "-h") {
            print_usage(stdout);
            return kExitOk;
        }
    }
    if (!args.ok()) {
        std::fprintf(stderr, "linecapd: %s\n", args.error().c_str());
        print_usage(stderr);
        return kExitUsage;
    }
    if (!args.operands.empty()) {
        std::fprintf(stderr, "linecapd: unexpected argument '%s'\n", args.operands.front().c_str());
        return kExitUsage;
    }
    if (options.config_path.empty()) {
        std::fprintf(stderr, "linecapd: --config FILE is required\n");
        print_usage(stderr);
        return kExitUsage;
    }
    return -1;
}

// The capture engine, the archive pipeline over the files it finishes
// (archive/pipeline.hpp: the indexer, the compressor, the scrub) and the live feed over
// the blocks it writes (feed/feed.hpp, feed.enabled). The pipeline's stages tell the
// engine about the files they write (retention counts them). Main owns the pipeline and
// the feed, not the engine: the engine is the capture data path, and what runs beside it
// is wiring (doc/architecture.md). Stopped and destroyed in the one safe order on every
// path: the scrub stops, the engine stops (its writer hands the last files to the
// pipeline and the last blocks to the feed), the feed sends what it holds and stops, the
// pipeline stops; then the pipeline goes (its hooks call the engine), then the engine,
// then the feed (the writer's hook calls it).
class Capture {
public:
    static linecap::Result<std::unique_ptr<Capture>> start(const linecap::Config& config,
                                                           const linecap::ClockQualityBoard& clock_quality) {
        std::unique_ptr<Capture> capture(new Capture);
        Capture* self = capture.get();
        linecap::Writer::BlockWrittenHook block_written;
        if (config.feed.enabled) {
            auto feed = linecap::Feed::create(config);
            if (!feed) return feed.error();
            capture->feed_ = std::move(feed.value());
            linecap::Feed* f = capture->feed_.get();
            block_written = [f](const linecap::Stream& stream, const linecap::WriteBlock& block) {
                f->offer(stream, block);
            };
        }
        // One pipeline per capture volume: a finished file is indexed, compressed, archived
        // and scrubbed in the volume it lives in. The hooks run on the stages' threads,
        // which start once the engine exists; files finished before that wait in the
        // indexer's queue.
        std::vector<linecap::ArchivePipeline::NameHook> finished;
        const std::vector<linecap::VolumeConfig> volumes = config.output.volume_list();
        for (size_t v = 0; v < volumes.size(); ++v) {
            linecap::OutputConfig output = config.output;
            output.directory = volumes[v].directory;
            output.retention = volumes[v].retention;
            capture->pipelines_.push_back(std::make_unique<linecap::ArchivePipeline>(
                output, [self, v](const std::string& name) { self->engine_->sidecar_changed(v, name); }));
            finished.push_back(capture->pipelines_.back()->finished_hook());
        }
        linecap::CaptureEngine::FileFinishedHook file_finished;
        if (std::any_of(finished.begin(), finished.end(), [](const auto& hook) { return bool(hook); }))
            file_finished = [finished](size_t volume, const std::string& name) {
                if (finished[volume]) finished[volume](name);
            };
        auto engine = linecap::CaptureEngine::start(config, std::move(file_finished), &clock_quality,
                                                    std::move(block_written));
        if (!engine) return engine.error();
        capture->engine_ = std::move(engine.value());
        for (auto& pipeline : capture->pipelines_) pipeline->start();
        if (capture->feed_) {
            if (linecap::Status s = capture->feed_->start(); !s) return s.error();
        }
        return capture;
    }
    ~Capture() {
        stop();
        pipelines_.clear();
        engine_.reset();
        feed_.reset();
    }

    linecap::CaptureEngine& engine() { return *engine_; }
    const linecap::CaptureEngine& engine() const { return *engine_; }
    // Volume `volume`'s (0: the one volume of output.directory).
    const linecap::ArchivePipeline& pipeline(size_t volume = 0) const { return *pipelines_.at(volume); }
    const linecap::Feed* feed() const { return feed_.get(); }

    void stop() {
        for (auto& pipeline : pipelines_) pipeline->stop_scrub();
        if (engine_) engine_->stop();
        if (feed_) feed_->stop();
        for (auto& pipeline : pipelines_) pipeline->stop();
    }

private:
    Capture() = default;

    std::unique_ptr<linecap::Feed> feed_;                 // before engine_: the writer's hook calls it
    std::unique_ptr<linecap::CaptureEngine> engine_;
    std::vector<std::unique_ptr<linecap::ArchivePipeline>> pipelines_;  // after engine_: their hooks call it
};

// The collector over the engine's views, the indexer's, the compressor's and the scrub's
// counters, ethdev port stats and statvfs of the output directory. The capture must
// outlive every collect() call.
std::unique_ptr<linecap::MetricsCollector> make_collector(const Capture& capture) {
    const linecap::CaptureEngine& engine = capture.engine();
    const linecap::Writer& writer = engine.writer();
    linecap::CaptureViews views{
        .streams = engine.streams(),
        .ports = engine.ports(),
        .workers = engine.workers(),
        .write_latency = &writer.latency(),
        .backlog_blocks = [&writer] { return writer.backlog_blocks(); },
        .all_workers_polling = [&engine] { return engine.all_workers_polling(); },
        .output_directory = engine.config().output.directory,
        .retention = &writer.retention(),
        .manifest = writer.manifest(),
        .indexing = capture.pipeline().indexing(),
        .compressing = capture.pipeline().compressing(),
        .scrub = capture.pipeline().scrub(),
        .archiving = capture.pipeline().archiving(),
        .clock_quality = engine.clock_quality(),
        .feed = {},
    };
    for (size_t v = 0; v < writer.volume_count(); ++v) {
        const linecap::ArchivePipeline& pipeline = capture.pipeline(v);
        views.volumes.push_back(linecap::VolumeView{writer.volume_directory(v), &writer.volume_counters(v),
                                                    &writer.volume_retention(v), writer.volume_manifest(v),
                                                    pipeline.indexing(), pipeline.compressing(), pipeline.scrub(),
                                                    pipeline.archiving()});
    }
    if (const linecap::Feed* feed = capture.feed()) views.feed = [feed] { return feed->counts(); };
    return std::make_unique<linecap::MetricsCollector>(std::move(views), std::make_unique<linecap::EthdevPortStats>(engine.ports()));
}

// Prints every finding; true when none is an error.
bool report_preflight(const std::vector<linecap::PreflightFinding>& findings) {
    bool ok = true;
    for (const auto& f : findings) {
        if (f.level == linecap::PreflightFinding::Level::error) {
            ok = false;
            spdlog::error("{}", f.message);
        } else {
            spdlog::warn("{}", f.message);
        }
    }
    return ok;
}

int run(const Options& options) {
    auto config = linecap::load_config(options.config_path);
    if (!config) {
        spdlog::error("{}", config.error().message);
        return kExitConfig;
    }
    spdlog::set_level(spdlog::level::from_str(config->log.level));

    linecap::PreflightOptions preflight_options;
    preflight_options.probe_disk_speed = options.check;
    linecap::apply_test_overrides(preflight_options);  // LINECAP_SYSFS / LINECAP_PROC: tests only
    if (options.print_plan) {
        auto plan = linecap::plan_capture(config.value(), linecap::assumed_port_infos(config.value(), preflight_options));
        if (!plan) {
            spdlog::error("{}", plan.error().message);
            return kExitConfig;
        }
        std::fputs(linecap::describe_plan(config.value(), plan.value()).c_str(), stdout);
        return kExitOk;
    }
    if (options.print_cpus) {
        const auto plan = linecap::cpu_shield_plan(config.value(), linecap::online_cpus(preflight_options));
        std::printf("worker_cpus=%s\nother_cpus=%s\n", linecap::format_cpu_list(plan.worker_cpus).c_str(),
                    linecap::format_cpu_list(plan.other_cpus).c_str());
        return kExitOk;
    }
    const bool ready = report_preflight(linecap::preflight(config.value(), preflight_options));
    if (options.check) {
        if (ready) spdlog::info("{}: configuration and machine ready", options.config_path);
        return ready ? kExitOk : kExitConfig;
    }
    if (!ready) return kExitConfig;

    // Before EAL creates any thread: every lcore inherits the blocked mask, so signals
    // reach only the control thread's signalfd.
    if (linecap::Status s = linecap::block_daemon_signals(); !s) {
        spdlog::error("{}", s.error().message);
        return kExitFailure;
    }
    auto signals = linecap::SignalFd::open();
    if (!signals) {
        spdlog::error("{}", signals.error().message);
        return kExitFailure;
    }

    spdlog::info("linecapd {} ({}) starting with {}", LINECAP_VERSION, rte_version(), options.config_path);
    // The host clock's state before the first file opens, then once a second.
    linecap::ClockMonitor clock = linecap::ClockMonitor::from_environment();
    clock.sample();
    auto capture = Capture::start(config.value(), clock.board());
    if (!capture) {
        spdlog::error("{}", capture.error().message);
        return capture.error().config ? kExitConfig : kExitFailure;
    }
    linecap::CaptureEngine& engine = capture.value()->engine();

    // The endpoint only ever reads the collector's last snapshot, never engine memory.
    auto metrics = linecap::MetricsExporter::start(config->metrics, make_collector(*capture.value()));
    if (!metrics) {
        spdlog::error("{}", metrics.error().message);
        return kExitFailure;
    }

    linecap::SystemdNotifier notifier;
    linecap::ControlHooks hooks;
    hooks.collect_metrics = [&metrics] { metrics.value()->collect(); };
    hooks.snapshot = [&metrics] { return metrics.value()->snapshot(); };
    hooks.sample_clock = [&clock] { clock.sample(); };
    linecap::run_control_loop(engine, signals.value(), notifier, options.config_path, hooks);

    capture.value()->stop();
    metrics.value()->collect();  // after the drain: the summary and the last scrape are exact
    linecap::log_capture_summary(metrics.value()->snapshot());
    metrics.value().reset();
    capture.value().reset();
    spdlog::info("linecapd stopped");
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    auto logger = spdlog::stderr_color_mt("linecapd");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_default_logger(logger);

    // A subcommand, before option parsing: checks a capture directory against its manifests.
    if (argc >= 2 && std::string(argv[1]) == "verify") return linecap::verify_command(argc - 1, argv + 1);

    Options options;
    if (int rc = parse_options(argc, argv, options); rc >= 0) return rc;
    return run(options);
}
