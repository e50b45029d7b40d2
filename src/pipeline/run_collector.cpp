// run_collector and the two run_storers: records stored as they are, items gathered back into
// records.
#include "pipeline/run_collector.hpp"

#include <exception>
#include <utility>

#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/error.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
namespace {

/// Requests in flight on the ring a collector stores its runs through.
constexpr unsigned store_ring_entries = 32;

}  // namespace

// --- storers ---------------------------------------------------------------------------------

void record_storer::store(std::uint64_t run, run_pinner::run_memory memory,
                          std::uint64_t records, io::uring& ring) {
  store_.add(run, std::move(memory.memory), records, ring, std::move(memory.pin));
}

void item_gatherer::keep_chunk(std::uint64_t run, host_buffer records) {
  std::lock_guard lock(chunks_mutex_);
  chunks_[run] = std::move(records);
}

void item_gatherer::store(std::uint64_t run, run_pinner::run_memory memory,
                          std::uint64_t records, io::uring& ring) {
  host_buffer chunk;
  {
    std::lock_guard lock(chunks_mutex_);
    chunk = std::move(chunks_.at(run));
    chunks_.erase(run);
  }
  auto* items = reinterpret_cast<cpu::sort_item*>(memory.memory.data());
  host_buffer out(static_cast<std::size_t>(records * format_.record_size));
  {
    trace_recorder::scope timer(trace_, "gather", records * format_.record_size);
    arena_.execute([&] {
      cpu::resolve_prefix_ties(chunk.data(), items, records, format_, descending_, 0);
      cpu::gather_records(chunk.data(), items, records, format_.record_size, 0, out.data());
    });
  }
  memory = {};  // the items go before the records are stored
  store_.add(run, std::move(out), records, ring);
}

// --- collector -------------------------------------------------------------------------------

run_collector::run_collector(std::uint32_t unit_bytes, std::uint64_t chunk_records,
                             std::shared_future<std::shared_ptr<staging_pool>> staging,
                             run_store& store, run_pinner* pinner, run_storer& storer,
                             tbb::task_arena& arena, trace_recorder* trace)
    : unit_bytes_(unit_bytes), chunk_records_(chunk_records), staging_(std::move(staging)),
      store_(store), pinner_(pinner), storer_(storer), arena_(arena), trace_(trace),
      resident_room_(store.resident_room()), ring_(store_ring_entries) {}

run_collector::~run_collector() noexcept {
  try {
    arena_.execute([&] { writes_.wait(); });  // errors were reported by drain() already
  } catch (...) {
  }
}

std::span<std::byte> run_collector::piece_buffer(std::uint64_t run, std::uint64_t offset,
                                                 std::size_t len) {
  // A failed spill (a full disk) stops the ordered worker: fail the former now instead of
  // letting it form runs that can no longer be stored.
  if (const std::exception_ptr failed = worker_.error()) std::rethrow_exception(failed);
  if (!may_collect(run)) return {};  // runs spill slower than they form: the former waits
  const std::optional<std::byte*> pinned = pinned_memory(run);
  if (!pinned) return {};  // its memory is still being page-locked: the former asks again
  if (*pinned != nullptr) return {*pinned + offset, len};
  GPUSORT_EXPECTS(len <= staging().buffer_bytes(), "run former piece larger than staging");
  std::byte* p = staging().try_acquire();
  if (p == nullptr) return {};
  return {p, len};
}

void run_collector::piece_done(std::uint64_t run, std::uint64_t offset,
                               std::span<std::byte> piece) {
  if (*pinned_memory(run) != nullptr) return;  // it landed in the run itself
  // Pieces land in disjoint bytes of their run's buffer: copying several at once keeps every
  // thread busy and faults the fresh run memory in on all of them (one piece at a time copied
  // 9.5 GB/s on the H200 machine).
  std::byte* dst = run_buffer(run) + offset;
  arena_.execute([&] {
    writes_.run([this, run, dst, piece] {
      // Whatever happens, the staging buffer goes back and the run stops waiting for it.
      struct piece_guard {
        run_collector* collector;
        std::uint64_t run;
        std::byte* staging;
        ~piece_guard() {
          collector->staging().release(staging);
          collector->piece_copied(run);
        }
      } guard{this, run, piece.data()};
      trace_recorder::scope timer(trace_, "copy-out", piece.size());
      detail::parallel_copy(dst, piece.data(), piece.size());
    });
  });
}

