// `opvision ir3 ...`: command line for the IR3 toolkit (dis, asm, sim, check, info).
#pragma once

namespace opv::ir3 {
// argv[0] = "ir3", argv[1] = subcommand. Returns the process exit code; prints errors itself.
int cli_main(int argc, char** argv);
}  // namespace opv::ir3
