// The ir3 encoding table, part 2: categories 5 (texture), 6 (memory) and 7 (barriers, caches),
// plus the a7xx alias instruction. Same format and provenance as isa_table.cpp (part 1, which
// also defines the shared enums and register operands used here).
#include "ir3/isa_model.h"

namespace opv::ir3::detail {

static const char* const kTableMem = R"ISA(
// ------------------------------------------------------------------ cat5: texture
bitset #c5-src1 size 8
  ovr {NUM_SRC} > 0
    show , {HALF}{SRC}
    fld SRC 0-7 #reg-gpr
  end
  show
  assert 0-7 00000000

bitset #c5-src2 size 8
  ovr {O} || {CLP} || ({NUM_SRC} > 1)
    show , {HALF}{SRC}
    fld SRC 0-7 #reg-gpr
  end
  ovr {SRC2_IMM_OFFSET}
    show {OFF}
    fld OFF 0-7 uoffset
  end
  show
  assert 0-7 00000000

bitset #c5-samp size 4
  ovr {HAS_SAMP}
    show , s#{SAMP}
    fld SAMP 0-3 uint
  end
  show
  assert 0-3 0000

bitset #c5-samp-a1 size 8
  ovr {HAS_SAMP}
    show , s#{SAMP}
    fld SAMP 0-7 uint
  end
  show
  assert 0-7 00000000

bitset #c5-tex-a1 size 8
  ovr {HAS_TEX}
    show , t#{TEX}
    fld TEX 0-7 uint
  end
  show
  assert 0-7 00000000

bitset #c5-tex size 7
  ovr {HAS_TEX}
    show , t#{TEX}
    fld TEX 0-6 uint
  end
  show
  assert 0-6 0000000

bitset #c5-tex-s2en size 4
  ovr {HAS_TEX}
    show , t#{TEX}
    fld TEX 0-3 uint
  end
  show
  assert 0-3 0000

bitset #c5-type size 3
  ovr {HAS_TYPE} && ({TYPE} != 7)
    show ({TYPE})
  end
  show
  fld TYPE 0-2 #type

bitset #c5-base size 1
  ovr {BINDLESS}
    show .base{BASE}
  end
  show
  fld BASE_LO 0 uint
  der BASE uint is ({BASE_HI} * 2) | {BASE_LO}
    inv BASE_LO {BASE} & 1
    inv BASE_HI {BASE} >> 1

bitset #c5-src3 size 8
  ovr {DESC_MODE} < 6
    show , {SRC_HALF}{SRC}
    fld SRC 0-7 #reg-gpr
    der SRC_HALF bool "h" is !{BINDLESS}
  end
  ovr ISA_GPU_ID() >= 600 && ISA_GPU_ID() < 700 && ({DESC_MODE} == 1 || {DESC_MODE} == 3 || {DESC_MODE} == 7)
    show {SAMP}
    fld SAMP 0-7 #c5-samp-a1 HAS_SAMP
  end
  ovr ISA_GPU_ID() >= 700 && ({DESC_MODE} == 1 || {DESC_MODE} == 3 || {DESC_MODE} == 7)
    show {TEX}
    fld TEX 0-7 #c5-tex-a1 HAS_TEX
  end
  show {SAMP}{TEX}
  fld SAMP 0-3 #c5-samp HAS_SAMP
  fld TEX 4-7 #c5-tex-s2en HAS_TEX

bitset #cat5 : #instruction
  show {SY}{JP}{NAME}{D3}{A}{O}{P}{SV}{D1}{CLP}{RCK} {TYPE}({WRMASK}){DST_HALF}{DST}{SRC1}{SRC2}{SAMP}{TEX}
  der DST_HALF bool "h" is {TYPE} == 0 || {TYPE} == 2 || {TYPE} == 4 || {TYPE} == 6
  fld FULL 0 bool
  der HALF bool "h" is !{FULL}
  fld SRC1 1-8 #c5-src1 NUM_SRC HALF
  fld SRC2 9-16 #c5-src2 NUM_SRC HALF O CLP SRC2_IMM_OFFSET
  pat 17 x
  fld SAMP 21-24 #c5-samp HAS_SAMP
  fld TEX 25-31 #c5-tex HAS_TEX
  fld DST 32-39 #reg-gpr
  fld WRMASK 40-43 #wrmask
  fld TYPE 44-46 #c5-type HAS_TYPE
  assert 47 0
  fld D3 48 bool ".3d"
  fld A 49 bool ".a"
  fld S2EN_BINDLESS 51 bool
  fld O 52 bool ".o"
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 101
  der SRC2_IMM_OFFSET bool is 0
  der P bool "" is 0
  der D1 bool "" is 0
  der RCK bool ".rck" is {TYPE} == 7

bitset #cat5-tex-base : #cat5
  ovr {S2EN_BINDLESS}
    show {SY}{JP}{NAME}{D3}{A}{O}{P}{SV}{S2EN}{UNIFORM}{NONUNIFORM}{BASE}{D1}{CLP}{RCK} {TYPE}({WRMASK}){DST_HALF}{DST}{SRC1}{SRC2}{SRC3}{A1}
    fld BASE_HI 19-20 uint
    fld SRC3 21-28 #c5-src3 BINDLESS DESC_MODE HAS_SAMP HAS_TEX
    fld DESC_MODE 29-31 uint
    fld BASE 47 #c5-base BINDLESS BASE_HI
    der BINDLESS bool is {DESC_MODE} == 1 || {DESC_MODE} == 2 || {DESC_MODE} == 3 || {DESC_MODE} == 5 || {DESC_MODE} == 6 || {DESC_MODE} == 7
    der S2EN bool ".s2en" is {DESC_MODE} < 6
    der UNIFORM bool ".uniform" is {DESC_MODE} == 0 || {DESC_MODE} == 1 || {DESC_MODE} == 5
    der NONUNIFORM bool ".nonuniform" is {DESC_MODE} == 2 || {DESC_MODE} == 3 || {DESC_MODE} == 4
    der A1 bool ", a1.x" is {DESC_MODE} == 1 || {DESC_MODE} == 3 || {DESC_MODE} == 7
  end
  assert 19-20 00

bitset #cat5-tex : #cat5-tex-base
  fld CLP 18 bool ".clp"
  fld SV 50 bool ".s"
  fld P 53 bool ".p"
  der D1 bool "" is 0

bitset isam : #cat5-tex-base
  pat 54-58 00000
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
  der CLP bool "" is 0
  fld D1 18 boolinv ".1d"
  fld SV 50 bool ".v"
  fld SRC2_IMM_OFFSET 53 bool

bitset isaml : #cat5-tex
  pat 54-58 00001
  der NUM_SRC uint is 2
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset isamm : #cat5-tex
  pat 54-58 00010
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset sam : #cat5-tex
  pat 54-58 00011
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samb : #cat5-tex
  pat 54-58 00100
  der NUM_SRC uint is 2
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset saml : #cat5-tex
  pat 54-58 00101
  der NUM_SRC uint is 2
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samgq : #cat5-tex
  pat 54-58 00110
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset getlod : #cat5-tex
  pat 54-58 00111
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset conv : #cat5-tex
  pat 54-58 01000
  der NUM_SRC uint is 2
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset convm : #cat5-tex
  pat 54-58 01001
  der NUM_SRC uint is 2
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset getsize : #cat5-tex
  pat 54-58 01010
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset getbuf : #cat5-tex
  pat 54-58 01011
  der NUM_SRC uint is 0
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset getpos : #cat5-tex
  pat 54-58 01100
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset getinfo : #cat5-tex
  pat 54-58 01101
  der NUM_SRC uint is 0
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset dsx : #cat5-tex
  pat 54-58 01110
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1
bitset dsy : #cat5-tex
  pat 54-58 01111
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1
bitset gather4r : #cat5-tex
  pat 54-58 10000
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset gather4g : #cat5-tex
  pat 54-58 10001
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset gather4b : #cat5-tex
  pat 54-58 10010
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset gather4a : #cat5-tex
  pat 54-58 10011
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samgp0 : #cat5-tex
  pat 54-58 10100
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samgp1 : #cat5-tex
  pat 54-58 10101
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samgp2 : #cat5-tex
  pat 54-58 10110
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset samgp3 : #cat5-tex
  pat 54-58 10111
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 1
  der HAS_TEX bool is 1
  der HAS_TYPE bool is 1
bitset dsxpp.1 : #cat5-tex
  pat 54-58 11000
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 0
bitset dsypp.1 : #cat5-tex
  pat 54-58 11001
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 0
bitset rgetpos : #cat5-tex
  pat 54-58 11010
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1
bitset rgetinfo : #cat5-tex
  pat 54-58 11011
  der NUM_SRC uint is 0
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1

bitset tcinv : #instruction
  show {SY}{JP}{NAME}
  pat 0-31 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
  pat 32-53 xxxxxxxxxxxxxxxxxxxxxx
  pat 54-58 11100
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 101

bitset #cat5-brcst : #cat5
  pat 18 0
  pat 50 0
  der CLP bool "" is 0

bitset brcst.active : #cat5-brcst
  gen 600
  show {SY}{JP}{NAME}.w{CLUSTER_SIZE} {TYPE}({WRMASK}){DST_HALF}{DST}{SRC1}
  fld W 19-20 uint
  pat 53-58 111110
  der CLUSTER_SIZE uint is 2 << {W}
  der NUM_SRC uint is 1
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1

bitset #cat5-quad-shuffle : #cat5-brcst
  gen 600
  show {SY}{JP}{NAME} {TYPE}({WRMASK}){DST_HALF}{DST}{SRC1}{SRC2}
  pat 53-58 111111
  der HAS_SAMP bool is 0
  der HAS_TEX bool is 0
  der HAS_TYPE bool is 1

bitset quad_shuffle.brcst : #cat5-quad-shuffle
  pat 19-20 00
  der NUM_SRC uint is 2
bitset quad_shuffle.horiz : #cat5-quad-shuffle
  pat 19-20 01
  der NUM_SRC uint is 1
bitset quad_shuffle.vert : #cat5-quad-shuffle
  pat 19-20 10
  der NUM_SRC uint is 1
bitset quad_shuffle.diag : #cat5-quad-shuffle
  pat 19-20 11
  der NUM_SRC uint is 1

// ------------------------------------------------------------------ cat6: memory
bitset #c6-const-dst size 9
bitset #c6-const-dst-imm : #c6-const-dst
  show {OFFSET}
  fld OFFSET 0-7 uint
  pat 8 0
bitset #c6-const-dst-a1 : #c6-const-dst
  show a1.x{OFFSET}
  fld OFFSET 0-7 uoffset
  pat 8 1

bitset #c6-typed size 1
  ovr {TYPED}
    show typed
  end
  show untyped
  fld TYPED 0 bool

bitset #c6-base size 3
  ovr {BINDLESS}
    show .base{BASE}
  end
  show
  fld BASE 0-2 uint

bitset #c6-src size 8
  ovr {SRC_IM}
    show {IMMED}
    fld IMMED 0-7 uint
  end
  show r{GPR}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld GPR 2-7 uint

bitset #c6-src-cg size 8
  ovr {SRC_CONST}
    show c{GPR}.{SWIZ}
  end
  show r{GPR}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld GPR 2-7 uint

bitset #cat6 : #instruction
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 110
  der TYPE_HALF bool "h" is {TYPE} == 0 || {TYPE} == 2 || {TYPE} == 4 || {TYPE} == 6

bitset #cat6-a3xx : #cat6
  fld TYPE 49-51 #type

bitset #cat6-ldg : #cat6-a3xx
  pat 0 1
  fld SRC1 14-21 #c6-src-cg SRC1_CONST>SRC_CONST
  pat 23 1
  fld SIZE 24-26 uint
  pat 27-31 00xxx
  fld DST 32-39 #reg-gpr
  pat 40 x
  pat 52-53 00
  pat 54-58 00000
  der SRC1_CONST bool is 0

bitset ldg : #cat6-ldg
  show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}{OFF}], {SIZE}
  fld OFF 1-13 offset
  pat 22 0
  pat 41-48 xxxxxxxx

