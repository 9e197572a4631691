// The configuration file's entries as `tir-coordinator --help` lists them:
// each CoordinatorConfig field by its JSON name with the comment config.proto
// gives it (its meaning and default), read from the proto file built in.

#ifndef TIR_SERVER_CONFIG_CONFIG_HELP_H_
#define TIR_SERVER_CONFIG_CONFIG_HELP_H_

#include <string>

namespace tir::config {

// "Configuration file (--config=FILE, JSON) entries:" and one paragraph per
// entry, the entries a comment covers together listed on its first line.
std::string ConfigHelp();

}  // namespace tir::config

#endif  // TIR_SERVER_CONFIG_CONFIG_HELP_H_
