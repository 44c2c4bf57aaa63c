#!/usr/bin/env python3
"""Writes the "10 MB line" bad input (too big to commit) to the path given.

Usage: gen_big.py OUTPUT.tg

Line 2 of the output is a single line of about 10 MB: a tensor type whose
shape `f32[1, 1, ..., 1, ]` ends in a trailing comma. The frontend must reject
it quickly (linear time) with

    OUTPUT.tg:2:10500018: error: expected an integer dimension after ',', found ']'

which is the `gen_big.py` entry of EXPECTED.txt. The script also prints that
expected `LINE:COL` on stdout, so a test can check it without repeating the
arithmetic.
"""

import sys

DIMS = 3_500_000  # 3 bytes each: "1, " -> 10.5 MB


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gen_big.py OUTPUT.tg\n")
        return 2
    prefix = "graph big(x: f32["
    line2 = prefix + "1, " * DIMS + "]) -> f32[] { return x }"
    with open(sys.argv[1], "w", encoding="ascii", newline="\n") as out:
        out.write("# EXPECT: expected an integer dimension after ',', found ']'\n")
        out.write(line2 + "\n")
    # The ']' follows the last "1, ": columns are 1-based byte offsets.
    print(f"2:{len(prefix) + 3 * DIMS + 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
