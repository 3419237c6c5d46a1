// The pcapng blocks the writer adds around the worker's Enhanced Packet Blocks
// (pcapng_format.hpp): each file is one section with one interface — the stream
// (port, queue) — and ends with an Interface Statistics Block that says, for the span of
// that file, how many packets the stream received and dropped. A file on its own thus
// says whether it is complete: isb_ifdrop == 0.
//
//   SHB  byte-order magic, version 1.0, section length -1 (unknown: the file is written
//        as it goes), shb_userappl "linecap <version>"
//   IDB  linktype 1 (Ethernet), snaplen = the stream's, if_name "<port>:<queue>",
//        if_description = the port's device, if_tsresol = 9 (EPB timestamps are ns, UTC;
//        no if_tsoffset: the stamps are absolute), opt_comment "linecap timestamps: port
//        (replayed-file|nic-clock)" or "... tsc" (doc/timestamps.md)
//   EPB… written by the worker, interface 0
//   ISB  interface 0, timestamp = when the file was finished; isb_starttime and
//        isb_endtime = first and last packet of the file; isb_ifrecv, isb_ifdrop,
//        isb_filteraccept (see IsbCounts); opt_comment spells out the drops by reason and
//        the host clock over the file's span ("clock: timestamps port (nic-clock), host
//        clock synced est_error_ns=… max_error_ns=… steps=…").
//
// Why not DPDK's rte_pcapng: it writes its own SHB/IDBs for every port of the process
// at open (rte_pcapng_fdopen) and builds EPBs inside mbufs (rte_pcapng_copy), i.e. it is
// built for dumping mbufs from a DPDK process; here the worker copies records into write
// blocks and frees the mbufs at once, and a file describes one queue, not all ports. The
// three blocks above are a few dozen bytes each, so they are encoded here by hand.
//
// Byte order: the host's (the SHB's byte-order magic tells readers), like the worker's
// EPBs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linecap::pcapng {

// Option codes used here (pcapng spec, section 4 and the block sections).
constexpr uint16_t kOptEndOfOpt = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2;
constexpr uint16_t kIfDescription = 3;
constexpr uint16_t kIfTsresol = 9;
constexpr uint16_t kIfFcslen = 13;
constexpr uint16_t kIfTsoffset = 14;
constexpr uint16_t kIsbStartTime = 2;
constexpr uint16_t kIsbEndTime = 3;
constexpr uint16_t kIsbIfRecv = 4;
constexpr uint16_t kIsbIfDrop = 5;
constexpr uint16_t kIsbFilterAccept = 6;

struct InterfaceInfo {
    std::string name;          // "<port>:<queue>"
    std::string description;   // the port's device string
    uint32_t snaplen = 262144;
    uint16_t link_type = 1;    // Ethernet
    std::string comment;       // opt_comment; "" = none
};

// SHB followed by the one IDB: what a file starts with.
std::vector<uint8_t> file_header(const InterfaceInfo& interface, const std::string& user_application);

// The two blocks on their own (extractions describe one interface per source stream):
// an SHB (section length unknown), and an IDB with if_tsresol = 9.
std::vector<uint8_t> section_header_block(const std::string& user_application);
std::vector<uint8_t> interface_block(const InterfaceInfo& interface);

// Counts for the span of one file (see StreamWriter): the span starts when the previous
// file of the stream was finished (or the writer started) and ends when this one is.
//   ifrecv        packets of the stream in the span: written to this file + dropped +
//                 rejected by the filter
//   ifdrop        writer_full + write_error + disk_full in the span (the NIC's own drops,
//                 imissed/ierrors/rx_nombuf, are counted per port, not per queue, so no
//                 file can claim them; they are in the metrics)
//   filteraccept  ifrecv - filtered
struct IsbCounts {
    uint64_t timestamp_ns = 0;   // when the statistics were taken (file finished)
    uint64_t start_ns = 0;       // first packet of the file
    uint64_t end_ns = 0;         // last packet of the file
    uint64_t ifrecv = 0;
    uint64_t ifdrop = 0;
    uint64_t filteraccept = 0;
    std::string comment;         // "" = none
};

std::vector<uint8_t> statistics_block(const IsbCounts& counts);

}  // namespace linecap::pcapng
