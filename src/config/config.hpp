// Validated daemon configuration. Built only by load_config(); every field here has
// already been checked, so the rest of the daemon never re-validates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/file_template.hpp"
#include "config/values.hpp"  // parse_lcore_list, parse_size, parse_duration, ...
#include "util/cpu_set.hpp"
#include "util/file_kind.hpp"
#include "util/result.hpp"

namespace linecap {

// Every struct below compares member by member (==): for tests, and for telling what a
// reload changed.

struct EalConfig {
    std::string lcores = "0-1";      // EAL -l syntax; first lcore = main/control lcore
    std::vector<unsigned> lcore_ids; // expanded from `lcores`, in order, first = main
    std::vector<unsigned> cpu_ids;   // the CPU each lcore runs on (same order)
    bool hugepages = true;           // false = --no-huge (tests only)
    unsigned memory_mb = 0;          // 0 = EAL default (-m / --socket-mem not passed)
    std::vector<std::string> args;   // extra EAL arguments, passed through

    bool operator==(const EalConfig&) const = default;
};

enum class RssMode { symmetric, device_default, off };

struct PortConfig {
    std::string name;                // label: file names, logs, metrics ([A-Za-z0-9_-]+)
    std::string device;              // PCI address (DDDD:BB:DD.F) or vdev string (net_...)
    unsigned rx_queues = 1;
    unsigned rx_descriptors = 4096;
    RssMode rss = RssMode::symmetric;
    unsigned mtu = 1500;             // L3 MTU; up to 9000 (jumbo, scattered rx when needed)
    bool promiscuous = true;
    std::string filter;              // libpcap expression; empty = keep everything
    unsigned snaplen = 262144;       // bytes kept per packet (default: whole packet)

    bool is_pci() const;             // device looks like a PCI address

    bool operator==(const PortConfig&) const = default;
};

// Explicit queue → worker mapping; when absent, queues are spread round-robin.
struct WorkerMapping {
    unsigned lcore = 0;
    struct Queue {
        std::string port;
        unsigned queue = 0;

        bool operator==(const Queue&) const = default;
    };
    std::vector<Queue> queues;

    bool operator==(const WorkerMapping&) const = default;
};

// Per-flow byte caps (capture/flow_cap.hpp): after a flow (both directions, keyed by its
// protocol and address/port pairs) has carried `bytes` bytes or `packets` packets, keep
// only the first snaplen_after bytes of each later packet, or drop it (snaplen_after 0).
struct FlowCapConfig {
    bool enabled = false;
    std::vector<std::string> ports;  // port names; empty = every port
    std::string filter;              // libpcap expression: only matching packets are capped
    uint64_t bytes = 1ull << 20;     // wire bytes a flow keeps in full; 0 = count packets
    uint64_t packets = 0;            // packets a flow keeps in full (with bytes: 0)
    unsigned snaplen_after = 128;    // bytes kept of each later packet; 0 = drop it
    unsigned flows = 65536;          // flow table entries per rx queue (a power of two)
    uint64_t idle_timeout_s = 60;    // a flow silent this long starts over

    bool applies_to(const std::string& port) const {
        return enabled && (ports.empty() || std::find(ports.begin(), ports.end(), port) != ports.end());
    }
    bool operator==(const FlowCapConfig&) const = default;
};

// Duplicate suppression (capture/dedup.hpp): a packet equal to one seen on the same queue
// within the window, ignoring TTL / hop limit and the IPv4 header checksum, is not written.
struct DedupConfig {
    bool enabled = false;
    std::vector<std::string> ports;  // port names; empty = every port
    unsigned window_us = 1000;
    unsigned entries = 16384;        // recent packets remembered per rx queue (a power of two)

    bool applies_to(const std::string& port) const {
        return enabled && (ports.empty() || std::find(ports.begin(), ports.end(), port) != ports.end());
    }
    bool operator==(const DedupConfig&) const = default;
};

// Where each packet's timestamp comes from (capture/timestamp_source.hpp): the port's rx
// timestamp (RTE_ETH_RX_OFFLOAD_TIMESTAMP, the mbuf's rx timestamp field) where the port
// offers one, else the TSC read once per burst; `port` refuses to start on a port without
// one; `tsc` never reads the port's.
enum class TimestampMode { auto_, port, tsc };

struct CaptureConfig {
    TimestampMode timestamps = TimestampMode::auto_;
    unsigned burst_size = 64;        // rte_eth_rx_burst size (1..512)
    unsigned mbufs = 0;              // 0 = sized from ports × queues × descriptors
    unsigned mbuf_cache = 256;
    // Scheduling of the worker lcore threads, set by each worker before it polls.
    ThreadPriority worker_priority{ThreadPriority::Kind::rr, 1};
    // Microseconds a worker sleeps after a loop in which no queue had a packet; 0 = never
    // (pure busy polling). Lets other threads use the worker's CPU while traffic is idle.
    unsigned idle_sleep_us = 20;
    // The sleep also follows a loop that brought fewer than this many packets (1: only an
    // empty one). Up to the burst size: a worker that is not kept busy leaves time to the
    // writer beside it (output.writer_cpus: workers), at the price of up to one sleep of
    // timestamp delay for the packets that wait in the ring meanwhile.
    unsigned sleep_below = 1;
    std::vector<WorkerMapping> workers;  // empty = automatic
    FlowCapConfig flow_cap;
    DedupConfig dedup;

