// Speed of the IR3 disassembler and assembler on random a6xx words (BENCHMARKS.md "IR3 assembler").
//   g++ -O2 -std=c++20 -Isrc bench/ir3_asm_speed.cpp build/libopv_ir3.a build/libopv_core.a -o /tmp/ir3_asm_speed
// Decodes and prints 4,000 random 64-bit words, then parses and encodes the printed text of the
// valid ones (the print -> assemble round trip that fuzz_ir3 checks), and reports the mean time
// per word / per instruction.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir3/isa.h"

int main() {
  using clk = std::chrono::steady_clock;
  std::mt19937_64 rng(1);
  std::vector<uint64_t> words(4000);
  for (uint64_t& w : words) w = rng();
  const auto t0 = clk::now();
  std::vector<std::string> texts;
  for (uint64_t w : words) {
    const opv::ir3::Instr in = opv::ir3::decode(w, 600);
    std::string s = opv::ir3::print(in);
    if (in.valid()) texts.push_back(std::move(s));
  }
  const auto t1 = clk::now();
  size_t ok = 0;
  for (const std::string& s : texts) {
    try {
      (void)opv::ir3::encode(opv::ir3::parse(s, 600));
      ++ok;
    } catch (const opv::Error&) {
    }
  }
  const auto t2 = clk::now();
  const auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  std::printf("decode+print %.1f us/word (%zu of %zu valid); parse+encode %.1f us/instruction (%zu assembled)\n",
              us(t0, t1) / double(words.size()), texts.size(), words.size(), us(t1, t2) / double(texts.size()), ok);
}
