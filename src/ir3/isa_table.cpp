// The ir3 encoding table: our own compact description of the Adreno shader ISA (categories
// 0-7), written from reading Mesa's isaspec XML (../shared/ir3/isa) and the vectors in
// ../shared/ir3/vectors.tsv. Decode, print, parse and encode are all derived from it
// (isa_model.cpp loads it).
//
// Format, one item per line ("//" starts a comment):
//   enum NAME v:text ...                 value/text pairs ("v:" alone is empty text)
//   bitset NAME [: PARENT] [size N]      an encoding; leaves (nothing extends them) are concrete
//   gen MIN [MAX]                        generation range (chip*100)
//   pat LO[-HI] BITS                     fixed bits, MSB first; x = don't care
//   assert LO[-HI] BITS                  bits the encoder sets (not checked by the decoder)
//   fld NAME LO[-HI] TYPE ["shown"] [P|P>Q ...]   field; TYPE bool/boolinv/uint/int/hex/offset/
//                                        uoffset/float/branch or #enum/#bitset; P>Q passes the
//                                        enclosing field P down as Q
//   der NAME TYPE ["shown"] [wN] is EXPR derived value; `inv FIELD EXPR` lines after it say how
//                                        the assembler recovers FIELD from it
//   show TEMPLATE                        display; {F} prints field F, {NAME} the bitset name
//   ovr EXPR ... end                     override: display/fields/asserts used when EXPR holds
// Coverage: every a6xx (gen 600) encoding Mesa knows, the pre-a6xx image/SSBO forms, and the
// a7xx/a8xx forms that share the a6xx layouts. Not covered: a8xx-only fields
// that the XML copy lacks, such as (eostsc) — those decode as raw.
#include <string>

#include "ir3/isa_model.h"

