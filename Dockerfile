# linecapd in a container. NOTE: this file has not been built by the project's CI: the
# build machines have no container engine. It mirrors scripts/install-deps.sh (Debian 12).
#
#   docker build -t linecap .
#
# On the host first: bind the NICs to vfio-pci and reserve hugepages (linecap-bind bind
# ADDR..., linecap-hugepages --config FILE, or the linecap-bind/linecap-hugepages units);
# the container cannot do either. Then, with the minimal privileges:
#
#   docker run -d --name linecap \
#     --cap-add IPC_LOCK --cap-add SYS_NICE --cap-add SYS_RAWIO \
#     --ulimit memlock=-1 \
#     --device /dev/vfio/vfio --device /dev/vfio/<group> \
#     --device /dev/cpu/0/msr \
#     -v /dev/hugepages:/dev/hugepages \
#     -v /var/lib/linecap:/var/lib/linecap \
#     -v /etc/linecap/linecap.yaml:/etc/linecap/linecap.yaml:ro \
#     --network host \
#     linecap
#
# or, simplest and least contained: --privileged instead of the --cap-add/--device lines.
#   IPC_LOCK   vfio pins the DMA (hugepage) memory; EAL locks hugepages
#   SYS_NICE   Docker's default seccomp profile allows get_mempolicy/set_mempolicy/mbind
#              (EAL's NUMA-aware hugepage allocation) only with this capability
#   SYS_RAWIO  with --device /dev/cpu/0/msr (host: modprobe msr): EAL reads the exact TSC
#              frequency; both optional (EAL estimates it otherwise)
#   /dev/vfio/<group>  one per NIC: the IOMMU group, `linecap-bind status` shows it
#              (or readlink /sys/bus/pci/devices/ADDR/iommu_group)
#   /dev/hugepages     the host's hugetlbfs (linecapd runs EAL --in-memory and leaves no
#              files there; the mount also makes the host's page pool visible)
#   /var/lib/linecap   the capture files (output.directory)
#   --network host     only for the metrics endpoint (metrics.listen): packets come through
#              vfio, not the container's network. Without it, set metrics.listen:
#              "0.0.0.0:9475" and publish the port (-p 9475:9475) instead.
# `docker run <same flags> linecap --check` works too (arguments after the image are
# appended to the ENTRYPOINT): it prints the preflight findings and exits 0 or 78.

ARG DEBIAN=debian:bookworm

# ---- build ------------------------------------------------------------------------------
FROM ${DEBIAN} AS build
# The build packages of scripts/install-deps.sh (its test-only packages left out).
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        build-essential g++ pkg-config meson ninja-build \
        libdpdk-dev dpdk-dev dpdk libpcap-dev libspdlog-dev libyaml-cpp-dev prometheus-cpp-dev \
        libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The sources only (not the build directories of a working tree).
COPY meson.build meson_options.txt ./
COPY src/ src/
COPY config/ config/
COPY systemd/ systemd/
COPY scripts/ scripts/
COPY doc/ doc/
RUN meson setup build --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
        -Dtests=false -Dbench=false \
 && ninja -C build \
 && DESTDIR=/staging meson install -C build --no-rebuild
# The runtime packages: whatever owns the libraries the binary links (dpkg -S on each;
# Debian 12 is usr-merged, so try both spellings of a path).
RUN set -eu; \
    for lib in $(ldd /staging/usr/sbin/linecapd | awk '$3 ~ /^\// { print $3 }'); do \
        real=$(realpath "$lib"); \
        for p in "$lib" "$real" "/usr$lib" "${real#/usr}"; do \
            dpkg -S "$p" 2>/dev/null && break; \
        done; \
    done | cut -d: -f1 | sort -u > /staging/runtime-packages; \
    cat /staging/runtime-packages

# ---- runtime ----------------------------------------------------------------------------
FROM ${DEBIAN}-slim AS runtime
COPY --from=build /staging/runtime-packages /tmp/runtime-packages
# The DPDK drivers are plugins EAL loads from its pmds directory, not linked libraries:
# the PCI bus and the 82599/X710 PMDs, the mempool driver, and the virtual devices
# (tests, replay). Each package brings what it needs.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        $(cat /tmp/runtime-packages) \
        librte-bus-pci23 librte-bus-vdev23 librte-mempool-ring23 \
        librte-net-ixgbe23 librte-net-i40e23 \
        librte-net-pcap23 librte-net-null23 librte-net-ring23 librte-net-memif23 \
        librte-net-af-packet23 librte-net-af-xdp23 \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /staging/usr/sbin/linecapd /usr/sbin/linecapd
COPY --from=build /staging/etc/linecap/ /etc/linecap/
COPY --from=build /staging/usr/share/linecap/ /usr/share/linecap/
RUN install -d -m 0750 /var/lib/linecap
VOLUME ["/var/lib/linecap"]
# Metrics (metrics.listen; the example configuration listens on 127.0.0.1 only).
EXPOSE 9475
STOPSIGNAL SIGTERM
ENTRYPOINT ["linecapd", "--config", "/etc/linecap/linecap.yaml"]
