// The configuration loader: values reach the right fields, defaults apply, and every
// kind of mistake is reported on one line with the file, line and key path.
#include "config/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#ifndef LINECAP_SRC_DIR
#error "LINECAP_SRC_DIR must name the source tree (set in tests/config/meson.build)"
#endif

namespace linecap {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kSourceDir = LINECAP_SRC_DIR;
const std::string kShippedConfig = kSourceDir + "/config/linecap.yaml";
const std::string kFixtures = kSourceDir + "/tests/config/fixtures";

// The smallest valid file: 5 lines, so text appended to it starts on line 6.
const std::string kMinimal =
    "ports:\n"
    "  - name: tap0\n"
    "    device: net_null0\n"
    "output:\n"
    "  directory: /tmp/cap\n";

Config parse_ok(const std::string& yaml) {
    Result<Config> config = parse_config(yaml, "test.yaml");
    if (!config.ok()) {
        ADD_FAILURE() << "expected to parse, got: " << config.error().message;
        return {};
    }
    return std::move(config).value();
}

// The error for `yaml`, checked to be a one-line configuration error.
std::string parse_error(const std::string& yaml) {
    const Result<Config> config = parse_config(yaml, "test.yaml");
    if (config.ok()) {
        ADD_FAILURE() << "expected an error, but it parsed:\n" << yaml;
        return {};
    }
    EXPECT_TRUE(config.error().config) << "configuration errors must map to exit code 78";
    EXPECT_EQ(config.error().message.find('\n'), std::string::npos) << config.error().message;
    return config.error().message;
}

// --- a complete file ----------------------------------------------------------------

class FullFixture : public ::testing::Test {
protected:
    void SetUp() override {
        Result<Config> loaded = load_config(kFixtures + "/full.yaml");
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        config = std::move(loaded).value();
    }
    Config config;
};

TEST_F(FullFixture, RemembersWhereItCameFrom) { EXPECT_EQ(config.path, kFixtures + "/full.yaml"); }

TEST_F(FullFixture, FillsEal) {
    EXPECT_EQ(config.eal.lcores, "2,4-6");
    EXPECT_THAT(config.eal.lcore_ids, ElementsAre(2, 4, 5, 6));
    EXPECT_FALSE(config.eal.hugepages);
    EXPECT_EQ(config.eal.memory_mb, 2048u);
    EXPECT_THAT(config.eal.args, ElementsAre("--file-prefix", "lc-test"));
}

TEST_F(FullFixture, FillsPorts) {
    ASSERT_EQ(config.ports.size(), 2u);
    const PortConfig& wan = config.ports[0];
    EXPECT_EQ(wan.name, "wan_0");
    EXPECT_EQ(wan.device, "0000:03:00.0");  // normalised from "03:00.0"
    EXPECT_TRUE(wan.is_pci());
    EXPECT_EQ(wan.rx_queues, 2u);
    EXPECT_EQ(wan.rx_descriptors, 1024u);
    EXPECT_EQ(wan.rss, RssMode::device_default);
    EXPECT_EQ(wan.mtu, 9000u);
    EXPECT_FALSE(wan.promiscuous);
    EXPECT_EQ(wan.filter, "tcp port 443");
    EXPECT_EQ(wan.snaplen, 128u);

    const PortConfig& lab = config.ports[1];
    EXPECT_EQ(lab.name, "lab-1");
    EXPECT_EQ(lab.device, "net_pcap0,rx_pcap=/tmp/a.pcap");
    EXPECT_FALSE(lab.is_pci());
    EXPECT_EQ(lab.rss, RssMode::off);
    EXPECT_EQ(lab.rx_queues, 1u);  // defaults for what the entry leaves out
    EXPECT_EQ(lab.snaplen, 262144u);
}

TEST_F(FullFixture, FillsCapture) {
    EXPECT_EQ(config.capture.burst_size, 32u);
    EXPECT_EQ(config.capture.mbufs, 65535u);
    EXPECT_EQ(config.capture.mbuf_cache, 128u);
    EXPECT_EQ(config.capture.worker_priority, (ThreadPriority{ThreadPriority::Kind::nice, -10}));
    EXPECT_EQ(config.capture.idle_sleep_us, 50u);
    ASSERT_EQ(config.capture.workers.size(), 2u);
    EXPECT_EQ(config.capture.workers[0].lcore, 5u);
    EXPECT_THAT(config.capture.workers[0].queues,
                ElementsAre(WorkerMapping::Queue{"wan_0", 1}, WorkerMapping::Queue{"lab-1", 0}));
    EXPECT_EQ(config.capture.workers[1].lcore, 4u);
    EXPECT_THAT(config.capture.workers[1].queues, ElementsAre(WorkerMapping::Queue{"wan_0", 0}));
}

TEST_F(FullFixture, FillsOutput) {
    const OutputConfig& out = config.output;
    EXPECT_EQ(out.directory, "/srv/capture");
    EXPECT_EQ(out.format, FileKind::pcapng);
    EXPECT_EQ(out.file_template, "%Y%m%d-{seq}-{port}-q{queue}");
    EXPECT_EQ(out.rotate_size_bytes, 0u);
    EXPECT_EQ(out.rotate_interval_s, 60u);
    EXPECT_EQ(out.block_size_kb, 4096u);
    EXPECT_EQ(out.blocks_per_queue, 8u);
    EXPECT_EQ(out.flush_interval_ms, 250u);
    EXPECT_EQ(out.writer_threads, 4u);
    EXPECT_TRUE(out.o_direct);
    EXPECT_EQ(out.fsync, FsyncPolicy::interval);
    EXPECT_EQ(out.fsync_interval_s, 10u);
    EXPECT_FALSE(out.manifest);
    EXPECT_EQ(out.retention.max_bytes, 2ull << 40);
    EXPECT_DOUBLE_EQ(out.retention.max_percent, 85.5);
    EXPECT_EQ(out.retention.min_free_bytes, 500ull << 30);
    EXPECT_EQ(out.retention.max_age_s, 14u * 86400);
    EXPECT_EQ(out.retention.hold_file, "/etc/linecap/hold.list");
}

TEST_F(FullFixture, FillsMetricsAndLog) {
    EXPECT_FALSE(config.metrics.enabled);
    EXPECT_EQ(config.metrics.listen, "[::1]:9100");
    EXPECT_EQ(config.log.level, "debug");
}

// --- defaults -----------------------------------------------------------------------

TEST(Defaults, ApplyToEveryKeyLeftOut) {
    const Config config = parse_ok(kMinimal);
    EalConfig eal;
    eal.lcore_ids = {0, 1};  // the expansion of the default "0-1"
    eal.cpu_ids = {0, 1};
    EXPECT_EQ(config.eal, eal);
    ASSERT_EQ(config.ports.size(), 1u);
    PortConfig port;
    port.name = "tap0";
    port.device = "net_null0";
    EXPECT_EQ(config.ports[0], port);
    EXPECT_EQ(config.capture, CaptureConfig{});
    OutputConfig output;
    output.directory = "/tmp/cap";
    EXPECT_EQ(config.output, output);
    EXPECT_EQ(config.metrics, MetricsConfig{});
    EXPECT_EQ(config.log, LogConfig{});
    EXPECT_EQ(config.path, "test.yaml");
}

TEST(Defaults, ApplyToSectionsLeftEmpty) {
    const Config config = parse_ok(kMinimal + "eal:\ncapture:\nmetrics:\nlog: {}\n");
    EXPECT_THAT(config.eal.lcore_ids, ElementsAre(0, 1));
    EXPECT_EQ(config.capture, CaptureConfig{});
    EXPECT_EQ(config.metrics, MetricsConfig{});
    EXPECT_EQ(config.log, LogConfig{});
}

TEST(Defaults, AnEmptyFilterKeepsEverything) {
    const Config config = parse_ok(
        "ports:\n"
        "  - name: tap0\n"
        "    device: net_null0\n"
        "    filter:\n"
        "output: {directory: /c}\n");
    EXPECT_EQ(config.ports[0].filter, "");
}

// --- the shipped example ------------------------------------------------------------

TEST(ShippedConfig, Parses) {
    const Result<Config> config = load_config(kShippedConfig);
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->ports.size(), 2u);
}

// Collects the key paths present in a YAML tree, list items as "[]".
void collect_key_paths(const YAML::Node& node, const std::string& prefix, std::set<std::string>& paths) {
    if (node.IsMap()) {
        for (const auto& pair : node) {
            const std::string path = prefix.empty() ? pair.first.Scalar() : prefix + "." + pair.first.Scalar();
            paths.insert(path);
            collect_key_paths(pair.second, path, paths);
        }
    } else if (node.IsSequence()) {
        for (const auto& item : node) collect_key_paths(item, prefix + "[]", paths);
    }
}

TEST(ShippedConfig, ShowsEveryKey) {
    std::set<std::string> present;
    collect_key_paths(YAML::LoadFile(kShippedConfig), "", present);
    const std::vector<std::string> schema = config_key_paths();
    EXPECT_EQ(present, std::set<std::string>(schema.begin(), schema.end()));
}

