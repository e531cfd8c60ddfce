// `opvision qcom decode|run`: the qcom backend's tools.
//   decode STREAM   prints a PM4 stream (little-endian dwords) as named packets and registers
//   run CAPTURE     runs a capture (tools/ir3_capture.py) through a qcom device -- the real KGSL
//                   driver where /dev/kgsl-3d0 exists, else the simulated a630 -- with ONE
//                   submission per inference, and prints what the inference stream holds
//                   (submissions, dispatches, packets, barriers, cache events, bytes).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "backend/qcom/capture_stream.h"
#include "backend/qcom/device.h"
#include "backend/qcom/pm4.h"
#include "backend/qcom/sim_device.h"
#include "core/file_io.h"
#include "core/metrics.h"
#include "import/onnx_initializers.h"
#include "ir3/capture.h"
#include "tools/capture_io.h"
#include "tools/common.h"
#include "tools/npy.h"

namespace opv::tools {

namespace {

int qcom_decode(int argc, char** argv) {
  ArgParser p("opvision qcom decode", "Prints a PM4 command stream (a file of little-endian dwords, e.g. from "
              "'qcom run --dump-stream') as named packets, registers and fields (../shared/qcom tables). "
              "Malformed streams (truncated packets, bad headers, unknown opcodes or registers) are errors.",
              "STREAM [--allow-unknown-regs]");
  p.positional("STREAM", "PM4 stream file").flag("--allow-unknown-regs", "print writes to registers the tables do not name");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  std::vector<uint8_t> b = read_file_bytes(a.positionals[0], "PM4 stream", uint64_t(1) << 30);
  OPV_CHECK(b.size() % 4 == 0, a.positionals[0], ": ", b.size(), " bytes is not a whole number of dwords");
  std::vector<uint32_t> dw(b.size() / 4);
  if (!b.empty()) std::memcpy(dw.data(), b.data(), b.size());
  std::vector<qcom::Packet> pk = qcom::decode(dw.data(), dw.size(), a.has("--allow-unknown-regs"));
  std::string s = qcom::format(pk);
  std::fwrite(s.data(), 1, s.size(), stdout);
  size_t t7 = 0;
  for (const auto& x : pk) t7 += x.type7;
  std::printf("# %zu packets (%zu type-7, %zu type-4), %zu bytes\n", pk.size(), t7, pk.size() - t7, b.size());
  return kExitOk;
}

void print_stats(const char* label, const qcom::StreamStats& s) {
  std::printf("%s: submissions=%llu dispatches=%llu packets=%llu barriers=%llu cache_invalidates=%llu cache_flushes=%llu "
              "bytes=%llu (edges: raw=%llu war=%llu waw=%llu texture=%llu; fixed packets=%llu)\n",
              label, (unsigned long long)s.submissions, (unsigned long long)s.dispatches, (unsigned long long)s.packets,
              (unsigned long long)s.barriers, (unsigned long long)s.cache_invalidates, (unsigned long long)s.cache_flushes,
              (unsigned long long)s.bytes, (unsigned long long)s.raw_edges, (unsigned long long)s.war_edges,
              (unsigned long long)s.waw_edges, (unsigned long long)s.texture_edges, (unsigned long long)s.fixed_packets);
}

int qcom_run(int argc, char** argv) {
  ArgParser p("opvision qcom run",
              "Runs a captured a630 model (tools/ir3_capture.py) through the qcom backend: its schedule becomes one "
              "PM4 stream (barriers only on dependency edges) submitted once per inference to a qcom device -- the "
              "KGSL driver when /dev/kgsl-3d0 exists, else the simulated a630 (PM4 decoded, dispatches run on the "
              "IR3 simulator, ordering checked). Prints the stream's counts; with --ref compares the outputs "
              "('rel_l2=<x> max_abs_rel=<y>', exit 1 outside --tol).",
              "CAPTURE_DIR [--model M.onnx] [--inputs IN.npz | --seed S] [-o OUT.npz] [--ref REF.npz] [--device sim|kgsl]");
  p.positional("CAPTURE_DIR", "a capture directory (capture.json, kernels/, data.bin)")
      .option("--model", "MODEL.onnx", "the ONNX model the capture was made from (weights); default: found by name")
      .option("--inputs", "IN.npz", "model inputs by name")
      .option("--seed", "S", "random uint8 inputs from this seed when --inputs is absent", "0")
      .option("--output", "OUT.npz", "write the outputs here", "", "-o")
      .option("--ref", "REF.npz", "reference outputs by name")
      .option("--tol", "X", "tolerance for rel_l2 and max_abs_rel", "1e-2")
      .option("--device", "sim|kgsl", "qcom device (default: kgsl when /dev/kgsl-3d0 exists, else sim)")
      .option("--barriers", "deps|per-dispatch", "barrier placement: dependency edges only (default) or after every dispatch", "deps")
      .option("--runs", "N", "inferences (outputs of every run must be bit-identical)", "1")
      .option("--dump-stream", "FILE", "write the inference stream's dwords here (for 'qcom decode')")
      .option("--drop-barrier", "K", "testing: leave out the K-th dependency barrier (the simulated device must refuse)")
      .flag("--no-check", "simulated device: do not check ordering between dispatches");
  Args a;
  if (!parse_or_help(p, argc, argv, a)) return kExitOk;
  std::string dev_name = a.get("--device", qcom::kgsl_present() ? "kgsl" : "sim");
  OPV_CHECK(dev_name == "sim" || dev_name == "kgsl", "qcom run: --device must be sim or kgsl, not '", dev_name, "'");
  std::string bm = a.get("--barriers", "deps");
  OPV_CHECK(bm == "deps" || bm == "per-dispatch", "qcom run: --barriers must be deps or per-dispatch, not '", bm, "'");
  int64_t runs = a.get_int("--runs", 1, 1, 1000);
  int64_t drop = a.get_int("--drop-barrier", -1, -1, 1 << 20);

  ir3::Capture cap = ir3::Capture::load(a.positionals[0]);
  std::unique_ptr<qcom::Device> dev;
  qcom::SimDevice* sim = nullptr;
  if (dev_name == "kgsl") {
    dev = qcom::open_kgsl();
  } else {
    qcom::SimDeviceOptions so;
    so.check_order = !a.has("--no-check");
    auto s = std::make_unique<qcom::SimDevice>(so);
    sim = s.get();
    dev = std::move(s);
  }
  qcom::StreamOptions opts;
  opts.mode = bm == "deps" ? qcom::BarrierMode::Dependencies : qcom::BarrierMode::PerDispatch;
  opts.drop_barrier = static_cast<int>(drop);
  opts.initializer = initializer_reader(capture_model_path(cap, a, "qcom run"), "qcom run");
  auto t0 = std::chrono::steady_clock::now();
  qcom::CaptureRunner runner(cap, *dev, opts);
  if (a.has("--dump-stream")) {
    const auto& s = runner.stream();
    write_file_atomic(a.get("--dump-stream"), s.data(), s.size() * 4, "PM4 stream");
  }

  CaptureFeed cf = capture_inputs(cap, a, "qcom run");
  const auto& feed = cf.bytes;
  std::vector<std::vector<uint8_t>> outs;
  bool same = true;
  for (int64_t r = 0; r < runs; ++r) {
    auto o = runner.run(feed);
    if (r == 0) outs = std::move(o);
    else same &= o == outs;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("device: %s\n", dev->name().c_str());
  std::printf("setup: %llu submissions\n", (unsigned long long)runner.setup_submissions());
  print_stats("per inference", runner.stats());
  if (sim) {
    const auto& s = sim->stats();
    std::printf("simulated device (setup + %lld inferences): submissions=%llu packets=%llu dispatches=%llu "
                "wait_for_idle=%llu cache_flushes=%llu cache_invalidates=%llu wave_instructions=%llu in %.1f s\n",
                (long long)runs, (unsigned long long)s.submissions, (unsigned long long)s.packets,
                (unsigned long long)s.dispatches, (unsigned long long)s.wait_for_idle, (unsigned long long)s.cache_flushes,
                (unsigned long long)s.cache_invalidates, (unsigned long long)s.instructions, secs);
  }
  if (runs > 1) std::printf("repeat runs bit-identical: %s\n", same ? "yes" : "NO");

  NamedArrays out_arrays = capture_outputs(cap, outs);
  if (a.has("--output")) {
    NamedArrays all = cf.arrays;
    for (auto& e : out_arrays) all.push_back(e);
    write_npz(a.get("--output"), all);
  }
  if (!same) return kExitCheckFailed;
  if (!a.has("--ref")) return kExitOk;
  return compare_with_reference(out_arrays, a.get("--ref"), a.get_double("--tol", 1e-2)) ? kExitOk : kExitCheckFailed;
}

}  // namespace

int cmd_qcom(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::printf("usage: opvision qcom decode STREAM | run CAPTURE_DIR [options]   (--help on each)\n\n"
                "  decode   print a PM4 stream as named packets and registers\n"
                "  run      run a capture through the qcom backend (KGSL, or the simulated a630)\n");
    return argc < 2 ? kExitError : kExitOk;
  }
  std::string sub = argv[1];
  if (sub == "decode") return qcom_decode(argc - 1, argv + 1);
  if (sub == "run") return qcom_run(argc - 1, argv + 1);
  throw UsageError("unknown qcom command '" + sub + "' (decode, run)");
}

}  // namespace opv::tools
