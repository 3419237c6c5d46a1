# linecapd in a container: the Debian package (debian/), installed with apt into Debian 12,
# so the image holds exactly what the package declares (the DPDK drivers included).
# Built and run by tests/vm/container_test.sh (suite vm).
#
#   docker build -t linecap .                 # builds the package from this tree first
#   buildah bud --isolation chroot --build-arg PACKAGE=local -t linecap DIR
#                                             # DIR holds this Dockerfile and a linecap_*.deb
#
# Build arguments: BASE, the Debian 12 image (default debian:bookworm; the test imports its
# own mmdebstrap root); PACKAGE=source (default: dpkg-buildpackage in a build stage) or
# local (the linecap_*.deb of the build context).
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
#   SYS_NICE   the workers make themselves real-time (capture.worker_priority, default
#              rr:1; without it linecapd exits 78: set worker_priority: normal instead);
#              and Docker's default seccomp profile allows get_mempolicy/set_mempolicy/mbind
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
# CPU shielding is the host's business (linecap-shield, the kernel command line): give the
# container the worker CPUs with --cpuset-cpus and keep other containers off them.

ARG BASE=debian:bookworm
ARG PACKAGE=source

# ---- the package, built from this tree -----------------------------------------------------
FROM ${BASE} AS package-source
RUN apt-get -o Acquire::Retries=3 update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        build-essential debhelper dpkg-dev
WORKDIR /build/linecap
# The sources only (.dockerignore leaves out build directories and package output).
COPY . .
# debian/control's Build-Depends, then the package; it lands in /build.
RUN DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q --no-install-recommends ./ \
 && dpkg-buildpackage -b -us -uc \
 && mkdir /debs && mv /build/linecap_*.deb /debs/

# ---- or the package given in the build context ---------------------------------------------
FROM ${BASE} AS package-local
COPY linecap_*.deb /debs/

FROM package-${PACKAGE} AS package

# ---- runtime --------------------------------------------------------------------------------
FROM ${BASE} AS runtime
COPY --from=package /debs/ /tmp/debs/
# apt resolves the package's dependencies (shared libraries and the DPDK driver plugins EAL
# loads at start); nothing is listed here twice. (Retries: a mirror that drops a connection
# fails `apt-get update` with exit 100 otherwise.)
RUN apt-get -o Acquire::Retries=3 update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/debs/linecap_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/debs
VOLUME ["/var/lib/linecap"]
# Metrics (metrics.listen; the example configuration listens on 127.0.0.1 only).
EXPOSE 9475
STOPSIGNAL SIGTERM
ENTRYPOINT ["linecapd", "--config", "/etc/linecap/linecap.yaml"]
