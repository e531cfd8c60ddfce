// NumPy .npy / .npz reading and writing for the CLI (inputs, outputs, reference files).
// .npy: format versions 1, 2 (and 3, UTF-8 header) are read; version 1 is written (version 2
// when the header would not fit). Supported dtypes: '<f4' '<f2' '<f8' '<i8' '<i4' '|i1' '|u1'
// '|b1', C order only. .npz: a zip of .npy members (stored or deflated when read, stored when
// written); member names are given and returned without the ".npy" suffix, in archive order.
// Every error is an opv::Error naming the file (and member) and what is wrong.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace opv::tools {

using NamedArrays = std::vector<std::pair<std::string, Tensor>>;

// Parses an .npy image; `what` names the source in messages ("in.npz:img").
Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what);
std::vector<uint8_t> encode_npy(const Tensor& t);

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

NamedArrays read_npz(const std::string& path);
// Names must be unique and non-empty; ".npy" is appended to each member name.
void write_npz(const std::string& path, const NamedArrays& arrays);

// The numpy descr string for a dtype ("<f4", "|u1", ...).
const char* npy_descr(DType t);

}  // namespace opv::tools
