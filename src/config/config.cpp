// The configuration schema: which keys exist, what each accepts, and the checks that
// involve several keys. Reading YAML and reporting problems with their line is
// yaml_reader's job; the text forms (sizes, durations, lcore lists, ...) are values'.
//
// Only structure is checked here. Whether the PCI device is bound, the lcores exist and
// the directory is writable is for the daemon to find out at startup.
#include "config/config.hpp"

#include <fcntl.h>
#include <rte_config.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "config/file_template.hpp"
#include "config/yaml_reader.hpp"

namespace linecap {

using config_detail::ConfigProblem;
using config_detail::KeyList;
using config_detail::NamedValue;
using config_detail::YamlMap;
using config_detail::YamlValue;

namespace {

// --- the keys of each level, in the order the example file lists them -----------

constexpr std::string_view kTopKeys[] = {"eal", "ports", "capture", "output", "metrics", "api", "feed", "log"};
constexpr std::string_view kEalKeys[] = {"lcores", "hugepages", "memory_mb", "args"};
constexpr std::string_view kPortKeys[] = {"name", "device",      "rx_queues", "rx_descriptors", "rss",
                                          "mtu",  "promiscuous", "filter",    "snaplen"};
constexpr std::string_view kCaptureKeys[] = {"timestamps", "burst_size",    "mbufs",   "mbuf_cache", "worker_priority",
                                             "idle_sleep_us", "sleep_below", "workers", "flow_cap", "dedup"};
constexpr std::string_view kWorkerKeys[] = {"lcore", "queues"};
constexpr std::string_view kFlowCapKeys[] = {"enabled",       "ports", "filter", "bytes",
                                             "packets",       "snaplen_after", "flows", "idle_timeout"};
constexpr std::string_view kDedupKeys[] = {"enabled", "ports", "window_us", "entries"};
constexpr std::string_view kOutputKeys[] = {
    "directory",         "volumes",        "volume_stall_timeout_ms", "volume_probe_interval_s", "format",         "file_template", "rotate", "block_size_kb", "blocks_per_queue",
    "flush_interval_ms", "writer_threads", "writer_cpus",   "writer_priority", "o_direct", "fsync",
    "manifest",          "index",          "scrub",         "retention",       "compress",
    "archive"};
constexpr std::string_view kVolumeKeys[] = {"directory", "retention"};
constexpr std::string_view kRotateKeys[] = {"size_mb", "interval_s"};
constexpr std::string_view kScrubKeys[] = {"enabled", "period"};
constexpr std::string_view kCompressKeys[] = {"enabled", "after", "level"};
constexpr std::string_view kArchiveKeys[] = {"url",     "endpoint",             "region",      "path_style",
                                            "credentials_file", "ca_file",    "max_bytes_per_second",
                                            "concurrency", "after", "max_age"};
constexpr std::string_view kRetentionKeys[] = {"max_bytes", "max_percent", "min_free_bytes", "max_age", "hold_file"};
constexpr std::string_view kMetricsKeys[] = {"enabled", "listen"};
constexpr std::string_view kApiKeys[] = {
    "listen",           "tls_cert",          "tls_key",   "tls_client_ca",  "tokens_file", "unauthenticated",
    "audit_log",        "max_queries",       "max_bytes", "max_duration",   "max_request_bytes",
    "client_timeout",   "header_timeout",    "body_timeout", "max_connections", "max_connections_per_client",
    "threads",          "status_url"};
constexpr std::string_view kFeedKeys[] = {"enabled",       "listen",       "ports",
                                          "filter",        "max_consumers", "buffer_bytes",
                                          "tls_cert",      "tls_key",       "tls_client_ca",
                                          "plaintext_on_network"};
constexpr std::string_view kLogKeys[] = {"level"};

struct SchemaLevel {
    std::string_view path;  // "" for the top level, "[]" marks list items
    KeyList keys;
};

constexpr SchemaLevel kSchema[] = {
    {"", kTopKeys},
    {"eal", kEalKeys},
    {"ports[]", kPortKeys},
    {"capture", kCaptureKeys},
    {"capture.workers[]", kWorkerKeys},
    {"capture.flow_cap", kFlowCapKeys},
    {"capture.dedup", kDedupKeys},
    {"output", kOutputKeys},
    {"output.rotate", kRotateKeys},
    {"output.scrub", kScrubKeys},
    {"output.compress", kCompressKeys},
    {"output.archive", kArchiveKeys},
    {"output.retention", kRetentionKeys},
    {"metrics", kMetricsKeys},
    {"api", kApiKeys},
    {"feed", kFeedKeys},
    {"log", kLogKeys},
};

// --- names of enumerated values ---------------------------------------------------

constexpr NamedValue<RssMode> kRssModes[] = {
    {"symmetric", RssMode::symmetric},
    {"device-default", RssMode::device_default},
    {"off", RssMode::off},
};

constexpr NamedValue<WriterCpus> kWriterCpus[] = {
    {"control", WriterCpus::control},
    {"workers", WriterCpus::workers},
};

constexpr NamedValue<TimestampMode> kTimestampModes[] = {
    {"auto", TimestampMode::auto_},
    {"port", TimestampMode::port},
    {"tsc", TimestampMode::tsc},
};
constexpr NamedValue<FileKind> kFileFormats[] = {
    {"pcap", FileKind::pcap},
    {"pcapng", FileKind::pcapng},
};

constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};

template <typename T, size_t N>
const char* name_of(T value, const NamedValue<T> (&names)[N]) {
    for (const auto& [name, named] : names) {
        if (named == value) return name.data();  // the names are literals: NUL-terminated
    }
    return "?";
}

// --- limits -------------------------------------------------------------------------

constexpr unsigned kMaxPortNameLength = 32;
constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr unsigned kMaxRotateSizeMb = 1u << 20;  // 1 TiB per file
constexpr unsigned kMaxRotateIntervalS = 86400;  // a day
constexpr unsigned kMaxFsyncIntervalS = 3600;
constexpr uint64_t kMaxScrubPeriodS = 3650ull * 86400;  // ten years
constexpr unsigned kMinMbufs = 1024;
constexpr unsigned kMaxMbufs = 1u << 27;
constexpr unsigned kMaxMemoryMb = 1u << 20;  // 1 TiB
// A sleeping worker does not drain its rx ring: 1 ms is a quarter of what 4096 descriptors
// hold at 1 Mpps.
constexpr unsigned kMaxIdleSleepUs = 1000;

constexpr std::string_view kDeviceForms =
    "a PCI address (0000:03:00.0 or 03:00.0) or a DPDK vdev starting with net_ (net_pcap0,rx_pcap=a.pcap)";

// EAL options linecap derives from other keys; given again in eal.args they would
// contradict what the daemon passes.
constexpr std::pair<std::string_view, std::string_view> kDerivedEalOptions[] = {
    {"-l", "eal.lcores"},           {"-c", "eal.lcores"},           {"--lcores", "eal.lcores"},
    {"--main-lcore", "eal.lcores"}, {"--no-huge", "eal.hugepages"}, {"-m", "eal.memory_mb"},
    {"-a", "ports[].device"},       {"--allow", "ports[].device"},  {"--vdev", "ports[].device"},
    {"--no-pci", "ports[].device"},
};

// --- small helpers ------------------------------------------------------------------

std::string join(const std::vector<std::string>& items) {
    std::string joined;
    for (const auto& item : items) joined += (joined.empty() ? "" : ", ") + item;
    return joined;
}

std::string without_blanks(std::string text) {
    std::erase_if(text, [](char c) { return c == ' ' || c == '\t'; });
    return text;
}

// Remembers where each name was first given, so that a second use can point at both.
class UniqueNames {
public:
    explicit UniqueNames(std::string rule) : rule_(std::move(rule)) {}

