#include "target/cuda/options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.h"
#include "target/cuda/cuda_abi.h"

namespace opv::plan::cuda {

namespace {
constexpr const char* kArchKey = "cuda_arch";
constexpr const char* kSassKey = "cuda_sass";  // Options::sass (absent = auto, the default)
constexpr const char* kFfnKey = "cuda_ffn";  // 0 = fc1/fc2 kept apart (absent = fused, the default)
constexpr const char* kFfnDwKey = "cuda_ffn_dw";  // 1 = the depthwise conv before fc1 inside (absent = apart, the default)
constexpr const char* kFfnPairKey = "cuda_ffn_pair";  // FfnPairMode: 0 off, 1 split, 2 all (absent = off, the default)
constexpr const char* kPackKey = "cuda_pack";  // 1 = the pack inside the conv (absent = apart, the default)
constexpr const char* kStageKey = "cuda_stage";  // 1 = FastViT blocks as one kernel a run (absent = two launches a block)
constexpr const char* kHeadsKey = "cuda_heads";  // 0 = a launch per GEMV layer (absent = chains fused, the default)
constexpr const char* kSeKey = "cuda_se";  // 0 = the SE gate's four calls kept apart (absent = fused, the default)
constexpr const char* kClusterKey = "cuda_cluster";  // 0 = split ConvFFN partials through global memory (absent = clusters)
// PdlMode as 0 off, 1 on, 2 early, 3 prefetch, 4 tail (absent = on, the default since session 25;
// artifacts compiled before then lack it when off: their kernels' attrs "cuda_pdl" say what runs)
constexpr const char* kPdlKey = "cuda_pdl";
constexpr const char* kLayoutKey = "cuda_layout";  // nhwc / auto (absent = nchw, the default)
constexpr const char* kTuneMetaKey = "cuda_tune";  // Tune::str() (absent = every target its default)
// TuneKey order. Defaults: ffn.cpp (run 10, 96 blocks over the split), codegen.cpp's 1x1 split-K
// (64 since session 35: each of the batch-1 fixture's eight split 1x1s 0.1-0.7 us shorter in the
// replayed inference than at 128, 3.6 us in all, stage 3's fc2 slower at 32; `bench
// --replay-prefixes`) and depthwise-pair bands (256), conv_mma.cpp's channel groups (256: the stem's 64 channels
// in one group, as measured in session 21), ffn.cpp's deep slab ring (10 buffers; 2 keeps the
// static 48 KB ring), dw_pair.cpp's planes form (4 outputs of a row a thread: the batch-32
// artifact's pairs 0.224 ms against 0.240 with 8, session 27 run 53; below 4 every pair keeps the
// band form), ffn.cpp's wide pixel tiles (up to 64 pixels a tile), conv_mma.cpp's row blocks (up
// to 4 output rows a block), dw_planes.cpp's planes form of single depthwise convs (4 outputs of a
// row a thread; below 4 the generic conv), ffn.cpp's wide tiles on 4 warps (8: each warp half the
// tile's pixels), ffn.cpp's resident slabs (1: off, the ring; session 32), ffn.cpp's cluster splits
// over the last block's budget (1: none; session 32), the cluster splits' pushed partials (1; 0:
// each block reads its share from its peers; the H200 0.225 against 0.234 ms, session 33), the
// ConvFFN's X tile through registers (1 since session 36: the fixture 0.1616 against 0.1626 ms
// on an H100, 6 of 6 rounds; 0 keeps its cp.async group), the cluster ConvFFN alone on its SMs
// (ffn_sm_alone, opt-in), the ConvFFN's cluster splits at most 8 blocks (session 36: 16 before);
// probe is not a sizing target but a measuring build (codegen.cpp kProbePrelude; bench --probe);
// ffn_fc1_chains and ffn_fc2_chains 2 (opt-in, session 37, not yet timed) sum fc1's (fc2's) even
// and odd k-steps apart; se_fold (opt-in, session 40) folds the SE gate's neighbours into its
// cluster launch (se.cpp): 1 the 1x1 after it (not yet timed), 2 the depthwise conv before it too
// (on an H100 0.1623 against 0.1583 ms: slower).
constexpr TuneSpec kTuneSpecs[kTuneKeys] = {
    {"ffn_blocks", 96, 1, 4096},
    {"mma_blocks", 64, 1, 4096},
    {"dwpair_blocks", 256, 1, 4096},
    {"convmma_blocks", 256, 1, 4096},
    {"ffn_ring", 10, 2, 24},
    {"dwpair_r", 4, 1, 8},
    {"ffn_bn", 64, 16, 64},
    {"convmma_rows", 4, 1, 4},
    {"dw_r", 4, 1, 8},
    {"dw_rows", 4, 1, 4},
    {"ffn_warps", 8, 4, 8},
    {"ffn_resident", 1, 1, 24},
    {"ffn_cluster_slabs", 1, 1, 64},
    {"cluster_push", 1, 0, 1},
    {"ffn_x_regs", 1, 0, 1},
    {"ffn_sm_alone", 0, 0, 1},
    {"ffn_cluster_max", 8, 2, 16},
    {"probe", 0, 0, 1},
    {"ffn_fc1_chains", 1, 1, 2},
    {"ffn_fc2_chains", 1, 1, 2},
    {"se_fold", 0, 0, 2},
};
constexpr const char* kArchPrefix = "compute_";

// The enum options' names: one table each serves the name and the parse (whose error lists the
// names in the table's order).
template <class E>
struct EnumName {
  E value;
  const char* name;
};
constexpr EnumName<LayoutChoice> kLayoutNames[] = {
    {LayoutChoice::Auto, "auto"}, {LayoutChoice::Nchw, "nchw"}, {LayoutChoice::Nhwc, "nhwc"}};
constexpr EnumName<PdlMode> kPdlNames[] = {{PdlMode::Off, "off"},
                                           {PdlMode::On, "on"},
                                           {PdlMode::Early, "early"},
                                           {PdlMode::Prefetch, "prefetch"},
                                           {PdlMode::Tail, "tail"}};
constexpr EnumName<FfnPairMode> kFfnPairNames[] = {
    {FfnPairMode::Off, "off"}, {FfnPairMode::Split, "split"}, {FfnPairMode::All, "all"}};

template <class E, size_t N>
const char* name_in(const EnumName<E> (&table)[N], E v) {
  for (const EnumName<E>& e : table)
    if (e.value == v) return e.name;
  return "?";
}
// The value named `s`, else opv::Error "<what> must be a, b or c, got 's'".
template <class E, size_t N>
E parse_in(const EnumName<E> (&table)[N], const std::string& s, const char* what) {
  std::string names;
  for (size_t i = 0; i < N; ++i) {
    if (s == table[i].name) return table[i].value;
    names += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  }
  fail(what, " must be ", names, ", got '", s, "'");
}
}  // namespace

const char* layout_choice_name(LayoutChoice c) { return name_in(kLayoutNames, c); }
const char* pdl_mode_name(PdlMode m) { return name_in(kPdlNames, m); }
PdlMode parse_pdl_mode(const std::string& s) { return parse_in(kPdlNames, s, "cuda pdl"); }
const char* ffn_pair_mode_name(FfnPairMode m) { return name_in(kFfnPairNames, m); }
FfnPairMode parse_ffn_pair_mode(const std::string& s) { return parse_in(kFfnPairNames, s, "cuda ffn pair"); }

const TuneSpec& tune_spec(TuneKey k) { return kTuneSpecs[int(k)]; }

int64_t Tune::get(TuneKey k) const { return set[int(k)] ? value[int(k)] : tune_spec(k).dflt; }

std::string Tune::str() const {
  std::string s;
  for (int i = 0; i < kTuneKeys; ++i)
    if (set[i]) s += (s.empty() ? "" : ",") + std::string(kTuneSpecs[i].name) + "=" + std::to_string(value[i]);
  return s;
}

bool Tune::operator==(const Tune& o) const {
  for (int i = 0; i < kTuneKeys; ++i)
    if (get(TuneKey(i)) != o.get(TuneKey(i))) return false;
  return true;
}

Tune Tune::parse(const std::string& s) {
  Tune t;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int i = 0;
    while (i < kTuneKeys && key != kTuneSpecs[i].name) ++i;
    if (i == kTuneKeys) {
      std::string known;
      for (const TuneSpec& k : kTuneSpecs) known += (known.empty() ? "" : ", ") + std::string(k.name);
      fail("cuda tune: unknown key '", key, "' (known: ", known, ")");
    }
    OPV_CHECK(!t.set[i], "cuda tune: key '", key, "' given twice");
    const std::string num = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool digits = !num.empty() && num.size() <= 9;
    for (char c : num) digits = digits && std::isdigit(static_cast<unsigned char>(c)) != 0;
    const TuneSpec& sp = kTuneSpecs[i];
    const int64_t v = digits ? std::stoll(num) : -1;
    OPV_CHECK(v >= sp.lo && v <= sp.hi, "cuda tune: ", key, " must be an integer in [", sp.lo, ", ", sp.hi,
              "], got '", num, "'");
    OPV_CHECK(TuneKey(i) != TuneKey::FfnWarps || v == 4 || v == 8, "cuda tune: ", key, " must be 4 or 8, got '", num, "'");
    t.put(TuneKey(i), v);
    at = end + 1;
    OPV_CHECK(end == s.size() || at < s.size(), "cuda tune: a trailing ',' in '", s, "'");
  }
  return t;
}

