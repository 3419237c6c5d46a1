#include "control/preflight.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "archive/archive_service.hpp"
#include "capture/flow_cap.hpp"
#include "capture/plan.hpp"
#include "control/cpu_shield.hpp"
#include "filter/bpf_filter.hpp"
#include "filter/pcap_program.hpp"
#include "format/pcap_format.hpp"

namespace linecap {

namespace fs = std::filesystem;

namespace {

using Findings = std::vector<PreflightFinding>;

constexpr uint64_t kMiB = 1ull << 20;

void error(Findings& f, std::string message) { f.push_back({PreflightFinding::Level::error, std::move(message)}); }
void warning(Findings& f, std::string message) { f.push_back({PreflightFinding::Level::warning, std::move(message)}); }

std::string read_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::optional<long long> read_number(const fs::path& path, int base = 10) {
    const std::string text = read_line(path);
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, base);
    if (errno != 0 || end == text.c_str()) return std::nullopt;
    return v;
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + kMiB - 1) / kMiB) + " MiB"; }

std::string port_label(const PortConfig& port) { return "ports[" + port.name + "]"; }

// ---- PCI identity ----------------------------------------------------------------------

struct NicModel {
    uint16_t device;
    const char* family;
    unsigned gbit;  // line rate of one port
    const char* kernel_driver;
};

// Intel 82599 (ixgbe) and X710/XL710/XXV710/X722 (i40e) physical functions.
constexpr NicModel kNicModels[] = {
    {0x10f7, "82599", 10, "ixgbe"}, {0x10f8, "82599", 10, "ixgbe"}, {0x10f9, "82599", 10, "ixgbe"},
    {0x10fb, "82599", 10, "ixgbe"}, {0x10fc, "82599", 10, "ixgbe"}, {0x1507, "82599", 10, "ixgbe"},
    {0x1514, "82599", 10, "ixgbe"}, {0x1517, "82599", 10, "ixgbe"}, {0x151c, "82599", 10, "ixgbe"},
    {0x1528, "X540", 10, "ixgbe"},  {0x154d, "82599", 10, "ixgbe"}, {0x1557, "82599", 10, "ixgbe"},
    {0x1572, "X710", 10, "i40e"},   {0x1580, "XL710", 40, "i40e"},  {0x1581, "X710", 10, "i40e"},
    {0x1583, "XL710", 40, "i40e"},  {0x1584, "XL710", 40, "i40e"},  {0x1585, "X710", 10, "i40e"},
    {0x1586, "X710", 10, "i40e"},   {0x1589, "X710", 10, "i40e"},   {0x158a, "XXV710", 25, "i40e"},
    {0x158b, "XXV710", 25, "i40e"}, {0x15ff, "X710", 10, "i40e"},   {0x37d0, "X722", 10, "i40e"},
    {0x37d1, "X722", 10, "i40e"},   {0x37d2, "X722", 10, "i40e"},   {0x37d3, "X722", 10, "i40e"},
};

struct PciIdentity {
    std::optional<long long> vendor, device;
    const NicModel* model = nullptr;
};

PciIdentity pci_identity(const fs::path& dev) {
    PciIdentity id;
    id.vendor = read_number(dev / "vendor", 16);
    id.device = read_number(dev / "device", 16);
    if (id.vendor == 0x8086 && id.device) {
        for (const NicModel& m : kNicModels) {
            if (m.device == *id.device) id.model = &m;
        }
    }
    return id;
}

std::string hex4(std::optional<long long> v) {
    if (!v) return "????";
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04llx", *v & 0xffff);
    return buf;
}

fs::path pci_device_dir(const PreflightOptions& options, const PortConfig& port) {
    return fs::path(options.sysfs) / "bus/pci/devices" / port.device;
}

// NUMA node of a CPU: the nodeN entry in its sysfs directory; -1 when there is none.
int cpu_numa_node(const PreflightOptions& options, unsigned cpu) {
    std::error_code ec;
    const fs::path dir = fs::path(options.sysfs) / "devices/system/cpu" / ("cpu" + std::to_string(cpu));
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
            std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return std::stoi(name.substr(4));
        }
    }
    return -1;
}

// ---- checks ----------------------------------------------------------------------------