    void claim(const std::string& name, const YamlValue& where) {
        const auto [first, inserted] = first_use_.try_emplace(name, Place{where.path(), where.line()});
        if (!inserted) {
            where.fail("'" + name + "' is already given at " + first->second.path + " (line " +
                       std::to_string(first->second.line) + "); " + rule_);
        }
    }
    bool contains(const std::string& name) const { return first_use_.contains(name); }

private:
    struct Place {
        std::string path;
        int line;
    };
    std::string rule_;
    std::map<std::string, Place> first_use_;
};

std::string read_absolute_path(const YamlValue& value, std::string_view what) {
    std::string path = value.as_non_empty_string("the absolute path of " + std::string(what));
    // The daemon runs from / under systemd; a relative path would quietly land there.
    if (path.front() != '/') value.fail_expected("an absolute path (starting with /) of " + std::string(what));
    return path;
}

// --- eal ----------------------------------------------------------------------------

std::vector<unsigned> read_lcore_ids(const YamlValue& value) {
    std::vector<unsigned> ids = value.parsed_by(parse_lcore_list);
    if (ids.size() < 2) {
        value.fail("'" + value.as_string() + "' names " + std::to_string(ids.size()) +
                   " lcore; expected at least 2: the main lcore first, then one or more worker lcores");
    }
    return ids;
}

std::optional<std::string_view> derived_option_owner(std::string_view arg) {
    for (const auto& [option, owner] : kDerivedEalOptions) {
        const bool is_long = option.starts_with("--");
        const bool matches = arg == option || (is_long ? arg.starts_with(std::string(option) + "=")
                                                       : arg.starts_with(option));  // "-l0-3"
        if (matches) return owner;
    }
    return std::nullopt;
}

std::vector<std::string> read_eal_args(const YamlValue& value) {
    std::vector<std::string> args;
    for (const YamlValue& item : value.as_list()) {
        std::string arg = item.as_non_empty_string("an EAL command line argument");
        if (const auto owner = derived_option_owner(arg)) {
            item.fail("'" + arg + "' is set by linecap from " + std::string(*owner) + "; remove it here");
        }
        args.push_back(std::move(arg));
    }
    return args;
}

EalConfig read_eal(const YamlMap& eal) {
    EalConfig config;
    if (const auto v = eal.get("lcores")) {
        config.lcore_ids = read_lcore_ids(*v);
        config.lcores = without_blanks(v->as_string());  // EAL's -l takes no blanks
    } else {
        config.lcore_ids = parse_lcore_list(config.lcores).value();
    }
    config.cpu_ids = lcore_cpus(config.lcores);
    if (const auto v = eal.get("hugepages")) config.hugepages = v->as_bool();
    if (const auto v = eal.get("memory_mb")) config.memory_mb = v->as_uint(0, kMaxMemoryMb);
    if (const auto v = eal.get("args")) config.args = read_eal_args(*v);
    return config;
}

// --- ports --------------------------------------------------------------------------

bool is_port_name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string read_port_name(const YamlValue& value) {
    const std::string expected =
        "a port name of 1.." + std::to_string(kMaxPortNameLength) + " letters, digits, '_' or '-'";
    std::string name = value.as_non_empty_string(expected);
    if (name.size() > kMaxPortNameLength || !std::all_of(name.begin(), name.end(), is_port_name_char)) {
        value.fail_expected(expected);
    }
    return name;
}

// "net_pcap0,rx_pcap=a.pcap" → "net_pcap0": the name EAL gives the device.
std::string_view vdev_name(std::string_view device) { return device.substr(0, device.find(',')); }

bool is_vdev(std::string_view device) {
    const std::string_view name = vdev_name(device);
    return name.starts_with("net_") && name.size() > 4 && std::all_of(name.begin(), name.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
           });
}