namespace opv::ir3::detail {

const char* isa_table_text_mem();  // isa_table_mem.cpp: categories 5-7

static const char* const kTable = R"ISA(
enum #rpt 0: 1:(rpt1) 2:(rpt2) 3:(rpt3) 4:(rpt4) 5:(rpt5) 6:(rpt6) 7:(rpt7)
enum #cond 0:lt 1:le 2:gt 3:ge 4:eq 5:ne
enum #swiz 0:x 1:y 2:z 3:w
enum #type 0:f16 1:f32 2:u16 3:u32 4:s16 5:s32 6:u8 7:u8_32
enum #type-atomic 0:f16 1:f32 2:u16 3:u32 4:s16 5:s32 6:u64 7:u8_32
enum #absneg 0: 1:(neg) 2:(abs) 3:(absneg)
enum #flut 0:(0.0) 1:(0.5) 2:(1.0) 3:(2.0) 4:(e) 5:(pi) 6:(1/pi) 7:(1/log2(e)) 8:(log2(e)) 9:(1/log2(10)) 10:(log2(10)) 11:(4.0)
enum #wrmask 0: 1:x 2:y 3:xy 4:z 5:xz 6:yz 7:xyz 8:w 9:xw 10:yw 11:xyw 12:zw 13:xzw 14:yzw 15:xyzw
enum #round 0: 1:(even) 2:(pos_infinity) 3:(neg_infinity)
enum #signedness 0:.unsigned 1:.mixed
enum #pack8 0:.low 1:.high
enum #c6-mode 0:imm 1:uniform 2:nonuniform
enum #shfl-mode 1:xor 2:up 3:down 6:rup 7:rdown
enum #dccln-type 0:.shr 1:.all
enum #sleep-dur 0:.s 1:.l

// ------------------------------------------------------------------ registers
bitset #reg-gpr size 8
  ovr {GPR} == 61
    show a0.{SWIZ}
    assert 2-7 111101
  end
  ovr {GPR} == 62
    show p0.{SWIZ}
    assert 2-7 111110
  end
  show r{GPR}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld GPR 2-7 uint

bitset #reg-const size 11
  show c{CONST}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld CONST 2-10 uint

bitset #reg-rel-gpr size 10
  ovr {OFFSET} == 0
    show r<a0.x>
  end
  show r<a0.x + {OFFSET}>
  fld OFFSET 0-9 int

bitset #reg-rel-const size 10
  ovr {OFFSET} == 0
    show c<a0.x>
  end
  show c<a0.x + {OFFSET}>
  fld OFFSET 0-9 int

// cat2/cat4 source: gpr, const, relative, immediate or float table entry
bitset #multisrc size 16

bitset #ms-immed : #multisrc
  ovr !{FULL}
    show {ABSNEG}{SRC_R}h({IMMED})
  end
  show {ABSNEG}{SRC_R}{IMMED}
  fld IMMED 0-10 int
  pat 11-13 100
  fld ABSNEG 14-15 #absneg

bitset #ms-flut : #multisrc
  fld IMMED 0-9 #flut
  pat 11-13 101
  fld ABSNEG 14-15 #absneg

bitset #ms-flut-full : #ms-flut
  show {ABSNEG}{SRC_R}{IMMED}
  pat 10 0

bitset #ms-flut-half : #ms-flut
  show {ABSNEG}{SRC_R}h{IMMED}
  pat 10 1

bitset #ms-gpr : #multisrc
  show {LAST}{ABSNEG}{SRC_R}{HALF}{SRC}
  der HALF bool "h" is !{FULL}
  fld SRC 0-7 #reg-gpr
  pat 8-9 00
  fld LAST 10 bool "(last)"
  pat 11-13 000
  fld ABSNEG 14-15 #absneg

bitset #ms-const : #multisrc
  show {ABSNEG}{SRC_R}{HALF}{SRC}
  der HALF bool "h" is !{FULL}
  fld SRC 0-10 #reg-const
  pat 11-13 x10
  fld ABSNEG 14-15 #absneg

bitset #ms-rel : #multisrc
  pat 11-13 001
  fld ABSNEG 14-15 #absneg

bitset #ms-rel-gpr : #ms-rel
  show {ABSNEG}{SRC_R}{HALF}{SRC}
  der HALF bool "h" is !{FULL}
  fld SRC 0-9 #reg-rel-gpr
  pat 10 0

bitset #ms-rel-const : #ms-rel
  show {ABSNEG}{SRC_R}{HALF}{SRC}
  der HALF bool "h" is !{FULL}
  fld SRC 0-9 #reg-rel-const
  pat 10 1

bitset #instruction size 64
  gen 300

// ------------------------------------------------------------------ cat0: flow
bitset #cat0 : #instruction
  fld IMMED 0-31 branch
  fld REPEAT 40-42 #rpt
  pat 43 x
  fld SS 44 bool "(ss)"
  fld EQ 48 bool "(eq)"
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 000

bitset #cat0-0src : #cat0
  show {SY}{SS}{EQ}{JP}{EOLM}{EOGM}{REPEAT}{NAME}
  fld EOLM 32 bool "(eolm)"
  fld EOGM 33 bool "(eogm)"
  pat 34-36 000
  pat 37-39 000
  pat 45-47 000
  pat 52-54 000

bitset nop : #cat0-0src
  pat 49-51 xx0
  pat 55-58 0000
bitset end : #cat0-0src
  pat 49-51 xx0
  pat 55-58 0110
bitset ret : #cat0-0src
  pat 49-51 xx0
  pat 55-58 0100
bitset emit : #cat0-0src
  pat 49-51 xx0
  pat 55-58 0111
bitset cut : #cat0-0src
  pat 49-51 xx0
  pat 55-58 1000
bitset chmask : #cat0-0src
  pat 49-51 xx0
  pat 55-58 1001
bitset chsh : #cat0-0src
  pat 49-51 xx0
  pat 55-58 1010
bitset flow_rev : #cat0-0src
  pat 49-51 xx0
  pat 55-58 1011
bitset shpe : #cat0-0src
  pat 49-51 xx1
  pat 55-58 1000
bitset predt : #cat0-0src
  pat 49-51 xx1
  pat 55-58 1101
bitset predf : #cat0-0src
  pat 49-51 xx1
  pat 55-58 1110
bitset prede : #cat0-0src
  pat 49-51 xx1
  pat 55-58 1111

bitset #cat0-1src : #cat0
  show {SY}{SS}{EQ}{JP}{NAME} {INV1}p0.{COMP1}
  pat 32-36 00000
  pat 37-39 000
  pat 45-47 000
  fld INV1 52 bool "!"
  fld COMP1 53-54 #swiz

bitset kill : #cat0-1src
  pat 49-51 xx0
  pat 55-58 0101

bitset #cat0-immed : #cat0
  show {SY}{SS}{JP}{NAME} #{IMMED}
  pat 32-36 xxxxx
  pat 37-39 xxx
  pat 45-47 xxx
  pat 52-54 xxx

bitset jump : #cat0-immed
  pat 49-51 xx0
  pat 55-58 0010
bitset call : #cat0-immed
  pat 49-51 xx0
  pat 55-58 0011
bitset bkt : #cat0-immed
  pat 49-51 xx1
  pat 55-58 0000
bitset getone : #cat0-immed
  pat 49-51 xx1
  pat 55-58 0101
bitset shps : #cat0-immed
  pat 49-51 xx1
  pat 55-58 0111

bitset getlast : #cat0
  gen 600
  show {SY}{SS}{JP}{NAME}.w{CLUSTER_SIZE} #{IMMED}
  der CLUSTER_SIZE uint is 2 << {W}
  pat 32-36 xxxxx
  pat 37-39 xxx
  pat 45-47 xxx
  pat 49-51 xx1
  pat 55-58 0100
  fld W 52-54 uint

bitset #cat0-branch : #cat0
  pat 49-51 xx0
  pat 55-58 0001

bitset brac : #cat0-branch
  show {SY}{SS}{EQ}{JP}{NAME}.{INDEX} #{IMMED}
  fld INDEX 32-36 uint
  pat 37-39 011
  pat 45-47 xxx
  pat 52-54 xxx

bitset brax : #cat0-branch
  show {SY}{SS}{JP}{NAME} #{IMMED}
  pat 32-36 xxxxx
  pat 37-39 110
  pat 45-47 xxx
  pat 52-54 xxx

bitset #cat0-br1 : #cat0-branch
  show {SY}{SS}{EQ}{JP}{NAME} {INV1}p0.{COMP1}, #{IMMED}
  pat 32-36 xxxxx
  pat 45-47 xxx
  fld INV1 52 bool "!"
  fld COMP1 53-54 #swiz

bitset br : #cat0-br1
  pat 37-39 000
bitset bany : #cat0-br1
  pat 37-39 100
bitset ball : #cat0-br1
  pat 37-39 101

bitset #cat0-br2 : #cat0-branch
  show {SY}{SS}{EQ}{JP}{NAME} {INV1}p0.{COMP1}, {INV2}p0.{COMP2}, #{IMMED}
  pat 32-36 xxxxx
  fld INV2 45 bool "!"
  fld COMP2 46-47 #swiz
  fld INV1 52 bool "!"
  fld COMP1 53-54 #swiz

bitset brao : #cat0-br2
  pat 37-39 001
bitset braa : #cat0-br2
  pat 37-39 010

// ------------------------------------------------------------------ cat1: mov/cov
bitset #cat1-dst size 8
  ovr ({OFFSET} == 0) && {DST_REL}
    show r<a0.x>
    fld OFFSET 0-7 uint
  end
  ovr {DST_REL}
    show r<a0.x + {OFFSET}>
    fld OFFSET 0-7 uint
  end
  show {DST}
  fld DST 0-7 #reg-gpr

bitset #cat1-immed-src size 32
  ovr {SRC_TYPE} == 0
    show h({IMMED})
    fld IMMED 0-15 float
  end
  ovr {SRC_TYPE} == 1
    show ({IMMED})
    fld IMMED 0-31 float
  end
  ovr ({SRC_TYPE} == 3) && ({IMMED} > 0x1000)
    show 0x{IMMED}
    fld IMMED 0-31 hex
  end
  ovr {SRC_TYPE} == 4
    fld IMMED 0-15 int
  end
  ovr {SRC_TYPE} == 5
    fld IMMED 0-31 int
  end
  show {IMMED}
  fld IMMED 0-31 uint

bitset #cat1-const-src size 11
  show {SRC_R}{HALF}{CONST}
  fld CONST 0-10 #reg-const

bitset #cat1-gpr-src size 8
  show {LAST}{SRC_R}{HALF}{SRC}
  fld SRC 0-7 #reg-gpr

bitset #cat1-rel-gpr-src size 10
  show {SRC_R}{HALF}{SRC}
  fld SRC 0-9 #reg-rel-gpr

bitset #cat1-rel-const-src size 10
  show {SRC_R}{HALF}{SRC}
  fld SRC 0-9 #reg-rel-const

bitset #cat1 : #instruction
  fld DM 42 bool "(sat)"
  fld SS 44 bool "(ss)"
  fld UL 45 bool "(ul)"
  fld ROUND 55-56 #round
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 001

bitset #cat1-typed : #cat1
  der HALF bool "h" is {SRC_TYPE} == 0 || {SRC_TYPE} == 2 || {SRC_TYPE} == 4 || {SRC_TYPE} == 6 || {SRC_TYPE} == 7
  der DST_HALF bool "h" is {DST_TYPE} == 0 || {DST_TYPE} == 2 || {DST_TYPE} == 4 || {DST_TYPE} == 6 || {DST_TYPE} == 7
  fld DST_TYPE 46-48 #type
  fld SRC_TYPE 50-52 #type

bitset #cat1-mov : #cat1-typed
  ovr ({DST} == 0xf4) && ({SRC_TYPE} == 4) && ({DST_TYPE} == 4)
    show {SY}{SS}{JP}{REPEAT}{UL}mova {ROUND}{DM}a0.x, {SRC_R}{SRC}
    assert 32-39 11110100
    assert 46-48 100
    assert 50-52 100
  end
  ovr ({DST} == 0xf5) && ({SRC_TYPE} == 2) && ({DST_TYPE} == 2)
    show {SY}{SS}{JP}{REPEAT}{UL}mova1 {ROUND}{DM}a1.x, {SRC_R}{SRC}
    assert 32-39 11110101
    assert 46-48 010
    assert 50-52 010
  end
  ovr {SRC_TYPE} != {DST_TYPE}
    show {SY}{SS}{JP}{REPEAT}{UL}cov.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST_HALF}{DST}, {SRC}
  end
  show {SY}{SS}{JP}{REPEAT}{UL}mov.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST_HALF}{DST}, {SRC}
  fld DST 32-39 #cat1-dst DST_REL
  fld REPEAT 40-41 #rpt
  fld DST_REL 49 bool
  pat 57-58 00

