// Writes fuzz seeds: for each pcap given, its index (mode byte 0 = as built) into DIR.
//   make_seeds DIR FILE.pcap...
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "store/index_format.hpp"

int main(int argc, char** argv) {
    if (argc < 3) return 64;
    for (int i = 2; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        std::vector<uint8_t> img((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        linecap::store::IndexBuildOptions o;
        o.block_bytes = 4096;
        auto ix = linecap::store::build_index_bytes(img, o);
        if (!ix.ok()) continue;
        for (uint8_t mode : {0, 1}) {
            std::ofstream out(std::string(argv[1]) + "/seed-" + std::to_string(i) + "-" + std::to_string(mode) + ".idx",
                              std::ios::binary);
            out.put(static_cast<char>(mode));
            out.write(reinterpret_cast<const char*>(ix->data()), static_cast<std::streamsize>(ix->size()));
        }
    }
    return 0;
}