bitset ldg.a : #cat6-ldg
  gen 600 699
  ovr {TYPE_SHIFT} == 0
    show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}+{SRC2}{OFF}], {SIZE}
  end
  ovr {OFF} == 0
    show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}+({SRC2}<<{FULL_SHIFT})], {SIZE}
  end
  ovr {SRC2_SHIFT} == 0
    show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}+(({SRC2}{OFF})<<{TYPE_SHIFT})], {SIZE}
  end
  show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}+((({SRC2}<<{SRC2_SHIFT}){OFF})<<{TYPE_SHIFT})], {SIZE}
  fld SRC2 1-8 #reg-gpr
  fld OFF 9-10 uoffset
  assert 11 0
  fld SRC2_SHIFT 12-13 uint
  pat 22 1
  pat 41-48 xxxxxxxx
  der TYPE_SHIFT uint is {TYPE} >= 6 ? 0 : ({TYPE_HALF} ? 1 : 2)
  der FULL_SHIFT uint is {TYPE_SHIFT} + {SRC2_SHIFT}
    inv SRC2_SHIFT {FULL_SHIFT} - ({TYPE} >= 6 ? 0 : (({TYPE} == 0 || {TYPE} == 2 || {TYPE} == 4) ? 1 : 2))

bitset ldg.a : #cat6-ldg
  gen 700
  show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, g[{SRC1}+{SRC2}+{OFF}], {SIZE}
  fld SRC2 1-8 #reg-gpr
  pat 9-12 xxxx
  fld SRC1_CONST 13 bool
  pat 22 1
  fld OFF 41-48 uint