// The example documents each default by using it, except where it shows an example.
TEST(ShippedConfig, ShowsTheDefaults) {
    const Result<Config> config = load_config(kShippedConfig);
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->eal.hugepages, EalConfig{}.hugepages);
    EXPECT_EQ(config->eal.memory_mb, EalConfig{}.memory_mb);
    EXPECT_EQ(config->eal.args, EalConfig{}.args);
    for (const PortConfig& shipped : config->ports) {
        PortConfig expected;
        expected.name = shipped.name;
        expected.device = shipped.device;
        expected.rx_queues = shipped.rx_queues;
        EXPECT_EQ(shipped, expected) << shipped.name;
    }
    CaptureConfig capture = config->capture;
    capture.workers.clear();
    EXPECT_EQ(capture, CaptureConfig{});
    EXPECT_EQ(config->output, OutputConfig{});
    EXPECT_EQ(config->metrics, MetricsConfig{});
    EXPECT_EQ(config->feed, FeedConfig{});
    EXPECT_EQ(config->log, LogConfig{});
}

// The configuration reference has a heading per key of the schema and none for a key the
// schema lacks: "### `output.rotate.size_mb`" (keys sharing one text share the heading).
// The page is generated from config/linecap.yaml's comments (scripts/config-reference.py;
// test doc-config-reference checks it is current), so a key added to the schema needs its
// comment in the example file and the page regenerated.
TEST(ConfigReference, HasAHeadingForEveryKey) {
    std::ifstream page(kSourceDir + "/doc/configuration.md");
    ASSERT_TRUE(page) << "cannot read doc/configuration.md";
    std::set<std::string> documented;
    const std::regex heading("^#{2,3} (`.*)$");
    const std::regex key("`([^`]+)`");
    for (std::string line; std::getline(page, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, heading)) continue;
        const std::string keys = m[1];
        for (auto it = std::sregex_iterator(keys.begin(), keys.end(), key); it != std::sregex_iterator(); ++it)
            documented.insert((*it)[1]);
    }
    const std::vector<std::string> paths = config_key_paths();
    const std::set<std::string> schema(paths.begin(), paths.end());
    for (const std::string& path : schema)
        EXPECT_TRUE(documented.contains(path))
            << path << " has no heading in doc/configuration.md: comment it in config/linecap.yaml, then run "
            << "scripts/config-reference.py --write";
    for (const std::string& path : documented)
        EXPECT_TRUE(schema.contains(path)) << "doc/configuration.md documents " << path << ", which the schema lacks";
}

TEST(ConfigKeyPaths, ListEveryLevelOnce) {
    const std::vector<std::string> paths = config_key_paths();
    EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), paths.size());
    EXPECT_THAT(paths, ::testing::IsSupersetOf({"eal", "eal.lcores", "ports", "ports[].rx_queues", "capture.workers",
                                                "capture.workers[].queues", "output.rotate.size_mb",
                                                "output.retention.max_age", "metrics.listen", "log.level"}));
}

// --- reading files ------------------------------------------------------------------

TEST(LoadConfig, ReportsAMissingFile) {
    const Result<Config> config = load_config("/nonexistent/x.yaml");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message, "cannot read /nonexistent/x.yaml: No such file or directory");
    EXPECT_TRUE(config.error().config);
}

TEST(LoadConfig, ReportsADirectory) {
    const Result<Config> config = load_config(kFixtures);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message, "cannot read " + kFixtures + ": not a regular file");
}

// `--config /dev/zero` (or /dev/urandom) read until memory ran out.
TEST(LoadConfig, ReadsOnlyRegularFilesOfBoundedSize) {
    for (const char* device : {"/dev/zero", "/dev/urandom"}) {
        const Result<Config> config = load_config(device);
        ASSERT_FALSE(config.ok()) << device;
        EXPECT_EQ(config.error().message, std::string("cannot read ") + device + ": not a regular file");
        EXPECT_TRUE(config.error().config);
    }
    const std::string big = "/tmp/linecap-config-test-" + std::to_string(::getpid()) + ".yaml";
    {
        std::FILE* f = std::fopen(big.c_str(), "w");
        ASSERT_NE(f, nullptr);
        const std::string line(1023, '#');
        for (int i = 0; i < 1025; ++i) std::fprintf(f, "%s\n", line.c_str());  // a comment of 1025 KiB
        std::fclose(f);
    }
    const Result<Config> config = load_config(big);
    ::unlink(big.c_str());
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message, "cannot read " + big + ": larger than 1024 KiB, the most a configuration may have");
}

TEST(LoadConfig, NamesTheFileInErrors) {
    const Result<Config> config = load_config(kFixtures + "/bad_mtu.yaml");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message,
              kFixtures + "/bad_mtu.yaml:6: ports[0].mtu: expected an integer 68..9000, got '10000'");
}

// --- the document -------------------------------------------------------------------

constexpr const char* kTopKeys = "eal, ports, capture, output, metrics, api, feed, log";

TEST(Document, EmptyFile) {
    EXPECT_EQ(parse_error(""),
              std::string("test.yaml:1: the file is empty; expected a mapping with the keys ") + kTopKeys);
    EXPECT_EQ(parse_error("# nothing but a comment\n\n"), parse_error(""));
}

TEST(Document, NotAMapping) {
    EXPECT_EQ(parse_error("- tap0\n- tap1\n"),
              std::string("test.yaml:1: expected a mapping with the keys ") + kTopKeys + ", got a list");
    EXPECT_EQ(parse_error("just text\n"),
              std::string("test.yaml:1: expected a mapping with the keys ") + kTopKeys + ", got 'just text'");
}

TEST(Document, SyntaxErrorsNameTheLine) {
    EXPECT_EQ(parse_error(kMinimal + "log: {level: info\n"), "test.yaml:7: invalid YAML: end of map flow not found");
    EXPECT_THAT(parse_error("ports:\n  - name: a\n   device: b\n"), StartsWith("test.yaml:3: invalid YAML: "));
    EXPECT_EQ(parse_error(kMinimal + "log: *missing\n"),
              "test.yaml:6: invalid YAML: the referenced anchor is not defined");
}

// The line is the --- that starts the second document.
TEST(Document, MoreThanOneDocument) {
    EXPECT_EQ(parse_error(kMinimal + "---\n" + kMinimal),
              "test.yaml:6: the file holds 2 YAML documents (separated by ---); expected one");
}

// yaml-cpp 0.7 (its issue 1040): a token that starts no node where a document
// starts is never consumed, and YAML::LoadAll loops for ever adding empty documents. Any
// such token, alone, after a document or after ---, is one error line, at once.
TEST(Document, AStrayTokenIsAnErrorNotAnEndlessLoop) {
    EXPECT_EQ(parse_error(","), "test.yaml:1: invalid YAML: unexpected ',' (column 1)");
    EXPECT_EQ(parse_error(kMinimal + "---\n  ,\n"), "test.yaml:7: invalid YAML: unexpected ',' (column 3)");
    for (const char* stray : {",", "]", "}", ",,,", ", a", "- a\n,", "a\n]\n", "--- ,\n"}) {
        EXPECT_THAT(parse_error(stray), StartsWith("test.yaml:")) << stray;
    }
}

TEST(Document, UnknownTopLevelKeySuggestsTheIntendedOne) {
    EXPECT_EQ(parse_error(kMinimal + "outptu:\n  format: pcap\n"),
              std::string("test.yaml:6: unknown key 'outptu' (did you mean 'output'?); valid keys here: ") + kTopKeys);
}

TEST(Document, UnknownKeyFarFromAnyValidOneGetsNoGuess) {
    EXPECT_EQ(parse_error(kMinimal + "colour: blue\n"),
              std::string("test.yaml:6: unknown key 'colour'; valid keys here: ") + kTopKeys);
}

TEST(Document, DuplicateKey) {
    EXPECT_EQ(parse_error(kMinimal + "log:\n  level: info\n  level: debug\n"),
              "test.yaml:8: log: key 'level' is given twice (first at line 7); give each key once");
}

TEST(Document, KeyThatIsNotAName) {
    EXPECT_EQ(parse_error(kMinimal + "? [a, b]\n: 1\n"), "test.yaml:6: keys must be plain names, got a list");
}

TEST(Document, SectionThatIsNotAMapping) {
    EXPECT_EQ(parse_error(kMinimal + "log: debug\n"),
              "test.yaml:6: log: expected a mapping with the keys level, got 'debug'");
}

// --- required keys ------------------------------------------------------------------

TEST(Required, Ports) {
    EXPECT_EQ(parse_error("output:\n  directory: /c\n"),
              "test.yaml:1: ports: required key is missing; expected a list of the ports to capture from");
}

TEST(Required, AtLeastOnePort) {
    EXPECT_EQ(parse_error("ports: []\noutput: {directory: /c}\n"),
              "test.yaml:1: ports: expected at least one port, got none");
    EXPECT_EQ(parse_error("ports:\noutput: {directory: /c}\n"),
              "test.yaml:1: ports: expected at least one port, got none");
}

TEST(Required, PortsIsAList) {
    EXPECT_EQ(parse_error("ports:\n  name: tap0\n  device: net_null0\noutput: {directory: /c}\n"),
              "test.yaml:1: ports: expected a list, got a mapping");
}

TEST(Required, PortName) {
    EXPECT_EQ(parse_error("output: {directory: /c}\nports:\n  - device: net_null0\n"),
              "test.yaml:3: ports[0].name: required key is missing; expected a port name such as tap0 (used in file "
              "names and metrics)");
}

