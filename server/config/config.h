// tir-coordinator's configuration: the JSON file, validated at start.

#ifndef TIR_SERVER_CONFIG_CONFIG_H_
#define TIR_SERVER_CONFIG_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "tir/v1/config.pb.h"

namespace tir::config {

// Parses `json` (unknown fields refused), fills defaults and validates.
// Errors: INVALID_ARGUMENT / INVALID_CONFIG naming the field.
absl::StatusOr<tir::v1::CoordinatorConfig> ParseConfig(const std::string &json);

// Defaults for what is unset, then the checks ParseConfig makes.
absl::Status Finish(tir::v1::CoordinatorConfig &config);

// True for an address (HOST:PORT, [V6]:PORT or a bare host) on loopback:
// localhost, 127.0.0.0/8 or ::1; and for a Unix socket ("unix:PATH"), which
// only this machine reaches, through its file's permissions.
bool IsLoopback(const std::string &address);

// The contents of file `path`, named in errors by its config `field`
// ("clientTokenFile"): INVALID_CONFIG for one that is missing, a
// directory, not a regular file, unreadable or over `max_bytes`.
absl::StatusOr<std::string> ReadConfigFile(const std::string &path, const std::string &field,
                                           size_t max_bytes = 16 << 20);

// ReadConfigFile, whitespace trimmed, not empty (token and key files).
absl::StatusOr<std::string> ReadSecret(const std::string &path, const std::string &field);

}  // namespace tir::config

#endif  // TIR_SERVER_CONFIG_CONFIG_H_