bitset ldg.k : #cat6-a3xx
  gen 600
  show {SY}{JP}{NAME}.{TYPE} c[{DST}], g[{SRC1}{OFF}], {SIZE}
  pat 0 1
  fld OFF 1-13 offset
  fld SRC1 14-21 #c6-src-cg SRC1_CONST>SRC_CONST
  pat 22 0
  fld SIZE 23-26 uint
  pat 27-31 00xxx
  fld DST 32-40 #c6-const-dst
  pat 41-48 xxxxxxxx
  pat 52 1
  pat 53 0
  pat 54-58 00000
  der SRC1_CONST bool is 0

bitset #cat6-stg : #cat6-a3xx
  pat 0 x
  fld SRC3 1-8 #reg-gpr
  fld SIZE 24-26 uint
  pat 27-31 00xxx
  assert 40 1   // DST_OFF: Mesa's encoder always sets it
  fld SRC1 41-48 #c6-src-cg SRC1_CONST>SRC_CONST
  pat 53 0
  pat 54-58 00011
  der SRC1_CONST bool is 0

bitset stg : #cat6-stg
  show {SY}{JP}{NAME}.{TYPE} g[{SRC1}{OFF}], {TYPE_HALF}{SRC3}, {SIZE}
  der OFF offset w13 is ({OFF_HI} << 8) | {OFF_LO}
    inv OFF_HI ({OFF} >> 8) & 31
    inv OFF_LO {OFF} & 255
  fld OFF_HI 9-13 int
  pat 14-21 xxxxxxxx
  pat 22-23 1x
  fld OFF_LO 32-39 uint
  pat 52 0

