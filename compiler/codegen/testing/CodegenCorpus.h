// Graphs every codegen test runs: each kernel kind, views, dtypes, epilogues.

#ifndef TIR_COMPILER_CODEGEN_TESTING_CODEGENCORPUS_H_
#define TIR_COMPILER_CODEGEN_TESTING_CODEGENCORPUS_H_

#include <string>
#include <vector>

namespace tir::codegen::testing_corpus {

struct Case {
  std::string name, text;
};

const std::vector<Case> &Corpus();

}  // namespace tir::codegen::testing_corpus

#endif  // TIR_COMPILER_CODEGEN_TESTING_CODEGENCORPUS_H_