    bool operator==(const CaptureConfig&) const = default;
};

enum class FsyncPolicy { none, rotate, interval };
// Where the writer threads run: on the control lcore's CPU (with the metrics endpoint and
// the background threads), or on the workers' CPUs, taking what the workers leave.
enum class WriterCpus { control, workers };

struct RetentionConfig {
    uint64_t max_bytes = 0;          // 0 = unlimited
    double max_percent = 0;          // of the output filesystem; 0 = unlimited
    uint64_t min_free_bytes = 0;     // keep at least this much free; 0 = no floor
    uint64_t max_age_s = 0;          // 0 = keep forever
    std::string hold_file;           // legal hold list: paths never deleted

    bool any_budget() const { return max_bytes > 0 || max_percent > 0 || min_free_bytes > 0 || max_age_s > 0; }
    bool operator==(const RetentionConfig&) const = default;
};

// The background scrub (archive/scrub.hpp): every finished file re-read and checked
// against its manifest once per period.
struct ScrubConfig {
    bool enabled = true;
    uint64_t period_s = 7 * 86400;

    bool operator==(const ScrubConfig&) const = default;
};

// Compression of finished files (archive/compress.hpp): NAME.pcap becomes NAME.pcap.zst,
// zstd's seekable format, in the background at idle priority.
struct CompressConfig {
    bool enabled = false;
    uint64_t after_s = 0;              // only files whose last write is older than this
    int level = 3;                     // zstd level 1..19

    bool operator==(const CompressConfig&) const = default;
};

// The archive tier (archive/archive_service.hpp): finished files uploaded to an
// S3-compatible object store (archive/object_layout.hpp), and kept there. Off while `url`
// is empty.
struct ArchiveConfig {
    std::string url;                   // "s3://BUCKET[/PREFIX]"; "" = off
    std::string endpoint = "http://127.0.0.1:7480";  // scheme://host[:port]
    std::string region = "us-east-1";
    bool path_style = true;            // URL/BUCKET/KEY; false: BUCKET.host/KEY
    std::string credentials_file;      // AWS shared-credentials file; "" = AWS_* environment
    std::string ca_file;               // TLS: the CA bundle of the endpoint's certificate
    uint64_t max_bytes_per_second = 0; // 0 = no cap
    unsigned concurrency = 2;          // files uploaded at once
    uint64_t after_s = 0;              // a finished file's age before it is archived
    uint64_t max_age_s = 0;            // archived files older than this are deleted from the store; 0 = kept

    bool enabled() const { return !url.empty(); }
    bool operator==(const ArchiveConfig&) const = default;
};

// One capture volume (output.volumes[]): a directory on its own file system, with its
// own retention budget. A volume's retention keys not given take output.retention's.
struct VolumeConfig {
    std::string directory;
    RetentionConfig retention;

    bool operator==(const VolumeConfig&) const = default;
};

struct OutputConfig {
    // The one-volume form (output.directory). With output.volumes it is the first
    // volume's directory, for what reads one directory only.
    std::string directory = "/var/lib/linecap";
    // output.volumes; empty: the one volume `directory` with `retention` (volume_list()).
    std::vector<VolumeConfig> volumes;
    // A write on a volume that has not returned after this long marks the volume failed
    // (a stalled device); its streams move to the other volumes.
    unsigned volume_stall_timeout_ms = 5000;
    // How often a failed volume is probed (a small write, fsync, unlink) to re-admit it.
    unsigned volume_probe_interval_s = 5;
    FileKind format = FileKind::pcap;
    // File name template without extension (config/file_template.hpp); FileTemplate::compile
    // accepts it. The extension is added by format.
    std::string file_template = kDefaultFileTemplate;
    uint64_t rotate_size_bytes = 1024ull << 20;
    unsigned rotate_interval_s = 300;  // 0 = no time rotation; aligned to the clock
    unsigned block_size_kb = 1024;     // write block: 64 KiB .. 16 MiB, multiple of 4 KiB
    unsigned blocks_per_queue = 32;
    unsigned flush_interval_ms = 100;  // partial blocks are handed over after this long
    unsigned writer_threads = 1;
    WriterCpus writer_cpus = WriterCpus::control;
    ThreadPriority writer_priority;    // normal: as inherited
    bool o_direct = false;
    FsyncPolicy fsync = FsyncPolicy::rotate;
    unsigned fsync_interval_s = 0;     // with FsyncPolicy::interval
    bool manifest = true;              // SHA-256 sidecar per finished file
    bool index = true;                 // retrieval index sidecar, built in the background
    ScrubConfig scrub;
    CompressConfig compress;
    ArchiveConfig archive;
    RetentionConfig retention;

