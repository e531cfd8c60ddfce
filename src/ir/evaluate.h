// Runs an ir::Graph node by node with the reference kernels. Used by constant folding, by pass
// tests (a pass must not change what the graph computes) and for debugging.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace opv::ir {

// Evaluates one node whose inputs are given (nullptr for absent optional inputs); returns its
// outputs allocated with the output values' dtypes and shapes.
std::vector<Tensor> evaluate_node(const Graph& g, const Node& n, const std::vector<const Tensor*>& ins);

// Evaluates the whole graph on inputs given by graph-input name; returns the graph outputs in
// order. Throws opv::Error on a missing input or a dtype/shape mismatch.
std::vector<Tensor> evaluate(const Graph& g, const std::map<std::string, Tensor>& inputs);

}  // namespace opv::ir
