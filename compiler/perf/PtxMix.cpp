#include "compiler/perf/PtxMix.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tir::perf {
namespace {

struct Line {
  std::string opcode;  // "ld.global.v4.u32"
  std::string text;    // the whole instruction
  std::string label;   // a label line's name ("" for instructions)
  std::string target;  // a branch's label
  std::string note;    // a "// tir: <note>" comment line's note
};

std::vector<Line> Parse(absl::string_view ptx) {
  std::vector<Line> lines;
  bool inBody = false;
  int depth = 0;
  for (absl::string_view raw : absl::StrSplit(ptx, '\n')) {
    absl::string_view l = absl::StripAsciiWhitespace(raw);
    if (inBody && absl::StartsWith(l, "// tir: ")) {
      Line line;
      line.note = std::string(l.substr(8));
      lines.push_back(line);
      continue;
    }
    if (l.empty() || absl::StartsWith(l, "//")) continue;
    // The kernel body: between the entry's opening and closing braces.
    if (!inBody) {
      if (absl::StartsWith(l, "{") && depth == 0) {
        inBody = true;
        depth = 1;
      }
      continue;
    }
    if (l == "{") {
      ++depth;
      continue;
    }
    if (l == "}") {
      if (--depth == 0) inBody = false;
      continue;
    }
    if (absl::StartsWith(l, ".")) continue;  // declarations (.reg, .shared, .local, ...)
    Line line;
    if (l.back() == ':') {
      line.label = std::string(l.substr(0, l.size() - 1));
      lines.push_back(line);
      continue;
    }
    if (absl::StartsWith(l, "@")) {  // a guard: @%p1 / @!%p1
      const size_t sp = l.find_first_of(" \t");
      if (sp == absl::string_view::npos) continue;
      l = absl::StripLeadingAsciiWhitespace(l.substr(sp));
    }
    const size_t end = l.find_first_of(" \t;");
    line.opcode = std::string(l.substr(0, end));
    line.text = std::string(l);
    if (line.opcode == "bra" || line.opcode == "bra.uni") {
      absl::string_view rest = absl::StripAsciiWhitespace(l.substr(end));
      line.target = std::string(absl::StripSuffix(rest, ";"));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

int WidthOf(const std::string &op) {
  int scalar = 4;
  for (auto [suffix, bytes] : std::vector<std::pair<const char *, int>>{
           {".b8", 1}, {".u8", 1}, {".s8", 1}, {".b16", 2}, {".u16", 2}, {".s16", 2}, {".f16", 2}, {".bf16", 2},
           {".b32", 4}, {".u32", 4}, {".s32", 4}, {".f32", 4}, {".b64", 8}, {".u64", 8}, {".s64", 8}, {".f64", 8}}) {
    if (absl::EndsWith(op, suffix)) scalar = bytes;
  }
  if (absl::StrContains(op, ".v4.")) return 4 * scalar;
  if (absl::StrContains(op, ".v2.")) return 2 * scalar;
  return scalar;
}

bool Is64Bit(const std::string &op) {
  return absl::EndsWith(op, ".s64") || absl::EndsWith(op, ".u64") || absl::EndsWith(op, ".b64");
}

// SASS instructions one PTX instruction becomes (estimates from reading
// ptxas output: 64-bit integer division and remainder call a ~70
// instruction subroutine, 32-bit ones about 20; an IEEE float divide about
// 10, rcp.rn and sqrt.rn about 8; a 64-bit integer add is two, a 64-bit
// multiply three; moves are mostly register renames).
double Weight(const std::string &op, const std::string &cls) {
  if (cls == "int_div") return Is64Bit(op) ? 70 : 20;
  if (absl::StartsWith(op, "div.rn") || absl::StartsWith(op, "div.full")) return 10;
  if (absl::StartsWith(op, "rcp.rn") || absl::StartsWith(op, "sqrt.rn")) return 8;
  if (cls == "int" && Is64Bit(op)) return absl::StartsWith(op, "mul") || absl::StartsWith(op, "mad") ? 3 : 2;
  if (cls == "move") return 0.25;
  return 1;
}

void Count(const Line &l, InstructionMix &mix) {
  if (l.opcode.empty()) return;
  const std::string cls = ClassOf(l.opcode);
  mix.classes[cls] += Weight(l.opcode, cls);
  ++mix.region_instructions;
  if (cls == "ld_global") {
    const int w = WidthOf(l.opcode);
    mix.global_loads[w] += 1;
    mix.global_load_bytes += w;
  } else if (cls == "st_global") {
    const int w = WidthOf(l.opcode);
    mix.global_stores[w] += 1;
    mix.global_store_bytes += w;
  } else if (cls == "shared") {
    mix.shared_accesses += 1;
  } else if (cls == "int_div" && Is64Bit(l.opcode)) {
    mix.int64_division = true;
  }
  // Round-to-nearest-even of bf16 in integer code: the 0x7fff bias added
  // (a compare against 32767, such as an index check, is not it).
  if (absl::StartsWith(l.opcode, "add") && (absl::StrContains(l.text, ", 32767;") ||
                                            absl::StrContains(l.text, "0x7FFF") || absl::StrContains(l.text, "0x7fff"))) {
    mix.software_bf16_rounding = true;
  }
}

}  // namespace

double InstructionMix::Total() const {
  double t = 0;
  for (const auto &[cls, n] : classes) t += n;
  return t;
}

std::string ClassOf(absl::string_view op) {
  auto starts = [&](const char *p) { return absl::StartsWith(op, p); };
  if (starts("wgmma") || starts("mma.") || starts("ldmatrix") || starts("stmatrix")) return "tensor";
  if (starts("ld.global") || starts("ld.volatile.global") || starts("ld.relaxed.global") || starts("ld.acquire.global") ||
      starts("ldu.global") || starts("ld.local")) {
    return "ld_global";
  }
  if (starts("st.global") || starts("st.volatile.global") || starts("st.local") || starts("red.global") ||
      starts("atom.global")) {
    return "st_global";
  }
  if (starts("ld.shared") || starts("st.shared") || starts("ld.volatile.shared") || starts("atom.shared") ||
      starts("cp.async") || starts("ld.param")) {
    return starts("ld.param") ? "param" : "shared";
  }
  if (starts("ex2") || starts("lg2") || starts("rcp.approx") || starts("rsqrt") || starts("sin.") || starts("cos.") ||
      starts("tanh") || starts("sqrt.approx")) {
    return "mufu";
  }
  if (starts("cvt")) return "cvt";
  if (starts("fma.") || starts("mad.f") || starts("mad.rn")) {
    return absl::StrContains(op, ".f") || absl::StrContains(op, ".bf16") ? "fma" : "int";
  }
  if ((starts("div.") || starts("rem.")) &&
      (absl::StrContains(op, ".s") || absl::StrContains(op, ".u"))) {
    return "int_div";
  }
  const bool fl = absl::StrContains(op, ".f32") || absl::StrContains(op, ".f16") || absl::StrContains(op, ".bf16") ||
                  absl::StrContains(op, ".f64");
  if (starts("mov") || starts("cvta")) return "move";
  if (starts("bra") || starts("ret") || starts("exit") || starts("call")) return "control";
  if (starts("bar") || starts("mbarrier") || starts("fence") || starts("membar") || starts("cp.async.bulk")) {
    return "barrier";
  }
  if (starts("shfl")) return "shuffle";
  if (starts("setp") || starts("selp") || starts("slct")) return fl ? "fp" : "int";
  if (fl) return "fp";
  if (starts("add") || starts("sub") || starts("mul") || starts("mad") || starts("shl") || starts("shr") ||
      starts("and") || starts("or") || starts("xor") || starts("not") || starts("neg") || starts("min") ||
      starts("max") || starts("abs") || starts("prmt") || starts("bfe") || starts("bfi") || starts("popc") ||
      starts("clz") || starts("brev") || starts("shf") || starts("lop3") || starts("copysign")) {
    return "int";
  }
  return "other";
}

PtxAnalysis AnalyzePtx(absl::string_view ptx, Region region) {
  const std::vector<Line> lines = Parse(ptx);
  std::map<std::string, int> labelAt;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    if (!lines[i].label.empty()) labelAt[lines[i].label] = i;
  }
  struct Loop {
    int begin, end;
  };
  std::vector<Loop> loops;
  for (int j = 0; j < static_cast<int>(lines.size()); ++j) {
    if (lines[j].target.empty()) continue;
    auto it = labelAt.find(lines[j].target);
    if (it != labelAt.end() && it->second <= j) loops.push_back({it->second, j});
  }
  auto contains = [&](const Loop &lp, const char *cls) {
    for (int i = lp.begin; i <= lp.end; ++i) {
      if (!lines[i].opcode.empty() && ClassOf(lines[i].opcode) == cls) return true;
    }
    return false;
  };
  PtxAnalysis out;
  out.loops = static_cast<int>(loops.size());
  for (const Line &l : lines) Count(l, out.whole);
  std::vector<char> in(lines.size(), 0);
  switch (region) {
    case Region::kWholeKernel:
      std::fill(in.begin(), in.end(), 1);
      out.region_name = "kernel";
      break;
    case Region::kRowLoops: {
      // Innermost loops (holding no other loop) that read global memory.
      for (const Loop &lp : loops) {
        bool inner = true;
        for (const Loop &o : loops) {
          if (&o != &lp && o.begin >= lp.begin && o.end <= lp.end && (o.begin != lp.begin || o.end != lp.end)) {
            inner = false;
          }
        }
        if (!inner || !contains(lp, "ld_global")) continue;
        for (int i = lp.begin; i <= lp.end; ++i) in[i] = 1;
      }
      out.region_name = "row loop";
      if (std::find(in.begin(), in.end(), 1) == in.end()) {
        std::fill(in.begin(), in.end(), 1);
        out.region_name = "kernel (no row loop)";
      }
      break;
    }
    case Region::kMatmulEpilogue: {
      // Everything from the first main loop on that is not inside a main
      // loop: the innermost loops that issue tensor-core or shared-memory
      // math or wait on barriers (the K loops, the producer's copies, the
      // mbarrier spins). What is left runs once per tile: the epilogue
      // (wherever the compiler placed its blocks), the split-K fixup and a
      // little per-tile setup.
      auto main = [&](const Loop &lp) {
        return contains(lp, "tensor") || contains(lp, "shared") || contains(lp, "barrier");
      };
      std::vector<char> inMain(lines.size(), 0);
      int first = -1;
      for (const Loop &lp : loops) {
        if (!main(lp)) continue;
        bool innermost = true;
        for (const Loop &o : loops) {
          const bool inside = o.begin >= lp.begin && o.end <= lp.end && (o.begin != lp.begin || o.end != lp.end);
          if (inside && main(o)) innermost = false;
        }
        if (!innermost) continue;
        for (int i = lp.begin; i <= lp.end; ++i) inMain[i] = 1;
        if (first < 0 || lp.begin < first) first = lp.begin;
      }
      if (first >= 0) {
        for (size_t i = first; i < lines.size(); ++i) in[i] = !inMain[i];
        out.region_name = "epilogue";
        // A fallback the kernel takes only when its fast path cannot run
        // (the direct stores of a TMA-store epilogue, between its notes).
        // The notes are trusted when they pair up and code outside a span
        // enters it only at its start (a branch to a label inside it would
        // mean the compiler moved epilogue blocks between the notes).
        struct Span {
          int begin, end;
        };
        std::vector<Span> spans;
        int open = -1;
        for (int i = 0; i < static_cast<int>(lines.size()) && out.fallback_problem.empty(); ++i) {
          if (lines[i].note == "fallback begin") {
            if (open >= 0) out.fallback_problem = "a fallback begins inside another";
            open = i;
          } else if (lines[i].note == "fallback end") {
            if (open < 0) out.fallback_problem = "a fallback ends that did not begin";
            else spans.push_back({open, i});
            open = -1;
          }
        }
        if (out.fallback_problem.empty() && open >= 0) out.fallback_problem = "a fallback begins and does not end";
        for (int j = 0; j < static_cast<int>(lines.size()) && out.fallback_problem.empty(); ++j) {
          if (lines[j].target.empty()) continue;
          auto it = labelAt.find(lines[j].target);
          if (it == labelAt.end()) continue;
          for (const Span &sp : spans) {
            // Labels before the span's first instruction are its entry.
            int first = sp.begin + 1;
            while (first < sp.end && lines[first].opcode.empty()) ++first;
            const bool from = j > sp.begin && j < sp.end, to = it->second > first && it->second < sp.end;
            if (to && !from) {
              out.fallback_problem = absl::StrCat("a branch from outside a fallback into it (", lines[j].target, ")");
            }
          }
        }
        if (out.fallback_problem.empty()) {
          for (const Span &sp : spans) {
            for (int i = sp.begin; i <= sp.end; ++i) in[i] = 0;
            out.fallback_left_out = true;
          }
        }
        if (out.fallback_left_out) out.region_name = "epilogue (its fallback left out)";
        if (!out.fallback_problem.empty()) {
          out.region_name = absl::StrCat("epilogue (its fallback counted: ", out.fallback_problem, ")");
        }
      } else {
        std::fill(in.begin(), in.end(), 1);
        out.region_name = "kernel (no main loop)";
      }
      break;
    }
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (in[i]) Count(lines[i], out.region);
  }
  return out;
}

}  // namespace tir::perf
