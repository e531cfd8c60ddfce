// Per-launch cost of an in-order OpenCL queue: N back-to-back launches of a tiny kernel (buffer
// store, or image read + write as opvision's kernels do), one wait at the end; wall time / N.
// Tells how much of a plan's time is launch cost rather than work (BENCHMARKS.md).
//   build: g++ -O2 -std=c++17 bench/cl_launch_floor.cpp -lOpenCL -o cl_launch_floor
//   run:   ./cl_launch_floor [DEVICE-NAME-SUBSTRING] [N]
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) {
    std::fprintf(stderr, "cl_launch_floor: %s failed (%d)\n", what, e);
    std::exit(1);
  }
}

static const char* kSrc = R"(
__kernel void store1(__global float* y) { y[get_global_id(0)] = (float)get_global_id(0); }
__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
__kernel void img1(__read_only image2d_t x, __write_only image2d_t y) {
  const int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(y, p, read_imagef(x, smp, p) * 0.5f + 1.0f);
}
__kernel void buf1(__global const half* x, __global half* y) {
  const int i = get_global_id(1) * get_global_size(0) + get_global_id(0);
  vstore_half4(vload_half4(i, x) * 0.5f + 1.0f, i, y);
}
__kernel void img2buf(__read_only image2d_t x, __global half* y) {
  const int2 p = (int2)(get_global_id(0), get_global_id(1));
  vstore_half4(read_imagef(x, smp, p) * 0.5f + 1.0f, p.y * get_global_size(0) + p.x, y);
}
__kernel void buf2img(__global const half* x, __write_only image2d_t y) {
  const int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(y, p, vload_half4(p.y * get_global_size(0) + p.x, x) * 0.5f + 1.0f);
}
)";

int main(int argc, char** argv) {
  const std::string want = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? std::atoi(argv[2]) : 2000;
  cl_uint np = 0;
  check(clGetPlatformIDs(0, nullptr, &np), "clGetPlatformIDs");
  std::vector<cl_platform_id> ps(np);
  check(clGetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
  cl_device_id dev = nullptr;
  std::string name;
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ds(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    for (cl_device_id d : ds) {
      char buf[256] = {};
      clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof buf, buf, nullptr);
      std::string s = buf, lo = s;
      std::transform(lo.begin(), lo.end(), lo.begin(), ::tolower);
      if (!dev && (want.empty() || lo.find(want) != std::string::npos)) dev = d, name = s;
    }
  }
  if (!dev) {
    std::fprintf(stderr, "cl_launch_floor: no OpenCL device matching '%s'\n", want.c_str());
    return 1;
  }
  cl_int e;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &e);
  check(e, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  check(e, "clCreateCommandQueue");
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kSrc, nullptr, &e);
  check(e, "clCreateProgramWithSource");
  check(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr), "clBuildProgram");
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, nullptr, &e);
  check(e, "clCreateBuffer");
  cl_image_format fmt{CL_RGBA, CL_HALF_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 256;
  desc.image_height = 16;
  cl_mem im[2];
  for (cl_mem& m : im) {
    m = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, nullptr, &e);
    check(e, "clCreateImage");
  }
  cl_kernel ks = clCreateKernel(prog, "store1", &e);
  check(e, "clCreateKernel store1");
  check(clSetKernelArg(ks, 0, sizeof buf, &buf), "clSetKernelArg");
  cl_kernel ki[2];
  for (int i = 0; i < 2; ++i) {
    ki[i] = clCreateKernel(prog, "img1", &e);
    check(e, "clCreateKernel img1");
    check(clSetKernelArg(ki[i], 0, sizeof(cl_mem), &im[i]), "clSetKernelArg");
    check(clSetKernelArg(ki[i], 1, sizeof(cl_mem), &im[1 - i]), "clSetKernelArg");
  }
  cl_mem hb[2];
  for (cl_mem& m : hb) {
    m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256 * 16 * 8, nullptr, &e);
    check(e, "clCreateBuffer");
  }
  // Chains of two kernels alternating: buffer -> buffer, image -> buffer -> image.
  cl_kernel kb[2], kx[2];
  for (int i = 0; i < 2; ++i) {
    kb[i] = clCreateKernel(prog, "buf1", &e);
    check(e, "clCreateKernel buf1");
    check(clSetKernelArg(kb[i], 0, sizeof(cl_mem), &hb[i]), "clSetKernelArg");
    check(clSetKernelArg(kb[i], 1, sizeof(cl_mem), &hb[1 - i]), "clSetKernelArg");
  }
  kx[0] = clCreateKernel(prog, "img2buf", &e);
  check(e, "clCreateKernel img2buf");
  check(clSetKernelArg(kx[0], 0, sizeof(cl_mem), &im[0]), "clSetKernelArg");
  check(clSetKernelArg(kx[0], 1, sizeof(cl_mem), &hb[0]), "clSetKernelArg");
  kx[1] = clCreateKernel(prog, "buf2img", &e);
  check(e, "clCreateKernel buf2img");
  check(clSetKernelArg(kx[1], 0, sizeof(cl_mem), &hb[0]), "clSetKernelArg");
  check(clSetKernelArg(kx[1], 1, sizeof(cl_mem), &im[0]), "clSetKernelArg");
  std::printf("device: %s, %d launches per timing, median of 5\n", name.c_str(), n);
  for (int mode = 0; mode < 5; ++mode) {
    const size_t g1 = mode == 0 ? 64 : 65536;
    std::vector<double> ts;
    for (int rep = 0; rep < 6; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        if (mode < 2) {
          check(clEnqueueNDRangeKernel(q, ks, 1, nullptr, &g1, nullptr, 0, nullptr, nullptr), "enqueue");
        } else {
          const size_t g2[2] = {256, 16};
          cl_kernel k = mode == 2 ? ki[i & 1] : mode == 3 ? kb[i & 1] : kx[i & 1];
          check(clEnqueueNDRangeKernel(q, k, 2, nullptr, g2, nullptr, 0, nullptr, nullptr), "enqueue");
        }
      }
      check(clFinish(q), "clFinish");
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (rep) ts.push_back(us / n);
    }
    std::sort(ts.begin(), ts.end());
    const char* what[] = {"buffer store, 64 items", "buffer store, 65536 items", "image read+write chain, 4096 texels",
                          "half4 buffer chain, 4096 texels", "image -> buffer -> image chain"};
    std::printf("  %-38s %.2f us per launch\n", what[mode], ts[ts.size() / 2]);
  }
  return 0;
}