bitset stg.a : #cat6-stg
  gen 600 699
  ovr {TYPE_SHIFT} == 0
    show {SY}{JP}{NAME}.{TYPE} g[{SRC1}+{SRC2}{OFF}], {TYPE_HALF}{SRC3}, {SIZE}
  end
  ovr {OFF} == 0
    show {SY}{JP}{NAME}.{TYPE} g[{SRC1}+({SRC2}<<{FULL_SHIFT})], {TYPE_HALF}{SRC3}, {SIZE}
  end
  ovr {SRC2_SHIFT} == 0
    show {SY}{JP}{NAME}.{TYPE} g[{SRC1}+(({SRC2}{OFF})<<{TYPE_SHIFT})], {TYPE_HALF}{SRC3}, {SIZE}
  end
  show {SY}{JP}{NAME}.{TYPE} g[{SRC1}+((({SRC2}<<{SRC2_SHIFT}){OFF})<<{TYPE_SHIFT})], {TYPE_HALF}{SRC3}, {SIZE}
  der TYPE_SHIFT uint is {TYPE} >= 6 ? 0 : ({TYPE_HALF} ? 1 : 2)
  der FULL_SHIFT uint is {TYPE_SHIFT} + {SRC2_SHIFT}
    inv SRC2_SHIFT {FULL_SHIFT} - ({TYPE} >= 6 ? 0 : (({TYPE} == 0 || {TYPE} == 2 || {TYPE} == 4) ? 1 : 2))
  fld OFF 9-10 uoffset
  assert 11 0
  fld SRC2_SHIFT 12-13 uint
  pat 14-21 xxxxxxxx
  pat 22-23 1x
  fld SRC2 32-39 #reg-gpr
  pat 52 1

bitset stg.a : #cat6-stg
  gen 700
  show {SY}{JP}{NAME}.{TYPE} g[{SRC1}+{SRC2}+{OFF}], {TYPE_HALF}{SRC3}, {SIZE}
  pat 9-12 xxxx
  fld SRC1_CONST 13 bool
  fld OFF 14-21 uint
  pat 22 0
  pat 23 1
  fld SRC2 32-39 #reg-gpr
  pat 52 1

bitset #cat6-ld : #cat6-a3xx
  pat 0 1
  fld OFF 1-13 offset
  fld SRC 14-21 #reg-gpr
  pat 22 x
  pat 23 1
  fld SIZE 24-31 uint
  fld DST 32-39 #reg-gpr
  pat 40-48 xxxxxxxxx
  pat 52-53 xx

bitset ldl : #cat6-ld
  show {SY}{JP}{NAME}.{TYPE} {DST}, l[{SRC}{OFF}], {SIZE}
  pat 54-58 00001
bitset ldp : #cat6-ld
  show {SY}{JP}{NAME}.{TYPE} {TYPE_HALF}{DST}, p[{SRC}{OFF}], {SIZE}
  pat 54-58 00010
bitset ldlw : #cat6-ld
  show {SY}{JP}{NAME}.{TYPE} {DST}, l[{SRC}{OFF}], {SIZE}
  pat 54-58 01010

bitset ldlv : #cat6-a3xx
  show {SY}{JP}{NAME}.{TYPE} {DST}, l[{OFF}], {SIZE}
  pat 0 0
  fld OFF 1-13 uint
  pat 14-21 00000000
  pat 22-23 11
  fld SIZE 24-31 uint
  fld DST 32-39 #reg-gpr
  pat 40-48 xxxxxxxxx
  pat 52-53 xx
  pat 54-58 11111

bitset #cat6-st : #cat6-a3xx
  der OFF offset w13 is ({OFF_HI} << 8) | {OFF_LO}
    inv OFF_HI ({OFF} >> 8) & 31
    inv OFF_LO {OFF} & 255
  fld SRC 1-8 #reg-gpr
  fld OFF_HI 9-13 int
  pat 14-22 xxxxxxxxx
  pat 23 1
  fld SIZE 24-31 uint
  fld OFF_LO 32-39 uint
  pat 40 1
  fld DST 41-48 #reg-gpr
  pat 52-53 xx

bitset stl : #cat6-st
  show {SY}{JP}{NAME}.{TYPE} l[{DST}{OFF}], {SRC}, {SIZE}
  pat 0 x
  pat 54-58 00100
bitset stp : #cat6-st
  show {SY}{JP}{NAME}.{TYPE} p[{DST}{OFF}], {SRC}, {SIZE}
  pat 0 0
  pat 54-58 00101
bitset stlw : #cat6-st
  show {SY}{JP}{NAME}.{TYPE} l[{DST}{OFF}], {SRC}, {SIZE}
  pat 0 x
  pat 54-58 01011

bitset stc : #cat6-a3xx
  gen 600
  show {SY}{JP}{NAME}.{TYPE} c[{DST}], {SRC}, {SIZE}
  pat 0 x
  fld SRC 1-8 #reg-gpr
  pat 9-13 xxxxx
  pat 14-22 000000000
  pat 23 1
  fld SIZE 24-26 uint
  pat 27-31 xxxxx
  fld DST 32-40 #c6-const-dst
  pat 41-48 xxxxxxxx
  pat 52-53 xx
  pat 54-58 11100

bitset stsc : #cat6-a3xx
  gen 700
  show {SY}{JP}{NAME}.{TYPE} c[{DST}], {SRC}, {SIZE}
  pat 0 x
  fld SRC 1-8 #c6-src SRC_IM
  der SRC_IM bool is 1
  fld DST_HI 9-13 uint
  pat 14-21 xxxxxxxx
  pat 22-23 11
  fld SIZE 24-31 uint
  fld DST_LO 32-39 uint
  assert 40 0
  pat 41-48 xxxxxxxx
  pat 52-53 00
  pat 54-58 11101
  der DST uint is ({DST_HI} << 8) | {DST_LO}
    inv DST_HI {DST} >> 8
    inv DST_LO {DST} & 255

