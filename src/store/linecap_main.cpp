// linecap: forensic retrieval over a linecapd capture store (see store/cli.hpp).
#include "store/cli.hpp"

int main(int argc, char** argv) { return linecap::store::linecap_tool_main(argc, argv); }