void check_lcores(const Config& config, const PreflightOptions& options, Findings& f) {
    for (size_t i = 0; i < config.eal.lcore_ids.size(); ++i) {
        const unsigned lcore = config.eal.cpu_ids.size() > i ? config.eal.cpu_ids[i] : config.eal.lcore_ids[i];
        const fs::path cpu = fs::path(options.sysfs) / "devices/system/cpu" / ("cpu" + std::to_string(lcore));
        std::error_code ec;
        if (!fs::exists(cpu, ec)) {
            error(f, "eal.lcores: lcore " + std::to_string(lcore) + " does not exist on this machine (" +
                         read_line(fs::path(options.sysfs) / "devices/system/cpu/present") +
                         " present); fix eal.lcores");
            continue;
        }
        // cpu0 usually has no `online` file: it cannot be taken offline.
        if (fs::exists(cpu / "online", ec) && read_line(cpu / "online") == "0") {
            error(f, "eal.lcores: lcore " + std::to_string(lcore) + " is offline; echo 1 > " +
                         (cpu / "online").string() + " or pick another lcore");
        }
    }
}

// A real-time worker that never idles (a source faster than the capture) keeps every
// normal thread off its CPU but for the kernel's 5 % real-time limit: the writer and the
// control thread if they share it (output.writer_cpus: workers without an idle sleep),
// and another worker if it is at the same priority under SCHED_FIFO.
void check_worker_cpus(const Config& config, Findings& f) {
    if (!is_realtime(config.capture.worker_priority)) return;
    if (config.output.writer_cpus == WriterCpus::workers && config.capture.idle_sleep_us == 0) {
        warning(f, "output.writer_cpus workers with capture.worker_priority " + to_string(config.capture.worker_priority) +
                       " and capture.idle_sleep_us 0: workers that never sleep leave the writer beside them 5 % of "
                       "their CPU; set capture.idle_sleep_us (default 20) or output.writer_cpus: control");
    }
    const std::vector<unsigned>& cpus = config.eal.cpu_ids;
    for (size_t i = 1; i < cpus.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (cpus[i] != cpus[j]) continue;
            const std::string other = j == 0 ? "the control lcore (writer, metrics)"
                                             : "worker lcore " + std::to_string(config.eal.lcore_ids[j]);
            warning(f, "capture.worker_priority " + to_string(config.capture.worker_priority) + ": worker lcore " +
                           std::to_string(config.eal.lcore_ids[i]) + " shares CPU " + std::to_string(cpus[i]) +
                           " with " + other + ": while it never idles they get 5 % of that CPU; give each worker "
                           "a CPU of its own or set capture.worker_priority: normal");
            break;
        }
    }
}

void check_pci_devices(const Config& config, const PreflightOptions& options, Findings& f) {
    for (const PortConfig& port : config.ports) {
        if (!port.is_pci()) continue;
        const fs::path dev = pci_device_dir(options, port);
        std::error_code ec;
        const std::string where = "ports[" + port.name + "].device " + port.device;
        if (!fs::exists(dev, ec)) {
            error(f, where + ": no such PCI device; check the address with `lspci -D` or dpdk-devbind.py --status");
            continue;
        }
        const PciIdentity id = pci_identity(dev);
        if (!id.model) {
            warning(f, where + ": PCI id " + hex4(id.vendor) + ":" + hex4(id.device) +
                           " is not an Intel 82599/X710-family port; linecap is tested on ixgbe/i40e ports only");
        }
        const fs::path driver_link = dev / "driver";
        if (!fs::exists(driver_link, ec)) {
            error(f, where + ": not bound to any driver; bind it: linecap-bind bind " + port.device);
            continue;
        }
        const std::string driver = fs::read_symlink(driver_link, ec).filename().string();
        if (driver != "vfio-pci" && driver != "igb_uio" && driver != "uio_pci_generic") {
            error(f, where + ": bound to the kernel driver '" + driver +
                         "', not to vfio-pci; bind it: linecap-bind bind " + port.device);
            continue;
        }
    }
}

