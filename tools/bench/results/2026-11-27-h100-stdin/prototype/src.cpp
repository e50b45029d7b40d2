// splice a file (page cache) to stdout, repeated `reps` times
#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
#include <cstdio>
int main(int argc, char** argv) {
  int reps = argc > 2 ? atoi(argv[2]) : 1;
  fcntl(1, F_SETPIPE_SZ, argc > 3 ? atoi(argv[3]) : 1 << 20);
  for (int r = 0; r < reps; ++r) {
    int fd = open(argv[1], O_RDONLY); loff_t off = 0;
    for (;;) { ssize_t s = splice(fd, &off, 1, nullptr, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE); if (s < 0) { perror("splice"); return 1; } if (s == 0) break; }
    close(fd);
  }
}
