/* fp32 FMA peak of one core: 12 independent chains of vector FMAs (enough to
 * cover the FMA latency of the cores we target), with the widest vectors the
 * compiler is allowed (-march=native: AVX-512 where present, else AVX2).
 * Prints "<GFLOP/s> <vector bits>" on one line. scripts/bench.py runs one
 * copy per thread at once and adds them up. */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define STORE _mm512_storeu_ps
#elif defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define STORE _mm256_storeu_ps
#else
#error "needs FMA (compile with -march=native on an FMA-capable x86-64)"
#endif

enum { CHAINS = 12 };

int main(void) {
  vec acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = SET1(0.001f * (float)i);
  vec b = SET1(0.9999999f), c = SET1(1e-7f);
  const long steps = 100000000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = FMA(acc[i], b, c);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  float sink = 0, lanes[LANES];
  for (int i = 0; i < CHAINS; ++i) {
    STORE(lanes, acc[i]);
    sink += lanes[0];
  }
  printf("%.1f %d%s\n", (double)steps * CHAINS * LANES * 2 / seconds / 1e9,
         LANES * 32, sink == 12345.f ? " " : "");
  return 0;
}
