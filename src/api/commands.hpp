// The `linecap` commands of this layer, handed to the store layer's command line
// (store/cli.hpp, ToolCommands) by the program (src/linecap_main.cpp):
//
//   linecap serve --config FILE [--dir DIR] [--template T]    the retrieval API
//   linecap extract --remote URL[,URL...] ...                  the fan-out client
#pragma once

#include "store/cli.hpp"

namespace linecap::api {

int serve_command(const CommandOptions& options);
int extract_remote_command(const CommandOptions& options);

}  // namespace linecap::api
