#include "control/cpu_shield.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "config/values.hpp"
#include "util/thread_priority.hpp"

namespace linecap {

namespace fs = std::filesystem;

namespace {

// The slices systemd puts everything else in: services, login sessions, VMs and containers.
constexpr const char* kOtherSlices[] = {"system.slice", "user.slice", "machine.slice"};

std::string read_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A cpulist file; an absent or empty file is the empty set. lcore_cpus() reads the same
// "0-3,8" syntax (EAL's -l is the kernel's cpulist format).
CpuSet read_cpu_list(const fs::path& path) {
    const std::vector<unsigned> cpus = lcore_cpus(read_line(path));
    return {cpus.begin(), cpus.end()};
}

CpuSet intersection(const CpuSet& a, const CpuSet& b) {
    CpuSet both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(both, both.end()));
    return both;
}

CpuSet difference(const CpuSet& a, const CpuSet& b) {
    CpuSet only_a;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(only_a, only_a.end()));
    return only_a;
}

std::string cpus_phrase(const CpuSet& cpus) {
    return (cpus.size() == 1 ? "CPU " : "CPUs ") + format_cpu_list(cpus);
}

void warn(std::vector<PreflightFinding>& f, std::string message) {
    f.push_back({PreflightFinding::Level::warning, std::move(message)});
}

// The kernel's own work (timer ticks, RCU callbacks, unbound kworkers, interrupts) can only
// be kept off a CPU from the kernel command line.
void check_kernel_cmdline(const fs::path& cpu_dir, const CpuShieldPlan& plan, std::vector<PreflightFinding>& f) {
    const CpuSet workers = plan.worker_cpus;
    const CpuSet not_isolated = difference(workers, read_cpu_list(cpu_dir / "isolated"));
    const CpuSet not_nohz = difference(workers, read_cpu_list(cpu_dir / "nohz_full"));
    if (not_isolated.empty() && not_nohz.empty()) return;
    std::string missing;
    if (!not_isolated.empty()) missing = "isolcpus= lacks worker " + cpus_phrase(not_isolated);
    if (!not_nohz.empty()) {
        missing += (missing.empty() ? "" : ", ") + std::string("nohz_full= lacks worker ") + cpus_phrase(not_nohz);
    }
    const std::string w = format_cpu_list(workers);
    warn(f, "CPU shielding: " + missing + " on the kernel command line, so the kernel's scheduler, timer ticks " +
                "and interrupts still use them; add 'isolcpus=managed_irq,domain," + w + " nohz_full=" + w +
                " rcu_nocbs=" + w + (plan.other_cpus.empty() ? "" : " irqaffinity=" + format_cpu_list(plan.other_cpus)) +
                "' (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot)");
}

// User-space work: every systemd slice but linecapd's own must exclude the worker CPUs.
void check_slices(const fs::path& cgroup_root, const CpuShieldPlan& plan, std::vector<PreflightFinding>& f) {
    std::error_code ec;
    const std::string fix = "systemctl start linecap-shield (pulled in by linecapd.service), or: systemctl "
                            "set-property system.slice user.slice machine.slice AllowedCPUs=" +
                            format_cpu_list(plan.other_cpus);
    if (!fs::exists(cgroup_root / "cgroup.controllers", ec)) {
        warn(f, "CPU shielding: no cgroup v2 hierarchy at " + cgroup_root.string() +
                    ", so nothing keeps other processes off worker " + cpus_phrase(plan.worker_cpus) +
                    " (systemd with the unified hierarchy does: systemd.unified_cgroup_hierarchy=1)");
        return;
    }
    bool any_slice = false;
    for (const char* slice : kOtherSlices) {
        const fs::path dir = cgroup_root / slice;
        if (!fs::is_directory(dir, ec)) continue;
        any_slice = true;
        // Without the cpuset controller the slice may use every CPU its parent may.
        const fs::path effective = dir / "cpuset.cpus.effective";
        const CpuSet allowed = fs::exists(effective, ec) ? read_cpu_list(effective) : plan.worker_cpus;
        const CpuSet exposed = intersection(allowed, plan.worker_cpus);
        if (exposed.empty()) continue;
        warn(f, std::string("CPU shielding: ") + slice + " may run on worker " + cpus_phrase(exposed) +
                    (fs::exists(effective, ec) ? " (" + effective.string() + ": " + format_cpu_list(allowed) + ")"
                                               : " (no cpuset controller on it)") +
                    "; " + fix);
    }
    if (!any_slice) {
        warn(f, "CPU shielding: no systemd slices under " + cgroup_root.string() +
                    " (not booted with systemd?), so nothing keeps other processes off worker " +
                    cpus_phrase(plan.worker_cpus));
    }
}