std::string read_device(const YamlValue& value) {
    std::string device = value.as_non_empty_string(kDeviceForms);
    if (auto pci = normalize_pci_address(device)) return *pci;
    if (!is_vdev(device)) value.fail_expected(kDeviceForms);
    return device;
}

bool is_descriptor_count(uint64_t n) { return n >= 64 && n <= 32768 && std::has_single_bit(n); }

PortConfig read_port(const YamlMap& port) {
    PortConfig config;
    config.name = read_port_name(port.require("name", "a port name such as tap0 (used in file names and metrics)"));
    config.device = read_device(port.require("device", kDeviceForms));
    if (const auto v = port.get("rx_queues")) config.rx_queues = v->as_uint(1, 1024);
    if (const auto v = port.get("rx_descriptors")) {
        config.rx_descriptors = v->as_uint_where("a power of two 64..32768", is_descriptor_count);
    }
    if (const auto v = port.get("rss")) config.rss = v->as_one_of<RssMode>(kRssModes);
    if (const auto v = port.get("mtu")) config.mtu = v->as_uint(68, 9000);
    if (const auto v = port.get("promiscuous")) config.promiscuous = v->as_bool();
    if (const auto v = port.get("filter")) config.filter = v->as_string();
    if (const auto v = port.get("snaplen")) config.snaplen = v->as_uint(16, 262144);
    return config;
}

std::vector<PortConfig> read_ports(const YamlValue& value) {
    const std::vector<YamlValue> items = value.as_list();
    if (items.empty()) value.fail("expected at least one port, got none");
    UniqueNames names("port names must be unique");
    UniqueNames devices("a device can be captured by one port only");
    std::vector<PortConfig> ports;
    for (const YamlValue& item : items) {
        const YamlMap port = item.as_map(kPortKeys);
        ports.push_back(read_port(port));
        // Both keys are present: read_port() required them.
        names.claim(ports.back().name, *port.get("name"));
        devices.claim(std::string(vdev_name(ports.back().device)), *port.get("device"));
    }
    return ports;
}

// --- capture ------------------------------------------------------------------------

std::string worker_lcore_list(const EalConfig& eal) {
    std::vector<std::string> ids;
    for (size_t i = 1; i < eal.lcore_ids.size(); ++i) ids.push_back(std::to_string(eal.lcore_ids[i]));
    return join(ids);
}

unsigned read_worker_lcore(const YamlValue& value, const EalConfig& eal) {
    const std::string workers = worker_lcore_list(eal);
    constexpr auto any_integer = [](uint64_t) { return true; };  // membership is checked below, with a better message
    const unsigned lcore = value.as_uint_where("one of the worker lcores " + workers, any_integer);
    if (lcore == eal.lcore_ids.front()) {
        value.fail("lcore " + std::to_string(lcore) +
                   " is the main lcore (the first in eal.lcores); expected one of the worker lcores " + workers);
    }
    if (std::find(eal.lcore_ids.begin(), eal.lcore_ids.end(), lcore) == eal.lcore_ids.end()) {
        value.fail("lcore " + std::to_string(lcore) + " is not in eal.lcores '" + eal.lcores +
                   "'; expected one of the worker lcores " + workers);
    }
    return lcore;
}

const PortConfig* find_port(const std::vector<PortConfig>& ports, std::string_view name) {
    const auto it = std::find_if(ports.begin(), ports.end(), [&](const PortConfig& p) { return p.name == name; });
    return it == ports.end() ? nullptr : &*it;
}

std::string port_names(const std::vector<PortConfig>& ports) {
    std::vector<std::string> names;
    for (const PortConfig& port : ports) names.push_back(port.name);
    return join(names);
}

// "tap0:1" → {tap0, 1}, checked against the configured ports.
WorkerMapping::Queue read_queue_ref(const YamlValue& value, const std::vector<PortConfig>& ports) {
    const std::string text = value.as_string();
    const size_t colon = text.rfind(':');
    const auto queue = colon == std::string::npos ? std::nullopt : parse_uint(std::string_view(text).substr(colon + 1));
    if (!queue || colon == 0) value.fail_expected("a queue as \"port:queue\", like \"tap0:0\"");

    const std::string port_name = text.substr(0, colon);
    const PortConfig* port = find_port(ports, port_name);
    if (port == nullptr) value.fail("no port is named '" + port_name + "'; the ports are " + port_names(ports));
    if (*queue >= port->rx_queues) {
        value.fail("port " + port_name + " has " + std::to_string(port->rx_queues) + " rx queue(s), numbered 0.." +
                   std::to_string(port->rx_queues - 1) + "; got queue " + std::to_string(*queue));
    }
    return {port_name, static_cast<unsigned>(*queue)};
}

std::string queue_key(const std::string& port, unsigned queue) { return port + ":" + std::to_string(queue); }

void require_every_queue_assigned(const YamlValue& workers, const std::vector<PortConfig>& ports,
                                  const UniqueNames& assigned) {
    for (const PortConfig& port : ports) {
        for (unsigned queue = 0; queue < port.rx_queues; ++queue) {
            if (!assigned.contains(queue_key(port.name, queue))) {
                workers.fail("queue " + queue_key(port.name, queue) +
                             " is not assigned to any worker; when workers are listed, every queue of every "
                             "port must be assigned exactly once (or leave workers out to spread them automatically)");
            }
        }
    }
}