TEST(Required, PortDevice) {
    EXPECT_EQ(parse_error("output: {directory: /c}\nports:\n  - name: tap0\n  - name: tap1\n"),
              "test.yaml:3: ports[0].device: required key is missing; expected a PCI address (0000:03:00.0 or 03:00.0) "
              "or a DPDK vdev starting with net_ (net_pcap0,rx_pcap=a.pcap)");
}

TEST(Required, OutputDirectoryInAGivenSection) {
    EXPECT_EQ(
        parse_error("ports: [{name: tap0, device: net_null0}]\noutput:\n  format: pcap\n"),
        "test.yaml:2: output.directory: required key is missing; expected the absolute path of the capture directory (or "
              "output.volumes)");
}

TEST(Required, OutputDirectoryWithoutTheSection) {
    EXPECT_EQ(
        parse_error("ports: [{name: tap0, device: net_null0}]\n"),
        "test.yaml:1: output.directory: required key is missing; expected the absolute path of the capture directory (or "
              "output.volumes)");
}

// --- eal ----------------------------------------------------------------------------

TEST(Eal, LcoreListIsExpandedInOrder) {
    const Config config = parse_ok(kMinimal + "eal:\n  lcores: 3,0-1\n");
    EXPECT_EQ(config.eal.lcores, "3,0-1");
    EXPECT_THAT(config.eal.lcore_ids, ElementsAre(3, 0, 1));
}

TEST(Eal, BlanksAreDroppedFromTheListPassedToEal) {
    const Config config = parse_ok(kMinimal + "eal:\n  lcores: \"0, 2, 4\"\n");
    EXPECT_EQ(config.eal.lcores, "0,2,4");
    EXPECT_THAT(config.eal.lcore_ids, ElementsAre(0, 2, 4));
}

TEST(Eal, NeedsAMainAndAWorkerLcore) {
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  lcores: \"2\"\n"),
              "test.yaml:7: eal.lcores: '2' names 1 lcore; expected at least 2: the main lcore first, then one or more "
              "worker lcores");
}

TEST(Eal, DuplicateLcore) {
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  lcores: 0-2,1\n"),
              "test.yaml:7: eal.lcores: lcore 1 is listed twice in '0-2,1'; each lcore runs one thread");
}

TEST(Eal, MalformedLcoreList) {
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  lcores: 0..3\n"),
              "test.yaml:7: eal.lcores: expected lcore ids and ranges like 0-3, 0,2,4 or 1-2,5, got '0..3'");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  lcores: [0, 1]\n"),
              "test.yaml:7: eal.lcores: expected a single value, got a list");
}

TEST(Eal, Scalars) {
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  hugepages: sometimes\n"),
              "test.yaml:7: eal.hugepages: expected true or false, got 'sometimes'");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  memory_mb: -1\n"),
              "test.yaml:7: eal.memory_mb: expected an integer 0..1048576, got '-1'");
}

TEST(Eal, ArgsPassThrough) {
    const Config config = parse_ok(kMinimal + "eal:\n  args: [--file-prefix=lc, --log-level, \"pmd.*:debug\"]\n");
    EXPECT_THAT(config.eal.args, ElementsAre("--file-prefix=lc", "--log-level", "pmd.*:debug"));
}

TEST(Eal, ArgsMustNotRepeatWhatOtherKeysSet) {
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  args:\n    - --file-prefix=lc\n    - -l\n    - 0-3\n"),
              "test.yaml:9: eal.args[1]: '-l' is set by linecap from eal.lcores; remove it here");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  args: [\"-l0-3\"]\n"),
              "test.yaml:7: eal.args[0]: '-l0-3' is set by linecap from eal.lcores; remove it here");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  args: [\"--vdev=net_null1\"]\n"),
              "test.yaml:7: eal.args[0]: '--vdev=net_null1' is set by linecap from ports[].device; remove it here");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  args: [--no-huge]\n"),
              "test.yaml:7: eal.args[0]: '--no-huge' is set by linecap from eal.hugepages; remove it here");
    EXPECT_EQ(parse_error(kMinimal + "eal:\n  args: [\"\"]\n"),
              "test.yaml:7: eal.args[0]: expected an EAL command line argument, got ''");
}

// --- ports --------------------------------------------------------------------------

// A file with one port whose entry ends with `extra` (lines 4 and on).
std::string port_with(const std::string& extra) {
    return "output: {directory: /c}\n"
           "ports:\n"
           "  - name: tap0\n"
           "    device: net_null0\n" +
           extra;
}

TEST(Ports, RxQueues) {
    EXPECT_EQ(parse_error(port_with("    rx_queues: two\n")),
              "test.yaml:5: ports[0].rx_queues: expected an integer 1..1024, got 'two'");
    EXPECT_EQ(parse_error(port_with("    rx_queues: 0\n")),
              "test.yaml:5: ports[0].rx_queues: expected an integer 1..1024, got '0'");
    EXPECT_EQ(parse_error(port_with("    rx_queues: 1025\n")),
              "test.yaml:5: ports[0].rx_queues: expected an integer 1..1024, got '1025'");
    EXPECT_EQ(parse_error(port_with("    rx_queues:\n")),
              "test.yaml:5: ports[0].rx_queues: expected an integer 1..1024, got nothing");
    EXPECT_EQ(parse_error(port_with("    rx_queues: [1]\n")),
              "test.yaml:5: ports[0].rx_queues: expected an integer 1..1024, got a list");
    EXPECT_EQ(parse_ok(port_with("    rx_queues: 1024\n")).ports[0].rx_queues, 1024u);
    EXPECT_EQ(parse_ok(port_with("    rx_queues: \"8\"\n")).ports[0].rx_queues, 8u);
}

TEST(Ports, RxDescriptorsArePowersOfTwo) {
    EXPECT_EQ(parse_error(port_with("    rx_descriptors: 1000\n")),
              "test.yaml:5: ports[0].rx_descriptors: expected a power of two 64..32768, got '1000'");
    EXPECT_EQ(parse_error(port_with("    rx_descriptors: 32\n")),
              "test.yaml:5: ports[0].rx_descriptors: expected a power of two 64..32768, got '32'");
    EXPECT_EQ(parse_error(port_with("    rx_descriptors: 65536\n")),
              "test.yaml:5: ports[0].rx_descriptors: expected a power of two 64..32768, got '65536'");
    EXPECT_EQ(parse_ok(port_with("    rx_descriptors: 64\n")).ports[0].rx_descriptors, 64u);
    EXPECT_EQ(parse_ok(port_with("    rx_descriptors: 32768\n")).ports[0].rx_descriptors, 32768u);
}

TEST(Ports, MtuAndSnaplen) {
    EXPECT_EQ(parse_error(port_with("    mtu: 67\n")),
              "test.yaml:5: ports[0].mtu: expected an integer 68..9000, got '67'");
    EXPECT_EQ(parse_error(port_with("    mtu: 9001\n")),
              "test.yaml:5: ports[0].mtu: expected an integer 68..9000, got '9001'");
    EXPECT_EQ(parse_error(port_with("    snaplen: 15\n")),
              "test.yaml:5: ports[0].snaplen: expected an integer 16..262144, got '15'");
    EXPECT_EQ(parse_error(port_with("    snaplen: 262145\n")),
              "test.yaml:5: ports[0].snaplen: expected an integer 16..262144, got '262145'");
}

TEST(Ports, RssModes) {
    EXPECT_EQ(parse_ok(port_with("    rss: symmetric\n")).ports[0].rss, RssMode::symmetric);
    EXPECT_EQ(parse_ok(port_with("    rss: device-default\n")).ports[0].rss, RssMode::device_default);
    EXPECT_EQ(parse_ok(port_with("    rss: off\n")).ports[0].rss, RssMode::off);
    EXPECT_EQ(parse_error(port_with("    rss: toeplitz\n")),
              "test.yaml:5: ports[0].rss: expected one of symmetric, device-default, off, got 'toeplitz'");
}

TEST(Ports, Promiscuous) {
    EXPECT_FALSE(parse_ok(port_with("    promiscuous: no\n")).ports[0].promiscuous);
    EXPECT_TRUE(parse_ok(port_with("    promiscuous: True\n")).ports[0].promiscuous);
    EXPECT_FALSE(parse_ok(port_with("    promiscuous: OFF\n")).ports[0].promiscuous);
    EXPECT_EQ(parse_error(port_with("    promiscuous: 1\n")),
              "test.yaml:5: ports[0].promiscuous: expected true or false, got '1'");
}

TEST(Ports, UnknownKeySuggestsTheIntendedOne) {
    EXPECT_EQ(
        parse_error(port_with("    rx_queue: 4\n")),
        "test.yaml:5: ports[0]: unknown key 'rx_queue' (did you mean 'rx_queues'?); valid keys here: name, device, "
        "rx_queues, rx_descriptors, rss, mtu, promiscuous, filter, snaplen");
}

TEST(Ports, NamesAreShortAndSafeForFileNames) {
    EXPECT_EQ(parse_error("output: {directory: /c}\nports:\n  - name: tap/0\n    device: net_null0\n"),
              "test.yaml:3: ports[0].name: expected a port name of 1..32 letters, digits, '_' or '-', got 'tap/0'");
    EXPECT_EQ(parse_error("output: {directory: /c}\nports:\n  - name: \"\"\n    device: net_null0\n"),
              "test.yaml:3: ports[0].name: expected a port name of 1..32 letters, digits, '_' or '-', got ''");
    const std::string name32(32, 'a');
    EXPECT_EQ(
        parse_ok("output: {directory: /c}\nports:\n  - name: " + name32 + "\n    device: net_null0\n").ports[0].name,
        name32);
    EXPECT_THAT(parse_error("output: {directory: /c}\nports:\n  - name: " + name32 + "b\n    device: net_null0\n"),
                StartsWith("test.yaml:3: ports[0].name: expected a port name of 1..32"));
}

