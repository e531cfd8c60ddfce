// `opvision ir3 dis|asm|sim|check ...`: forwarded to the IR3 toolkit's own CLI (src/ir3/cli.h)
// when this build has it (CMake defines OPV_HAVE_IR3 when src/ir3 has sources).
#include <cstdio>

#include "tools/common.h"

// The IR3 library may be built before its CLI entry point exists; then ir3 is reported as missing.
#if defined(OPV_HAVE_IR3) && __has_include("ir3/cli.h")
#include "ir3/cli.h"
#define OPV_IR3_CLI 1
#endif

namespace opv::tools {

int cmd_ir3(int argc, char** argv) {
#ifdef OPV_IR3_CLI
  // argv[0] is "ir3"; the toolkit parses its own sub-subcommand from argv[1].
  return opv::ir3::cli_main(argc, argv);
#else
  (void)argc;
  (void)argv;
  fail("ir3 is not built in this binary (no src/ir3 sources or no src/ir3/cli.h)");
#endif
}

}  // namespace opv::tools