// Worker lcores should sit on the NUMA node of the ports they poll: otherwise every
// descriptor, mbuf and write block crosses the socket interconnect.
void check_numa(const Config& config, const PreflightOptions& options, const CapturePlan& plan,
                const std::vector<PortInfo>& ports, Findings& f) {
    std::set<std::pair<size_t, unsigned>> reported;  // (port, lcore)
    for (const WorkerAssignment& w : plan.workers) {
        const int lcore_node = cpu_numa_node(options, w.lcore);
        if (lcore_node < 0) continue;
        for (const QueueRef& q : w.queues) {
            const int port_node = ports[q.port_index].socket;
            if (port_node < 0 || port_node == lcore_node) continue;
            if (!reported.insert({q.port_index, w.lcore}).second) continue;
            const PortConfig& port = config.ports[q.port_index];
            const std::string cpulist =
                read_line(fs::path(options.sysfs) / "devices/system/node" / ("node" + std::to_string(port_node)) / "cpulist");
            warning(f, port_label(port) + " (" + port.device + ") is on NUMA node " + std::to_string(port_node) +
                           " but worker lcore " + std::to_string(w.lcore) + " that polls it is on node " +
                           std::to_string(lcore_node) +
                           ": packets cross the socket interconnect; use lcores of node " + std::to_string(port_node) +
                           (cpulist.empty() ? std::string() : " (" + cpulist + ")") +
                           " in eal.lcores / capture.workers");
        }
    }
}

struct Meminfo {
    bool readable = false;
    uint64_t total_pages = 0, free_pages = 0, page_kb = 0;
};

Meminfo read_meminfo(const std::string& path) {
    Meminfo m;
    std::ifstream in(path);
    if (!in) return m;
    m.readable = true;
    std::string key;
    uint64_t value = 0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        if (!(ls >> key >> value)) continue;
        if (key == "HugePages_Total:") m.total_pages = value;
        else if (key == "HugePages_Free:") m.free_pages = value;
        else if (key == "Hugepagesize:") m.page_kb = value;
    }
    return m;
}

bool hugetlbfs_mounted(const std::string& mounts_path) {
    std::ifstream in(mounts_path);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string dev, dir, type;
        if (ls >> dev >> dir >> type && type == "hugetlbfs") return true;
    }
    return false;
}

// Free/total bytes in a sysfs hugepage directory (kernel/mm/hugepages or a node's
// hugepages), every page size except `skip_kb` (0 = none skipped).
struct PoolBytes {
    uint64_t free_bytes = 0, total_bytes = 0;
    bool found = false;
};

PoolBytes sysfs_pools(const fs::path& dir, uint64_t skip_kb) {
    PoolBytes p;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();  // hugepages-2048kB
        unsigned long long kb = 0;
        if (std::sscanf(name.c_str(), "hugepages-%llukB", &kb) != 1) continue;
        p.found = true;
        if (kb == skip_kb) continue;
        p.free_bytes += uint64_t(read_number(it->path() / "free_hugepages").value_or(0)) * kb * 1024;
        p.total_bytes += uint64_t(read_number(it->path() / "nr_hugepages").value_or(0)) * kb * 1024;
    }
    return p;
}

std::string fix_hugepages(const Config& config) {
    return "reserve them: linecap-hugepages --config " + (config.path.empty() ? std::string("FILE") : config.path);
}

