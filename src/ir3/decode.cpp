// Decodes 64-bit ir3 words into instruction trees using the encoding table.
//
// Steps: (1) find the leaf whose fixed bits match (most specific wins, generation-filtered);
// (2) choose its active override by evaluating the override conditions; (3) check the word is
// printable (every displayed field resolves, every enum value is known) — otherwise the word is
// invalid; sub-operands are decoded lazily on first access.
// Invariant: decode() never throws; invalid words give an Instr with valid() == false.
#include "core/error.h"
#include "ir3/isa.h"
#include "ir3/isa_model.h"

namespace opv::ir3 {

using detail::Node;

int gen_from_gpu_id(uint64_t id) {
  if (id >= 0x01000000) {
    // chip id: 0xCCxxxxxx style (a7xx 0x07030001, a8xx 0x44050000)
    uint64_t top = id >> 24;
    if (top == 0x07) return 700;
    if (top == 0x43 || top == 0x44) return 800;
    return static_cast<int>((top & 0xf) * 100);
  }
  return static_cast<int>(id / 100) * 100;
}

Instr decode(uint64_t word, int gen) {
  Instr in;
  in.bits = word;
  in.gen = gen;
  const detail::Leaf* l = detail::match_leaf("#instruction", word, gen);
  if (!l) return in;
  auto n = std::make_shared<Node>();
  n->leaf = l;
  n->bits = word;
  n->gen = gen;
  detail::choose_variant(*n);
  std::string text;
  std::vector<detail::Cap> caps;
  if (!detail::render(*n, text, caps, "")) return in;
  in.node_ = n;
  return in;
}

const std::string& Instr::name() const {
  static const std::string empty;
  return node_ ? node_->leaf->name : empty;
}

bool Instr::has(const std::string& f) const { return node_ && node_->has(f); }

int64_t Instr::get(const std::string& f) const {
  OPV_CHECK(node_, "ir3: field `", f, "` read from an invalid instruction");
  return node_->value(f);
}

int64_t Instr::get_or(const std::string& f, int64_t dflt) const {
  if (!node_ || !node_->has(f)) return dflt;
  try {
    return node_->value(f);
  } catch (const Error&) {
    return dflt;
  }
}

const detail::Node* Instr::child(const std::string& f) const { return node_ ? node_->child(f) : nullptr; }

std::string Instr::child_kind(const std::string& f) const {
  const Node* c = child(f);
  return c ? c->leaf->name : std::string();
}

int64_t Instr::child_get(const std::string& f, const std::string& sub) const {
  const Node* c = child(f);
  OPV_CHECK(c, "ir3: ", name(), " has no operand `", f, "`");
  return c->value(sub);
}

std::vector<uint64_t> words_from_bytes(const std::vector<uint8_t>& b) {
  OPV_CHECK(b.size() % 8 == 0, "ir3: shader image size ", b.size(), " is not a multiple of 8 bytes");
  std::vector<uint64_t> w(b.size() / 8);
  for (size_t i = 0; i < w.size(); ++i) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | b[i * 8 + k];
    w[i] = v;
  }
  return w;
}

std::vector<uint8_t> bytes_from_words(const std::vector<uint64_t>& w) {
  std::vector<uint8_t> b(w.size() * 8);
  for (size_t i = 0; i < w.size(); ++i)
    for (int k = 0; k < 8; ++k) b[i * 8 + k] = static_cast<uint8_t>(w[i] >> (8 * k));
  return b;
}

}  // namespace opv::ir3
