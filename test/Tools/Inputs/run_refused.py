"""Runs a command for at most 20 s; prints 'ok' if it succeeded, ran past
the time (a machine with the memory), or was refused with a message naming
MemAvailable and the cgroup limit; else prints its stderr."""
import subprocess
import sys

try:
    p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=20)
except subprocess.TimeoutExpired:
    print("ok")
    sys.exit(0)
refused = "MemAvailable" in p.stderr and "cgroup limit" in p.stderr
print("ok" if p.returncode == 0 or refused else p.stderr)