std::vector<WorkerMapping> read_workers(const YamlValue& value, const EalConfig& eal,
                                        const std::vector<PortConfig>& ports) {
    UniqueNames lcores("give each worker lcore one entry listing all its queues");
    UniqueNames assigned("each queue is polled by exactly one worker");
    std::vector<WorkerMapping> workers;
    for (const YamlValue& item : value.as_list()) {
        const YamlMap worker = item.as_map(kWorkerKeys);
        WorkerMapping mapping;
        const YamlValue lcore = worker.require("lcore", "one of the worker lcores " + worker_lcore_list(eal));
        mapping.lcore = read_worker_lcore(lcore, eal);
        lcores.claim(std::to_string(mapping.lcore), lcore);

        const YamlValue queues = worker.require("queues", "a list of queues like [\"tap0:0\", \"tap0:1\"]");
        const std::vector<YamlValue> refs = queues.as_list();
        if (refs.empty()) queues.fail("expected at least one queue like \"tap0:0\", got none");
        for (const YamlValue& ref : refs) {
            mapping.queues.push_back(read_queue_ref(ref, ports));
            assigned.claim(queue_key(mapping.queues.back().port, mapping.queues.back().queue), ref);
        }
        workers.push_back(std::move(mapping));
    }
    if (!workers.empty()) require_every_queue_assigned(value, ports, assigned);
    return workers;
}

// A list of configured port names ("ports: [wan0]"); empty = every port.
std::vector<std::string> read_port_names(const YamlValue& value, const std::vector<PortConfig>& ports) {
    std::vector<std::string> names;
    UniqueNames listed("list each port once");
    for (const YamlValue& item : value.as_list()) {
        std::string name = item.as_string();
        if (find_port(ports, name) == nullptr)
            item.fail("no port is named '" + name + "'; the ports are " + port_names(ports));
        listed.claim(name, item);
        names.push_back(std::move(name));
    }
    return names;
}

bool is_table_size(uint64_t n) { return n >= 1024 && n <= (1u << 24) && std::has_single_bit(n); }

FlowCapConfig read_flow_cap(const YamlMap& cap, const std::vector<PortConfig>& ports) {
    FlowCapConfig config;
    if (const auto v = cap.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = cap.get("ports")) config.ports = read_port_names(*v, ports);
    // Compiled like a port's filter, by the preflight (--check) and the engine.
    if (const auto v = cap.get("filter")) config.filter = v->as_string();
    const auto bytes = cap.get("bytes");
    const auto packets = cap.get("packets");
    if (bytes) config.bytes = bytes->parsed_by(parse_size);
    if (packets) config.packets = packets->as_uint(0, UINT32_MAX - 1);
    if (packets && config.packets != 0) {
        if (bytes && config.bytes != 0)
            packets->fail("bytes and packets are both set; cap flows by one of them (set the other to 0)");
        config.bytes = 0;
    }
    // The table counts in 32 bits (capture/flow_cap.hpp).
    if (config.bytes > UINT32_MAX - 1) bytes->fail_expected("a size of at most 4095M (4 GiB - 2)");
    if (config.bytes == 0 && config.packets == 0) {
        (packets ? *packets : *bytes)
            .fail("bytes and packets are both 0; set one of them to the amount a flow keeps in full");
    }
    if (const auto v = cap.get("snaplen_after")) {
        config.snaplen_after = v->as_uint_where("0 (drop the packets after the cap) or 16..262144",
                                                [](uint64_t n) { return n == 0 || (n >= 16 && n <= 262144); });
    }
    if (const auto v = cap.get("flows")) config.flows = v->as_uint_where("a power of two 1024..16777216", is_table_size);
    if (const auto v = cap.get("idle_timeout")) {
        config.idle_timeout_s = v->parsed_by(parse_duration);
        if (config.idle_timeout_s < 1 || config.idle_timeout_s > 86400) v->fail_expected("a duration 1s..1d like 60s");
    }
    return config;
}

DedupConfig read_dedup(const YamlMap& dedup, const std::vector<PortConfig>& ports) {
    DedupConfig config;
    if (const auto v = dedup.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = dedup.get("ports")) config.ports = read_port_names(*v, ports);
    if (const auto v = dedup.get("window_us")) config.window_us = v->as_uint(1, 1000000);
    if (const auto v = dedup.get("entries"))
        config.entries = v->as_uint_where("a power of two 1024..16777216", is_table_size);
    return config;
}

CaptureConfig read_capture(const YamlMap& capture, const EalConfig& eal, const std::vector<PortConfig>& ports) {
    CaptureConfig config;
    if (const auto v = capture.get("timestamps")) config.timestamps = v->as_one_of<TimestampMode>(kTimestampModes);
    if (const auto v = capture.get("burst_size")) config.burst_size = v->as_uint(1, 512);
    if (const auto v = capture.get("mbufs")) {
        config.mbufs = v->as_uint_where(
            "0 (sized from the ports) or " + std::to_string(kMinMbufs) + ".." + std::to_string(kMaxMbufs),
            [](uint64_t n) { return n == 0 || (n >= kMinMbufs && n <= kMaxMbufs); });
    }
    if (const auto v = capture.get("mbuf_cache")) config.mbuf_cache = v->as_uint(0, RTE_MEMPOOL_CACHE_MAX_SIZE);
    if (const auto v = capture.get("worker_priority")) config.worker_priority = v->parsed_by(parse_thread_priority);
    if (const auto v = capture.get("idle_sleep_us")) config.idle_sleep_us = v->as_uint(0, kMaxIdleSleepUs);
    if (const auto v = capture.get("sleep_below")) {
        config.sleep_below = v->as_uint_where("1..burst_size (" + std::to_string(config.burst_size) + ")",
                                              [&](uint64_t n) { return n >= 1 && n <= config.burst_size; });
    }
    if (const auto v = capture.get("workers")) config.workers = read_workers(*v, eal, ports);
    config.flow_cap = read_flow_cap(capture.section("flow_cap", kFlowCapKeys), ports);
    config.dedup = read_dedup(capture.section("dedup", kDedupKeys), ports);
    return config;
}

