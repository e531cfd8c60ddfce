// Internal model of the ir3 encoding table (isa_table.cpp) and the decoded-instruction tree.
//
// The table is a compact text of our own: bitsets (an encoding or a sub-encoding such as a
// source operand) with bit patterns, fields, derived values, display templates and overrides
// chosen by expressions. Concrete encodings ("leaves") are the bitsets nothing extends; each
// is flattened along its `extends` chain once, at load. Decode, print, parse and encode are
// all walks over these leaves, so the table is the single description of the ISA.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace opv::ir3::detail {

enum class FType { Bool, BoolInv, Uint, Int, Hex, Offset, UOffset, Float, Branch, Enum, Bitset };

struct Node;
struct Expr;  // parsed expression (isa_model.cpp)
using ExprP = std::shared_ptr<const Expr>;

struct FieldDef {
  std::string name;
  int lo = 0, hi = -1;         // bit range inside its bitset; hi < lo for derived values
  FType type = FType::Uint;
  std::string tname;           // enum or bitset name for Enum/Bitset
  std::string display;         // bool display text
  bool has_display = false;
  std::vector<std::pair<std::string, std::string>> params;  // (name in parent, name in child)
  ExprP expr;                  // derived value when set
  std::vector<std::pair<std::string, ExprP>> inverse;  // derived: how the parser sets real fields
  int width = 0;               // bit width (derived: declared width, for sign extension)
  bool derived() const { return expr != nullptr; }
};

struct Variant {
  ExprP cond;                  // null for the default variant
  std::string display;
  bool has_display = false;
  std::vector<FieldDef> fields;
  uint64_t amask = 0, aval = 0;  // asserted bits (set by the encoder)
};

struct BitsetDef {
  std::string name, parent;
  int size = 0;
  bool has_gen = false;
  int gen_min = 0, gen_max = 1 << 30;
  std::vector<std::pair<uint64_t, uint64_t>> pats;  // ordered (care mask incl. x bits, value); x bits clear a parent's
  std::vector<uint64_t> pat_x;                      // x mask for each entry of pats
  uint64_t amask = 0, aval = 0;
  std::vector<FieldDef> fields;
  std::vector<Variant> overrides;
  std::string display;
  bool has_display = false;
  int line = 0;
};

struct Leaf {
  std::string name;            // printed by {NAME}
  const BitsetDef* def = nullptr;
  int size = 64;
  int gen_min = 0, gen_max = 1 << 30;
  uint64_t mask = 0, match = 0;  // decode: (bits & mask) == match
  uint64_t amask = 0, aval = 0;
  std::vector<FieldDef> fields;
  // Lookup order for displays and override fields: for each level from the leaf up, its
  // overrides, then its own display (a Variant with a null cond). The active variant is the
  // first override whose condition holds or the first level display, whichever comes first.
  std::vector<Variant> cases;
  int index = 0;               // position in Isa::all_leaves
};

struct EnumDef {
  std::string name;
  std::vector<std::pair<int64_t, std::string>> values;
};

struct Isa {
  std::map<std::string, EnumDef> enums;
  std::map<std::string, BitsetDef> bitsets;
  std::vector<std::unique_ptr<Leaf>> all_leaves;
  std::map<std::string, std::vector<const Leaf*>> leaves_of;  // abstract name -> concrete leaves
  const std::vector<const Leaf*>& candidates(const std::string& bitset) const;

  // The leaves of one abstract bitset bucketed by up to 8 bit positions that most of their
  // patterns fix: a bucket holds, in table order, every leaf whose pattern agrees with the
  // bucket's key on those bits, so matching a word scans one bucket instead of every leaf.
  struct LeafIndex {
    std::vector<int> pos;
    std::vector<std::vector<const Leaf*>> buckets;  // 1 << pos.size() of them
    const std::vector<const Leaf*>& bucket(uint64_t bits) const;
  };
  std::map<std::string, LeafIndex> index_of;
  void build_index();
};

// The one table (parsed and flattened on first use; throws opv::Error on a malformed table).
const Isa& isa();
const char* isa_table_text();

// Expressions.
ExprP parse_expr(const std::string& text, int line);
using Lookup = std::function<int64_t(const std::string&)>;
int64_t eval(const Expr& e, const Lookup& value);
int64_t eval(const Expr& e, const Node& scope);

// One decoded (sub)bitset.
struct Node {
  const Leaf* leaf = nullptr;
  int variant = -1;            // index into leaf->cases
  uint64_t bits = 0;           // the bitset's own bits, right-aligned
  int gen = 600;
  const Node* parent = nullptr;
  const FieldDef* via = nullptr;  // field of the parent this node decodes
  mutable std::map<std::string, std::unique_ptr<Node>> kids;

  const FieldDef* find(const std::string& name) const;   // variant, then default fields
  int64_t value(const std::string& name) const;          // fields, derived, params, ISA_GPU_ID
  bool has(const std::string& name) const;
  const Node* child(const std::string& name) const;      // decode a Bitset field (null if none)
  // Resolves a template name to the field definition and the node it is evaluated in.
  bool resolve(const std::string& name, const FieldDef*& def, const Node*& where) const;
};

// Field lookup in one scope: the active variant's fields (variant >= 0), then the leaf's own.
const FieldDef* find_field(const Leaf& leaf, int variant, const std::string& name);
// Resolves a template name through a chain of scopes (a decoded Node, or the assembler's parse
// frames): the scope's own fields, then the parameters its parent passed down through `via`.
// Scope has leaf, variant, parent and via members.
template <class Scope>
bool resolve_field(const Scope& s, const std::string& name, const FieldDef*& def, const Scope*& where) {
  if (const FieldDef* f = find_field(*s.leaf, s.variant, name)) {
    def = f;
    where = &s;
    return true;
  }
  if (s.via && s.parent)
    for (const auto& pr : s.via->params)
      if (pr.second == name) return resolve_field(*s.parent, pr.first, def, where);
  return false;
}

uint64_t extract(uint64_t v, int lo, int hi);
int64_t sign_extend(uint64_t v, int width);

// Picks the leaf for `bits` among candidates of `bitset`; null if none matches.
const Leaf* match_leaf(const std::string& bitset, uint64_t bits, int gen);
// Chooses the active override for a decoded node (evaluating conditions).
void choose_variant(Node& n);
const std::string& display_of(const Node& n);
const std::string& display_of(const Leaf& l, int variant);

// Captured template values: what a print walk shows and what a parse walk reads.
struct Cap {
  std::string key;
  int64_t value;
  bool operator==(const Cap& o) const { return value == o.value && key == o.key; }
};
// Renders `n` through its display template; returns false if something cannot be shown, or, given
// `expect`, as soon as a capture differs from the expected list.
bool render(const Node& n, std::string& out, std::vector<Cap>& caps, const std::string& path,
            const std::vector<Cap>* expect = nullptr);

}  // namespace opv::ir3::detail
