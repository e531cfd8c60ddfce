#include "plan/passes/passes.h"
#include "target/cuda/passes.h"
#include "target/opencl/passes.h"

namespace opv::plan {

std::vector<PlanPassInfo> plan_passes_for(const std::string& target) {
  if (target == "cpu")
    return {{"dedupe", dedupe, "remove calls with the same kernel and identical inputs, transitively"},
            {"layout-nhwc", assign_nhwc_layout,
             "store 4-D activations NHWC between layout-agnostic ops, with explicit reorders"}};
  if (target == "opencl")
    return {
        {"layout-image", assign_image_layout,
         "4-D activations in image2d RGBA half textures between image kernels, explicit reorders"},
        {"codegen", cl_codegen, "OpenCL kernel per call from its op family (always on)"},
        {"input-pack", input_pack, "uint8 inputs -> normalised image in one vectorised launch"},
        {"weight-pack", weight_pack, "static weights prepacked in the order their kernel reads them"},
        {"dedupe", dedupe, "remove calls with the same kernel and identical inputs, transitively"},
        {"level-schedule", level_schedule, "order calls by (dependency level, kernel)"},
        {"batch", batch_calls, "merge up to 4 independent same-kernel same-geometry calls into one launch"},
        {"replay", replay, "enqueue the whole plan with one wait per inference"},
        {"fp16-math", fp16_math, "fp16 accumulation in conv kernels where cl_khr_fp16 exists (opt-in)", true},
    };
  if (target == "cuda")
    return {
        {"dedupe", dedupe, "remove calls with the same kernel and identical inputs, transitively"},
        {"cuda-layout", cuda_layout,
         "4-D activations NHWC between convs and element-wise ops where --cuda-layout chooses it, explicit reorders"},
        {"cuda-codegen", cuda_codegen, "CUDA C++ kernel per call, shapes and post-ops compiled in (always on)"},
        {"nvrtc", cuda_nvrtc, "CUDA C++ -> PTX with NVRTC, ahead of time (always on)"},
    };
  return {};
}

}  // namespace opv::plan