TEST(Ports, NamesAreUnique) {
    EXPECT_EQ(
        parse_error("output: {directory: /c}\n"
                    "ports:\n"
                    "  - name: tap0\n"
                    "    device: net_null0\n"
                    "  - name: tap0\n"
                    "    device: net_null1\n"),
        "test.yaml:5: ports[1].name: 'tap0' is already given at ports[0].name (line 3); port names must be unique");
}

TEST(Ports, DevicesAreUniqueAfterNormalisation) {
    EXPECT_EQ(parse_error("output: {directory: /c}\n"
                          "ports:\n"
                          "  - {name: a, device: \"0000:03:00.0\"}\n"
                          "  - {name: b, device: \"03:00.0\"}\n"),
              "test.yaml:4: ports[1].device: '0000:03:00.0' is already given at ports[0].device (line 3); a device can "
              "be captured by one port only");
    // A vdev is one device whatever its arguments: EAL names it by what precedes the comma.
    EXPECT_EQ(parse_error("output: {directory: /c}\n"
                          "ports:\n"
                          "  - {name: a, device: \"net_pcap0,rx_pcap=a.pcap\"}\n"
                          "  - {name: b, device: \"net_pcap0,rx_pcap=b.pcap\"}\n"),
              "test.yaml:4: ports[1].device: 'net_pcap0' is already given at ports[0].device (line 3); a device can be "
              "captured by one port only");
}

TEST(Ports, PciAddressesAreNormalised) {
    const Config config = parse_ok(
        "output: {directory: /c}\n"
        "ports:\n"
        "  - {name: a, device: 0A:00.1}\n"
        "  - {name: b, device: \"0001:0b:1F.0\"}\n");
    EXPECT_EQ(config.ports[0].device, "0000:0a:00.1");
    EXPECT_EQ(config.ports[1].device, "0001:0b:1f.0");
    EXPECT_TRUE(config.ports[0].is_pci());
    EXPECT_TRUE(config.ports[1].is_pci());
}

TEST(Ports, VdevsAreKeptAsWritten) {
    const Config config = parse_ok(
        "output: {directory: /c}\n"
        "ports:\n"
        "  - name: tap0\n"
        "    device: \"net_af_packet0,iface=veth0,qpairs=4\"\n");
    EXPECT_EQ(config.ports[0].device, "net_af_packet0,iface=veth0,qpairs=4");
    EXPECT_FALSE(config.ports[0].is_pci());
}

TEST(Ports, DeviceOfAnotherFormNamesBothAcceptedForms) {
    const std::string expected_forms =
        "expected a PCI address (0000:03:00.0 or 03:00.0) or a DPDK vdev starting with net_ (net_pcap0,rx_pcap=a.pcap)";
    for (const char* device : {"eth0", "0000:03:00", "3:00.0", "0000:03:00.8", "net_", "net_ pcap0", "crypto_null0"}) {
        EXPECT_EQ(
            parse_error("output: {directory: /c}\nports:\n  - name: p\n    device: \"" + std::string(device) + "\"\n"),
            "test.yaml:4: ports[0].device: " + expected_forms + ", got '" + device + "'");
    }
}

// --- capture ------------------------------------------------------------------------

TEST(Capture, Scalars) {
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  burst_size: 0\n"),
              "test.yaml:7: capture.burst_size: expected an integer 1..512, got '0'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  burst_size: 513\n"),
              "test.yaml:7: capture.burst_size: expected an integer 1..512, got '513'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  mbufs: 100\n"),
              "test.yaml:7: capture.mbufs: expected 0 (sized from the ports) or 1024..134217728, got '100'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  mbuf_cache: 513\n"),
              "test.yaml:7: capture.mbuf_cache: expected an integer 0..512, got '513'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  worker_priority: fifo:0\n"),
              "test.yaml:7: capture.worker_priority: expected normal, nice:N (-20..19), fifo:N or rr:N (1..99), "
              "got 'fifo:0'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  idle_sleep_us: 1001\n"),
              "test.yaml:7: capture.idle_sleep_us: expected an integer 0..1000, got '1001'");
}

TEST(Capture, WorkerSchedulingKeys) {
    const Config config = parse_ok(kMinimal + "capture:\n  worker_priority: \"rr:5\"\n  idle_sleep_us: 0\n");
    EXPECT_EQ(config.capture.worker_priority, (ThreadPriority{ThreadPriority::Kind::rr, 5}));
    EXPECT_EQ(config.capture.idle_sleep_us, 0u);
    EXPECT_EQ(config.capture.sleep_below, 1u);  // the default: only after an empty poll
}

// capture.sleep_below counts packets of one poll of every queue: at most a burst.
TEST(Capture, SleepBelowIsBoundedByTheBurst) {
    EXPECT_EQ(parse_ok(kMinimal + "capture:\n  sleep_below: 64\n").capture.sleep_below, 64u);
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  sleep_below: 65\n"),
              "test.yaml:7: capture.sleep_below: expected 1..burst_size (64), got '65'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  burst_size: 16\n  sleep_below: 32\n"),
              "test.yaml:8: capture.sleep_below: expected 1..burst_size (16), got '32'");
    EXPECT_EQ(parse_error(kMinimal + "capture:\n  sleep_below: 0\n"),
              "test.yaml:7: capture.sleep_below: expected 1..burst_size (64), got '0'");
}

TEST(FlowCap, ValuesReachTheirFields) {
    const Config bytes = parse_ok(kMinimal +
                                  "capture:\n  flow_cap:\n    enabled: true\n    ports: [tap0]\n"
                                  "    filter: \"tcp port 443\"\n    bytes: 64K\n    snaplen_after: 0\n"
                                  "    flows: 1024\n    idle_timeout: 2m\n");
    const FlowCapConfig& cap = bytes.capture.flow_cap;
    EXPECT_TRUE(cap.applies_to("tap0"));
    EXPECT_FALSE(cap.applies_to("other"));
    EXPECT_EQ(cap.filter, "tcp port 443");
    EXPECT_EQ(cap.bytes, 65536u);
    EXPECT_EQ(cap.packets, 0u);
    EXPECT_EQ(cap.snaplen_after, 0u);
    EXPECT_EQ(cap.flows, 1024u);
    EXPECT_EQ(cap.idle_timeout_s, 120u);
    // Packets alone: bytes (1M by default) is then not the measure.
    const Config packets = parse_ok(kMinimal + "capture:\n  flow_cap:\n    packets: 20\n");
    EXPECT_EQ(packets.capture.flow_cap.packets, 20u);
    EXPECT_EQ(packets.capture.flow_cap.bytes, 0u);
    EXPECT_FALSE(packets.capture.flow_cap.applies_to("tap0"));  // not enabled
}

TEST(FlowCap, MistakesNameTheKey) {
    const std::string cap = kMinimal + "capture:\n  flow_cap:\n";
    EXPECT_EQ(parse_error(cap + "    snaplen: 64\n"),
              "test.yaml:8: capture.flow_cap: unknown key 'snaplen'; valid keys here: enabled, ports, filter, bytes, "
              "packets, snaplen_after, flows, idle_timeout");
    EXPECT_EQ(parse_error(cap + "    snaplen_after: 8\n"),
              "test.yaml:8: capture.flow_cap.snaplen_after: expected 0 (drop the packets after the cap) or "
              "16..262144, got '8'");
    EXPECT_EQ(parse_error(cap + "    bytes: 1M\n    packets: 10\n"),
              "test.yaml:9: capture.flow_cap.packets: bytes and packets are both set; cap flows by one of them (set "
              "the other to 0)");
    EXPECT_EQ(parse_error(cap + "    bytes: 0\n"),
              "test.yaml:8: capture.flow_cap.bytes: bytes and packets are both 0; set one of them to the amount a "
              "flow keeps in full");
    EXPECT_EQ(parse_error(cap + "    bytes: 5G\n"),
              "test.yaml:8: capture.flow_cap.bytes: expected a size of at most 4095M (4 GiB - 2), got '5G'");
    EXPECT_EQ(parse_error(cap + "    flows: 1000\n"),
              "test.yaml:8: capture.flow_cap.flows: expected a power of two 1024..16777216, got '1000'");
    EXPECT_EQ(parse_error(cap + "    ports: [tap9]\n"),
              "test.yaml:8: capture.flow_cap.ports[0]: no port is named 'tap9'; the ports are tap0");
    EXPECT_EQ(parse_error(cap + "    idle_timeout: 0s\n"),
              "test.yaml:8: capture.flow_cap.idle_timeout: expected a duration 1s..1d like 60s, got '0s'");
}

