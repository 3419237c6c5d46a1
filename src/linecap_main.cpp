// linecap: forensic retrieval over a linecapd capture store (see store/cli.hpp), and the
// retrieval API above it (api/commands.hpp): this program wires the two layers together.
#include "api/commands.hpp"
#include "store/cli.hpp"

int main(int argc, char** argv) {
    const linecap::store::ToolCommands above{
        .serve = linecap::api::serve_command,
        .extract_remote = linecap::api::extract_remote_command,
    };
    return linecap::store::linecap_tool_main(argc, argv, above);
}
