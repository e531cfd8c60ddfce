// Tests of the OpenCL runtime layer: error names, device listing and selection, the program
// cache (memory and disk, corrupt files, build errors). Device tests skip without a device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backend/opencl/cl_runtime.h"
#include "backend/opencl/qcom_recording.h"
#include "core/error.h"
#include "test_util.h"

namespace opv::backend::cl {
namespace {

std::vector<DeviceInfo> devices_or_empty() {
  try {
    return list_devices();
  } catch (const Error&) {
    return {};
  }
}

#define REQUIRE_CL_DEVICE()                                              \
  if (devices_or_empty().empty()) GTEST_SKIP() << "no OpenCL device found"

using opv::test::error_of;

// A source no earlier run has built (the cache must start cold for it).
std::string unique_source(const std::string& tag) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return "// " + tag + " " + std::to_string(now) + "\n"
         "__kernel void scale2(__global float* y, __global const float* x) {\n"
         "  int i = get_global_id(0); y[i] = 2.0f * x[i];\n}\n";
}

TEST(ClRuntime, ErrorNames) {
  EXPECT_STREQ(error_name(CL_INVALID_WORK_GROUP_SIZE), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_STREQ(error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_STREQ(error_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_STREQ(error_name(CL_INVALID_KERNEL_ARGS), "CL_INVALID_KERNEL_ARGS");
  EXPECT_STREQ(error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_STREQ(error_name(-12345), "CL_UNKNOWN_ERROR");
  EXPECT_NO_THROW(check(CL_SUCCESS, "clFinish"));
  const std::string msg = error_of([] { check(-54, "clEnqueueNDRangeKernel", "call 3 (conv)"); });
  EXPECT_EQ(msg, "clEnqueueNDRangeKernel failed: CL_INVALID_WORK_GROUP_SIZE (-54): call 3 (conv)");
  EXPECT_EQ(error_of([] { check(-5, "clFinish"); }), "clFinish failed: CL_OUT_OF_RESOURCES (-5)");
}

TEST(ClRuntime, NoDevicesGivesClearError) {
  const std::string msg = error_of([] { select_device(std::vector<DeviceInfo>{}, ""); });
  EXPECT_NE(msg.find("no OpenCL platform"), std::string::npos) << msg;
}

TEST(ClRuntime, ListDevices) {
  REQUIRE_CL_DEVICE();
  const std::vector<DeviceInfo> devs = list_devices();
  for (size_t i = 0; i < devs.size(); ++i) {
    const DeviceInfo& d = devs[i];
    EXPECT_EQ(d.global_index, int(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.platform_name.empty());
    EXPECT_GE(d.mem_base_addr_align, 1);
    EXPECT_GE(d.max_work_group_size, 1);
    EXPECT_GE(d.compute_units, 1);
    EXPECT_GT(d.global_mem_bytes, 0);
    EXPECT_EQ(d.has_fp16, d.has_extension("cl_khr_fp16"));
    EXPECT_EQ(d.has_command_buffer, d.has_extension("cl_khr_command_buffer"));
    if (d.image_support) {
      EXPECT_GE(d.image2d_max_width, 2048);  // the OpenCL minimum for image-capable devices
      EXPECT_GE(d.image2d_max_height, 2048);
    }
    EXPECT_NE(d.summary().find("fp16"), std::string::npos);
    EXPECT_NE(describe_devices(devs).find(d.name), std::string::npos);
  }
}

TEST(ClRuntime, SelectDevice) {
  REQUIRE_CL_DEVICE();
  const std::vector<DeviceInfo> devs = list_devices();
  // Default: the first GPU, else the first device.
  const DeviceInfo def = select_device(devs, "");
  const DeviceInfo* first_gpu = nullptr;
  for (const DeviceInfo& d : devs)
    if (!first_gpu && (d.type & CL_DEVICE_TYPE_GPU)) first_gpu = &d;
  EXPECT_EQ(def.device, first_gpu ? first_gpu->device : devs.front().device);
  for (const DeviceInfo& d : devs) {
    EXPECT_EQ(select_device(devs, std::to_string(d.global_index)).device, d.device);
    EXPECT_EQ(select_device(devs, std::to_string(d.platform_index) + ":" + std::to_string(d.device_index)).device,
              d.device);
  }
  // Case-insensitive name substrings (device name, then platform name).
  std::string upper = devs.front().name.substr(0, 6);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  const DeviceInfo by_name = select_device(devs, upper);
  EXPECT_NE(by_name.device, nullptr);
  std::string lower_plat = devs.front().platform_name.substr(0, 8);
  for (char& c : lower_plat) c = char(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_NE(select_device(devs, lower_plat).device, nullptr);
  // A vendor / version word: "pocl" finds PoCL through its version strings.
  for (const DeviceInfo& d : devs)
    if (d.platform_version.find("PoCL") != std::string::npos) {
      EXPECT_NE(select_device(devs, "pocl").platform_version.find("PoCL"), std::string::npos);
      break;
    }
  // Bad selectors list the devices.
  for (const std::string sel : {"no-such-device-xyz", "999", "7:7"}) {
    const std::string msg = error_of([&] { select_device(devs, sel); });
    EXPECT_NE(msg.find("no device matches --device '" + sel + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(devs.front().name), std::string::npos) << msg;
  }
}

class ClCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (devices_or_empty().empty()) GTEST_SKIP() << "no OpenCL device found";
    dir_ = test::temp_dir();
    setenv("OPV_CACHE_DIR", dir_.c_str(), 1);
    dev_ = select_device("");
  }
  void TearDown() override { unsetenv("OPV_CACHE_DIR"); }
  // The program works: its kernel can be created.
  static void expect_usable(const Program& p) {
    cl_int err = CL_SUCCESS;
    Kernel k(clCreateKernel(p.get(), "scale2", &err));
    EXPECT_EQ(err, CL_SUCCESS);
  }
  std::string dir_;
  DeviceInfo dev_;
};

TEST_F(ClCache, CacheDirFromEnvironment) {
  EXPECT_EQ(cache_dir(), dir_);
  // The former switch OPV_CL_CACHE=0 is no longer read (build_program's disk_cache decides).
  setenv("OPV_CL_CACHE", "0", 1);
  EXPECT_EQ(cache_dir(), dir_);
  EXPECT_NE(cache_path(dev_, "x", ""), "");
  unsetenv("OPV_CL_CACHE");
  unsetenv("OPV_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg_opv", 1);
  EXPECT_EQ(cache_dir(), "/tmp/xdg_opv/opvision/cl");
  unsetenv("XDG_CACHE_HOME");
  // Different options or source give different files.
  setenv("OPV_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_NE(cache_path(dev_, "a", ""), cache_path(dev_, "a", "-cl-fast-relaxed-math"));
  EXPECT_NE(cache_path(dev_, "a", ""), cache_path(dev_, "b", ""));
  EXPECT_EQ(cache_path(dev_, "a", "").rfind(dir_, 0), 0u);
}

TEST_F(ClCache, SecondBuildHitsTheCache) {
  const std::string src = unique_source("hits");
  const BuildStats s0 = build_stats();
  Program p1 = build_program(dev_, src, "", "scale2");
  const BuildStats s1 = build_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_TRUE(std::filesystem::exists(cache_path(dev_, src, ""))) << cache_path(dev_, src, "");
  Program p2 = build_program(dev_, src, "", "scale2");
  const BuildStats s2 = build_stats();
  EXPECT_EQ(s2.memory_hits, s1.memory_hits + 1);
  EXPECT_EQ(s2.compiles, s1.compiles);
  EXPECT_EQ(p1.get(), p2.get());
  expect_usable(p2);
  // Other options: another program.
  Program p3 = build_program(dev_, src, "-cl-mad-enable", "scale2");
  EXPECT_EQ(build_stats().compiles, s2.compiles + 1);
  EXPECT_NE(p3.get(), p1.get());
  // A fresh process (simulated by dropping the in-process map) loads the binary from disk.
  clear_memory_cache();
  Program p4 = build_program(dev_, src, "", "scale2");
  const BuildStats s4 = build_stats();
  EXPECT_EQ(s4.disk_hits, s2.disk_hits + 1);
  EXPECT_EQ(s4.compiles, s2.compiles + 1);  // only p3's compile
  expect_usable(p4);
}

TEST_F(ClCache, CorruptCacheFileIsRebuilt) {
  const std::string src = unique_source("corrupt");
  const std::string path = cache_path(dev_, src, "");
  for (const std::string& junk : {std::string("garbage"), std::string("OPVCLBN1") + std::string(40, '\x7f')}) {
    std::filesystem::create_directories(dir_);
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f << junk;
    }
    clear_memory_cache();
    const BuildStats s0 = build_stats();
    Program p = build_program(dev_, src, "", "scale2");
    const BuildStats s1 = build_stats();
    EXPECT_EQ(s1.disk_rejects, s0.disk_rejects + 1);
    EXPECT_EQ(s1.compiles, s0.compiles + 1);
    expect_usable(p);
    EXPECT_GT(std::filesystem::file_size(path), junk.size());  // replaced by a good file
  }
  // Truncating a good file is also tolerated.
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  clear_memory_cache();
  const BuildStats s0 = build_stats();
  Program p = build_program(dev_, src, "", "scale2");
  EXPECT_EQ(build_stats().disk_rejects, s0.disk_rejects + 1);
  expect_usable(p);
  // And the rewritten file is used next time.
  clear_memory_cache();
  const BuildStats s2 = build_stats();
  Program q = build_program(dev_, src, "", "scale2");
  EXPECT_EQ(build_stats().disk_hits, s2.disk_hits + 1);
}

TEST_F(ClCache, DisabledCacheWritesNothing) {
  const std::string src = unique_source("disabled");
  const BuildStats s0 = build_stats();
  Program p = build_program(dev_, src, "", "scale2", /*disk_cache=*/false);
  EXPECT_EQ(build_stats().compiles, s0.compiles + 1);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  expect_usable(p);
}

TEST_F(ClCache, BuildErrorQuotesTheLog) {
  const std::string src = unique_source("broken") + "__kernel void broken_entry(__global float* y) { y[0] = ; }\n";
  const std::string msg = error_of([&] { build_program(dev_, src, "", "broken_entry"); });
  EXPECT_NE(msg.find("clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel 'broken_entry'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("build log:\n"), std::string::npos) << msg;
  EXPECT_GT(msg.size(), msg.find("build log:\n") + 12) << "the log itself is quoted: " << msg;
  // A failed build leaves no cache file.
  EXPECT_FALSE(std::filesystem::exists(cache_path(dev_, src, "")));
}

}  // namespace
}  // namespace opv::backend::cl

namespace opv::backend::cl {
namespace {

// cl_qcom_recordable_queues replay (backend/opencl/qcom_recording.h) is only taken on a device
// that advertises the extension; elsewhere recording reports why and holds nothing, and the
// backend enqueues call by call (its end-to-end tests run that path). Adreno: not run here.
TEST(QcomRecording, ReportsWhyItDoesNotRecordWithoutTheExtension) {
  if (devices_or_empty().empty()) GTEST_SKIP() << "no OpenCL device found";
  const DeviceInfo dev = select_device("");
  if (dev.has_qcom_recordable_queues) GTEST_SKIP() << "device has cl_qcom_recordable_queues";
  backend::qcom::PlanRecording rec;
  std::string why;
  EXPECT_FALSE(rec.record(dev.platform, shared_context(dev), dev.device, {}, &why));
  EXPECT_EQ(why, "nothing to record");
  backend::qcom::Launch l;
  size_t g = 1;
  l.dims = 1;
  l.global = &g;
  why.clear();
  EXPECT_FALSE(rec.record(dev.platform, shared_context(dev), dev.device, {l}, &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(bool(rec));
  EXPECT_EQ(backend::qcom::kQueueRecordable, cl_command_queue_properties(0x40000000));
}

}  // namespace
}  // namespace opv::backend::cl