void check_hugepages(const Config& config, const PreflightOptions& options, const CapturePlan& plan, Findings& f) {
    if (!config.eal.hugepages) return;  // --no-huge: nothing to reserve
    std::string breakdown = "mbufs " + mib(plan.pool_bytes()) + " + write blocks " + mib(plan.block_bytes()) +
                            " + EAL " + mib(CapturePlan::kEalOverheadBytes);
    if (plan.pool_bytes() + plan.block_bytes() + CapturePlan::kEalOverheadBytes < plan.hugepage_bytes) {
        breakdown += "; at least eal.memory_mb " + std::to_string(config.eal.memory_mb) + " MiB";
    }

    if (!hugetlbfs_mounted(options.proc_mounts)) {
        warning(f, "no hugetlbfs is mounted (none in " + options.proc_mounts +
                       "): linecapd runs EAL --in-memory and does not need one, DPDK tools and multi-process "
                       "setups do; mount it: linecap-hugepages --config " + config.path +
                       " (or mount -t hugetlbfs nodev /dev/hugepages)");
    }

    const Meminfo mi = read_meminfo(options.proc_meminfo);
    if (!mi.readable) {
        error(f, "eal.hugepages: cannot read " + options.proc_meminfo + ": " + strerror(errno) +
                     "; cannot tell whether hugepages are reserved");
        return;
    }
    // /proc/meminfo counts the default page size only; other sizes (1 GiB) come from sysfs.
    const PoolBytes other = sysfs_pools(fs::path(options.sysfs) / "kernel/mm/hugepages", mi.page_kb);
    const uint64_t page_bytes = mi.page_kb * 1024;
    const uint64_t total_bytes = mi.total_pages * page_bytes + other.total_bytes;
    const uint64_t free_bytes = mi.free_pages * page_bytes + other.free_bytes;
    const std::string pages = mi.page_kb ? std::to_string(mi.page_kb / 1024) + " MiB pages" : "pages";

    if (total_bytes == 0) {
        error(f, "eal.hugepages: no hugepages are reserved (HugePages_Total: 0 in " + options.proc_meminfo +
                     "); the configuration needs about " + mib(plan.hugepage_bytes) + " (" + breakdown + "); " +
                     fix_hugepages(config) + " (or echo " +
                     std::to_string(page_bytes ? (plan.hugepage_bytes + page_bytes - 1) / page_bytes : 0) +
                     " > /proc/sys/vm/nr_hugepages), or set eal.hugepages: false (tests only)");
        return;
    }
    if (free_bytes < plan.hugepage_bytes) {
        error(f, "eal.hugepages: only " + mib(free_bytes) + " of hugepages free (" + std::to_string(mi.free_pages) + " of " +
                     std::to_string(mi.total_pages) + " " + pages + "), the configuration needs about " +
                     mib(plan.hugepage_bytes) + " (" + breakdown + "); " + fix_hugepages(config) +
                     ", or lower rx_descriptors, output.blocks_per_queue or output.block_size_kb");
        return;
    }
    // Each node's pool and blocks are allocated on that node: enough in total is not enough.
    for (const auto& [node, n] : plan.sockets) {
        if (node < 0) continue;
        const fs::path dir = fs::path(options.sysfs) / "devices/system/node" / ("node" + std::to_string(node)) / "hugepages";
        const PoolBytes pool = sysfs_pools(dir, 0);
        if (!pool.found) continue;  // kernel without per-node pools: the total above is all we know
        if (pool.free_bytes < n.bytes()) {
            std::string ports;
            for (size_t p : n.ports) ports += (ports.empty() ? "" : ", ") + config.ports[p].name;
            error(f, "eal.hugepages: NUMA node " + std::to_string(node) + " (ports " + ports + ") has " +
                         mib(pool.free_bytes) + " of hugepages free, its mbuf pool and write blocks need about " +
                         mib(n.bytes()) + "; reserve them on that node: linecap-hugepages --config " + config.path +
                         " (writes " + (dir / "hugepages-2048kB/nr_hugepages").string() + ")");
        }
    }
}

// A capture volume and the key that names it in findings: output.directory, or
// output.volumes[N].directory.
struct NamedVolume {
    std::string key;
    VolumeConfig volume;
};

std::vector<NamedVolume> named_volumes(const OutputConfig& output) {
    std::vector<NamedVolume> named;
    for (const VolumeConfig& volume : output.volume_list())
        named.push_back({output.volumes.empty() ? std::string("output.directory")
                                                : "output.volumes[" + std::to_string(named.size()) + "].directory",
                         volume});
    return named;
}

// Returns true when the volume's directory is usable (the disk probe needs that).
bool check_output_directory(const Config& config, const NamedVolume& volume, Findings& f) {
    const std::string& dir = volume.volume.directory;
    const std::string& key = volume.key;
    struct stat st{};
    if (stat(dir.c_str(), &st) != 0) {
        error(f, key + " " + dir + ": " + strerror(errno) + "; create it (mkdir -p " + dir + ")");
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        error(f, key + " " + dir + ": not a directory");
        return false;
    }
    // access(W_OK) says yes to root on a read-only mount; creating a file is the real test.
    const std::string probe = dir + "/.linecap-write-probe";
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        error(f, key + " " + dir + ": cannot create files there: " + strerror(errno) +
                     "; fix permissions or the mount (read-only?)");
        return false;
    }
    close(fd);
    unlink(probe.c_str());

    struct statvfs vfs{};
    if (statvfs(dir.c_str(), &vfs) == 0) {
        const uint64_t free_bytes = uint64_t(vfs.f_bavail) * vfs.f_frsize;
        const uint64_t need = config.output.rotate_size_bytes * 2;
        if (free_bytes < need) {
            const std::string what = key + " " + dir + ": only " + std::to_string(free_bytes >> 20) +
                                     " MiB free, less than two rotated files (" + std::to_string(need >> 20) + " MiB)";
            // With a retention budget the daemon makes room itself (a disk kept full by
            // retention is its normal state), so a restart must not be refused.
            if (volume.volume.retention.any_budget()) {
                warning(f, what + "; retention will delete the oldest files to make room");
            } else {
                error(f, what + "; free space or lower output.rotate.size_mb");
                return false;
            }
        }
    }
    return true;
}