// ---- the kernel's receive work ------------------------------------------------------------
//
// A port on a kernel interface (net_af_xdp, net_af_packet) gets its packets from the kernel's
// receive processing of that interface: the driver's poll, the XDP program, the copy into the
// socket. That work runs in the interface's NAPI context — a softirq on the CPU its interrupt
// is steered to, or, with threaded NAPI, kernel threads "napi/IFACE-N" scheduled like any
// other thread. On a worker's CPU it preempts the worker, which then misses its polls while
// the socket's rings fill (DPDK 22.11's net_af_xdp holds 2048 buffers: doc/tuning.md).

// The kernel interface a virtual device receives from ("iface=" of its device string), or "".
std::string kernel_interface(const PortConfig& port) {
    if (port.is_pci()) return "";  // bound to vfio-pci: the PMD polls the NIC, no kernel receive work
    std::istringstream args(port.device);
    std::string arg;
    std::getline(args, arg, ',');  // the driver and instance name
    while (std::getline(args, arg, ',')) {
        if (arg.starts_with("iface=")) return arg.substr(6);
    }
    return "";
}

struct KernelTask {
    int pid = 0;
    CpuSet allowed;
    int policy = 0;       // SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2 (/proc/PID/stat field 41)
    int rt_priority = 0;  // field 40
};

// The threads running IFACE's NAPI: comm "napi/IFACE-<id>", cut to the kernel's 15 characters.
std::vector<KernelTask> napi_threads(const fs::path& proc, const std::string& iface) {
    const std::string prefix = ("napi/" + iface + "-").substr(0, 15);
    std::vector<KernelTask> tasks;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(proc, ec)) {
        const std::string pid = entry.path().filename().string();
        if (pid.empty() || !std::all_of(pid.begin(), pid.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) continue;
        if (!read_line(entry.path() / "comm").starts_with(prefix)) continue;
        KernelTask task{.pid = std::stoi(pid)};
        // stat: "PID (COMM) STATE ..." — COMM may hold spaces, so count fields after ')'.
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        std::getline(stat, line);
        std::istringstream fields(line.substr(line.rfind(')') + 1));
        std::vector<std::string> after_comm{std::istream_iterator<std::string>(fields), {}};
        if (after_comm.size() > 38) {  // field 3 is after_comm[0]
            task.rt_priority = std::atoi(after_comm[37].c_str());
            task.policy = std::atoi(after_comm[38].c_str());
        }
        std::ifstream status(entry.path() / "status");
        while (std::getline(status, line)) {
            if (!line.starts_with("Cpus_allowed_list:")) continue;
            const std::vector<unsigned> cpus = lcore_cpus(line.substr(line.find_first_not_of(" \t", 18)));
            task.allowed = {cpus.begin(), cpus.end()};
        }
        tasks.push_back(std::move(task));
    }
    return tasks;
}

std::string policy_name(int policy) {
    return policy == 1 ? "SCHED_FIFO" : policy == 2 ? "SCHED_RR" : "SCHED_OTHER";
}

