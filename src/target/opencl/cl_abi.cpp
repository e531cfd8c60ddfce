/* The OpenCL ABI helpers of cl_abi.h: parameter-list parsing, the one-group wrapper every
 * generated kernel is built from, the batched entry of plan pass "batch", and the common prelude.
 * (The ImageRGBA geometry is plan/image_geometry.cpp, shared with the runtime.)
 *   1. parse_params: a C parameter list split at top-level commas; a parameter's name is its last
 *      identifier (array suffixes "[..]" skipped).
 *   2. cl_wrap: `void <entry>_body(<params>) {<body>}` + `__kernel void <entry>(<params>)`.
 *   3. cl_batch_entry: appends `__kernel void <entry>_x<n>(...)` whose parameters are n copies of
 *      <params> with names suffixed _0.._n-1, dispatching on get_global_id(2).
 * Invariant: the batched entry calls the same <entry>_body as the one-group entry, so a batched
 * group computes exactly what the single call computed.
 */
#include "target/opencl/cl_abi.h"

#include <cctype>

#include "core/error.h"

namespace opv::plan::cl {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The last identifier of one declaration, skipping trailing array suffixes ("float a[4]" -> a).
std::string param_name(const std::string& decl) {
  int64_t i = int64_t(decl.size()) - 1;
  for (;;) {
    while (i >= 0 && std::isspace(static_cast<unsigned char>(decl[size_t(i)]))) --i;
    if (i >= 0 && decl[size_t(i)] == ']') {
      int depth = 0;
      for (; i >= 0; --i) {
        if (decl[size_t(i)] == ']') ++depth;
        if (decl[size_t(i)] == '[' && --depth == 0) break;
      }
      OPV_CHECK(i >= 0, "kernel parameter '", decl, "': unbalanced '[]'");
      --i;
      continue;
    }
    break;
  }
  int64_t end = i + 1;
  while (i >= 0 && ident_char(decl[size_t(i)])) --i;
  std::string name = decl.substr(size_t(i + 1), size_t(end - i - 1));
  OPV_CHECK(!name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])), "kernel parameter '", decl,
            "' has no name");
  return name;
}

std::string join_names(const std::vector<Param>& ps, const std::string& suffix) {
  std::string r;
  for (size_t i = 0; i < ps.size(); ++i) r += (i ? ", " : "") + ps[i].name + suffix;
  return r;
}

// `decl` with its name (the last occurrence of the identifier) suffixed.
std::string rename_decl(const Param& p, const std::string& suffix) {
  size_t at = p.decl.rfind(p.name);
  while (at != std::string::npos) {
    bool left_ok = at == 0 || !ident_char(p.decl[at - 1]);
    bool right_ok = at + p.name.size() >= p.decl.size() || !ident_char(p.decl[at + p.name.size()]);
    if (left_ok && right_ok) break;
    at = at == 0 ? std::string::npos : p.decl.rfind(p.name, at - 1);
  }
  OPV_ASSERT(at != std::string::npos);
  return p.decl.substr(0, at) + p.name + suffix + p.decl.substr(at + p.name.size());
}

// "_<g>" (built by append: GCC 12 warns falsely about `"_" + std::to_string(g)`).
std::string group_suffix(int g) {
  std::string s(1, '_');
  s += std::to_string(g);
  return s;
}

}  // namespace

std::vector<Param> parse_params(const std::string& params) {
  std::vector<Param> out;
  std::string t = trim(params);
  if (t.empty() || t == "void") return out;
  int depth = 0;
  std::string cur;
  auto flush = [&]() {
    std::string d = trim(cur);
    OPV_CHECK(!d.empty(), "kernel parameter list '", params, "' has an empty parameter");
    out.push_back({d, param_name(d)});
    cur.clear();
  };
  for (char c : t) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    OPV_CHECK(depth >= 0, "kernel parameter list '", params, "' has unbalanced brackets");
    if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    cur += c;
  }
  OPV_CHECK(depth == 0, "kernel parameter list '", params, "' has unbalanced brackets");
  flush();
  return out;
}

namespace {
// Local arrays of cl_wrap: (kernel-scope declaration, body parameter, name).
struct LocalDecl {
  std::string decl, param, name;
};
constexpr const char* kLocalsMarker = "// opv_locals: ";

std::vector<LocalDecl> parse_locals(const std::string& locals) {
  std::vector<LocalDecl> r;
  size_t start = 0;
  while (start < locals.size()) {
    size_t end = locals.find(';', start);
    if (end == std::string::npos) end = locals.size();
    std::string d = locals.substr(start, end - start);
    start = end + 1;
    while (!d.empty() && std::isspace(static_cast<unsigned char>(d.back()))) d.pop_back();
    while (!d.empty() && std::isspace(static_cast<unsigned char>(d.front()))) d.erase(d.begin());
    if (d.empty()) continue;
    const size_t br = d.find('[');
    OPV_CHECK(d.rfind("__local ", 0) == 0 && br != std::string::npos && d.back() == ']',
              "cl_wrap: local declaration '", d, "' is not of the form '__local T name[N]'");
    std::string head = d.substr(0, br);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    const size_t sp = head.rfind(' ');
    OPV_CHECK(sp != std::string::npos, "cl_wrap: local declaration '", d, "' has no name");
    r.push_back({d, head.substr(0, sp) + "* " + head.substr(sp + 1), head.substr(sp + 1)});
  }
  return r;
}

// Kernel-scope declarations and the extra body arguments/parameters for a source's locals.
std::vector<LocalDecl> locals_of_source(const std::string& source) {
  const size_t m = source.find(kLocalsMarker);
  if (m == std::string::npos) return {};
  const size_t b = m + std::string(kLocalsMarker).size();
  return parse_locals(source.substr(b, source.find('\n', b) - b));
}

std::string local_decls(const std::vector<LocalDecl>& ls) {
  std::string r;
  for (const LocalDecl& l : ls) r += "  " + l.decl + ";\n";
  return r;
}

std::string local_args(const std::vector<LocalDecl>& ls) {
  std::string r;
  for (const LocalDecl& l : ls) r += ", " + l.name;
  return r;
}
}  // namespace

