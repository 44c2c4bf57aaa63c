#!/usr/bin/env python3
"""Lists the longest C++ function bodies (and, with --max N, fails when one
is longer than N lines; with --max-file-lines N, when a source file is).

    scripts/long_functions.py [--max N] [--max-file-lines N] [--top K] PATH...

Each PATH is a file or a folder (searched for .cpp, .h, .cu, .cuh, .inc, and
for .td when files are measured). Every function or file over a limit is
printed by name, whatever --top says. test/Structure/limits.test holds the
tree to its limits.

A function is a brace block at namespace or class level whose head (the
text since the previous `;`, `{` or `}`) has a parameter list and is not a
class, struct, enum, namespace or initializer; its length counts the lines
from its head's first line to its closing brace. Comments, string and
character literals and raw strings are skipped, so braces in the C++ text a
generator prints do not count; so are preprocessor directives (continuation
lines included), so neither `#if defined(...)` nor a macro's definition is
taken for a function head, and a macro's body is not measured where it is
defined. A block opened by a macro call (`TEST(A, B) {`) counts as a
function. Lambdas count in the function that holds
them. Needs only the Python standard library.
"""
import argparse
import os
import re
import sys

SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".inc")
# A whole line that is a macro call: an upper-case name and its arguments.
MACRO_LINE = re.compile(r"\s*[A-Z][A-Z0-9_]*\s*\((?:[^()]|\([^()]*\))*\)[ \t]*\n")
# Counted by --max-file-lines only: TableGen has no C++ functions.
FILE_ONLY_SUFFIXES = (".td",)


def directive_end(text, i):
    """End of the preprocessor directive that starts at `i`, its backslash
    continuation lines included."""
    n = len(text)
    while True:
        j = text.find("\n", i)
        if j < 0:
            return n
        if not text[i:j].rstrip().endswith("\\"):
            return j
        i = j + 1


def blank_literals(text):
    """`text` with comments, literals and preprocessor directives replaced by
    spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#" and not text[text.rfind("\n", 0, i) + 1:i].strip():
            j = directive_end(text, i)
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif ch == "R" and text.startswith('"', i + 1) and (
                i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(ch)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(ch)
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    return "".join(out)


def functions(path):
    """(name, first line, last line) of each function in `path`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank_literals(f.read())
    found = []
    # Each open brace: (kind, name, first line); kind "scope" (namespace,
    # class, extern "C") or "body" (a function's, or a block in one).
    stack = []
    head_start = 0
    line = 1
    line_at = []  # line of each offset, computed lazily below
    for offset, ch in enumerate(text):
        line_at.append(line)
        if ch == "\n":
            line += 1
        if ch not in "{};":
            continue
        head = text[head_start:offset]
        in_body = any(kind == "body" for kind, _, _ in stack)
        if ch == "{":
            words = head.split()
            if in_body:
                stack.append(("body", None, 0))
            elif re.search(r"\b(namespace|class|struct|union|enum)\b", head) \
                    and "(" not in head.split("{")[0].split(":")[0] \
                    or re.match(r"\s*extern\s*$", head) or not words:
                stack.append(("scope", None, 0))
            elif "(" in head and not re.search(r"=\s*$", head):
                # Lines before the head that are whole macro calls with no
                # `;` (`AMPC_DECLARE(x)`) belong to no function.
                skip = 0
                while True:
                    m = MACRO_LINE.match(head, skip)
                    if not m or "(" not in head[m.end():]:
                        break
                    skip = m.end()
                stripped = head[skip:].lstrip()
                first = line_at[head_start + (len(head) - len(stripped))] \
                    if stripped else line
                head = head[skip:]
                m = re.search(r"([~\w:]+(?:operator\S*)?)\s*\(", head)
                stack.append(("body", m.group(1) if m else "?", first))
            else:
                stack.append(("scope", None, 0))
        elif ch == "}" and stack:
            kind, name, first = stack.pop()
            if kind == "body" and name is not None:
                found.append((name, first, line))
        head_start = offset + 1
    return found


def source_files(paths, suffixes):
    """The files named by `paths`, folders searched for `suffixes`."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.endswith(suffixes)]
        else:
            files.append(p)
    return sorted(files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--max", type=int, default=0,
                        help="exit 1 when a function is longer than this")
    parser.add_argument("--max-file-lines", type=int, default=0,
                        help="exit 1 when a source file is longer than this")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    files = source_files(args.paths, SUFFIXES + FILE_ONLY_SUFFIXES)
    rows = []
    for path in files:
        if path.endswith(SUFFIXES):
            for name, first, last in functions(path):
                rows.append((last - first + 1, path, first, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for length, path, first, name in rows[:args.top]:
        print("%5d  %s:%d  %s" % (length, path, first, name))
    failed = False
    over = [r for r in rows if args.max and r[0] > args.max]
    for length, path, first, name in over:
        print("function over %d lines: %s:%d  %s (%d lines)"
              % (args.max, path, first, name, length))
    if over:
        print("%d function(s) over %d lines" % (len(over), args.max))
        failed = True
    if args.max_file_lines:
        long_files = []
        for path in files:
            with open(path, encoding="utf-8", errors="replace") as f:
                count = sum(1 for _ in f)
            if count > args.max_file_lines:
                long_files.append((path, count))
        for path, count in long_files:
            print("file over %d lines: %s (%d lines)"
                  % (args.max_file_lines, path, count))
        if long_files:
            print("%d file(s) over %d lines"
                  % (len(long_files), args.max_file_lines))
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