bitset mov-immed : #cat1-mov
  fld SRC 0-31 #cat1-immed-src SRC_TYPE
  fld SRC_R 43 bool "(r)"
  pat 53-54 10

bitset mov-const : #cat1-mov
  fld SRC 0-10 #cat1-const-src SRC_R HALF
  pat 11-31 000000000000000000000
  fld SRC_R 43 bool "(r)"
  pat 53-54 01

bitset #cat1-mov-gpr : #cat1-mov
  fld SRC 0-7 #cat1-gpr-src LAST SRC_R HALF
  pat 8-9 00
  fld LAST 10 bool "(last)"
  fld SRC_R 43 bool "(r)"
  pat 53-54 00

bitset mov-gpr : #cat1-mov-gpr
  pat 11-31 000000000000000000000

bitset #cat1-movs : #cat1-mov-gpr
  pat 11-22 000000000000
  pat 31 1

bitset movs-immed : #cat1-movs
  show {SY}{SS}{JP}{REPEAT}{UL}movs.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST_HALF}{DST}, {SRC}, {INVOCATION}
  fld INVOCATION 23-29 uint
  pat 30 0

bitset movs-a0 : #cat1-movs
  show {SY}{SS}{JP}{REPEAT}{UL}movs.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST_HALF}{DST}, {SRC}, a0.x
  pat 23-29 0000000
  pat 30 1