void check_receive_work(const Config& config, const PreflightOptions& options, const CpuShieldPlan& plan,
                        std::vector<PreflightFinding>& f) {
    const ThreadPriority worker = config.capture.worker_priority;
    for (const PortConfig& port : config.ports) {
        const std::string iface = kernel_interface(port);
        if (iface.empty()) continue;
        const fs::path net = fs::path(options.sysfs) / "class/net" / iface;
        std::error_code ec;
        if (!fs::exists(net, ec)) continue;  // the PMD says so at start, with its own error
        const std::string where = "receive work: ports[" + port.name + "] interface " + iface;
        if (read_line(net / "threaded") == "1") {
            for (const KernelTask& task : napi_threads(options.proc, iface)) {
                const CpuSet exposed = intersection(task.allowed, plan.worker_cpus);
                const bool realtime = task.policy == 1 || task.policy == 2;
                if (exposed.empty() || !realtime) continue;
                if (is_realtime(worker) && worker.value > task.rt_priority) continue;
                warn(f, where + ": its NAPI thread (pid " + std::to_string(task.pid) + ", " +
                            policy_name(task.policy) + " " + std::to_string(task.rt_priority) + ") may run on worker " +
                            cpus_phrase(exposed) + " and outranks capture.worker_priority " + to_string(worker) +
                            ": the worker misses its polls while it runs and the socket drops (nic_missed, xsk_fill_empty); pin it "
                            "elsewhere (taskset -p -c " + format_cpu_list(plan.other_cpus) + " " +
                            std::to_string(task.pid) + ") or rank the worker above it (capture.worker_priority: fifo:" +
                            std::to_string(std::min(task.rt_priority + 10, 98)) + ")");
            }
            continue;
        }
        // Without threaded NAPI the receive work is the softirq of the CPU each interrupt is
        // delivered to: no thread priority outranks it.
        for (const auto& entry : fs::directory_iterator(net / "device" / "msi_irqs", ec)) {
            const std::string irq = entry.path().filename().string();
            const fs::path dir = fs::path(options.proc) / "irq" / irq;
            const fs::path effective = dir / "effective_affinity_list";
            const CpuSet cpus = read_cpu_list(fs::exists(effective, ec) ? effective : dir / "smp_affinity_list");
            const CpuSet exposed = intersection(cpus, plan.worker_cpus);
            if (exposed.empty()) continue;
            warn(f, where + ": interrupt " + irq + " is delivered to worker " + cpus_phrase(exposed) +
                        ", where its receive softirq preempts the worker whatever its priority (nic_missed, xsk_fill_empty); "
                        "steer it away: echo " + format_cpu_list(plan.other_cpus) + " > " +
                        (dir / "smp_affinity_list").string() + " (irqaffinity= on the kernel command line for all)");
        }
    }
}

}  // namespace

CpuShieldPlan cpu_shield_plan(const Config& config, const CpuSet& online) {
    CpuShieldPlan plan;
    // The main lcore is a control thread that sleeps, free to share its CPU.
    plan.worker_cpus = worker_cpus(config.eal);
    plan.other_cpus = difference(online, plan.worker_cpus);
    return plan;
}

CpuSet online_cpus(const PreflightOptions& options) {
    return read_cpu_list(fs::path(options.sysfs) / "devices/system/cpu/online");
}

void check_cpu_shield(const Config& config, const PreflightOptions& options, std::vector<PreflightFinding>& f) {
    const CpuSet online = online_cpus(options);
    if (online.empty()) return;  // not known: check_lcores() reports a missing sysfs
    const CpuShieldPlan plan = cpu_shield_plan(config, online);
    if (plan.worker_cpus.empty()) return;
    if (plan.other_cpus.empty()) {
        warn(f, "CPU shielding: the worker lcores take every online CPU (" + format_cpu_list(plan.worker_cpus) +
                    "), none is left for the rest of the system; leave at least one CPU out of eal.lcores' "
                    "workers");
        return;
    }
    check_kernel_cmdline(fs::path(options.sysfs) / "devices/system/cpu", plan, f);
    check_slices(fs::path(options.sysfs) / "fs/cgroup", plan, f);
    check_receive_work(config, options, plan, f);
}

}  // namespace linecap