bitset resinfo : #cat6-a3xx
  show {SY}{JP}{NAME}.{TYPE}.{D}d {DST}, g[{SSBO}]
  der D uint is {D_MINUS_ONE} + 1
    inv D_MINUS_ONE {D} - 1
  pat 0 x
  pat 1-8 xxxxxxxx
  fld D_MINUS_ONE 9-10 uint
  pat 11 x
  pat 12-13 xx
  pat 14-23 0000000000
  pat 24-31 xxxxxxxx
  fld DST 32-39 #reg-gpr
  pat 40 0
  fld SSBO 41-48 #c6-src SSBO_IM>SRC_IM
  pat 52 x
  fld SSBO_IM 53 bool
  pat 54-58 01111

bitset #cat6-atomic : #cat6
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE}.l {DST}, l[{SRC1}], {SRC2}
  der D uint is {D_MINUS_ONE} + 1
    inv D_MINUS_ONE {D} - 1
  der TYPE_SIZE uint is {TYPE_SIZE_MINUS_ONE} + 1
    inv TYPE_SIZE_MINUS_ONE {TYPE_SIZE} - 1
  fld D_MINUS_ONE 9-10 uint
  fld TYPED 11 #c6-typed
  fld TYPE_SIZE_MINUS_ONE 12-13 uint
  fld SRC1 14-21 #c6-src SRC1_IM>SRC_IM
  fld SRC1_IM 22 bool
  fld SRC2_IM 23 bool
  fld SRC2 24-31 #c6-src SRC2_IM>SRC_IM
  fld DST 32-39 #reg-gpr
  pat 40 x

bitset #cat6-atomic-l : #cat6-atomic
  pat 0 1
  pat 1-8 00000000
  pat 41-48 00000000
  fld TYPE 49-51 #type
  pat 52 0
  pat 53 0

bitset atomic.add : #cat6-atomic-l
  pat 54-58 10000
bitset atomic.sub : #cat6-atomic-l
  pat 54-58 10001
bitset atomic.xchg : #cat6-atomic-l
  pat 54-58 10010
bitset atomic.inc : #cat6-atomic-l
  pat 54-58 10011
bitset atomic.dec : #cat6-atomic-l
  pat 54-58 10100
bitset atomic.cmpxchg : #cat6-atomic-l
  pat 54-58 10101
bitset atomic.min : #cat6-atomic-l
  pat 54-58 10110
bitset atomic.max : #cat6-atomic-l
  pat 54-58 10111
bitset atomic.and : #cat6-atomic-l
  pat 54-58 11000
bitset atomic.or : #cat6-atomic-l
  pat 54-58 11001
bitset atomic.xor : #cat6-atomic-l
  pat 54-58 11010

bitset #cat6-atomic-g : #cat6-atomic
  gen 600
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE}.g {DST}, {SRC1}, {SRC2}
  pat 0 1
  pat 1-8 00000000
  pat 41-48 00000000
  fld TYPE 49-51 #type-atomic
  pat 52 1
  pat 53 0

bitset atomic.g.add : #cat6-atomic-g
  pat 54-58 10000
bitset atomic.g.sub : #cat6-atomic-g
  pat 54-58 10001
bitset atomic.g.xchg : #cat6-atomic-g
  pat 54-58 10010
bitset atomic.g.inc : #cat6-atomic-g
  pat 54-58 10011
bitset atomic.g.dec : #cat6-atomic-g
  pat 54-58 10100
bitset atomic.g.cmpxchg : #cat6-atomic-g
  pat 54-58 10101
bitset atomic.g.min : #cat6-atomic-g
  pat 54-58 10110
bitset atomic.g.max : #cat6-atomic-g
  pat 54-58 10111
bitset atomic.g.and : #cat6-atomic-g
  pat 54-58 11000
bitset atomic.g.or : #cat6-atomic-g
  pat 54-58 11001
bitset atomic.g.xor : #cat6-atomic-g
  pat 54-58 11010

bitset shfl : #cat6-a3xx
  gen 600
  show {SY}{JP}{NAME}.{MODE}.{TYPE} {TYPE_HALF}{DST}, {TYPE_HALF}{SRC1}, {SRC2}
  pat 0 0
  fld SRC1 1-8 #reg-gpr
  pat 9-22 00000000000000
  fld SRC2_IM 23 bool
  fld SRC2 24-31 #c6-src SRC2_IM>SRC_IM
  fld DST 32-39 #reg-gpr
  pat 40-44 xxxxx
  fld MODE 45-47 #shfl-mode
  pat 48 x
  pat 52-53 10
  pat 54-58 11011

bitset ray_intersection : #cat6
  gen 700
  show {SY}{JP}{NAME} {DST}, [{SRC1}], {SRC2}, {SRC3}, {SRC4}
  pat 54-58 01110
  pat 0 1
  fld SRC2 1-8 #reg-gpr
  pat 9-12 xxxx
  fld SRC1_CONST 13 bool
  fld SRC1 14-21 #c6-src-cg SRC1_CONST>SRC_CONST
  pat 22-23 xx
  fld SRC3 24-31 #reg-gpr
  fld DST 32-39 #reg-gpr
  pat 40 x
  fld SRC4 41-48 #reg-gpr
  pat 49-53 xxxxx