LayoutChoice parse_layout_choice(const std::string& s) { return parse_in(kLayoutNames, s, "cuda layout"); }

void Options::check_arch(const std::string& arch) {
  const std::string prefix = kArchPrefix;
  bool ok = arch.size() > prefix.size() && arch.size() <= prefix.size() + 4 && arch.compare(0, prefix.size(), prefix) == 0;
  for (size_t i = prefix.size(); ok && i < arch.size(); ++i) ok = std::isdigit(static_cast<unsigned char>(arch[i])) != 0;
  OPV_CHECK(ok, "cuda arch must be compute_<NN> (a virtual architecture, e.g. compute_75 or compute_90), got '", arch,
            "'");
}

std::vector<int> Options::sass_sms(const std::string& sass, const std::string& arch) {
  check_arch(arch);
  const int arch_sm = arch_number(arch);
  if (sass == "auto") return {arch_sm};
  if (sass == "none") return {};
  std::vector<int> sms;
  size_t at = 0;
  while (true) {
    const size_t end = std::min(sass.find(',', at), sass.size());
    const std::string item = sass.substr(at, end - at);
    bool ok = item.size() > 3 && item.size() <= 6 && item.compare(0, 3, "sm_") == 0;
    for (size_t i = 3; ok && i < item.size(); ++i) ok = std::isdigit(static_cast<unsigned char>(item[i])) != 0;
    OPV_CHECK(ok, "cuda sass must be auto, none or a comma list of sm_NN (e.g. sm_90 or sm_80,sm_86), got '", sass,
              "'");
    const int sm = std::atoi(item.c_str() + 3);
    OPV_CHECK(sm >= arch_sm, "cuda sass ", item, " is older than the architecture ", arch,
              ": the PTX's code may use what that GPU lacks");
    if (std::find(sms.begin(), sms.end(), sm) == sms.end()) sms.push_back(sm);
    if (end == sass.size()) break;
    at = end + 1;
  }
  std::sort(sms.begin(), sms.end());
  return sms;
}

