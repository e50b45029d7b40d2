// How the keys of an input file spread, from a sample read through the page cache before the
// sort starts: `--algorithm auto` weighs the CPU against the GPU by it (cpu_crossover_for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "gpusort/record_format.hpp"
#include "io/input_source.hpp"
#include "pipeline/plan.hpp"

namespace gpusort::pipeline {

/// Records sampled from the input (the run former samples as many from each GPU chunk).
inline constexpr std::uint32_t input_key_sample_size = 8192;

/**
 * The keys of `count` records of `input`, record `record_at(k)` for the k-th, as unsigned
 * numbers in the order of the sort (4- and 8-byte numeric keys), each read where the page cache
 * holds it (io::input_source::read_if_cached) on the calling arena's threads; nullopt where
 * one is not there: reading it would take a disk access per sampled record. The input's size
 * must be known.
 */
[[nodiscard]] std::optional<std::vector<std::uint64_t>> read_cached_keys(
    const io::input_source& input, const record_format& format, bool descending,
    std::size_t count, const std::function<std::uint64_t(std::uint64_t)>& record_at);

/**
 * The spread of the keys of `input`, from input_key_sample_size records at an even stride,
 * classified by the counting rounds the hybrid radix sort would make on them were they 2^27
 * (gpu::estimate_hrs_rounds): few distinct values (at most one round), skewed (AND-ed words
 * and the like, several rounds more than evenly spread keys need), patterned (a sample in
 * order or in reverse order, or a little skewed: AND of 2 words), or even.
 * key_spread::unknown, without reading, when any input is a stream, the keys are not 4- or
 * 8-byte numbers, the input holds fewer records than the sample, or a sampled page is not in
 * the page cache: reading it would take a disk access per sampled record, before the sort
 * reads the file in order anyway.
 */
[[nodiscard]] key_spread sample_key_spread(const io::input_source& input,
                                           const record_format& format, bool descending);

}  // namespace gpusort::pipeline