    // The volumes written: output.volumes, or the one volume output.directory.
    std::vector<VolumeConfig> volume_list() const {
        return volumes.empty() ? std::vector<VolumeConfig>{{directory, retention}} : volumes;
    }
    bool operator==(const OutputConfig&) const = default;
};

struct MetricsConfig {
    bool enabled = true;
    std::string listen = "127.0.0.1:9475";

    bool operator==(const MetricsConfig&) const = default;
};

// The retrieval API (`linecap serve`, src/api/): off unless `listen` is set.
struct ApiConfig {
    std::string listen;                // "" = off; "127.0.0.1:8443", "[::1]:8443", "10.0.0.5:8443"
    std::string tls_cert;              // server certificate chain (PEM); "" = plain HTTP (loopback only)
    std::string tls_key;               // its private key (PEM)
    std::string tls_client_ca;         // CA bundle client certificates must chain to; "" = none asked
    std::string tokens_file;           // "NAME TOKEN" lines; must not be group/world accessible
    std::string unauthenticated;       // "loopback": no authentication (loopback listen only)
    std::string audit_log = "/var/log/linecap/audit.log";  // one JSON line per request
    unsigned max_queries = 4;          // packet queries streaming at once; more get 503
    uint64_t max_bytes = 4ull << 30;   // per answer; a request may ask for less
    uint64_t max_duration_s = 600;     // per answer
    unsigned max_request_bytes = 8192; // request line + headers
    uint64_t client_timeout_s = 30;    // an answer's write that makes no progress this long: the client is dropped
    uint64_t header_timeout_s = 10;    // TLS handshake + request head, from connect (or the previous answer's end)
    uint64_t body_timeout_s = 10;      // a request body, after its head
    unsigned max_connections = 1024;   // open connections, all clients together
    unsigned max_connections_per_client = 64;  // open connections from one client address
    unsigned threads = 16;             // handler threads: requests answered at once
    std::string status_url;            // linecapd's /status; "" = http://METRICS.LISTEN/status

    bool operator==(const ApiConfig&) const = default;
};

// The live feed over PCAP-over-IP (feed/feed.hpp): a TCP listener that sends each consumer
// a pcap stream of the chosen ports' packets, taken from the write blocks after the writer
// has written them. Off unless enabled. An address other than loopback only with TLS and
// client certificates, or with plaintext_on_network.
struct FeedConfig {
    bool enabled = false;
    std::string listen = "127.0.0.1:57012";
    std::vector<std::string> ports;      // port names; empty = every port
    std::string filter;                  // libpcap expression; "" = every packet
    unsigned max_consumers = 8;          // connected at once; more are closed at once
    uint64_t buffer_bytes = 16ull << 20; // per consumer: records waiting to be sent
    std::string tls_cert;                // server certificate chain (PEM); "" = plaintext
    std::string tls_key;                 // its private key (PEM)
    std::string tls_client_ca;           // CA bundle every consumer's certificate must chain to
    bool plaintext_on_network = false;   // a non-loopback listen without TLS sends packets unencrypted

    bool tls() const { return !tls_cert.empty(); }

    bool carries(const std::string& port) const {
        return enabled && (ports.empty() || std::find(ports.begin(), ports.end(), port) != ports.end());
    }
    bool operator==(const FeedConfig&) const = default;
};

struct LogConfig {
    std::string level = "info";       // trace debug info warn error critical off

    bool operator==(const LogConfig&) const = default;
};

struct Config {
    std::string path;                 // the file it was loaded from
    EalConfig eal;
    std::vector<PortConfig> ports;
    CaptureConfig capture;
    OutputConfig output;
    MetricsConfig metrics;
    ApiConfig api;
    FeedConfig feed;
    LogConfig log;

    bool operator==(const Config&) const = default;
};

// Parses and validates. Errors are config errors naming the key and line, e.g.
// "config.yaml:12: ports[0].rx_queues: expected an integer 1..1024, got 'two'".
// The first problem found is reported, on one line. The file's schema, units and
// ranges are documented in config/linecap.yaml.
Result<Config> load_config(const std::string& path);
Result<Config> parse_config(const std::string& yaml_text, const std::string& source_name);

// Every key the file may hold, as paths ("output", "output.rotate.size_mb",
// "ports[].rx_queues"), in schema order. For documentation checks and tests.
std::vector<std::string> config_key_paths();

const char* to_string(RssMode mode);
const char* to_string(TimestampMode mode);
const char* to_string(WriterCpus cpus);

// The CPUs of the worker lcores: every lcore but the first (the main, control lcore).
CpuSet worker_cpus(const EalConfig& eal);

}  // namespace linecap