bitset #cat1-rel : #cat1-mov
  pat 11 1
  pat 12-31 00000000000000000000
  fld SRC_R 43 bool "(r)"
  pat 53-54 00

bitset mov-relgpr : #cat1-rel
  fld SRC 0-9 #cat1-rel-gpr-src SRC_R HALF
  pat 10 0

bitset mov-relconst : #cat1-rel
  fld SRC 0-9 #cat1-rel-const-src SRC_R HALF
  pat 10 1

bitset #cat1-multi-src size 8
  show {HALF}{REG}
  fld REG 0-7 #reg-gpr

bitset #cat1-multi-dst size 8
  show {DST_HALF}{REG}
  fld REG 0-7 #reg-gpr

bitset #cat1-multi : #cat1-typed
  gen 500
  fld SRC0 0-7 #cat1-multi-src HALF
  fld DST0 32-39 #cat1-multi-dst DST_HALF
  pat 43 0
  pat 49 0
  pat 53-54 00
  pat 57-58 10

bitset swz : #cat1-multi
  show {SY}{SS}{JP}{UL}swz.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST0}, {DST1}, {SRC0}, {SRC1}
  fld SRC1 8-15 #cat1-multi-src HALF
  fld DST1 16-23 #cat1-multi-dst DST_HALF
  pat 24-31 00000000
  pat 40-41 00