TEST(Dedup, ValuesAndMistakes) {
    const Config on = parse_ok(kMinimal + "capture:\n  dedup:\n    enabled: true\n    window_us: 50\n"
                                          "    entries: 2048\n");
    EXPECT_TRUE(on.capture.dedup.applies_to("tap0"));
    EXPECT_EQ(on.capture.dedup.window_us, 50u);
    EXPECT_EQ(on.capture.dedup.entries, 2048u);
    const std::string dedup = kMinimal + "capture:\n  dedup:\n";
    EXPECT_EQ(parse_error(dedup + "    window: 1ms\n"),
              "test.yaml:8: capture.dedup: unknown key 'window'; valid keys here: enabled, ports, window_us, entries");
    EXPECT_EQ(parse_error(dedup + "    window_us: 0\n"),
              "test.yaml:8: capture.dedup.window_us: expected an integer 1..1000000, got '0'");
    EXPECT_EQ(parse_error(dedup + "    entries: 3000\n"),
              "test.yaml:8: capture.dedup.entries: expected a power of two 1024..16777216, got '3000'");
}

// Two ports with two queues each, lcores 0 (main) and 1..3 (workers). `workers:` is on
// line 13, so the first worker starts on line 14.
std::string with_workers(const std::string& workers) {
    return "eal:\n"
           "  lcores: 0-3\n"
           "output:\n"
           "  directory: /c\n"
           "ports:\n"
           "  - name: a\n"
           "    device: net_null0\n"
           "    rx_queues: 2\n"
           "  - name: b\n"
           "    device: net_null1\n"
           "    rx_queues: 2\n"
           "capture:\n"
           "  workers:\n" +
           workers;
}

TEST(Workers, ExplicitMappingIsKept) {
    const Config config =
        parse_ok(with_workers("    - {lcore: 3, queues: [\"b:1\", \"a:0\"]}\n"
                              "    - {lcore: 1, queues: [\"a:1\", \"b:0\"]}\n"));
    ASSERT_EQ(config.capture.workers.size(), 2u);
    EXPECT_EQ(config.capture.workers[0].lcore, 3u);
    EXPECT_THAT(config.capture.workers[0].queues,
                ElementsAre(WorkerMapping::Queue{"b", 1}, WorkerMapping::Queue{"a", 0}));
    EXPECT_EQ(config.capture.workers[1].lcore, 1u);
}

TEST(Workers, AnEmptyListMeansAutomatic) { EXPECT_TRUE(parse_ok(with_workers("    []\n")).capture.workers.empty()); }

TEST(Workers, LcoreMustNotBeTheMainOne) {
    EXPECT_EQ(
        parse_error(with_workers("    - {lcore: 0, queues: [a:0, a:1, b:0, b:1]}\n")),
        "test.yaml:14: capture.workers[0].lcore: lcore 0 is the main lcore (the first in eal.lcores); expected one "
        "of the worker lcores 1, 2, 3");
}

TEST(Workers, LcoreMustBeInEalLcores) {
    EXPECT_EQ(parse_error(with_workers("    - {lcore: 7, queues: [a:0, a:1, b:0, b:1]}\n")),
              "test.yaml:14: capture.workers[0].lcore: lcore 7 is not in eal.lcores '0-3'; expected one of the worker "
              "lcores 1, 2, 3");
    EXPECT_EQ(parse_error(with_workers("    - {lcore: one, queues: [a:0]}\n")),
              "test.yaml:14: capture.workers[0].lcore: expected one of the worker lcores 1, 2, 3, got 'one'");
}

TEST(Workers, EachLcoreOnce) {
    EXPECT_EQ(
        parse_error(with_workers("    - lcore: 1\n"
                                 "      queues: [a:0, a:1]\n"
                                 "    - lcore: 1\n"
                                 "      queues: [b:0, b:1]\n")),
        "test.yaml:16: capture.workers[1].lcore: '1' is already given at capture.workers[0].lcore (line 14); give "
        "each worker lcore one entry listing all its queues");
}

TEST(Workers, QueueRefsNameAPortAndQueue) {
    EXPECT_EQ(parse_error(with_workers("    - lcore: 1\n"
                                       "      queues: [a:0, a:1, c:0]\n")),
              "test.yaml:15: capture.workers[0].queues[2]: no port is named 'c'; the ports are a, b");
    EXPECT_EQ(parse_error(with_workers("    - lcore: 1\n"
                                       "      queues: [a:2]\n")),
              "test.yaml:15: capture.workers[0].queues[0]: port a has 2 rx queue(s), numbered 0..1; got queue 2");
    for (const char* ref : {"a", "a:", ":0", "a:x", "a:-1"}) {
        EXPECT_EQ(
            parse_error(with_workers("    - lcore: 1\n      queues: [\"" + std::string(ref) + "\"]\n")),
            "test.yaml:15: capture.workers[0].queues[0]: expected a queue as \"port:queue\", like \"tap0:0\", got '" +
                std::string(ref) + "'")
            << ref;
    }
}

TEST(Workers, EachQueueOnce) {
    EXPECT_EQ(
        parse_error(with_workers("    - lcore: 1\n"
                                 "      queues: [a:0, a:1]\n"
                                 "    - lcore: 2\n"
                                 "      queues:\n"
                                 "        - b:0\n"
                                 "        - a:1\n")),
        "test.yaml:19: capture.workers[1].queues[1]: 'a:1' is already given at capture.workers[0].queues[1] (line "
        "15); each queue is polled by exactly one worker");
}

TEST(Workers, EveryQueueIsAssigned) {
    EXPECT_EQ(parse_error(with_workers("    - lcore: 1\n"
                                       "      queues: [a:0, a:1, b:1]\n")),
              "test.yaml:13: capture.workers: queue b:0 is not assigned to any worker; when workers are listed, every "
              "queue of every port must be assigned exactly once (or leave workers out to spread them automatically)");
}

TEST(Workers, NeedLcoreAndQueues) {
    EXPECT_EQ(
        parse_error(with_workers("    - queues: [a:0, a:1, b:0, b:1]\n")),
        "test.yaml:14: capture.workers[0].lcore: required key is missing; expected one of the worker lcores 1, 2, 3");
    EXPECT_THAT(parse_error(with_workers("    - lcore: 1\n")),
                StartsWith("test.yaml:14: capture.workers[0].queues: required key is missing"));
    EXPECT_EQ(parse_error(with_workers("    - lcore: 1\n      queues: []\n")),
              "test.yaml:15: capture.workers[0].queues: expected at least one queue like \"tap0:0\", got none");
    EXPECT_EQ(parse_error(with_workers("    - lcore: 1\n      queue: [a:0]\n")),
              "test.yaml:15: capture.workers[0]: unknown key 'queue' (did you mean 'queues'?); valid keys here: lcore, "
              "queues");
}

// --- output -------------------------------------------------------------------------

// A file whose output section holds `lines` (from line 6).
std::string output_with(const std::string& lines) {
    return "ports:\n"
           "  - name: tap0\n"
           "    device: net_null0\n"
           "output:\n"
           "  directory: /tmp/cap\n" +
           lines;
}

TEST(Output, DirectoryIsAbsolute) {
    EXPECT_EQ(
        parse_error("ports: [{name: a, device: net_null0}]\noutput:\n  directory: captures\n"),
        "test.yaml:3: output.directory: expected an absolute path (starting with /) of the capture directory, got "
        "'captures'");
    EXPECT_EQ(parse_error("ports: [{name: a, device: net_null0}]\noutput:\n  directory:\n"),
              "test.yaml:3: output.directory: expected the absolute path of the capture directory, got nothing");
}

TEST(Output, Format) {
    EXPECT_EQ(parse_ok(output_with("  format: pcapng\n")).output.format, FileKind::pcapng);
    EXPECT_EQ(parse_error(output_with("  format: erf\n")),
              "test.yaml:6: output.format: expected one of pcap, pcapng, got 'erf'");
}

TEST(Output, FileTemplateNamesEachQueueApart) {
    EXPECT_EQ(parse_error(output_with("  file_template: \"%Y%m%d-{port}\"\n")),
              "test.yaml:6: output.file_template: must contain {port} and {queue}: every queue writes its own files, "
              "and without both two queues would write to the same name");
    EXPECT_EQ(parse_error(output_with("  file_template: \"{port}/{queue}\"\n")),
              "test.yaml:6: output.file_template: must be a file name, not a path: remove the '/' (files go to "
              "output.directory)");
    EXPECT_EQ(parse_error(output_with("  file_template: \".{port}-{queue}\"\n")),
              "test.yaml:6: output.file_template: must not start with '.': hidden names are kept for files still being "
              "written");
    EXPECT_EQ(
        parse_error(output_with("  file_template: \"{port}-{queue}-{sequence}\"\n")),
        "test.yaml:6: output.file_template: unknown placeholder '{sequence}'; the placeholders are {port}, {queue}, "
        "{nsec}, {seq}");
    EXPECT_EQ(
        parse_error(output_with("  file_template: \"{port}-{queue}-{\"\n")),
        "test.yaml:6: output.file_template: unknown placeholder '{'; the placeholders are {port}, {queue}, {nsec}, "
        "{seq}");
    EXPECT_THAT(parse_error(output_with("  file_template: \"\"\n")),
                StartsWith("test.yaml:6: output.file_template: expected a file name template like"));
    EXPECT_EQ(parse_ok(output_with("  file_template: \"{seq}_{nsec}_{queue}_{port}\"\n")).output.file_template,
              "{seq}_{nsec}_{queue}_{port}");
}