// pre-a6xx image/SSBO forms (a4xx/a5xx)
bitset #c6-ibo3 : #cat6-a3xx
  der D uint is {D_MINUS_ONE} + 1
    inv D_MINUS_ONE {D} - 1
  der TYPE_SIZE uint is {TYPE_SIZE_MINUS_ONE} + 1
    inv TYPE_SIZE_MINUS_ONE {TYPE_SIZE} - 1
  fld D_MINUS_ONE 9-10 uint
  fld TYPED 11 #c6-typed
  fld TYPE_SIZE_MINUS_ONE 12-13 uint
  fld SSBO 41-48 #c6-src SSBO_IM>SRC_IM
  pat 52 x
  fld SSBO_IM 53 bool

bitset #c6-ibo3-load : #c6-ibo3
  gen 0 599
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE} {DST}, g[{SSBO}], {SRC1}, {SRC2}
  pat 1-8 xxxxxxxx
  fld SRC1 14-21 #c6-src SRC1_IM>SRC_IM
  fld SRC1_IM 22 bool
  fld SRC2_IM 23 bool
  fld SRC2 24-31 #c6-src SRC2_IM>SRC_IM
  fld DST 32-39 #reg-gpr
  pat 40 x

bitset ldgb : #c6-ibo3-load
  gen 0 499
  pat 54-58 11011
  pat 0 1
bitset ldgb : #c6-ibo3-load
  gen 500
  pat 54-58 11011
  pat 0 x
bitset ldib : #c6-ibo3-load
  pat 54-58 00110
  pat 0 1

bitset #c6-ibo3-store : #c6-ibo3
  gen 0 599
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE} g[{SSBO}], {SRC1}, {SRC2}, {SRC3}
  fld SRC1 1-8 #reg-gpr
  pat 14-22 xxxxxxxxx
  fld SRC2_IM 23 bool
  fld SRC2 24-31 #c6-src SRC2_IM>SRC_IM
  fld SRC3 32-39 #c6-src SRC3_IM>SRC_IM
  fld SRC3_IM 40 bool

bitset #c6-ibo3-store-a4 : #c6-ibo3-store
  gen 0 499
  pat 0 0
bitset #c6-ibo3-store-a5 : #c6-ibo3-store
  gen 500
  pat 0 1
bitset stgb : #c6-ibo3-store-a5
  pat 54-58 11100
bitset stib : #c6-ibo3-store-a5
  pat 54-58 11101
bitset stgb : #c6-ibo3-store-a4
  pat 54-58 11100
bitset stib : #c6-ibo3-store-a4
  pat 54-58 11101

bitset #c6-atomic-s : #cat6-atomic
  gen 0 599
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE}.g {DST}, g[{SSBO}], {SRC1}, {SRC2}, {SRC3}
  fld SRC3 1-8 #reg-gpr
  fld SSBO 41-48 #c6-src SSBO_IM>SRC_IM
  fld TYPE 49-51 #type-atomic
  pat 52 1
  fld SSBO_IM 53 bool
bitset #c6-atomic-s4 : #c6-atomic-s
  gen 0 499
  pat 0 0
bitset #c6-atomic-s5 : #c6-atomic-s
  gen 500
  pat 0 1
bitset atomic.s.add : #c6-atomic-s4
  pat 54-58 10000
bitset atomic.s.sub : #c6-atomic-s4
  pat 54-58 10001
bitset atomic.s.xchg : #c6-atomic-s4
  pat 54-58 10010
bitset atomic.s.inc : #c6-atomic-s4
  pat 54-58 10011
bitset atomic.s.dec : #c6-atomic-s4
  pat 54-58 10100
bitset atomic.s.cmpxchg : #c6-atomic-s4
  pat 54-58 10101
bitset atomic.s.min : #c6-atomic-s4
  pat 54-58 10110
bitset atomic.s.max : #c6-atomic-s4
  pat 54-58 10111
bitset atomic.s.and : #c6-atomic-s4
  pat 54-58 11000
bitset atomic.s.or : #c6-atomic-s4
  pat 54-58 11001
bitset atomic.s.xor : #c6-atomic-s4
  pat 54-58 11010
bitset atomic.s.add : #c6-atomic-s5
  pat 54-58 10000
bitset atomic.s.sub : #c6-atomic-s5
  pat 54-58 10001
bitset atomic.s.xchg : #c6-atomic-s5
  pat 54-58 10010
bitset atomic.s.inc : #c6-atomic-s5
  pat 54-58 10011
bitset atomic.s.dec : #c6-atomic-s5
  pat 54-58 10100
bitset atomic.s.cmpxchg : #c6-atomic-s5
  pat 54-58 10101
bitset atomic.s.min : #c6-atomic-s5
  pat 54-58 10110
bitset atomic.s.max : #c6-atomic-s5
  pat 54-58 10111
bitset atomic.s.and : #c6-atomic-s5
  pat 54-58 11000
bitset atomic.s.or : #c6-atomic-s5
  pat 54-58 11001
bitset atomic.s.xor : #c6-atomic-s5
  pat 54-58 11010

// a6xx+ encodings for (possibly bindless) images, SSBOs and UBOs
bitset #cat6-a6xx-base : #cat6
  gen 600
  der TYPE_SIZE uint is {TYPE_SIZE_MINUS_ONE} + 1
    inv TYPE_SIZE_MINUS_ONE {TYPE_SIZE} - 1
  fld BASE 1-3 #c6-base BINDLESS
  fld MODE 6-7 #c6-mode
  fld BINDLESS 8 bool
  fld TYPE_SIZE_MINUS_ONE 12-13 uint