void Options::record(Attrs& meta) const {
  if (arch != Options().arch)
    meta.set(kArchKey, arch);
  else
    meta.erase(kArchKey);
  if (sass != Options().sass)
    meta.set(kSassKey, sass);
  else
    meta.erase(kSassKey);
  if (fuse_ffn != Options().fuse_ffn)
    meta.set(kFfnKey, int64_t(fuse_ffn ? 1 : 0));
  else
    meta.erase(kFfnKey);
  if (fuse_ffn_dw != Options().fuse_ffn_dw)
    meta.set(kFfnDwKey, int64_t(fuse_ffn_dw ? 1 : 0));
  else
    meta.erase(kFfnDwKey);
  if (ffn_pair != Options().ffn_pair)
    meta.set(kFfnPairKey, int64_t(ffn_pair));
  else
    meta.erase(kFfnPairKey);
  if (fuse_pack != Options().fuse_pack)
    meta.set(kPackKey, int64_t(fuse_pack ? 1 : 0));
  else
    meta.erase(kPackKey);
  if (fuse_se != Options().fuse_se)
    meta.set(kSeKey, int64_t(fuse_se ? 1 : 0));
  else
    meta.erase(kSeKey);
  if (cluster != Options().cluster)
    meta.set(kClusterKey, int64_t(cluster ? 1 : 0));
  else
    meta.erase(kClusterKey);
  if (fuse_stage != Options().fuse_stage)
    meta.set(kStageKey, int64_t(fuse_stage ? 1 : 0));
  else
    meta.erase(kStageKey);
  if (fuse_heads != Options().fuse_heads)
    meta.set(kHeadsKey, int64_t(fuse_heads ? 1 : 0));
  else
    meta.erase(kHeadsKey);
  if (pdl != Options().pdl)
    meta.set(kPdlKey, int64_t(pdl));
  else
    meta.erase(kPdlKey);
  if (layout != Options().layout)
    meta.set(kLayoutKey, std::string(layout_choice_name(layout)));
  else
    meta.erase(kLayoutKey);
  if (!tune.str().empty())
    meta.set(kTuneMetaKey, tune.str());
  else
    meta.erase(kTuneMetaKey);
}