// --check accepted templates the `linecap` tool then refused, names over 255
// bytes, and a NUL. Every template accepted here is one FileTemplate::compile accepts,
// which is what `linecap` reads names with.
TEST(Output, FileTemplateTheToolCanReadBack) {
    EXPECT_EQ(parse_error(output_with("  file_template: \"{port}{queue}%\"\n")),
              "test.yaml:6: output.file_template: ends with a lone '%' (write %% for a percent sign)");
    EXPECT_THAT(parse_error(output_with("  file_template: \"%Y{port}{queue}%Q\"\n")),
                StartsWith("test.yaml:6: output.file_template: strftime conversion %Q is not supported"));
    EXPECT_THAT(parse_error(output_with("  file_template: \"%Y%m%dT%H%M%S-{port}{queue}\"\n")),
                StartsWith("test.yaml:6: output.file_template: the name '"));
    EXPECT_EQ(parse_error(output_with("  file_template: \"{port}-{queue}\\0x\"\n")),
              "test.yaml:6: output.file_template: contains a NUL byte");
    const std::string long_template = "%Y%m%dT%H%M%S.{nsec}Z-{port}-q{queue}-" + std::string(127, 'x');
    EXPECT_EQ(parse_error(output_with("  file_template: \"" + long_template + "\"\n")),
              "test.yaml:6: output.file_template: names made from it can be 193 bytes long; at most 191 fit (file "
              "names are limited to 255 bytes, and the capture directory adds hidden, numbered and sidecar "
              "suffixes)");
    EXPECT_EQ(parse_ok(output_with("  file_template: \"" + long_template.substr(0, long_template.size() - 2) + "\"\n"))
                  .output.file_template.size(),
              long_template.size() - 2);
}

TEST(Output, RotationValues) {
    const Config config = parse_ok(output_with("  rotate:\n    size_mb: 4\n    interval_s: 86400\n"));
    EXPECT_EQ(config.output.rotate_size_bytes, 4u << 20);
    EXPECT_EQ(config.output.rotate_interval_s, 86400u);
    EXPECT_EQ(parse_ok(output_with("  rotate: {size_mb: 0}\n")).output.rotate_size_bytes, 0u);
    EXPECT_EQ(parse_ok(output_with("  rotate: {interval_s: 0}\n")).output.rotate_interval_s, 0u);
}

TEST(Output, RotationRanges) {
    EXPECT_EQ(parse_error(output_with("  rotate:\n    interval_s: 86401\n")),
              "test.yaml:7: output.rotate.interval_s: expected 0 (no time rotation) or 1..86400 seconds, got '86401'");
    EXPECT_EQ(parse_error(output_with("  rotate:\n    size_mb: 1048577\n")),
              "test.yaml:7: output.rotate.size_mb: expected 0 (no size rotation) or 1..1048576 MiB, got '1048577'");
    EXPECT_EQ(parse_error(output_with("  rotate:\n    size_mb: 1G\n")),
              "test.yaml:7: output.rotate.size_mb: expected 0 (no size rotation) or 1..1048576 MiB, got '1G'");
}

TEST(Output, RotationNeedsSizeOrInterval) {
    EXPECT_EQ(
        parse_error(output_with("  rotate:\n    size_mb: 0\n    interval_s: 0\n")),
        "test.yaml:6: output.rotate: size_mb and interval_s are both 0, so a file would stay open until shutdown; "
        "set at least one");
}

TEST(Output, RotationSizeHoldsAWriteBlock) {
    EXPECT_EQ(parse_error(output_with("  rotate:\n    size_mb: 2\n  block_size_kb: 4096\n")),
              "test.yaml:7: output.rotate.size_mb: files of 2 MiB are smaller than one write block "
              "(output.block_size_kb 4096); expected at least 4");
    EXPECT_EQ(parse_ok(output_with("  rotate:\n    size_mb: 4\n  block_size_kb: 4096\n")).output.rotate_size_bytes,
              4u << 20);
    EXPECT_EQ(parse_ok(output_with("  rotate:\n    size_mb: 0\n  block_size_kb: 16384\n")).output.block_size_kb,
              16384u);
}

TEST(Output, BlockSize) {
    for (const char* size : {"63", "60", "102", "16388", "1M"}) {
        EXPECT_EQ(parse_error(output_with("  block_size_kb: " + std::string(size) + "\n")),
                  "test.yaml:6: output.block_size_kb: expected a multiple of 4 in 64..16384, got '" +
                      std::string(size) + "'");
    }
    EXPECT_EQ(parse_ok(output_with("  block_size_kb: 64\n")).output.block_size_kb, 64u);
}

TEST(Output, BlockHandOffRanges) {
    EXPECT_EQ(parse_error(output_with("  blocks_per_queue: 1\n")),
              "test.yaml:6: output.blocks_per_queue: expected an integer 2..4096, got '1'");
    EXPECT_EQ(parse_error(output_with("  flush_interval_ms: 0\n")),
              "test.yaml:6: output.flush_interval_ms: expected an integer 1..10000, got '0'");
    EXPECT_EQ(parse_error(output_with("  writer_threads: 65\n")),
              "test.yaml:6: output.writer_threads: expected an integer 1..64, got '65'");
    EXPECT_EQ(parse_error(output_with("  o_direct: maybe\n")),
              "test.yaml:6: output.o_direct: expected true or false, got 'maybe'");
}

// output.writer_cpus: workers puts the writer where the workers poll; a real-time writer
// there must rank below real-time workers, or it would keep them from the rx ring.
TEST(Output, WriterPlacement) {
    const Config defaults = parse_ok(kMinimal);
    EXPECT_EQ(defaults.output.writer_cpus, WriterCpus::control);
    EXPECT_EQ(defaults.output.writer_priority, ThreadPriority{});
    const Config shared = parse_ok(
        "ports:\n  - name: tap0\n    device: net_null0\ncapture:\n  worker_priority: rr:2\noutput:\n"
        "  directory: /tmp/cap\n  writer_cpus: workers\n  writer_priority: fifo:1\n");
    EXPECT_EQ(shared.output.writer_cpus, WriterCpus::workers);
    EXPECT_EQ(shared.output.writer_priority, (ThreadPriority{ThreadPriority::Kind::fifo, 1}));
    EXPECT_EQ(parse_error(output_with("  writer_cpus: worker\n")),
              "test.yaml:6: output.writer_cpus: expected one of control, workers, got 'worker'");
    // The default workers are rr:1: a fifo:1 writer would be at their level.
    EXPECT_EQ(parse_error(output_with("  writer_cpus: workers\n  writer_priority: fifo:1\n")),
              "test.yaml:7: output.writer_priority: must be below capture.worker_priority rr:1 on the workers' CPUs "
              "(a writer at or above the workers' priority keeps them from the rx ring while it writes)");
    EXPECT_EQ(parse_error("ports:\n  - name: tap0\n    device: net_null0\ncapture:\n  worker_priority: normal\n"
                          "output:\n  directory: /tmp/cap\n  writer_cpus: workers\n  writer_priority: rr:1\n"),
              "test.yaml:9: output.writer_priority: a real-time writer on the workers' CPUs needs real-time workers "
              "above it (capture.worker_priority normal); use normal, or raise the workers to rr:2");
    // On the control lcore's CPU any priority goes (the workers are elsewhere).
    EXPECT_EQ(parse_ok(output_with("  writer_priority: rr:50\n")).output.writer_priority,
              (ThreadPriority{ThreadPriority::Kind::rr, 50}));
}

TEST(Output, Fsync) {
    const Config none = parse_ok(output_with("  fsync: none\n"));
    EXPECT_EQ(none.output.fsync, FsyncPolicy::none);
    EXPECT_EQ(none.output.fsync_interval_s, 0u);
    EXPECT_EQ(parse_ok(output_with("  fsync: rotate\n")).output.fsync, FsyncPolicy::rotate);
    const Config every_two_minutes = parse_ok(output_with("  fsync: 2m\n"));
    EXPECT_EQ(every_two_minutes.output.fsync, FsyncPolicy::interval);
    EXPECT_EQ(every_two_minutes.output.fsync_interval_s, 120u);
    EXPECT_EQ(parse_ok(output_with("  fsync: 5\n")).output.fsync_interval_s, 5u);
    for (const char* fsync : {"always", "0s", "2h", "\"\""}) {
        EXPECT_THAT(parse_error(output_with("  fsync: " + std::string(fsync) + "\n")),
                    StartsWith("test.yaml:6: output.fsync: expected none, rotate or an interval 1s..1h like 5s, got '"))
            << fsync;
    }
}

TEST(Output, UnknownNestedKey) {
    EXPECT_EQ(parse_error(output_with("  rotate:\n    size: 10\n")),
              "test.yaml:7: output.rotate: unknown key 'size'; valid keys here: size_mb, interval_s");
}

TEST(Scrub, PeriodAndOffSwitch) {
    EXPECT_EQ(OutputConfig{}.scrub, (ScrubConfig{.enabled = true, .period_s = 7 * 86400}));
    const Config config = parse_ok(output_with("  scrub:\n    enabled: false\n    period: 30d\n"));
    EXPECT_FALSE(config.output.scrub.enabled);
    EXPECT_EQ(config.output.scrub.period_s, 30u * 86400);
    EXPECT_EQ(parse_ok(output_with("  scrub: { period: 2s }\n")).output.scrub.period_s, 2u);
    EXPECT_EQ(parse_error(output_with("  scrub:\n    period: 0\n")),
              "test.yaml:7: output.scrub.period: expected a duration 1s..3650d like 7d, got '0'");
    EXPECT_EQ(parse_error(output_with("  scrub:\n    period: 11y\n")),
              "test.yaml:7: output.scrub.period: expected seconds or a duration like 90s, 30m, 12h, 14d, 2w, got '11y'");
}

