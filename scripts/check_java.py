"""Fail early, with a clear message, when Java (needed by PySpark) is missing or too old."""
import re
import shutil
import subprocess
import sys


def main() -> int:
    java = shutil.which("java")
    if not java:
        print("ERROR: Java not found on PATH. PySpark 4 needs Java 17 or newer: install a JDK "
              "(e.g. 'apt-get install openjdk-17-jre-headless') and run again.", file=sys.stderr)
        return 1
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(m.group(1)) if m else 0
    if major == 1 and m and m.group(2):
        major = int(m.group(2))
    if major < 17:
        print(f"ERROR: PySpark 4 needs Java 17 or newer; found: {out.splitlines()[0] if out else java}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