bitset gat : #cat1-multi
  show {SY}{SS}{JP}{UL}gat.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST0}, {SRC0}, {SRC1}, {SRC2}, {SRC3}
  fld SRC1 8-15 #cat1-multi-src HALF
  fld SRC2 16-23 #cat1-multi-src HALF
  fld SRC3 24-31 #cat1-multi-src HALF
  pat 40-41 01

bitset sct : #cat1-multi
  show {SY}{SS}{JP}{UL}sct.{SRC_TYPE}{DST_TYPE} {ROUND}{DM}{DST0}, {DST1}, {DST2}, {DST3}, {SRC0}
  fld DST1 8-15 #cat1-multi-dst DST_HALF
  fld DST2 16-23 #cat1-multi-dst DST_HALF
  fld DST3 24-31 #cat1-multi-dst DST_HALF
  pat 40-41 10

bitset movmsk : #cat1
  show {SY}{SS}{JP}{UL}movmsk.w{W} {DST}
  der W uint is ({REPEAT} + 1) * 32
    inv REPEAT {W} / 32 - 1
  pat 0-31 00000000000000000000000000000000
  fld DST 32-39 #cat1-dst DST_REL
  fld REPEAT 40-41 #rpt
  pat 43 0
  pat 46-48 011
  fld DST_REL 49 bool
  pat 50-52 011
  pat 53-54 00
  pat 57-58 11

// ------------------------------------------------------------------ cat2: 1-2 source ALU
bitset #dst-cat2 size 8
  ovr {GPR} == 61
    show up0.{SWIZ}
    assert 2-7 111101
  end
  ovr {GPR} == 62
    show p0.{SWIZ}
    assert 2-7 111110
  end
  show r{GPR}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld GPR 2-7 uint

bitset #cat2 : #instruction
  fld DST 32-39 #dst-cat2
  fld REPEAT 40-41 #rpt
  fld SAT 42 bool "(sat)"
  fld SRC1_R 43 bool "(r)"
  fld SS 44 bool "(ss)"
  fld UL 45 bool "(ul)"
  fld DST_CONV 46 bool
  der DST_HALF bool "h" is ({FULL} == {DST_CONV}) && ({DST} <= 0xf7)
  fld EI 47 bool "(ei)"
  fld SRC2_R 51 bool "(r)"
  fld FULL 52 bool
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 010
  der ZERO bool "" is 0
  der NOP uint is {SRC1_R} | ({SRC2_R} << 1)
    inv SRC1_R {NOP} & 1
    inv SRC2_R ({NOP} >> 1) & 1

bitset #cat2-1src : #cat2
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}
    fld SRC1 0-15 #multisrc ZERO>SRC_R FULL
  end
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}
  pat 16-31 xxxxxxxxxxxxxxxx
  pat 48-50 xxx
  fld SRC1 0-15 #multisrc SRC1_R>SRC_R FULL

bitset #cat2-2src : #cat2
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
    fld SRC1 0-15 #multisrc ZERO>SRC_R FULL
    fld SRC2 16-31 #multisrc ZERO>SRC_R FULL
  end
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
  fld SRC1 0-15 #multisrc SRC1_R>SRC_R FULL
  fld SRC2 16-31 #multisrc SRC2_R>SRC_R FULL
  pat 48-50 xxx

bitset #cat2-cond : #cat2
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME}.{COND} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
    fld SRC1 0-15 #multisrc ZERO>SRC_R FULL
    fld SRC2 16-31 #multisrc ZERO>SRC_R FULL
  end
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME}.{COND} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
  fld SRC1 0-15 #multisrc SRC1_R>SRC_R FULL
  fld SRC2 16-31 #multisrc SRC2_R>SRC_R FULL
  fld COND 48-50 #cond