TEST(Compress, OffByDefaultAgeAndLevel) {
    EXPECT_EQ(OutputConfig{}.compress, (CompressConfig{.enabled = false, .after_s = 0, .level = 3}));
    const Config config = parse_ok(output_with("  compress:\n    enabled: true\n    after: 10m\n    level: 9\n"));
    EXPECT_TRUE(config.output.compress.enabled);
    EXPECT_EQ(config.output.compress.after_s, 600u);
    EXPECT_EQ(config.output.compress.level, 9);
    EXPECT_EQ(parse_error(output_with("  compress:\n    level: 22\n")),
              "test.yaml:7: output.compress.level: expected an integer 1..19, got '22'");
    EXPECT_EQ(parse_error(output_with("  compress:\n    speed: 1\n")),
              "test.yaml:7: output.compress: unknown key 'speed'; valid keys here: enabled, after, level");
    // The manifest holds the hashes the compressed file is checked against.
    EXPECT_EQ(parse_error(output_with("  manifest: false\n  compress:\n    enabled: true\n")),
              "test.yaml:8: output.compress.enabled: output.compress needs output.manifest: true");
}

TEST(Archive, OffByDefaultEveryKeyRead) {
    EXPECT_FALSE(OutputConfig{}.archive.enabled());
    const Config config = parse_ok(output_with(
        "  archive:\n    url: s3://captures/site-a\n    endpoint: https://s3.example.net:9000\n"
        "    region: eu-west-1\n    path_style: false\n    credentials_file: /etc/linecap/archive-credentials\n"
        "    ca_file: /etc/ssl/store-ca.pem\n    max_bytes_per_second: 50M\n    concurrency: 4\n"
        "    after: 10m\n    max_age: 90d\n"));
    const ArchiveConfig& a = config.output.archive;
    EXPECT_TRUE(a.enabled());
    EXPECT_EQ(a.url, "s3://captures/site-a");
    EXPECT_EQ(a.endpoint, "https://s3.example.net:9000");
    EXPECT_EQ(a.region, "eu-west-1");
    EXPECT_FALSE(a.path_style);
    EXPECT_EQ(a.credentials_file, "/etc/linecap/archive-credentials");
    EXPECT_EQ(a.ca_file, "/etc/ssl/store-ca.pem");
    EXPECT_EQ(a.max_bytes_per_second, 50ull << 20);
    EXPECT_EQ(a.concurrency, 4u);
    EXPECT_EQ(a.after_s, 600u);
    EXPECT_EQ(a.max_age_s, 90u * 86400);
    EXPECT_EQ(parse_error(output_with("  archive:\n    endpoint: 127.0.0.1:7480\n")),
              "test.yaml:7: output.archive.endpoint: expected an endpoint URL like http://127.0.0.1:7480 or "
              "https://s3.example.net, got '127.0.0.1:7480'");
    EXPECT_EQ(parse_error(output_with("  archive:\n    concurrency: 0\n")),
              "test.yaml:7: output.archive.concurrency: expected an integer 1..16, got '0'");
    EXPECT_EQ(parse_error(output_with("  archive:\n    credentials_file: creds\n")).find(
                  "test.yaml:7: output.archive.credentials_file: "),
              0u);
    // A file is archived when its manifest object is.
    EXPECT_EQ(parse_error(output_with("  manifest: false\n  archive:\n    url: s3://b\n")),
              "test.yaml:8: output.archive.url: output.archive needs output.manifest: true");
}

TEST(Retention, SizesAndDurations) {
    const Config config =
        parse_ok(output_with("  retention:\n"
                             "    max_bytes: 64KiB\n"
                             "    min_free_bytes: 1048576\n"
                             "    max_age: 2w\n"
                             "    max_percent: 90\n"));
    EXPECT_EQ(config.output.retention.max_bytes, 65536u);
    EXPECT_EQ(config.output.retention.min_free_bytes, 1048576u);
    EXPECT_EQ(config.output.retention.max_age_s, 14u * 86400);
    EXPECT_DOUBLE_EQ(config.output.retention.max_percent, 90.0);
    EXPECT_EQ(parse_ok(output_with("  retention:\n    max_age: 3600\n")).output.retention.max_age_s, 3600u);
}

TEST(Retention, Errors) {
    EXPECT_EQ(parse_error(output_with("  retention:\n    max_bytes: 2GB\n")),
              "test.yaml:7: output.retention.max_bytes: expected bytes or a size like 500M, 2G, 1T, 64KiB (units are "
              "powers of 1024), got '2GB'");
    EXPECT_EQ(parse_error(output_with("  retention:\n    min_free_bytes: [1G]\n")),
              "test.yaml:7: output.retention.min_free_bytes: expected a single value, got a list");
    EXPECT_EQ(parse_error(output_with("  retention:\n    max_age: 1 month\n")),
              "test.yaml:7: output.retention.max_age: expected seconds or a duration like 90s, 30m, 12h, 14d, 2w, got "
              "'1 month'");
    EXPECT_EQ(parse_error(output_with("  retention:\n    max_percent: 100.5\n")),
              "test.yaml:7: output.retention.max_percent: expected a number 0..100, got '100.5'");
    EXPECT_EQ(parse_error(output_with("  retention:\n    max_percent: 80%\n")),
              "test.yaml:7: output.retention.max_percent: expected a number 0..100, got '80%'");
    EXPECT_EQ(parse_error(output_with("  retention:\n    hold_file: hold.list\n")),
              "test.yaml:7: output.retention.hold_file: expected an absolute path (starting with /) of the legal hold "
              "list, got 'hold.list'");
    EXPECT_EQ(parse_ok(output_with("  retention:\n    hold_file:\n")).output.retention.hold_file, "");
}

// --- metrics, log -------------------------------------------------------------------

TEST(Metrics, ListenAddress) {
    EXPECT_EQ(parse_ok(kMinimal + "metrics:\n  listen: localhost:9100\n").metrics.listen, "localhost:9100");
    EXPECT_EQ(parse_ok(kMinimal + "metrics:\n  listen: \"[::]:9475\"\n").metrics.listen, "[::]:9475");
    EXPECT_EQ(parse_error(kMinimal + "metrics:\n  listen: \"9475\"\n"),
              "test.yaml:7: metrics.listen: expected host:port with an IPv4 address, [IPv6 address] or localhost and a "
              "port 1..65535 (127.0.0.1:9475, [::1]:9475, localhost:9475), got '9475'");
    EXPECT_THAT(parse_error(kMinimal + "metrics:\n  listen: 127.0.0.1:0\n"),
                StartsWith("test.yaml:7: metrics.listen: expected host:port"));
    EXPECT_EQ(parse_error(kMinimal + "metrics:\n  enabled: enabled\n"),
              "test.yaml:7: metrics.enabled: expected true or false, got 'enabled'");
}

TEST(Log, Level) {
    for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
        EXPECT_EQ(parse_ok(kMinimal + "log:\n  level: " + level + "\n").log.level, level);
    }
    EXPECT_EQ(parse_error(kMinimal + "log:\n  level: verbose\n"),
              "test.yaml:7: log.level: expected one of trace, debug, info, warn, error, critical, off, got 'verbose'");
}

// --- names --------------------------------------------------------------------------

TEST(Names, MatchTheFileSpellings) {
    EXPECT_STREQ(to_string(RssMode::symmetric), "symmetric");
    EXPECT_STREQ(to_string(RssMode::device_default), "device-default");
    EXPECT_STREQ(to_string(RssMode::off), "off");
    EXPECT_STREQ(to_string(FileKind::pcap), "pcap");
    EXPECT_STREQ(to_string(FileKind::pcapng), "pcapng");
}

TEST(Errors, LongValuesAreShortenedToKeepOneLine) {
    const std::string long_value(100, 'x');
    EXPECT_EQ(parse_error(kMinimal + "log:\n  level: " + long_value + "\n"),
              "test.yaml:7: log.level: expected one of trace, debug, info, warn, error, critical, off, got '" +
                  std::string(60, 'x') + "...'");
    EXPECT_EQ(parse_error(kMinimal + "log:\n  level: \"a\\nb\"\n"),
              "test.yaml:7: log.level: expected one of trace, debug, info, warn, error, critical, off, got 'a\\nb'");
}

// The api section (linecap serve): defaults, values, and one line for a bad one.
TEST(Api, DefaultsOffAndKeysRead) {
    EXPECT_TRUE(parse_ok(kMinimal).api.listen.empty());
    EXPECT_EQ(parse_ok(kMinimal).api.max_queries, 4u);
    const Config c = parse_ok(kMinimal +
                              "api:\n  listen: \"127.0.0.1:8443\"\n  tokens_file: /etc/linecap/tokens\n"
                              "  unauthenticated: loopback\n  max_bytes: 1GiB\n  max_duration: 2m\n"
                              "  client_timeout: 10s\n  max_queries: 8\n  header_timeout: 5s\n  body_timeout: 2s\n"
                              "  max_connections: 300\n  max_connections_per_client: 7\n");
    EXPECT_EQ(c.api.listen, "127.0.0.1:8443");
    EXPECT_EQ(c.api.tokens_file, "/etc/linecap/tokens");
    EXPECT_EQ(c.api.unauthenticated, "loopback");
    EXPECT_EQ(c.api.max_bytes, 1ull << 30);
    EXPECT_EQ(c.api.max_duration_s, 120u);
    EXPECT_EQ(c.api.client_timeout_s, 10u);
    EXPECT_EQ(c.api.max_queries, 8u);
    EXPECT_EQ(c.api.header_timeout_s, 5u);
    EXPECT_EQ(c.api.body_timeout_s, 2u);
    EXPECT_EQ(c.api.max_connections, 300u);
    EXPECT_EQ(c.api.max_connections_per_client, 7u);
    EXPECT_EQ(parse_ok(kMinimal).api.header_timeout_s, 10u);
    EXPECT_EQ(parse_ok(kMinimal).api.max_connections_per_client, 64u);
}