// The archive's URL and credentials, read as the archiver will read them (the store itself
// is not asked: one that is down now is retried, and never stops capture).
void check_archive(const Config& config, Findings& f) {
    const ArchiveConfig& archive = config.output.archive;
    if (!archive.enabled()) return;
    if (auto where = archive_bucket_and_prefix(archive); !where)
        error(f, "output.archive.url: " + where.error().message);
    if (auto credentials = archive_credentials(archive); !credentials)
        error(f, std::string(archive.credentials_file.empty() ? "output.archive (no credentials_file)"
                                                              : "output.archive.credentials_file") +
                     ": " + credentials.error().message);
}

void check_filters(const Config& config, Findings& f) {
    for (size_t i = 0; i < config.ports.size(); ++i) {
        const PortConfig& port = config.ports[i];
        if (port.filter.empty()) continue;
        if (Status s = BpfFilter::validate(port.filter, port.snaplen); !s) {
            error(f, "ports[" + std::to_string(i) + "].filter: " + s.error().message);
        }
    }
    const FlowCapConfig& cap = config.capture.flow_cap;
    if (cap.enabled && !cap.filter.empty()) {
        if (Status s = BpfFilter::validate(cap.filter, kFlowCapFilterSnaplen); !s)
            error(f, "capture.flow_cap.filter: " + s.error().message);
    }
    const FeedConfig& feed = config.feed;
    if (feed.enabled && !feed.filter.empty()) {
        // Run by libpcap on the feed thread, not converted for the worker: compiled as the feed compiles it.
        if (auto program = PcapProgram::compile(feed.filter, pcap::kMaxSnaplen); !program)
            error(f, "feed.filter: " + program.error().message);
    }
}

