/* fp32 peak of one core: 12 independent chains of vector FMAs (enough to
 * cover the FMA latency of the cores we target), with the widest vectors this
 * CPU has. Built for the x86-64 baseline (no -march=native): each kernel
 * carries its own target attribute and the best one the CPU supports is
 * chosen at run time with __builtin_cpu_supports, so one binary runs on any
 * x86-64:
 *
 *   avx512f   512-bit FMA   (AVX-512F)
 *   avx2-fma  256-bit FMA   (AVX2 + FMA)
 *   sse2      128-bit mul + add, no FMA (the x86-64 baseline)
 *   scalar    one float, mul + add (any other architecture)
 *
 * Prints "<GFLOP/s> <vector bits> <kernel>" on one line. scripts/bench.py runs
 * one copy per thread at once and adds them up.
 *
 *   fma_peak [--isa avx512f|avx2-fma|sse2|scalar] [--steps N] [--list]
 *
 * --isa forces a kernel (exit 2 if this CPU lacks it); --list prints the
 * kernels this CPU can run, best first. Build with -ffp-contract=off so that
 * the mul + add kernels stay mul + add. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HKT_X86 1
#endif

enum { CHAINS = 12 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each kernel runs `steps` steps of CHAINS vector updates and returns the
 * seconds taken; *sink receives a value that depends on every chain so that
 * nothing is optimised away. */

#ifdef HKT_X86
__attribute__((target("avx512f"))) static double run_avx512f(long steps,
                                                             float *sink) {
  __m512 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = _mm512_set1_ps(0.001f * (float)i);
  __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  double t0 = now();
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  double t1 = now();
  float lanes[16];
  *sink = 0;
  for (int i = 0; i < CHAINS; ++i) {
    _mm512_storeu_ps(lanes, acc[i]);
    *sink += lanes[0];
  }
  return t1 - t0;
}

__attribute__((target("avx2,fma"))) static double run_avx2_fma(long steps,
                                                                float *sink) {
  __m256 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = _mm256_set1_ps(0.001f * (float)i);
  __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  double t0 = now();
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  double t1 = now();
  float lanes[8];
  *sink = 0;
  for (int i = 0; i < CHAINS; ++i) {
    _mm256_storeu_ps(lanes, acc[i]);
    *sink += lanes[0];
  }
  return t1 - t0;
}

/* No FMA: a multiply and an add per lane and step (2 flops, 2 instructions). */
static double run_sse2(long steps, float *sink) {
  __m128 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = _mm_set1_ps(0.001f * (float)i);
  __m128 b = _mm_set1_ps(0.9999999f), c = _mm_set1_ps(1e-7f);
  double t0 = now();
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], b), c);
  double t1 = now();
  float lanes[4];
  *sink = 0;
  for (int i = 0; i < CHAINS; ++i) {
    _mm_storeu_ps(lanes, acc[i]);
    *sink += lanes[0];
  }
  return t1 - t0;
}
#endif

static double run_scalar(long steps, float *sink) {
  volatile float seed = 0.001f;
  float acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = seed * (float)i;
  float b = 0.9999999f, c = 1e-7f;
  double t0 = now();
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = acc[i] * b + c;
  double t1 = now();
  *sink = 0;
  for (int i = 0; i < CHAINS; ++i)
    *sink += acc[i];
  return t1 - t0;
}

struct kernel {
  const char *name;
  int lanes;
  double (*run)(long, float *);
  int (*supported)(void);
};

#ifdef HKT_X86
static int has_avx512f(void) { return __builtin_cpu_supports("avx512f"); }
static int has_avx2_fma(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif
static int always(void) { return 1; }

/* Best first. */
static const struct kernel kernels[] = {
#ifdef HKT_X86
    {"avx512f", 16, run_avx512f, has_avx512f},
    {"avx2-fma", 8, run_avx2_fma, has_avx2_fma},
    {"sse2", 4, run_sse2, always},
#endif
    {"scalar", 1, run_scalar, always},
};
enum { NKERNELS = sizeof(kernels) / sizeof(kernels[0]) };

static int usage(void) {
  fprintf(stderr, "usage: fma_peak [--isa avx512f|avx2-fma|sse2|scalar] "
                  "[--steps N] [--list]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *isa = NULL;
  long steps = 100000000;
  int list = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
      isa = argv[++i];
    } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      char *end;
      steps = strtol(argv[++i], &end, 10);
      if (*end || steps < 1)
        return usage();
    } else if (!strcmp(argv[i], "--list")) {
      list = 1;
    } else {
      return usage();
    }
  }
#ifdef HKT_X86
  __builtin_cpu_init();
#endif
  if (list) {
    for (int k = 0; k < NKERNELS; ++k)
      if (kernels[k].supported())
        printf("%s %d\n", kernels[k].name, kernels[k].lanes * 32);
    return 0;
  }
  const struct kernel *chosen = NULL;
  for (int k = 0; k < NKERNELS && !chosen; ++k) {
    if (isa && strcmp(isa, kernels[k].name))
      continue;
    if (kernels[k].supported())
      chosen = &kernels[k];
    else if (isa) {
      fprintf(stderr, "fma_peak: this CPU cannot run the %s kernel\n", isa);
      return 2;
    }
  }
  if (!chosen) {
    fprintf(stderr, "fma_peak: unknown kernel '%s'\n", isa);
    return usage();
  }
  float sink = 0;
  double seconds = chosen->run(steps, &sink);
  if (seconds <= 0)
    seconds = 1e-9;
  printf("%.1f %d %s%s\n",
         (double)steps * CHAINS * chosen->lanes * 2 / seconds / 1e9,
         chosen->lanes * 32, chosen->name, sink == 12345.f ? " " : "");
  return 0;
}
