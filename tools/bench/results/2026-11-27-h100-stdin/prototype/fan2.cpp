// reads stdin into a buffer of the whole stream with n fan-out pipes (n=0: plain read), checks sum
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <thread>
#include <vector>
#include <mutex>
#include <condition_variable>
#include <deque>
struct seg { size_t off, len; };
int main(int argc, char** argv) {
  size_t buf = size_t(atol(argv[1])) << 20; int n = atoi(argv[2]);
  size_t step = size_t(atol(argv[3])) << 10; int psz = argc > 4 ? atoi(argv[4]) : 1 << 20;
  fcntl(0, F_SETPIPE_SZ, psz);
  char* m = (char*)mmap(nullptr, buf, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE, -1, 0);
  auto t0 = std::chrono::steady_clock::now();
  size_t tot = 0;
  if (n == 0) {
    for (;;) { ssize_t r = read(0, m + tot, std::min(step, buf - tot)); if (r <= 0) break; tot += r; }
  } else {
    std::vector<int> rd(n), wr(n);
    for (int i = 0; i < n; ++i) { int p[2]; if (pipe(p)) return 2; fcntl(p[1], F_SETPIPE_SZ, psz); rd[i] = p[0]; wr[i] = p[1]; }
    std::vector<std::deque<seg>> q(n); std::mutex mu; std::condition_variable cv; bool done = false;
    std::vector<std::thread> readers;
    for (int i = 0; i < n; ++i) readers.emplace_back([&, i] {
      for (;;) { seg s;
        { std::unique_lock l(mu); cv.wait(l, [&]{ return !q[i].empty() || done; }); if (q[i].empty()) return; s = q[i].front(); q[i].pop_front(); }
        size_t got = 0; while (got < s.len) { ssize_t r = read(rd[i], m + s.off + got, s.len - got); if (r <= 0) { perror("read"); exit(3);} got += r; } } });
    int k = 0;
    for (;;) {
      size_t moved = 0; bool end = false;
      while (moved < step) { ssize_t s = splice(0, nullptr, wr[k], nullptr, step - moved, SPLICE_F_MOVE); if (s <= 0) { end = true; break; } moved += s; }
      if (moved) { { std::lock_guard l(mu); q[k].push_back({tot, moved}); } cv.notify_all(); tot += moved; }
      if (end) break; k = (k + 1) % n; }
    { std::lock_guard l(mu); done = true; } cv.notify_all();
    for (auto& t : readers) t.join();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t sum = 0; const uint64_t* w = (const uint64_t*)m; for (size_t i = 0; i < tot / 8; ++i) sum += w[i] * (i | 1);
  fprintf(stderr, "n=%d step=%zuK pipe=%d: %zu bytes %.3f s %.2f GB/s sum %llx\n", n, step >> 10, psz, tot, s, tot / s / 1e9, (unsigned long long)sum);
}