// Writes `bytes` into the output directory (O_DIRECT when the filesystem takes it), fsyncs,
// deletes, and compares the rate with what the ports can deliver at line rate.
void probe_disk_speed(const Config& config, const NamedVolume& volume, const PreflightOptions& options, Findings& f) {
    // Line rate of the PCI ports (vdevs have none worth comparing with).
    uint64_t line_bits = 0;
    std::string rates;
    for (const PortConfig& port : config.ports) {
        if (!port.is_pci()) continue;
        const PciIdentity id = pci_identity(pci_device_dir(options, port));
        const unsigned gbit = id.model ? id.model->gbit : 10;
        line_bits += uint64_t(gbit) * 1000000000ull;
        rates += (rates.empty() ? "" : " + ") + port.name + " " + std::to_string(gbit) + " Gbit/s" +
                 (id.model ? "" : " (assumed)");
    }
    if (line_bits == 0) return;  // only virtual devices

    const std::string& dir = volume.volume.directory;
    const uint64_t bytes = std::max<uint64_t>(options.disk_probe_bytes, 4 * kMiB) / (4 * kMiB) * (4 * kMiB);
    struct statvfs vfs{};
    if (statvfs(dir.c_str(), &vfs) == 0 && uint64_t(vfs.f_bavail) * vfs.f_frsize < bytes * 4) {
        warning(f, volume.key + " " + dir + ": too little free space for the " + mib(bytes) +
                       " write-speed probe; skipped");
        return;
    }
    const std::string path = dir + "/.linecap-speed-probe." + std::to_string(getpid());
    bool direct = true;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0600);
    if (fd < 0 && errno == EINVAL) {  // tmpfs and some others refuse O_DIRECT
        direct = false;
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        warning(f, volume.key + " " + dir + ": write-speed probe: cannot create " + path + ": " + strerror(errno));
        return;
    }
    constexpr size_t kChunk = 4 * kMiB;
    std::unique_ptr<unsigned char, decltype(&std::free)> buf(
        static_cast<unsigned char*>(std::aligned_alloc(4096, kChunk)), &std::free);
    uint32_t x = 2463534242u;  // xorshift: incompressible, not all zeros
    for (size_t i = 0; i < kChunk; ++i) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf.get()[i] = static_cast<unsigned char>(x);
    }
    const auto start = std::chrono::steady_clock::now();
    uint64_t written = 0;
    int write_errno = 0;
    while (written < bytes) {
        const ssize_t n = ::write(fd, buf.get(), kChunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            write_errno = errno;
            break;
        }
        written += uint64_t(n);
    }
    if (write_errno == 0 && ::fsync(fd) != 0) write_errno = errno;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::close(fd);
    ::unlink(path.c_str());
    if (write_errno != 0) {
        warning(f, volume.key + " " + dir + ": write-speed probe failed after " + mib(written) + ": " +
                       strerror(write_errno));
        return;
    }
    const double disk_bytes_s = double(written) / std::max(seconds, 1e-6);
    const double line_bytes_s = double(line_bits) / 8;
    if (disk_bytes_s < line_bytes_s) {
        // One queue's blocks at its share of its port's line rate, for a feel of the margin.
        const double buffer_ms = 1e3 * double(config.output.blocks_per_queue) * config.output.block_size_kb * 1024 /
                                 (line_bytes_s / std::max<size_t>(1, config.ports.size()));
        char text[512];
        std::snprintf(text, sizeof text,
                      "%s %s: the disk wrote %.0f MB/s (%s %s, fsync included), less than the "
                      "ports deliver at line rate (%s = %.0f MB/s): a full-rate burst longer than the write "
                      "blocks absorb (~%.1f ms) is dropped and counted as writer_full; use faster storage "
                      "(NVMe, RAID 0) or write less (ports[].filter, ports[].snaplen)",
                      volume.key.c_str(), dir.c_str(), disk_bytes_s / 1e6, mib(written).c_str(), direct ? "O_DIRECT" : "buffered",
                      rates.c_str(), line_bytes_s / 1e6, buffer_ms);
        warning(f, text);
    }
}

}  // namespace

std::vector<PortInfo> assumed_port_infos(const Config& config, const PreflightOptions& options) {
    std::vector<PortInfo> ports;
    for (const PortConfig& port : config.ports) {
        int node = -1;  // vdevs, and PCI devices the platform gives no node
        if (port.is_pci()) {
            if (auto n = read_number(pci_device_dir(options, port) / "numa_node"); n && *n >= 0) node = int(*n);
        }
        ports.push_back(assumed_port_info(port, node));
    }
    return ports;
}

void apply_test_overrides(PreflightOptions& options) {
    if (const char* sysfs = std::getenv("LINECAP_SYSFS"); sysfs && *sysfs) options.sysfs = sysfs;
    if (const char* proc = std::getenv("LINECAP_PROC"); proc && *proc) {
        options.proc_mounts = std::string(proc) + "/mounts";
        options.proc_meminfo = std::string(proc) + "/meminfo";
        options.proc = proc;
    }
}

std::vector<PreflightFinding> preflight(const Config& config, const PreflightOptions& options) {
    Findings findings;
    const std::vector<PortInfo> ports = assumed_port_infos(config, options);
    check_lcores(config, options, findings);
    check_worker_cpus(config, findings);
    check_cpu_shield(config, options, findings);  // isolcpus/nohz_full, other slices' cpusets
    check_pci_devices(config, options, findings);
    if (auto plan = plan_capture(config, ports); !plan) {
        error(findings, plan.error().message);
    } else {
        check_numa(config, options, plan.value(), ports, findings);
        check_hugepages(config, options, plan.value(), findings);
    }
    std::vector<NamedVolume> usable;  // every volume is checked; the disk probe runs on the usable ones
    for (const NamedVolume& volume : named_volumes(config.output))
        if (check_output_directory(config, volume, findings)) usable.push_back(volume);
    check_filters(config, findings);
    check_archive(config, findings);
    if (options.probe_disk_speed)
        for (const NamedVolume& volume : usable) probe_disk_speed(config, volume, options, findings);
    return findings;
}

}  // namespace linecap