std::string cl_wrap(const std::string& prelude, const std::string& entry, const std::string& params,
                    const std::string& body, const std::string& locals) {
  std::vector<Param> ps = parse_params(params);
  const std::vector<LocalDecl> ls = parse_locals(locals);
  std::string body_params = params;
  for (const LocalDecl& l : ls) body_params += ", " + l.param;
  std::string r = prelude;
  if (!r.empty() && r.back() != '\n') r += '\n';
  if (!ls.empty()) r += kLocalsMarker + locals + "\n";
  r += "void " + entry + "_body(" + body_params + ") {\n" + body;
  if (!body.empty() && body.back() != '\n') r += '\n';
  r += "}\n";
  r += "__kernel void " + entry + "(" + params + ") {\n" + local_decls(ls) + "  " + entry + "_body(" +
       join_names(ps, "") + local_args(ls) + ");\n}\n";
  return r;
}

std::string cl_batch_entry(const std::string& source, const std::string& entry, const std::string& params,
                           int n, std::string* batched_entry) {
  return cl_batch_entry(source, entry, params, n, 0, batched_entry);
}

std::string cl_batch_entry(const std::string& source, const std::string& entry, const std::string& params,
                           int n, int n_outputs, std::string* batched_entry) {
  OPV_CHECK(n >= 2, "cl_batch_entry: a batch needs at least 2 groups, got ", n);
  OPV_CHECK(source.find(entry + "_body(") != std::string::npos, "cl_batch_entry: the source of '", entry,
            "' has no ", entry, "_body() (it was not made by cl_wrap)");
  std::vector<Param> ps = parse_params(params);
  OPV_CHECK(n_outputs >= 0 && n_outputs <= int(ps.size()), "cl_batch_entry: ", n_outputs,
            " outputs but only ", ps.size(), " parameters in '", params, "'");
  const std::string name = entry + "_x" + std::to_string(n);
  const std::string decls = cl_batch_params(params, n, n_outputs);
  std::string r = source;
  if (!r.empty() && r.back() != '\n') r += '\n';
  const std::vector<LocalDecl> ls = locals_of_source(source);
  r += "__kernel void " + name + "(" + decls + ") {\n" + local_decls(ls) + "  switch (get_global_id(2)) {\n";
  for (int g = 0; g < n; ++g)
    r += "    case " + std::to_string(g) + ": " + entry + "_body(" + join_names(ps, group_suffix(g)) +
         local_args(ls) + "); break;\n";
  r += "  }\n}\n";
  if (batched_entry) *batched_entry = name;
  return r;
}

std::string cl_batch_params(const std::string& params, int n, int n_outputs) {
  std::vector<Param> ps = parse_params(params);
  OPV_CHECK(n_outputs >= 0 && n_outputs <= int(ps.size()), "cl_batch_params: ", n_outputs,
            " outputs but only ", ps.size(), " parameters in '", params, "'");
  // The first n_outputs parameters of every group, then the rest of every group.
  std::string decls;
  auto add_range = [&](size_t from, size_t to) {
    for (int g = 0; g < n; ++g)
      for (size_t i = from; i < to; ++i)
      {
        if (!decls.empty()) decls += ", ";
        decls += rename_decl(ps[i], group_suffix(g));
      }
  };
  add_range(0, size_t(n_outputs));
  add_range(size_t(n_outputs), ps.size());
  return decls;
}

const std::string& cl_prelude() {
  // opv_gelu/opv_sigmoid are macros so that they apply to float and float4 alike (OpenCL C has
  // no overloading of user functions without an extension attribute).
  static const std::string kPrelude =
      "#ifndef OPV_PRELUDE\n"
      "#define OPV_PRELUDE\n"
      "__constant sampler_t opv_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n"
      "#ifndef M_SQRT1_2_F\n"
      "#define M_SQRT1_2_F 0.707106781186547524f\n"
      "#endif\n"
      "#define opv_gelu(x) (0.5f * (x) * (1.0f + erf((x) * M_SQRT1_2_F)))\n"
      "#define opv_sigmoid(x) (1.0f / (1.0f + exp(-(x))))\n"
      "#define opv_gelu4(x) opv_gelu(x)\n"
      "#define opv_sigmoid4(x) opv_sigmoid(x)\n"
      "#define OPV_LOAD_HALF(p, i) vload_half((i), (p))\n"
      "#define OPV_STORE_HALF(p, i, v) vstore_half_rte((v), (i), (p))\n"
      "#define OPV_LOAD_HALF4(p, i) vload_half4((i), (p))\n"
      "#define OPV_STORE_HALF4(p, i, v) vstore_half4_rte((v), (i), (p))\n"
      "#endif\n";
  return kPrelude;
}

}  // namespace opv::plan::cl
