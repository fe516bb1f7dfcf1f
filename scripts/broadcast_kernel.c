/* The f32 register-tile kernel hkt-cpu-codegen generates for AVX-512 (8 rows
 * x 2 vectors of 16 accumulators; per K step 8 broadcasts of A, 2 loads of B,
 * 16 FMAs), written with intrinsics, on one core: how close this CPU lets
 * that form of kernel come to its FMA peak, and what the layout of B costs in
 * a whole 1024 x 512 x 512 matmul blocked as the compiler blocks it (64-row
 * blocks, column panels of 32 outside 8-row tiles, K in cache tiles). Prints
 * one table row per case, GFLOP/s, best of 30 runs; compare with
 * `fma_peak --isa avx512f` run just before (docs/performance.md, "the right
 * operand in panels").
 *
 *   in-l1 KC      one tile again and again, A (8 x KC) and B (KC x 32) in L1
 *   rows KC       the matmul, B copied into rows padded to 528 floats
 *   panels KC     the matmul, B copied into panels of 32 columns (32 x K x 32)
 *
 * Both matmul cases include the per-call copy of B and C's zero fill, as the
 * compiled module does. Needs AVX-512F (exit 2 otherwise).
 *
 *   cc -O3 scripts/broadcast_kernel.c -o broadcast_kernel && ./broadcast_kernel */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define M 1024
#define N 512
#define K 512
#define LDA K
#define LDB_ROWS (N + 16)

__attribute__((target("avx512f"), noinline)) static void
tile(const float *a, long lda, const float *b, long ldb, float *c, long ldc,
     int kc) {
  __m512 acc[8][2];
  for (int i = 0; i < 8; i++) {
    acc[i][0] = _mm512_loadu_ps(c + i * ldc);
    acc[i][1] = _mm512_loadu_ps(c + i * ldc + 16);
  }
  for (int k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(b + k * ldb), b1 = _mm512_loadu_ps(b + k * ldb + 16);
    for (int i = 0; i < 8; i++) {
      __m512 x = _mm512_set1_ps(a[i * lda + k]);
      acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < 8; i++) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *a, *w, *b, *c;

/* One call of the matmul: B's copy, C's fill, the blocked product. */
static void matmul(int panels, int kc) {
  long ldb = panels ? 32 : LDB_ROWS;
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n += 32)
      memcpy(panels ? b + (long)n * K + k * 32 : b + (long)k * ldb + n,
             w + (long)k * N + n, 32 * sizeof(float));
  memset(c, 0, sizeof(float) * M * N);
  for (int mb = 0; mb < M; mb += 64)
    for (int k0 = 0; k0 < K; k0 += kc)
      for (int n = 0; n < N; n += 32)
        for (int m = mb; m < mb + 64; m += 8)
          tile(a + (long)m * LDA + k0, LDA,
               panels ? b + (long)n * K + k0 * 32 : b + (long)k0 * ldb + n, ldb,
               c + (long)m * N + n, N, kc);
}

static void report(const char *name, int kc, double seconds, double flops) {
  printf("%-8s %4d %8.1f\n", name, kc, flops / seconds * 1e-9);
}

int main(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    fprintf(stderr, "broadcast_kernel: this CPU has no AVX-512F\n");
    return 2;
  }
  a = aligned_alloc(64, sizeof(float) * M * LDA);
  w = aligned_alloc(64, sizeof(float) * K * N);
  b = aligned_alloc(64, sizeof(float) * K * LDB_ROWS);
  c = aligned_alloc(64, sizeof(float) * M * N);
  for (long i = 0; i < (long)M * LDA; i++)
    a[i] = 1e-3f * (float)(i % 7);
  for (long i = 0; i < (long)K * N; i++)
    w[i] = 1e-3f * (float)(i % 5);
  memset(b, 0, sizeof(float) * K * LDB_ROWS);
  memset(c, 0, sizeof(float) * M * N);
  printf("%-8s %4s %8s\n", "case", "KC", "GFLOP/s");
  const int kcs[] = {128, 256, 512};
  for (int i = 0; i < 3; i++) {
    int kc = kcs[i];
    long calls = 4096L * 256 / kc; /* ~2^32 FMA lanes */
    double best = 1e30;
    for (int rep = 0; rep < 30; rep++) {
      double t0 = now();
      for (long it = 0; it < calls / 64; it++)
        tile(a, LDA, b, LDB_ROWS, c, N, kc);
      double t = now() - t0;
      best = t < best ? t : best;
    }
    report("in-l1", kc, best, 2.0 * 8 * 32 * kc * (double)(calls / 64));
  }
  for (int panels = 0; panels < 2; panels++)
    for (int i = 0; i < 3; i++) {
      double best = 1e30;
      for (int rep = 0; rep < 30; rep++) {
        double t0 = now();
        matmul(panels, kcs[i]);
        double t = now() - t0;
        best = t < best ? t : best;
      }
      report(panels ? "panels" : "rows", kcs[i], best, 2.0 * M * N * K);
    }
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "broadcast_kernel: x86-64 only\n");
  return 2;
}
#endif
