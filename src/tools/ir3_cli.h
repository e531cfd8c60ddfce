// `opvision ir3 ...`: command line for the IR3 toolkit (dis, asm, sim, check, info, opt); the
// toolkit itself (src/ir3) is a library without a command line.
#pragma once

namespace opv::tools {
// argv[0] = "ir3", argv[1] = subcommand. Returns the process exit code; prints errors itself.
int ir3_cli_main(int argc, char** argv);
}  // namespace opv::tools
