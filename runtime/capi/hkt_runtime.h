/*===- hkt_runtime.h - the runtime's C API ------------------------*- C -*-===*
 *
 * Part of the HKT compiler project.
 *
 * The runtime for callers that are not C++ (the Python package python/hkt
 * through ctypes): open a compiled module directory, read its manifest,
 * call an entry on caller-owned buffers. Nothing is copied: every tensor is
 * a view of the caller's memory, checked against the manifest as hkt-run
 * checks its arguments (dtype, rank, each size and bound, the symbols that
 * dimensions share, integer ranges, aliasing of written tensors), and a
 * buffer that is not dense row-major is refused with the argument's name.
 *
 * Errors: functions return 0 on success; on failure they return nonzero
 * and, if `error` is not null, set *error to a message (one sentence naming
 * the argument and the problem) that the caller frees with hkt_free_error.
 *
 *===----------------------------------------------------------------------===*/

#ifndef HKT_RUNTIME_CAPI_HKT_RUNTIME_H
#define HKT_RUNTIME_CAPI_HKT_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function below is exported from libhkt_runtime.so. */
#define HKT_API __attribute__((visibility("default")))

/* The version of this API: a caller built for another refuses to run. */
#define HKT_RUNTIME_API_VERSION 1
HKT_API int32_t hkt_api_version(void);

/* Element types, as the manifest spells them: "f32", "f64", "i32", "i64". */
enum HktDType { HKT_F32 = 0, HKT_F64 = 1, HKT_I32 = 2, HKT_I64 = 3 };

/* A view of a caller's buffer. `strides` in elements, or null for dense
   row-major; any other layout is refused (no copy is made). */
typedef struct HktTensor {
  void *data;
  int32_t dtype; /* enum HktDType */
  int32_t rank;
  const int64_t *shape;
  const int64_t *strides;
} HktTensor;

typedef struct HktModule HktModule;

/* Opens a module directory (as hkt-run does: its manifest, its target
   against this machine, its shared object); null on failure. The first
   call sets hkt-run's malloc policy for the process (large buffers from the
   heap, not trimmed: glibc's mallopt), unless HKT_MALLOC=system. */
HKT_API HktModule *hkt_module_open(const char *dir, char **error);
HKT_API void hkt_module_close(HktModule *module);
/* The manifest's JSON text, owned by the module. */
HKT_API const char *hkt_module_manifest(const HktModule *module);

/* The shapes of `entry`'s results for these arguments (dynamic dimensions
   take the sizes the arguments give them), written one after the other
   into `shapes` (room for `capacity` values: the sum of the results'
   ranks). */
HKT_API int hkt_entry_result_shapes(HktModule *module, const char *entry,
                            const HktTensor *args, int64_t num_args,
                            int64_t *shapes, int64_t capacity, char **error);

/* Calls `entry`: `args` in manifest order (in-out arguments are updated in
   place), `results` the caller's buffers of the result shapes. */
HKT_API int hkt_entry_call(HktModule *module, const char *entry, const HktTensor *args,
                   int64_t num_args, const HktTensor *results,
                   int64_t num_results, char **error);

HKT_API void hkt_free_error(char *error);

#ifdef __cplusplus
}
#endif

#endif /* HKT_RUNTIME_CAPI_HKT_RUNTIME_H */
