// A set of CPU numbers and the kernel's cpulist text for it: what the shield, the writer's
// placement and their messages share.
#pragma once

#include <set>
#include <string>

namespace linecap {

using CpuSet = std::set<unsigned>;

// The kernel's cpulist format ("0-3,8,10-11", as in /sys/devices/system/cpu/online and
// cpuset.cpus.effective, and as AllowedCPUs= takes it); "" is the empty set.
inline std::string format_cpu_list(const CpuSet& cpus) {
    std::string text;
    for (auto it = cpus.begin(); it != cpus.end();) {
        const unsigned first = *it;
        unsigned last = first;
        while (++it != cpus.end() && *it == last + 1) ++last;
        if (!text.empty()) text += ',';
        text += std::to_string(first);
        if (last != first) text += '-' + std::to_string(last);
    }
    return text;
}

}  // namespace linecap
