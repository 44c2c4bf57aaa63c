"""exit_code.py CODE CMD...: runs CMD (output discarded) and succeeds when
it exits with CODE."""
import subprocess
import sys

code = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode
if code != int(sys.argv[1]):
    sys.exit(f"exit code {code}, expected {sys.argv[1]}: {' '.join(sys.argv[2:])}")
