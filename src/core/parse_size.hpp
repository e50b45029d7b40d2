// Parses sizes as GNU sort spells them: "512M", "8G", "1.5T", "4096" (bytes), "50%" (of memory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpusort {

/// Physical memory of this machine in bytes.
[[nodiscard]] std::uint64_t physical_memory_bytes();

/**
 * Parses a size: a number with an optional suffix b (bytes), K, M, G, T, P (powers of 1024;
 * lower case too, an optional trailing "B" or "iB"), or "%" of `percent_of`. A bare number is
 * bytes. Throws gpusort::error naming `what` for anything else.
 */
[[nodiscard]] std::uint64_t parse_size(std::string_view text, std::uint64_t percent_of,
                                       std::string_view what);

/// "1.5 GiB", "512 MiB", "100 B".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

}  // namespace gpusort
