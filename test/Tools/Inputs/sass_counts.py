#!/usr/bin/python3
"""Assemble each named kernel's PTX (hkt-compile --emit-ptx output) with
ptxas and count its tensor-core instructions in the SASS.

  sass_counts.py ALL.PTX WORKDIR PTXAS CUOBJDUMP KERNEL...

Prints `KERNEL CHIP: HMMA.16816.F32.BF16 N LDSM M` for each kernel and chip,
in the order of the arguments then of the chips in the PTX.
"""
import re
import subprocess
import sys


def main(argv):
    ptx_path, workdir, ptxas, cuobjdump = argv[:4]
    kernels = argv[4:]
    text = open(ptx_path).read()
    # "// gpu.binary NAME, CHIP" heads each kernel's PTX.
    parts = re.split(r"(?m)^// gpu\.binary ", text)[1:]
    found = {}
    for part in parts:
        head, body = part.split("\n", 1)
        name, chip = [w.strip() for w in head.split(",")]
        found.setdefault(name, []).append((chip, body))
    for kernel in kernels:
        if kernel not in found:
            sys.exit("sass_counts.py: no kernel %s in %s" % (kernel, ptx_path))
        for chip, body in found[kernel]:
            stem = "%s/%s.%s" % (workdir, kernel, chip)
            with open(stem + ".ptx", "w") as f:
                f.write(body)
            subprocess.run([ptxas, "-arch=" + chip, "-O3", stem + ".ptx",
                            "-o", stem + ".cubin"], check=True)
            sass = subprocess.run([cuobjdump, "-sass", stem + ".cubin"],
                                  check=True, stdout=subprocess.PIPE,
                                  text=True).stdout
            print("%s %s: HMMA.16816.F32.BF16 %d LDSM %d" % (
                kernel, chip, sass.count("HMMA.16816.F32.BF16"),
                sass.count("LDSM")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