bitset #cat6-a6xx : #cat6-a6xx-base
  pat 4-5 00
  pat 54-58 00000
  pat 40 0

bitset #c6-ldc : #cat6-a6xx
  pat 0 x
  pat 14-19 011110
  pat 20-22 1xx
  fld SRC1_IM 23 bool
  der SRC2_IM bool is {MODE} == 0
  fld SRC2 41-48 #c6-src SRC2_IM>SRC_IM
  fld SRC1 24-31 #c6-src SRC1_IM>SRC_IM
  pat 49-51 x11

bitset ldc.k : #c6-ldc
  show {SY}{JP}ldc.{LOAD_SIZE}.k.{MODE}{BASE} c[a1.x], {SRC1}, {SRC2}
  pat 11 x
  der LOAD_SIZE uint is {LOAD_SIZE_MINUS_ONE} + 1
    inv LOAD_SIZE_MINUS_ONE {LOAD_SIZE} - 1
  fld LOAD_SIZE_MINUS_ONE 32-39 uint
  pat 9-10 xx
  pat 52-53 11

bitset ldc : #c6-ldc
  show {SY}{JP}{NAME}{U}.offset{OFFSET}.{TYPE_SIZE}.{MODE}{BASE} {DST}, {SRC1}, {SRC2}
  fld U 11 bool ".u"
  fld OFFSET 9-10 uint
  fld DST 32-39 #reg-gpr
  pat 52-53 10

bitset #c6-getid : #cat6-a6xx
  show {SY}{JP}{NAME}.{TYPE} {DST}
  pat 0 0
  pat 9-10 xx
  pat 11 x
  pat 24-31 xxxxxxxx
  fld DST 32-39 #reg-gpr
  pat 41-48 xxxxxxxx
  fld TYPE 49-51 #type
  pat 52-53 1x

bitset getspid : #c6-getid
  pat 14-19 100100
  pat 20-23 x1xx
bitset getwid : #c6-getid
  pat 14-19 100101
  pat 20-23 x1xx
bitset getfiberid : #c6-getid
  pat 14-19 100110
  pat 20-23 11xx

bitset #c6-ibo-1src : #cat6-a6xx
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE}.{MODE}{BASE} {DST}, {SSBO}
  der D uint is {D_MINUS_ONE} + 1
    inv D_MINUS_ONE {D} - 1
  pat 0 0
  fld D_MINUS_ONE 9-10 uint
  fld TYPED 11 #c6-typed
  pat 20-23 0110
  pat 24-31 xxxxxxxx
  fld DST 32-39 #reg-gpr
  fld SSBO 41-48 #c6-src SSBO_IM>SRC_IM
  der SSBO_IM bool is {MODE} == 0
  fld TYPE 49-51 #type
  pat 52-53 1x

bitset resinfo.b : #c6-ibo-1src
  pat 14-19 001111
bitset resbase : #c6-ibo-1src
  pat 14-19 001100

bitset #c6-ibo-base : #cat6-a6xx-base
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}{RCK}.{TYPE_SIZE}.{MODE}{BASE} {TYPE_HALF}{SRC1}, {SRC2}{OFFSET}, {SSBO}
  der D uint is {D_MINUS_ONE} + 1
    inv D_MINUS_ONE {D} - 1
  der OFFSET uoffset is 0
  fld D_MINUS_ONE 9-10 uint
  fld TYPED 11 #c6-typed
  pat 20-22 110
  fld SRC2 24-31 #reg-gpr
  fld SRC1 32-39 #reg-gpr
  fld RCK 40 bool ".rck"
  fld SSBO 41-48 #c6-src SSBO_IM>SRC_IM
  der SSBO_IM bool is {MODE} == 0

bitset #c6-ibo : #c6-ibo-base
  pat 23 0
  pat 4-5 00
  pat 54-58 00000

bitset #c6-ibo-ls : #c6-ibo-base
  ovr !{HAS_OFFSET}
    assert 4-5 00
    assert 54-58 00000
  end
  fld HAS_OFFSET 23 bool
  fld OFFSET_HI 4-5 uint
  fld TYPE 49-51 #type
  fld OFFSET_LO 54-58 uint
  der OFFSET uoffset is ({OFFSET_HI} << 5) | {OFFSET_LO}
    inv OFFSET_HI ({OFFSET} >> 5) & 3
    inv OFFSET_LO {OFFSET} & 31

bitset #c6-ibo-atomic : #c6-ibo
  show {SY}{JP}{NAME}.{TYPED}.{D}d.{TYPE}.{TYPE_SIZE}.{MODE}{BASE} {SRC1}, {SRC2}, {SSBO}
  fld TYPE 49-51 #type-atomic

bitset stib.b : #c6-ibo-ls
  pat 0 0
  pat 14-19 011101
  pat 52-53 10
bitset ldib.b : #c6-ibo-ls
  pat 0 x
  pat 14-19 000110
  pat 52-53 10

bitset atomic.b.add : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010000
  pat 52-53 11
bitset atomic.b.sub : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010001
  pat 52-53 11
bitset atomic.b.xchg : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010010
  pat 52-53 11
bitset atomic.b.cmpxchg : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010101
  pat 52-53 11
bitset atomic.b.min : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010110
  pat 52-53 11
