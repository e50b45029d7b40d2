#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
int main() {
  auto t0 = std::chrono::steady_clock::now();
  int n; cudaGetDeviceCount(&n);
  auto t1 = std::chrono::steady_clock::now();
  cudaSetDevice(0); cudaFree(0);
  auto t2 = std::chrono::steady_clock::now();
  void* p; cudaHostAlloc(&p, 64 << 20, 0);
  auto t3 = std::chrono::steady_clock::now();
  printf("count %.3f ctx %.3f pin64M %.3f\n", std::chrono::duration<double>(t1-t0).count(), std::chrono::duration<double>(t2-t1).count(), std::chrono::duration<double>(t3-t2).count());
}
