// `opvision ir3 dis|asm|sim|check ...`: forwarded to the IR3 command line (tools/ir3_cli.h)
// when this build has it (CMake defines OPV_HAVE_IR3 when src/ir3 has sources).
#include <cstdio>
#include <string>

#include "tools/common.h"

#ifdef OPV_HAVE_IR3
#include "tools/ir3_cli.h"
#endif

namespace opv::tools {

int cmd_ir3(int argc, char** argv) {
#ifdef OPV_HAVE_IR3
  // argv[0] is "ir3". `replay` needs the ONNX reader and .npz I/O, which the standalone toolkit
  // does not link, so it lives here; the toolkit parses every other sub-subcommand itself.
  if (argc > 1 && std::string(argv[1]) == "replay") return cmd_ir3_replay(argc - 1, argv + 1);
  return ir3_cli_main(argc, argv);
#else
  (void)argc;
  (void)argv;
  fail("ir3 is not built in this binary (src/ir3 has no sources)");
#endif
}

}  // namespace opv::tools