bitset #cat2-input : #cat2
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
    fld SRC1 0-15 #multisrc ZERO>SRC_R FULL
    fld SRC2 16-31 #multisrc ZERO>SRC_R FULL
  end
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME} {EI}{DST_HALF}{DST}, {SRC1}, {SRC2}
  fld SRC1 0-15 #multisrc SRC1_R>SRC_R FULL
  fld SRC2 16-31 #multisrc SRC2_R>SRC_R FULL
  pat 48-49 xx
  pat 53-58 111001

bitset bary.f : #cat2-input
  pat 50 0
bitset flat.b : #cat2-input
  gen 600
  pat 50 1

bitset add.f : #cat2-2src
  pat 53-58 000000
bitset min.f : #cat2-2src
  pat 53-58 000001
bitset max.f : #cat2-2src
  pat 53-58 000010
bitset mul.f : #cat2-2src
  pat 53-58 000011
bitset sign.f : #cat2-1src
  pat 53-58 000100
bitset cmps.f : #cat2-cond
  pat 53-58 000101
bitset absneg.f : #cat2-1src
  pat 53-58 000110
bitset cmpv.f : #cat2-cond
  pat 53-58 000111
bitset floor.f : #cat2-1src
  pat 53-58 001001
bitset ceil.f : #cat2-1src
  pat 53-58 001010
bitset rndne.f : #cat2-1src
  pat 53-58 001011
bitset rndaz.f : #cat2-1src
  pat 53-58 001100
bitset trunc.f : #cat2-1src
  pat 53-58 001101
bitset add.u : #cat2-2src
  pat 53-58 010000
bitset add.s : #cat2-2src
  pat 53-58 010001
bitset sub.u : #cat2-2src
  pat 53-58 010010
bitset sub.s : #cat2-2src
  pat 53-58 010011
bitset cmps.u : #cat2-cond
  pat 53-58 010100
bitset cmps.s : #cat2-cond
  pat 53-58 010101
bitset min.u : #cat2-2src
  pat 53-58 010110
bitset min.s : #cat2-2src
  pat 53-58 010111
bitset max.u : #cat2-2src
  pat 53-58 011000
bitset max.s : #cat2-2src
  pat 53-58 011001
bitset absneg.s : #cat2-1src
  pat 53-58 011010
bitset and.b : #cat2-2src
  pat 53-58 011100
bitset or.b : #cat2-2src
  pat 53-58 011101
bitset not.b : #cat2-1src
  pat 53-58 011110
bitset xor.b : #cat2-2src
  pat 53-58 011111
bitset cmpv.u : #cat2-cond
  pat 53-58 100001
bitset cmpv.s : #cat2-cond
  pat 53-58 100010
bitset mul.u24 : #cat2-2src
  pat 53-58 110000
bitset mul.s24 : #cat2-2src
  pat 53-58 110001
bitset mull.u : #cat2-2src
  pat 53-58 110010
bitset bfrev.b : #cat2-1src
  pat 53-58 110011
bitset clz.s : #cat2-1src
  pat 53-58 110100
bitset clz.b : #cat2-1src
  pat 53-58 110101
bitset shl.b : #cat2-2src
  pat 53-58 110110
bitset shr.b : #cat2-2src
  pat 53-58 110111
bitset ashr.b : #cat2-2src
  pat 53-58 111000
bitset mgen.b : #cat2-2src
  pat 53-58 111010
bitset getbit.b : #cat2-2src
  pat 53-58 111011
bitset setrm : #cat2-1src
  pat 53-58 111100
bitset cbits.b : #cat2-1src
  pat 53-58 111101
bitset shb : #cat2-2src
  pat 53-58 111110
bitset msad : #cat2-2src
  pat 53-58 111111

// ------------------------------------------------------------------ cat3: 3 source ALU
bitset #cat3-src size 13

bitset #c3-gpr : #cat3-src
  show {LAST}{HALF}{SRC}
  fld SRC 0-7 #reg-gpr
  pat 8-9 00
  fld LAST 10 bool "(last)"
  pat 11-12 00

bitset #c3-flut : #cat3-src
  gen 800
  show {HALF}{IMMED}
  pat 8-12 00111
  fld HALF 7 bool "h"
  assert 4-6 000
  fld IMMED 0-3 #flut

bitset #c3-alt-immed : #cat3-src
  gen 800
  show {IMMED}
  pat 8-12 00110
  fld IMMED 0-7 int