TEST(Api, BadValuesNameTheKey) {
    EXPECT_NE(parse_error(kMinimal + "api:\n  unauthenticated: yes\n").find("api.unauthenticated"), std::string::npos);
    EXPECT_NE(parse_error(kMinimal + "api:\n  tokens_file: tokens\n").find("absolute path"), std::string::npos);
    EXPECT_NE(parse_error(kMinimal + "api:\n  tls_cert: /a.pem\n").find("tls_cert and tls_key together"),
              std::string::npos);
    EXPECT_NE(parse_error(kMinimal + "api:\n  max_queries: 0\n").find("api.max_queries"), std::string::npos);
    EXPECT_NE(parse_error(kMinimal + "api:\n  header_timeout: 0s\n").find("api.header_timeout: expected a duration of at least 1s"),
              std::string::npos);
    EXPECT_NE(parse_error(kMinimal + "api:\n  max_connections_per_client: 0\n").find("api.max_connections_per_client"),
              std::string::npos);
}

// The feed section (the live feed): off by default, on loopback; plaintext elsewhere only
// when the file says so.
TEST(Feed, DefaultsOffOnLoopbackAndKeysRead) {
    const FeedConfig defaults = parse_ok(kMinimal).feed;
    EXPECT_FALSE(defaults.enabled);
    EXPECT_EQ(defaults.listen, "127.0.0.1:57012");
    const Config c = parse_ok(kMinimal +
                              "feed:\n  enabled: true\n  listen: \"[::1]:6000\"\n  ports: [tap0]\n  filter: tcp\n"
                              "  max_consumers: 3\n  buffer_bytes: 4M\n");
    EXPECT_TRUE(c.feed.enabled);
    EXPECT_EQ(c.feed.listen, "[::1]:6000");
    EXPECT_EQ(c.feed.ports, std::vector<std::string>{"tap0"});
    EXPECT_TRUE(c.feed.carries("tap0"));
    EXPECT_EQ(c.feed.filter, "tcp");
    EXPECT_EQ(c.feed.max_consumers, 3u);
    EXPECT_EQ(c.feed.buffer_bytes, 4ull << 20);
    EXPECT_TRUE(parse_ok(kMinimal + "feed:\n  enabled: true\n  listen: \"0.0.0.0:6000\"\n  plaintext_on_network: true\n")
                    .feed.plaintext_on_network);
    // Off, the address is not a concern.
    EXPECT_FALSE(parse_ok(kMinimal + "feed:\n  listen: \"0.0.0.0:6000\"\n").feed.enabled);
}

TEST(Feed, RefusesPlaintextOnTheNetworkUnlessNamed) {
    for (const char* address : {"0.0.0.0:6000", "10.0.0.5:6000", "[::]:6000"}) {
        const std::string error =
            parse_error(kMinimal + "feed:\n  enabled: true\n  listen: \"" + address + "\"\n");
        EXPECT_THAT(error, HasSubstr("feed.listen: "));
        EXPECT_THAT(error, HasSubstr("feed.plaintext_on_network: true"));
    }
}

TEST(Feed, AllowsTheNetworkWithTlsAndClientCertificates) {
    const Config c = parse_ok(kMinimal +
                              "feed:\n  enabled: true\n  listen: \"0.0.0.0:6000\"\n  tls_cert: /etc/feed.pem\n"
                              "  tls_key: /etc/feed.key\n  tls_client_ca: /etc/ca.pem\n");
    EXPECT_TRUE(c.feed.tls());
    EXPECT_EQ(c.feed.tls_client_ca, "/etc/ca.pem");
    EXPECT_FALSE(c.feed.plaintext_on_network);
    // Client certificates are not optional: the three keys go together.
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  tls_cert: /etc/feed.pem\n  tls_key: /etc/feed.key\n"),
                HasSubstr("feed.tls_cert: set tls_cert, tls_key and tls_client_ca together: tls_client_ca is missing"));
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  tls_client_ca: /etc/ca.pem\n"),
                HasSubstr("feed.tls_client_ca: set tls_cert, tls_key and tls_client_ca together: tls_cert is missing"));
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  tls_key: feed.key\n"), HasSubstr("feed.tls_key"));
}

TEST(Feed, BadValuesNameTheKey) {
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  ports: [nope]\n"), HasSubstr("feed.ports[0]"));
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  buffer_bytes: 4K\n"), HasSubstr("feed.buffer_bytes: expected a size 1M..2G"));
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  max_consumers: 0\n"), HasSubstr("feed.max_consumers"));
    EXPECT_THAT(parse_error(kMinimal + "feed:\n  listen: nowhere\n"), HasSubstr("feed.listen"));
}


// --- output.volumes -------------------------------------------------------------------

const std::string kVolumesHead =
    "ports:\n"
    "  - name: tap0\n"
    "    device: net_null0\n"
    "output:\n";

TEST(Volumes, OneDirectoryIsOneVolume) {
    const Config config = parse_ok(kMinimal);
    EXPECT_TRUE(config.output.volumes.empty());
    const std::vector<VolumeConfig> volumes = config.output.volume_list();
    ASSERT_EQ(volumes.size(), 1u);
    EXPECT_EQ(volumes[0].directory, "/tmp/cap");
    EXPECT_EQ(volumes[0].retention, config.output.retention);
    EXPECT_EQ(config.output.volume_stall_timeout_ms, 5000u);
    EXPECT_EQ(config.output.volume_probe_interval_s, 5u);
}

TEST(Volumes, EachWithItsRetentionFallingBackToOutputRetention) {
    const Config config = parse_ok(kVolumesHead +
                                   "  volumes:\n"
                                   "    - { directory: /srv/capture/a }\n"
                                   "    - { directory: /srv/capture/b/, retention: { max_bytes: 4G } }\n"
                                   "  volume_stall_timeout_ms: 2000\n"
                                   "  volume_probe_interval_s: 1\n"
                                   "  retention: { max_age: 1d, max_bytes: 1G }\n");
    const OutputConfig& out = config.output;
    ASSERT_EQ(out.volumes.size(), 2u);
    EXPECT_EQ(out.volume_list(), out.volumes);
    EXPECT_EQ(out.directory, "/srv/capture/a");  // what reads one directory reads the first
    EXPECT_EQ(out.volumes[0].directory, "/srv/capture/a");
    EXPECT_EQ(out.volumes[0].retention, out.retention);
    EXPECT_EQ(out.volumes[1].directory, "/srv/capture/b");
    EXPECT_EQ(out.volumes[1].retention.max_bytes, 4ull << 30);
    EXPECT_EQ(out.volumes[1].retention.max_age_s, 86400u);
    EXPECT_EQ(out.volume_stall_timeout_ms, 2000u);
    EXPECT_EQ(out.volume_probe_interval_s, 1u);
}

TEST(Volumes, ErrorsNameTheKey) {
    EXPECT_EQ(parse_error(kVolumesHead + "  directory: /tmp/cap\n  volumes:\n    - { directory: /srv/a }\n"),
              "test.yaml:5: output.directory: give output.directory (one volume) or output.volumes (several), not "
              "both");
    EXPECT_EQ(parse_error(kVolumesHead + "  volumes:\n    - { directory: /srv/a }\n    - { directory: b }\n"),
              "test.yaml:7: output.volumes[1].directory: expected an absolute path (starting with /) of the "
              "volume's capture directory, got 'b'");
    EXPECT_EQ(parse_error(kVolumesHead + "  volumes:\n    - { directory: /srv/a }\n    - { directory: /srv/a/ }\n"),
              "test.yaml:7: output.volumes[1].directory: '/srv/a' is already given at output.volumes[0].directory "
              "(line 6); each volume needs a directory of its own");
    EXPECT_EQ(parse_error(kVolumesHead + "  volumes:\n    - { retention: { max_bytes: 1G } }\n"),
              "test.yaml:6: output.volumes[0].directory: required key is missing; expected the absolute path of the "
              "volume's capture directory");
    EXPECT_EQ(parse_error(kVolumesHead + "  volumes:\n    - { directory: /srv/a, retention: { max_bytez: 1 } }\n"),
              "test.yaml:6: output.volumes[0].retention: unknown key 'max_bytez' (did you mean 'max_bytes'?); valid "
              "keys here: max_bytes, max_percent, min_free_bytes, max_age, hold_file");
    EXPECT_EQ(parse_error(kVolumesHead + "  volumes: []\n"),
              "test.yaml:4: output.directory: required key is missing; expected the absolute path of the capture "
              "directory (or output.volumes)");
    EXPECT_EQ(parse_error(kMinimal + "  volume_stall_timeout_ms: 10\n"),
              "test.yaml:6: output.volume_stall_timeout_ms: expected an integer 100..600000, got '10'");
}

}  // namespace
}  // namespace linecap
