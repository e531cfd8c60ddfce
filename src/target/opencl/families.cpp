#include "target/opencl/codegen.h"

namespace opv::plan::cl {

const std::vector<const Family*>& families() {
  // Order matters: the first family that supports a call generates it.
  static const std::vector<const Family*> kAll = {
      &input_pack_family(), &reorder_family(),  &conv_image_family(),
      &pool_image_family(), &eltwise_image_family(), &linear_family(),
  };
  return kAll;
}

}  // namespace opv::plan::cl
