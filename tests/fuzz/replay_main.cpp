// Runs a fuzz harness over files, once each, without libFuzzer: the in-tree corpus as a
// regression test in the ordinary (gcc) build, and a way to replay a crash reproducer.
//   fuzz_<reader> FILE|DIR...
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int run_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::fprintf(stderr, "%s: cannot open\n", path.c_str()), 1;
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int failed = 0, inputs = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st {};
        if (::stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR* d = ::opendir(argv[i]);
            while (const dirent* e = d ? ::readdir(d) : nullptr) {
                if (e->d_name[0] == '.') continue;
                failed += run_file(std::string(argv[i]) + "/" + e->d_name);
                ++inputs;
            }
            if (d) ::closedir(d);
        } else {
            failed += run_file(argv[i]);
            ++inputs;
        }
    }
    std::printf("%d inputs replayed\n", inputs);
    return failed != 0 || inputs == 0;
}
