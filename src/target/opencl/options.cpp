#include "target/opencl/options.h"

#include "core/error.h"

namespace opv::plan::cl {

namespace {

constexpr const char* kBusyItems = "cl_busy_items";
constexpr const char* kWeightDtype = "cl_weight_dtype";
constexpr const char* kImageStorage = "cl_image_storage";
constexpr const char* kBatchMax = "cl_batch_max";
constexpr const char* kKsMaxLanes = "cl_ks_max_lanes";
constexpr const char* kKsMinSteps = "cl_ks_min_steps";
constexpr const char* kDwSplitMinTaps = "cl_dw_split_min_taps";

// The tuning keys and their fields, in one table for set_tune, record and from_meta.
struct TuneField {
  const char* key;
  int64_t Options::*field;
};
constexpr TuneField kTune[] = {{kKsMaxLanes, &Options::ks_max_lanes},
                               {kKsMinSteps, &Options::ks_min_steps},
                               {kDwSplitMinTaps, &Options::dw_split_min_taps}};

}  // namespace

bool Options::set_tune(const std::string& key, int64_t value) {
  for (const TuneField& t : kTune)
    if (key == t.key) {
      this->*t.field = value;
      return true;
    }
  return false;
}

const char* Options::tune_keys() { return "cl_ks_max_lanes, cl_ks_min_steps, cl_dw_split_min_taps"; }

void Options::record(Attrs& meta) const {
  const Options d;
  auto put = [&](const char* key, bool differs, AttrValue v) {
    if (differs)
      meta.set(key, std::move(v));
    else
      meta.erase(key);
  };
  put(kBusyItems, busy_items != d.busy_items, busy_items);
  put(kWeightDtype, weight_dtype != d.weight_dtype, std::string(weight_dtype == DType::F32 ? "f32" : "f16"));
  put(kImageStorage, images_in_buffers != d.images_in_buffers, std::string("buffer"));
  put(kBatchMax, batch_max != d.batch_max, batch_max);
  for (const TuneField& t : kTune) put(t.key, this->*t.field != d.*t.field, this->*t.field);
}

Options Options::from_meta(const Attrs& meta) {
  Options o;
  o.busy_items = meta.i(kBusyItems, o.busy_items);
  const std::string w = meta.s(kWeightDtype, "f16");
  OPV_CHECK(w == "f16" || w == "f32", "plan meta ", kWeightDtype, " must be f16 or f32, got '", w, "'");
  o.weight_dtype = w == "f32" ? DType::F32 : DType::F16;
  const std::string storage = meta.s(kImageStorage, "image");
  OPV_CHECK(storage == "image" || storage == "buffer", "plan meta ", kImageStorage, " must be image or buffer, got '",
            storage, "'");
  o.images_in_buffers = storage == "buffer";
  o.batch_max = meta.i(kBatchMax, o.batch_max);
  for (const TuneField& t : kTune) o.*t.field = meta.i(t.key, o.*t.field);
  return o;
}

bool Options::operator==(const Options& o) const {
  return busy_items == o.busy_items && weight_dtype == o.weight_dtype && images_in_buffers == o.images_in_buffers &&
         batch_max == o.batch_max && ks_max_lanes == o.ks_max_lanes && ks_min_steps == o.ks_min_steps &&
         dw_split_min_taps == o.dw_split_min_taps;
}

}  // namespace opv::plan::cl