// --- output -------------------------------------------------------------------------

std::string read_file_template(const YamlValue& value) {
    std::string text = value.as_non_empty_string("a file name template like " + std::string(kDefaultFileTemplate));
    const Result<FileTemplate> file_template = FileTemplate::compile(text);
    if (!file_template) value.fail(file_template.error().message);
    if (!file_template->has_stream_fields()) {
        value.fail(
            "must contain {port} and {queue}: every queue writes its own files, and without both two queues would "
            "write to the same name");
    }
    if (const size_t longest = file_template->max_rendered_bytes(kMaxPortNameLength); longest > kMaxFileStemBytes) {
        value.fail("names made from it can be " + std::to_string(longest) + " bytes long; at most " +
                   std::to_string(kMaxFileStemBytes) +
                   " fit (file names are limited to 255 bytes, and the capture directory adds hidden, numbered and "
                   "sidecar suffixes)");
    }
    return text;
}

void read_rotation(const YamlMap& rotate, OutputConfig& config) {
    if (const auto v = rotate.get("size_mb")) {
        const unsigned size_mb =
            v->as_uint_where("0 (no size rotation) or 1.." + std::to_string(kMaxRotateSizeMb) + " MiB",
                             [](uint64_t n) { return n <= kMaxRotateSizeMb; });
        config.rotate_size_bytes = uint64_t{size_mb} << 20;
    }
    if (const auto v = rotate.get("interval_s")) {
        config.rotate_interval_s =
            v->as_uint_where("0 (no time rotation) or 1.." + std::to_string(kMaxRotateIntervalS) + " seconds",
                             [](uint64_t n) { return n <= kMaxRotateIntervalS; });
    }
    if (config.rotate_size_bytes == 0 && config.rotate_interval_s == 0) {
        rotate.fail("size_mb and interval_s are both 0, so a file would stay open until shutdown; set at least one");
    }
}

// Files are written in whole blocks, so a file smaller than a block could never be cut
// at its size.
void check_rotation_holds_a_block(const YamlMap& rotate, const OutputConfig& config) {
    const uint64_t block_bytes = uint64_t{config.block_size_kb} << 10;
    if (config.rotate_size_bytes == 0 || config.rotate_size_bytes >= block_bytes) return;
    const unsigned min_size_mb = (config.block_size_kb + 1023) / 1024;
    const std::string problem = "files of " + std::to_string(config.rotate_size_bytes >> 20) +
                                " MiB are smaller than one write block (output.block_size_kb " +
                                std::to_string(config.block_size_kb) + "); expected at least " +
                                std::to_string(min_size_mb);
    // In practice size_mb is always given here: its default exceeds the largest block.
    if (const auto size_mb = rotate.get("size_mb")) size_mb->fail(problem);
    rotate.fail(problem);
}

void read_fsync(const YamlValue& value, OutputConfig& config) {
    const std::string text = value.as_string();
    if (text == "none") {
        config.fsync = FsyncPolicy::none;
    } else if (text == "rotate") {
        config.fsync = FsyncPolicy::rotate;
    } else {
        const Result<uint64_t> seconds = parse_duration(text);
        if (!seconds || seconds.value() < 1 || seconds.value() > kMaxFsyncIntervalS) {
            value.fail_expected("none, rotate or an interval 1s..1h like 5s");
        }
        config.fsync = FsyncPolicy::interval;
        config.fsync_interval_s = static_cast<unsigned>(seconds.value());
    }
}

ScrubConfig read_scrub(const YamlMap& scrub) {
    ScrubConfig config;
    if (const auto v = scrub.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = scrub.get("period")) {
        config.period_s = v->parsed_by(parse_duration);
        if (config.period_s < 1 || config.period_s > kMaxScrubPeriodS)
            v->fail_expected("a duration 1s..3650d like 7d");
    }
    return config;
}

CompressConfig read_compress(const YamlMap& compress) {
    CompressConfig config;
    if (const auto v = compress.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = compress.get("after")) {
        config.after_s = v->parsed_by(parse_duration);
        if (config.after_s > kMaxScrubPeriodS) v->fail_expected("a duration 0s..3650d like 10m");
    }
    // zstd's levels 1..19 (the "ultra" levels need more memory than a capture host
    // should spend on it).
    if (const auto v = compress.get("level")) config.level = static_cast<int>(v->as_uint(1, 19));
    return config;
}