bitset #c3-const-or-immed : #cat3-src
  ovr {IMMED_ENCODING}
    show {IMMED}
    fld IMMED 0-11 uint
  end
  show {HALF}c{CONST}.{SWIZ}
  fld SWIZ 0-1 #swiz
  fld CONST 2-10 uint
  pat 12 1
  assert 11 0

bitset #c3-rel : #cat3-src
  pat 11-12 01

bitset #c3-rel-gpr : #c3-rel
  show {HALF}r<a0.x + {OFFSET}>
  fld OFFSET 0-9 int
  pat 10 0

bitset #c3-rel-const : #c3-rel
  show {HALF}c<a0.x + {OFFSET}>
  fld OFFSET 0-9 int
  pat 10 1

bitset #cat3-base : #instruction
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME} {DST_HALF}{DST}, {SRC1_NEG}{SRC1}, {SRC2_NEG}{HALF}{SRC2}, {SRC3_NEG}{SRC3}
  end
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME} {DST_HALF}{DST}, {SRC1_NEG}{SRC1_R}{SRC1}, {SRC2_NEG}{SRC2_R}{HALF}{SRC2}, {SRC3_NEG}{SRC3_R}{SRC3}
  fld SRC2_R 15 bool "(r)"
  fld SRC3_R 29 bool "(r)"
  fld DST 32-39 #reg-gpr
  fld REPEAT 40-41 #rpt
  fld SRC1_R 43 bool "(r)"
  fld SS 44 bool "(ss)"
  fld UL 45 bool "(ul)"
  fld SRC2 47-54 #reg-gpr
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 011
  der HALF bool "h" is !{FULL}
  der DST_HALF bool "h" is ({FULL} == {DST_CONV}) && ({DST} <= 0xf7)
  der NOP uint is {SRC1_R} | ({SRC2_R} << 1)
    inv SRC1_R {NOP} & 1
    inv SRC2_R ({NOP} >> 1) & 1

bitset #cat3 : #cat3-base
  der IMMED_ENCODING bool is 0
  fld SRC1 0-12 #cat3-src HALF IMMED_ENCODING
  fld SRC1_NEG 14 bool "(neg)"
  pat 13 0
  fld SRC3 16-28 #cat3-src HALF IMMED_ENCODING
  fld SRC2_NEG 30 bool "(neg)"
  fld SRC3_NEG 31 bool "(neg)"
  fld SAT 42 bool "(sat)"
  fld DST_CONV 46 bool

bitset #cat3-alt : #cat3-base
  gen 600
  der IMMED_ENCODING bool is 1
  der SAT bool "" is 0
  fld SRC1 0-12 #cat3-src HALF IMMED_ENCODING
  fld SRC1_NEG 14 bool "(neg)"
  pat 13 1
  fld SRC3 16-28 #cat3-src HALF IMMED_ENCODING
  fld SRC2_NEG 30 bool "(neg)"
  fld SRC3_NEG 31 bool "(neg)"
  fld FULL 42 bool
  fld DST_CONV 46 bool

bitset mad.u16 : #cat3
  pat 55-58 0000
  der FULL bool is 0
bitset madsh.u16 : #cat3
  pat 55-58 0001
  der FULL bool is 1
bitset mad.s16 : #cat3
  pat 55-58 0010
  der FULL bool is 0
bitset madsh.m16 : #cat3
  pat 55-58 0011
  der FULL bool is 1
bitset mad.u24 : #cat3
  pat 55-58 0100
  der FULL bool is 1
bitset mad.s24 : #cat3
  pat 55-58 0101
  der FULL bool is 1
bitset mad.f16 : #cat3
  pat 55-58 0110
  der FULL bool is 0
bitset mad.f32 : #cat3
  pat 55-58 0111
  der FULL bool is 1
bitset sel.b16 : #cat3
  pat 55-58 1000
  der FULL bool is 0
bitset sel.b32 : #cat3
  pat 55-58 1001
  der FULL bool is 1
bitset sel.s16 : #cat3
  pat 55-58 1010
  der FULL bool is 0
bitset sel.s32 : #cat3
  pat 55-58 1011
  der FULL bool is 1
bitset sel.f16 : #cat3
  pat 55-58 1100
  der FULL bool is 0