bitset atomic.b.max : #c6-ibo-atomic
  pat 0 x
  pat 14-19 010111
  pat 52-53 11
bitset atomic.b.and : #c6-ibo-atomic
  pat 0 x
  pat 14-19 011000
  pat 52-53 11
bitset atomic.b.or : #c6-ibo-atomic
  pat 0 x
  pat 14-19 011001
  pat 52-53 11
bitset atomic.b.xor : #c6-ibo-atomic
  pat 0 x
  pat 14-19 011010
  pat 52-53 11

// ------------------------------------------------------------------ cat7: barriers, caches
bitset #cat7 : #instruction
  pat 0-31 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
  pat 32-43 xxxxxxxxxxxx
  fld SS 44 bool "(ss)"
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 111

bitset #cat7-barrier : #cat7
  show {SY}{SS}{JP}{NAME}{G}{L}{R}{W}
  pat 45-50 x1xxxx
  fld W 51 bool ".w"
  fld R 52 bool ".r"
  fld L 53 bool ".l"
  fld G 54 bool ".g"

bitset bar : #cat7-barrier
  pat 55-58 0000
bitset fence : #cat7-barrier
  pat 55-58 0001

bitset #cat7-data : #cat7
  show {SY}{SS}{JP}{NAME}{TYPE}
  pat 45-50 xxxxxx
  fld TYPE 51 #dccln-type
  pat 52-54 xx0

bitset sleep : #cat7
  show {SY}{SS}{JP}{NAME}{DURATION}
  pat 45-50 xxxxxx
  fld DURATION 51 #sleep-dur
  pat 52-54 xxx
  pat 55-58 0010

bitset icinv : #cat7
  show {SY}{SS}{JP}{NAME}
  pat 45-54 xxxxxxxxxx
  pat 55-58 0011

bitset dccln : #cat7-data
  pat 55-58 0100
bitset dcinv : #cat7-data
  pat 55-58 0101
bitset dcflu : #cat7-data
  pat 55-58 0110

bitset ccinv : #cat7
  gen 700
  show {SY}{SS}{JP}{NAME}
  pat 45-50 x1xxxx
  pat 51-54 1010
  pat 55-58 0101

bitset lock : #cat7
  gen 700
  show {SY}{SS}{JP}{NAME}
  pat 45-54 1000010000
  pat 55-58 0111

bitset unlock : #cat7
  gen 700
  show {SY}{SS}{JP}{NAME}
  pat 45-54 1001010000
  pat 55-58 0111
// a7xx alias: one leaf per source kind (bits 51-52), the render-target destination as override
enum #alias-scope 0:tex 1:rt 2:mem 3:mem
enum #alias-type-size 0:16 1:32
enum #alias-type 0:f 1:b

bitset #dst-rt size 5
  show rt{RT}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld RT 2-4 uint

bitset #alias-immed-src size 32
  ovr {TYPE} == 0 && {TYPE_SIZE} == 0
    show h({IMMED})
    fld IMMED 0-15 float
  end
  ovr {TYPE} == 0 && {TYPE_SIZE} == 1
    show ({IMMED})
    fld IMMED 0-31 float
  end
  ovr {TYPE_SIZE} == 0
    show h(0x{IMMED})
    fld IMMED 0-15 hex
  end
  show (0x{IMMED})
  fld IMMED 0-31 hex

bitset #alias-const-src size 11
  show {HALF}{CONST}
  fld CONST 0-10 #reg-const
  der HALF bool "h" is {TYPE_SIZE} == 0

bitset #alias-gpr-src size 8
  show {HALF}{SRC}
  fld SRC 0-7 #reg-gpr
  der HALF bool "h" is {TYPE_SIZE} == 0

bitset #alias : #instruction
  gen 700
  ovr (({SCOPE_HI} << 1) | {SCOPE_LO}) == 1
    fld DST 32-36 #dst-rt
    assert 37-39 000
    der DST_HALF bool "" is 0
  end
  show {SY}{SS}{JP}{NAME}.{SCOPE}.{TYPE}{TYPE_SIZE}.{TABLE_SIZE_MINUS_ONE} {DST_HALF}{DST}, {SRC}
  fld DST 32-39 #reg-gpr
  fld TABLE_SIZE_MINUS_ONE 40-43 uint
  fld SS 44 bool "(ss)"
  pat 45-46 xx
  fld SCOPE_LO 47 uint
  fld TYPE 48 #alias-type
  fld SCOPE_HI 49 uint
  fld TYPE_SIZE 50 #alias-type-size
  pat 53-54 xx
  pat 55-58 1000
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 111
  der SCOPE #alias-scope is ({SCOPE_HI} << 1) | {SCOPE_LO}
    inv SCOPE_LO {SCOPE} & 1
    inv SCOPE_HI {SCOPE} >> 1
  der DST_HALF bool "h" is {TYPE_SIZE} == 0

bitset alias : #alias
  pat 51-52 00
  fld SRC 0-7 #alias-gpr-src TYPE_SIZE
  pat 8-31 000000000000000000000000
bitset alias : #alias
  pat 51-52 01
  fld SRC 0-10 #alias-const-src TYPE_SIZE
  pat 11-31 000000000000000000000
bitset alias : #alias
  pat 51-52 1x
  fld SRC 0-31 #alias-immed-src TYPE_SIZE TYPE
)ISA";

const char* isa_table_text_mem() { return kTableMem; }

}  // namespace opv::ir3::detail
