/* bf16 peak of Intel AMX on one core: tdpbf16ps on tile registers only (no
 * memory in the loop), four independent 16 x 16 f32 accumulators fed by two
 * 16 x 32 bf16 tiles each, 2 x 16 x 16 x 32 flops an instruction. The
 * ceiling of hkt-compile --precision bf16's matmuls (docs/performance.md).
 *
 * Prints "<GFLOP/s> amx-bf16" on one line; scripts/bench.py --precision bf16
 * runs one copy per thread at once and adds them up. Exits 2 where the CPU
 * has no AMX or Linux denies the tile state (arch_prctl ARCH_REQ_XCOMP_PERM).
 *
 *   cc -O2 -mamx-tile -mamx-bf16 scripts/amx_peak.c -o amx_peak
 *   amx_peak [--steps N] */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The tile configuration: palette 1, eight 16-row x 64-byte tiles. */
struct TileConfig {
  uint8_t palette, startRow;
  uint8_t reserved[14];
  uint16_t bytesPerRow[16];
  uint8_t rows[16];
};

int main(int argc, char **argv) {
  long steps = 2000000;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc && atol(argv[i + 1]) > 0)
      steps = atol(argv[++i]);
    else {
      fprintf(stderr, "usage: amx_peak [--steps N]\n");
      return 1;
    }
  }
  if (!__builtin_cpu_supports("amx-bf16") ||
      syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
              18 /* XFEATURE_XTILEDATA */)) {
    fprintf(stderr, "amx_peak: no AMX bf16 here (CPU or kernel)\n");
    return 2;
  }
  struct TileConfig config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytesPerRow[t] = 64;
  }
  _tile_loadconfig(&config);
  static __attribute__((aligned(64))) uint16_t operand[16 * 32];
  for (int i = 0; i < 16 * 32; ++i)
    operand[i] = 0x3c00; /* bf16 2^-7: sums stay finite */
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < steps; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  static float sink[16 * 16];
  _tile_stored(0, sink, 64);
  clock_gettime(CLOCK_MONOTONIC, &end);
  _tile_release();
  double seconds =
      (end.tv_sec - start.tv_sec) + 1e-9 * (end.tv_nsec - start.tv_nsec);
  printf("%.1f amx-bf16\n", 4.0 * steps * 2 * 16 * 16 * 32 / seconds / 1e9);
  return sink[0] < 0; /* keeps the store */
}