// The URL's form (s3://BUCKET[/PREFIX]) is checked by preflight, with the archive's own
// parser (archive/object_layout.hpp); the endpoint's scheme here.
ArchiveConfig read_archive(const YamlMap& archive) {
    ArchiveConfig config;
    if (const auto v = archive.get("url")) config.url = v->as_string();
    if (const auto v = archive.get("endpoint")) {
        config.endpoint = v->as_string();
        if (!config.endpoint.starts_with("http://") && !config.endpoint.starts_with("https://"))
            v->fail_expected("an endpoint URL like http://127.0.0.1:7480 or https://s3.example.net");
        if (config.endpoint.find('/', config.endpoint.find("//") + 2) != std::string::npos)
            v->fail_expected("scheme://host[:port] without a path (the bucket goes into url)");
    }
    if (const auto v = archive.get("region")) config.region = v->as_non_empty_string("a region like us-east-1");
    if (const auto v = archive.get("path_style")) config.path_style = v->as_bool();
    const auto path = [&](std::string_view key, std::string_view what, std::string& out) {
        if (const auto v = archive.get(key); v && !v->as_string().empty()) out = read_absolute_path(*v, what);
    };
    path("credentials_file", "the archive's credentials file", config.credentials_file);
    path("ca_file", "the CA bundle (PEM)", config.ca_file);
    if (const auto v = archive.get("max_bytes_per_second")) config.max_bytes_per_second = v->parsed_by(parse_size);
    if (const auto v = archive.get("concurrency")) config.concurrency = v->as_uint(1, 16);
    if (const auto v = archive.get("after")) {
        config.after_s = v->parsed_by(parse_duration);
        if (config.after_s > kMaxScrubPeriodS) v->fail_expected("a duration 0s..3650d like 10m");
    }
    if (const auto v = archive.get("max_age")) {
        config.max_age_s = v->parsed_by(parse_duration);
        if (config.max_age_s > kMaxScrubPeriodS) v->fail_expected("a duration 0 (kept) or up to 3650d like 90d");
    }
    return config;
}

// Keys not given keep `base`'s values (a volume's retention falls back to output.retention).
RetentionConfig read_retention(const YamlMap& retention, RetentionConfig base = {}) {
    RetentionConfig config = std::move(base);
    if (const auto v = retention.get("max_bytes")) config.max_bytes = v->parsed_by(parse_size);
    if (const auto v = retention.get("max_percent")) config.max_percent = v->as_number(0, 100);
    if (const auto v = retention.get("min_free_bytes")) config.min_free_bytes = v->parsed_by(parse_size);
    if (const auto v = retention.get("max_age")) config.max_age_s = v->parsed_by(parse_duration);
    if (const auto v = retention.get("hold_file"); v && !v->as_string().empty()) {
        config.hold_file = read_absolute_path(*v, "the legal hold list");
    }
    return config;
}

// A writer on the workers' CPUs must rank below them: a real-time writer at or above a
// real-time worker's priority would keep it from its rx ring for as long as it writes.
void check_writer_below_workers(const YamlValue& value, const OutputConfig& output, const CaptureConfig& capture) {
    if (output.writer_cpus != WriterCpus::workers || !is_realtime(output.writer_priority)) return;
    if (!is_realtime(capture.worker_priority)) {
        value.fail("a real-time writer on the workers' CPUs needs real-time workers above it (capture.worker_priority " +
                   to_string(capture.worker_priority) + "); use normal, or raise the workers to rr:" +
                   std::to_string(output.writer_priority.value + 1));
    }
    if (output.writer_priority.value >= capture.worker_priority.value) {
        value.fail("must be below capture.worker_priority " + to_string(capture.worker_priority) +
                   " on the workers' CPUs (a writer at or above the workers' priority keeps them from the rx "
                   "ring while it writes)");
    }
}

// output.volumes: each item { directory: PATH, retention: {...} }, directories distinct.
std::vector<VolumeConfig> read_volumes(const YamlValue& value, const RetentionConfig& retention) {
    std::vector<VolumeConfig> volumes;
    UniqueNames directories("each volume needs a directory of its own");
    for (const YamlValue& item : value.as_list()) {
        const YamlMap volume = item.as_map(kVolumeKeys);
        const YamlValue directory = volume.require("directory", "the absolute path of the volume's capture directory");
        VolumeConfig config;
        config.directory = read_absolute_path(directory, "the volume's capture directory");
        while (config.directory.size() > 1 && config.directory.back() == '/') config.directory.pop_back();
        directories.claim(config.directory, directory);
        config.retention = read_retention(volume.section("retention", kRetentionKeys), retention);
        volumes.push_back(std::move(config));
    }
    return volumes;
}