bitset sel.f32 : #cat3
  pat 55-58 1101
  der FULL bool is 1
bitset sad.s16 : #cat3
  pat 55-58 1110
  der FULL bool is 0
bitset sad.s32 : #cat3
  pat 55-58 1111
  der FULL bool is 1

bitset shrm : #cat3-alt
  pat 55-58 1000
bitset shlm : #cat3-alt
  pat 55-58 1001
bitset shrg : #cat3-alt
  pat 55-58 1010
bitset shlg : #cat3-alt
  pat 55-58 1011
bitset andg : #cat3-alt
  pat 55-58 1100

bitset #cat3-dp : #cat3-base
  gen 600
  ovr ({SRC1_R} || {SRC2_R}) && ({REPEAT} == 0)
    show {SY}{SS}{JP}{SAT}(nop{NOP}) {UL}{NAME}{SRC_SIGN}{SRC_PACK} {DST}, {SRC1}, {SRC2}, {SRC3_NEG}{SRC3_R}{SRC3}
  end
  show {SY}{SS}{JP}{SAT}{UL}{NAME}{SRC_SIGN}{SRC_PACK} {DST}, {SRC1_R}{SRC1}, {SRC2_R}{SRC2}, {SRC3_NEG}{SRC3_R}{SRC3}
  der FULL bool is 1
  fld SRC1 0-12 #cat3-src HALF
  fld SRC_SIGN 14 #signedness
  pat 13 1
  fld SRC3 16-28 #cat3-src HALF
  fld SRC_PACK 30 #pack8
  fld SRC3_NEG 31 bool "(neg)"
  fld SAT 42 bool "(sat)"

bitset dp2acc : #cat3-dp
  pat 46 0
  pat 55-58 1101
bitset dp4acc : #cat3-dp
  pat 46 1
  pat 55-58 1101

bitset #cat3-wmm : #cat3-base
  gen 600
  der IMMED_ENCODING bool is 1
  der SAT bool "" is 0
  der SRC3_NEG bool "" is 0
  der DST_HALF bool "h" is !{DST_FULL}
  fld SRC1 0-12 #cat3-src HALF
  pat 13 1
  fld SRC1_NEG 14 bool "(neg)"
  fld SRC3 16-28 #cat3-src HALF IMMED_ENCODING
  fld SRC2_NEG 30 bool "(neg)"
  fld FULL 31 bool
  fld DST_FULL 46 bool

bitset wmm : #cat3-wmm
  pat 42 0
  pat 55-58 1110
bitset wmm.accu : #cat3-wmm
  pat 42 1
  pat 55-58 1110

// ------------------------------------------------------------------ cat4: SFU
bitset #cat4 : #instruction
  show {SY}{SS}{JP}{SAT}{REPEAT}{UL}{NAME} {DST_HALF}{DST}, {SRC}
  fld SRC 0-15 #multisrc SRC_R FULL
  pat 16-31 xxxxxxxxxxxxxxxx
  fld DST 32-39 #reg-gpr
  fld REPEAT 40-41 #rpt
  fld SAT 42 bool "(sat)"
  fld SRC_R 43 bool "(r)"
  fld SS 44 bool "(ss)"
  fld UL 45 bool "(ul)"
  fld DST_CONV 46 bool
  der DST_HALF bool "h" is ({FULL} == {DST_CONV}) && ({DST} <= 0xf7)
  pat 47-51 xxxxx
  fld FULL 52 bool
  fld JP 59 bool "(jp)"
  fld SY 60 bool "(sy)"
  pat 61-63 100

bitset rcp : #cat4
  pat 53-58 000000
bitset rsq : #cat4
  pat 53-58 000001
bitset log2 : #cat4
  pat 53-58 000010
bitset exp2 : #cat4
  pat 53-58 000011
bitset sin : #cat4
  pat 53-58 000100
bitset cos : #cat4
  pat 53-58 000101
bitset sqrt : #cat4
  pat 53-58 000110
bitset hrsq : #cat4
  pat 53-58 001001
bitset hlog2 : #cat4
  pat 53-58 001010
bitset hexp2 : #cat4
  pat 53-58 001011

)ISA";

const char* isa_table_text() {
  static const std::string all = std::string(kTable) + isa_table_text_mem();
  return all.c_str();
}

}  // namespace opv::ir3::detail