Options Options::from_meta(const Attrs& meta) {
  Options o;
  o.arch = meta.s(kArchKey, o.arch);
  check_arch(o.arch);
  o.sass = meta.s(kSassKey, o.sass);
  sass_sms(o.sass, o.arch);
  const int64_t ffn = meta.i(kFfnKey, o.fuse_ffn ? 1 : 0);
  OPV_CHECK(ffn == 0 || ffn == 1, "plan meta ", kFfnKey, " must be 0 or 1, got ", ffn);
  o.fuse_ffn = ffn != 0;
  const int64_t dw = meta.i(kFfnDwKey, o.fuse_ffn_dw ? 1 : 0);
  OPV_CHECK(dw == 0 || dw == 1, "plan meta ", kFfnDwKey, " must be 0 or 1, got ", dw);
  o.fuse_ffn_dw = dw != 0;
  const int64_t fp = meta.i(kFfnPairKey, int64_t(o.ffn_pair));
  OPV_CHECK(fp >= 0 && fp <= 2, "plan meta ", kFfnPairKey, " must be 0 to 2, got ", fp);
  o.ffn_pair = FfnPairMode(fp);
  const int64_t pack = meta.i(kPackKey, o.fuse_pack ? 1 : 0);
  OPV_CHECK(pack == 0 || pack == 1, "plan meta ", kPackKey, " must be 0 or 1, got ", pack);
  o.fuse_pack = pack != 0;
  const int64_t se = meta.i(kSeKey, o.fuse_se ? 1 : 0);
  OPV_CHECK(se == 0 || se == 1, "plan meta ", kSeKey, " must be 0 or 1, got ", se);
  o.fuse_se = se != 0;
  const int64_t cl = meta.i(kClusterKey, o.cluster ? 1 : 0);
  OPV_CHECK(cl == 0 || cl == 1, "plan meta ", kClusterKey, " must be 0 or 1, got ", cl);
  o.cluster = cl != 0;
  const int64_t st = meta.i(kStageKey, o.fuse_stage ? 1 : 0);
  OPV_CHECK(st == 0 || st == 1, "plan meta ", kStageKey, " must be 0 or 1, got ", st);
  o.fuse_stage = st != 0;
  const int64_t hd = meta.i(kHeadsKey, o.fuse_heads ? 1 : 0);
  OPV_CHECK(hd == 0 || hd == 1, "plan meta ", kHeadsKey, " must be 0 or 1, got ", hd);
  o.fuse_heads = hd != 0;
  const int64_t pdl = meta.i(kPdlKey, int64_t(o.pdl));
  OPV_CHECK(pdl >= 0 && pdl <= 4, "plan meta ", kPdlKey, " must be 0 to 4, got ", pdl);
  o.pdl = PdlMode(pdl);
  o.layout = parse_layout_choice(meta.s(kLayoutKey, layout_choice_name(o.layout)));
  o.tune = Tune::parse(meta.s(kTuneMetaKey, ""));
  return o;
}

}  // namespace opv::plan::cuda