OutputConfig read_output(const YamlMap& output, const CaptureConfig& capture) {
    OutputConfig config;
    const std::optional<YamlValue> volumes = output.get("volumes");
    const bool several = volumes && !volumes->as_list().empty();
    if (several) {
        if (const auto v = output.get("directory")) {
            v->fail("give output.directory (one volume) or output.volumes (several), not both");
        }
    } else {
        config.directory = read_absolute_path(
            output.require("directory", "the absolute path of the capture directory (or output.volumes)"),
            "the capture directory");
    }
    if (const auto v = output.get("volume_stall_timeout_ms")) config.volume_stall_timeout_ms = v->as_uint(100, 600000);
    if (const auto v = output.get("volume_probe_interval_s")) config.volume_probe_interval_s = v->as_uint(1, 3600);
    if (const auto v = output.get("format")) config.format = v->as_one_of<FileKind>(kFileFormats);
    if (const auto v = output.get("file_template")) config.file_template = read_file_template(*v);
    const YamlMap rotate = output.section("rotate", kRotateKeys);
    read_rotation(rotate, config);
    if (const auto v = output.get("block_size_kb")) {
        config.block_size_kb = v->as_uint_where("a multiple of 4 in 64..16384",
                                                [](uint64_t n) { return n >= 64 && n <= 16384 && n % 4 == 0; });
    }
    check_rotation_holds_a_block(rotate, config);
    if (const auto v = output.get("blocks_per_queue")) config.blocks_per_queue = v->as_uint(2, 4096);
    if (const auto v = output.get("flush_interval_ms")) config.flush_interval_ms = v->as_uint(1, 10000);
    if (const auto v = output.get("writer_threads")) config.writer_threads = v->as_uint(1, 64);
    if (const auto v = output.get("writer_cpus")) config.writer_cpus = v->as_one_of<WriterCpus>(kWriterCpus);
    if (const auto v = output.get("writer_priority")) {
        config.writer_priority = v->parsed_by(parse_thread_priority);
        check_writer_below_workers(*v, config, capture);
    }
    if (const auto v = output.get("o_direct")) config.o_direct = v->as_bool();
    if (const auto v = output.get("fsync")) read_fsync(*v, config);
    if (const auto v = output.get("manifest")) config.manifest = v->as_bool();
    if (const auto v = output.get("index")) config.index = v->as_bool();
    config.scrub = read_scrub(output.section("scrub", kScrubKeys));
    const YamlMap compress = output.section("compress", kCompressKeys);
    config.compress = read_compress(compress);
    // The manifest is where the compressed file's hash, and the pcap's it is checked
    // against, are kept.
    if (config.compress.enabled && !config.manifest) {
        if (const auto v = compress.get("enabled")) v->fail("output.compress needs output.manifest: true");
    }
    const YamlMap archive = output.section("archive", kArchiveKeys);
    config.archive = read_archive(archive);
    // A file is archived when its manifest object is (archive/object_layout.hpp), and the
    // manifest's SHA-256 is what the store's copy is checked against.
    if (config.archive.enabled() && !config.manifest) {
        if (const auto v = archive.get("url")) v->fail("output.archive needs output.manifest: true");
    }
    config.retention = read_retention(output.section("retention", kRetentionKeys));
    if (several) {
        config.volumes = read_volumes(*volumes, config.retention);
        config.directory = config.volumes.front().directory;
    }
    return config;
}

// --- metrics, log -------------------------------------------------------------------

MetricsConfig read_metrics(const YamlMap& metrics) {
    MetricsConfig config;
    if (const auto v = metrics.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = metrics.get("listen")) {
        v->parsed_by(parse_listen_address);  // checks the form; the text is kept as written
        config.listen = v->as_string();
    }
    return config;
}

ApiConfig read_api(const YamlMap& api) {
    ApiConfig config;
    if (const auto v = api.get("listen"); v && !v->as_string().empty()) {
        v->parsed_by(parse_listen_address);
        config.listen = v->as_string();
    }
    const auto path = [&](std::string_view key, std::string_view what, std::string& out) {
        if (const auto v = api.get(key); v && !v->as_string().empty()) out = read_absolute_path(*v, what);
    };
    path("tls_cert", "the server certificate (PEM)", config.tls_cert);
    path("tls_key", "the server key (PEM)", config.tls_key);
    path("tls_client_ca", "the client CA bundle (PEM)", config.tls_client_ca);
    path("tokens_file", "the bearer token file", config.tokens_file);
    path("audit_log", "the audit log", config.audit_log);
    if (const auto v = api.get("unauthenticated"); v && !v->as_string().empty()) {
        constexpr std::string_view kOnlyLoopback[] = {"loopback"};
        config.unauthenticated = v->as_one_of(kOnlyLoopback);
    }
    if ((config.tls_cert.empty()) != (config.tls_key.empty())) {
        const auto v = api.get(config.tls_cert.empty() ? "tls_key" : "tls_cert");
        v->fail_expected("tls_cert and tls_key together");
    }
    if (const auto v = api.get("max_queries")) config.max_queries = v->as_uint(1, 1024);
    if (const auto v = api.get("max_bytes")) config.max_bytes = v->parsed_by(parse_size);
    if (const auto v = api.get("max_duration")) config.max_duration_s = v->parsed_by(parse_duration);
    if (const auto v = api.get("max_request_bytes")) config.max_request_bytes = v->as_uint(1024, 1 << 20);
    if (const auto v = api.get("client_timeout")) config.client_timeout_s = v->parsed_by(parse_duration);
    for (auto [key, out] : {std::pair{"header_timeout", &config.header_timeout_s}, std::pair{"body_timeout", &config.body_timeout_s}}) {
        if (const auto v = api.get(key)) {
            *out = v->parsed_by(parse_duration);
            if (*out == 0) v->fail_expected("a duration of at least 1s");
        }
    }
    if (const auto v = api.get("max_connections")) config.max_connections = v->as_uint(1, 1 << 20);
    if (const auto v = api.get("max_connections_per_client")) config.max_connections_per_client = v->as_uint(1, 1 << 20);
    if (const auto v = api.get("threads")) config.threads = v->as_uint(2, 1024);
    if (const auto v = api.get("status_url")) config.status_url = v->as_string();
    return config;
}