void run_collector::run_done(std::uint64_t run, std::uint64_t records) {
  worker_.push([this, run, records] { finish_run(run, records); });
}

void run_collector::drain() {
  arena_.execute([&] { writes_.wait(); });
  worker_.drain();
}

std::optional<std::byte*> run_collector::pinned_memory(std::uint64_t run) {
  std::lock_guard lock(runs_mutex_);
  auto it = runs_.find(run);
  if (it == runs_.end()) {
    if (pinner_ == nullptr) return nullptr;
    run_pinner::run_memory m;
    switch (pinner_->try_take(run, m)) {
      case run_pinner::state::pending: return std::nullopt;
      case run_pinner::state::unplanned: return nullptr;
      case run_pinner::state::ready: break;
    }
    if (m.memory.size() == 0) return nullptr;  // not even allocated: run_buffer() will
    it = runs_.emplace(run, collected_run{std::move(m.memory), 0, std::move(m.pin)}).first;
    ++held_;
  }
  return it->second.pin != nullptr ? it->second.memory.data() : nullptr;
}

std::byte* run_collector::run_buffer(std::uint64_t run) {
  std::lock_guard lock(runs_mutex_);
  auto it = runs_.find(run);
  if (it == runs_.end()) {
    collected_run fresh{host_buffer(static_cast<std::size_t>(run_bytes())), 0, {}};
    it = runs_.emplace(run, std::move(fresh)).first;
    ++held_;
  }
  ++it->second.copies_in_flight;
  return it->second.memory.data();
}

void run_collector::piece_copied(std::uint64_t run) {
  {
    std::lock_guard lock(runs_mutex_);
    --runs_.at(run).copies_in_flight;
  }
  copied_.notify_all();
}

bool run_collector::may_collect(std::uint64_t run) {
  // While the runs held outside the store (collected, or being stored), this one included,
  // fit what the store still keeps in memory, or are at most gpu_runs_held. The GPU forms
  // runs faster than a disk takes them, and the memory of the waiting ones is beyond the
  // resident runs (with -S 4G and 710 MB runs, a 16 GiB sort under a 6 GiB cgroup limit was
  // killed for memory on the H200 machine).
  std::lock_guard lock(runs_mutex_);
  return runs_.count(run) != 0 || held_ < gpu_runs_held ||
         (held_ + 1) * run_bytes() <= resident_room_;
}

run_pinner::run_memory run_collector::take_run(std::uint64_t run, bool& held) {
  std::unique_lock lock(runs_mutex_);
  copied_.wait(lock, [&] {
    const auto it = runs_.find(run);
    return it == runs_.end() || it->second.copies_in_flight == 0;
  });
  const auto it = runs_.find(run);
  held = it != runs_.end();
  if (!held) return {};
  run_pinner::run_memory taken{std::move(it->second.memory), std::move(it->second.pin)};
  runs_.erase(it);
  return taken;
}

void run_collector::finish_run(std::uint64_t run, std::uint64_t records) {
  records_ += records;
  bool held = false;
  run_pinner::run_memory taken = take_run(run, held);
  // The run stops counting once it is stored (or dropped by an error).
  struct release_guard {
    run_collector* collector;
    bool held;
    ~release_guard() {
      if (!held) return;
      std::lock_guard lock(collector->runs_mutex_);
      --collector->held_;
      collector->resident_room_ = collector->store_.resident_room();
    }
  } release{this, held};
  if (records == 0) return;
  storer_.store(run, std::move(taken), records, ring_);
}

}  // namespace gpusort::pipeline
