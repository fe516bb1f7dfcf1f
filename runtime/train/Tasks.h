//===- Tasks.h - The training tasks: ListOps, Fashion-MNIST, byte text -*- C++
//-*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// SPEC.md "Tasks": classification datasets of token sequences for
// `hkt-run train / eval / predict` (docs/tasks.md).
//
//   listops[:train=N,valid=N,test=N,depth=D,args=A]
//       a deterministic generator: example i of a split is generated from
//       (data seed, split, i), so the splits are fixed for a seed and no file
//       is written; token ids as SPEC fixes them (0 padding, 1..10 digits,
//       11 [MAX, 12 [MIN, 13 [MED, 14 [SM, 15 ]); 10 classes.
//   fmnist[:DIR]
//       sequential Fashion-MNIST from the IDX files of Debian's
//       dataset-fashion-mnist (default DIR /usr/share/datasets/fashion-mnist),
//       read with zlib: token = pixel + 1 (1..256, vocabulary >= 257),
//       T = 784, 10 classes; train = the first 55000 training images, valid =
//       the last 5000, test = the 10000 test images.
//   text:FILE
//       byte-level text classification from a labelled-text file (one
//       example per line: `LABEL<TAB>TEXT`, LABEL a decimal class index):
//       token = byte + 1 (vocabulary >= 257); line n (0-based) is in test if
//       n % 10 == 9, in valid if n % 10 == 8, else in train; the classes are
//       1 + the largest label.
//
// Every example has at least one token and no token 0 (padding is added by
// the caller). Bad data gets an error naming the file, the line or example,
// and the problem; nothing crashes.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TRAIN_TASKS_H
#define HKT_RUNTIME_TRAIN_TASKS_H

#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hkt::train {

using runtime::Expected;
using runtime::Status;

enum class Split { Train, Valid, Test };

/// "train", "valid", "test".
const char *splitName(Split split);

struct Example {
  /// Token ids, each >= 1 (no padding), at least one.
  std::vector<int32_t> tokens;
  int32_t label = 0;
};

class Task {
public:
  virtual ~Task() = default;

  /// The task as given ("listops", "fmnist", "text:FILE").
  virtual std::string name() const = 0;
  /// The number of examples of a split (may be 0 for a small text file).
  virtual int64_t size(Split split) const = 0;
  /// The number of classes (labels are in [0, classes)).
  virtual int64_t classes() const = 0;
  /// The smallest vocabulary that holds every token id (largest id + 1).
  virtual int64_t vocab() const = 0;
  /// Example `index` (in [0, size(split))) of `split`; deterministic.
  virtual Expected<Example> get(Split split, int64_t index) const = 0;
};

/// Opens a task from its description (see above). `maxLen` is the model's
/// max_len: generated sequences stay within it, and a data file with a
/// longer sequence is refused (naming the line or the image size).
/// `dataSeed` seeds the generated tasks.
Expected<std::unique_ptr<Task>> openTask(const std::string &spec,
                                         int64_t maxLen, uint64_t dataSeed);

/// The value of a ListOps expression given as token ids (SPEC: MAX, MIN,
/// MED = the lower middle for an even count, SM = sum modulo 10), or an
/// error if the tokens are not one well-formed expression.
Expected<int32_t> evaluateListOps(const std::vector<int32_t> &tokens);

} // namespace hkt::train

#endif // HKT_RUNTIME_TRAIN_TASKS_H