FeedConfig read_feed(const YamlMap& feed, const std::vector<PortConfig>& ports) {
    FeedConfig config;
    if (const auto v = feed.get("enabled")) config.enabled = v->as_bool();
    if (const auto v = feed.get("ports")) config.ports = read_port_names(*v, ports);
    // Compiled by the preflight (--check) and by the feed when it starts.
    if (const auto v = feed.get("filter")) config.filter = v->as_string();
    if (const auto v = feed.get("max_consumers")) config.max_consumers = v->as_uint(1, 1024);
    if (const auto v = feed.get("buffer_bytes")) {
        config.buffer_bytes = v->parsed_by(parse_size);
        // At least one record of the largest snap length, at most what a 32-bit offset holds.
        if (config.buffer_bytes < (1u << 20) || config.buffer_bytes > (1ull << 31))
            v->fail_expected("a size 1M..2G");
    }
    const auto path = [&](std::string_view key, std::string_view what, std::string& out) {
        if (const auto v = feed.get(key); v && !v->as_string().empty()) out = read_absolute_path(*v, what);
    };
    path("tls_cert", "the server certificate (PEM)", config.tls_cert);
    path("tls_key", "the server key (PEM)", config.tls_key);
    path("tls_client_ca", "the consumers' CA bundle (PEM)", config.tls_client_ca);
    // TLS always asks for client certificates: a consumer gets packets only with one.
    const bool any_tls = config.tls() || !config.tls_key.empty() || !config.tls_client_ca.empty();
    const bool all_tls = config.tls() && !config.tls_key.empty() && !config.tls_client_ca.empty();
    if (any_tls && !all_tls) {
        const std::string_view missing =
            config.tls_cert.empty() ? "tls_cert" : config.tls_key.empty() ? "tls_key" : "tls_client_ca";
        const char* present = !config.tls_cert.empty() ? "tls_cert" : !config.tls_key.empty() ? "tls_key" : "tls_client_ca";
        feed.get(present)->fail("set tls_cert, tls_key and tls_client_ca together: " + std::string(missing) +
                                " is missing");
    }
    if (const auto v = feed.get("plaintext_on_network")) config.plaintext_on_network = v->as_bool();
    if (const auto v = feed.get("listen")) {
        const ListenAddress address = v->parsed_by(parse_listen_address);
        config.listen = v->as_string();
        if (config.enabled && !address.loopback() && !config.tls() && !config.plaintext_on_network)
            v->fail(config.listen + " is not a loopback address: set feed.tls_cert, feed.tls_key and "
                    "feed.tls_client_ca (TLS with client certificates), or feed.plaintext_on_network: true to send "
                    "packets over the network unencrypted");
    }
    return config;
}

LogConfig read_log(const YamlMap& log) {
    LogConfig config;
    if (const auto v = log.get("level")) config.level = v->as_one_of(kLogLevels);
    return config;
}

// --- the document -------------------------------------------------------------------

// Sections are read in dependency order: workers refer to lcores and ports.
Config read_config(const YamlMap& root) {
    Config config;
    config.eal = read_eal(root.section("eal", kEalKeys));
    config.ports = read_ports(root.require("ports", "a list of the ports to capture from"));
    config.capture = read_capture(root.section("capture", kCaptureKeys), config.eal, config.ports);
    config.output = read_output(root.section("output", kOutputKeys), config.capture);
    config.metrics = read_metrics(root.section("metrics", kMetricsKeys));
    config.api = read_api(root.section("api", kApiKeys));
    config.feed = read_feed(root.section("feed", kFeedKeys), config.ports);
    config.log = read_log(root.section("log", kLogKeys));
    return config;
}

// Bounded: a configuration is a few KiB, and a path such as /dev/zero or /dev/urandom
// must not make the loader read until memory runs out. Only regular files are read, and
// never more than kMaxConfigBytes + 1 bytes (a file may grow after the size check).
Result<std::string> read_open_file(int fd, const std::string& path) {
    const auto fail = [&](int error) { return config_error("cannot read " + path + ": " + std::strerror(error)); };
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(errno);
    if (!S_ISREG(st.st_mode)) return config_error("cannot read " + path + ": not a regular file");
    const auto too_large = [&] {
        return config_error("cannot read " + path + ": larger than " + std::to_string(kMaxConfigBytes >> 10) +
                            " KiB, the most a configuration may have");
    };
    if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) return too_large();
    std::string text;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(errno);
        if (n == 0) return text;
        text.append(buffer, static_cast<size_t>(n));
        if (text.size() > kMaxConfigBytes) return too_large();
    }
}

Result<std::string> read_file(const std::string& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return config_error("cannot read " + path + ": " + std::strerror(errno));
    Result<std::string> text = read_open_file(fd, path);
    ::close(fd);
    return text;
}

}  // namespace

bool PortConfig::is_pci() const { return normalize_pci_address(device).has_value(); }

const char* to_string(RssMode mode) { return name_of(mode, kRssModes); }
const char* to_string(TimestampMode mode) { return name_of(mode, kTimestampModes); }
const char* to_string(WriterCpus cpus) { return name_of(cpus, kWriterCpus); }

CpuSet worker_cpus(const EalConfig& eal) {
    return eal.cpu_ids.size() > 1 ? CpuSet(eal.cpu_ids.begin() + 1, eal.cpu_ids.end()) : CpuSet{};
}

std::vector<std::string> config_key_paths() {
    std::vector<std::string> paths;
    for (const SchemaLevel& level : kSchema) {
        for (const std::string_view key : level.keys) {
            paths.push_back(level.path.empty() ? std::string(key) : std::string(level.path) + "." + std::string(key));
        }
    }
    return paths;
}

Result<Config> parse_config(const std::string& yaml_text, const std::string& source_name) {
    try {
        const YAML::Node root = config_detail::load_single_document(yaml_text, source_name);
        Config config = read_config(YamlMap::document(root, kTopKeys, source_name));
        config.path = source_name;
        return config;
    } catch (const ConfigProblem& problem) {
        return config_error(problem.message);
    } catch (const YAML::Exception& error) {
        return config_error(config_detail::describe_yaml_error(error, source_name));
    } catch (const std::exception& error) {
        return config_error(source_name + ": cannot load the configuration: " + error.what());
    }
}

Result<Config> load_config(const std::string& path) {
    Result<std::string> text = read_file(path);
    if (!text) return text.error();
    return parse_config(text.value(), path);
}

}  // namespace linecap
