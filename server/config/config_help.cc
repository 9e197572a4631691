#include "server/config/config_help.h"

#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tir::config {
namespace {

constexpr const char *kConfigProto =
#include "server/config/config_proto.inc"
    ;

// snake_case as protobuf's JSON names spell it (lowerCamelCase).
std::string JsonName(absl::string_view field) {
  std::string out;
  bool upper = false;
  for (char c : field) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

}  // namespace

std::string ConfigHelp() {
  const absl::string_view proto(kConfigProto);
  const size_t open = proto.find("message CoordinatorConfig {");
  if (open == absl::string_view::npos) return "";
  std::string out = "Configuration file (--config=FILE, JSON; flags override it) entries:\n";
  std::vector<std::string> comment, names;
  auto flush = [&] {
    if (names.empty()) return;
    absl::StrAppend(&out, "  ", absl::StrJoin(names, ", "), "\n");
    for (const std::string &line : comment) absl::StrAppend(&out, "      ", line, "\n");
    comment.clear();
    names.clear();
  };
  for (absl::string_view line : absl::StrSplit(proto.substr(open), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line == "}") break;
    if (absl::StartsWith(line, "//")) {
      if (!names.empty()) flush();
      comment.emplace_back(absl::StripAsciiWhitespace(line.substr(2)));
      continue;
    }
    // `type name = N;`: the comment above covers the fields up to the next one.
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() >= 4 && words[2] == "=") names.push_back(JsonName(words[1]));
  }
  flush();
  return out;
}

}  // namespace tir::config
