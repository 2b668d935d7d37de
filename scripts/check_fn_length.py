#!/usr/bin/env python3
"""The functions of the action path stay short enough to read at once.

Usage: check_fn_length.py MAX FILE...

Measures every function of each Rust FILE (its `#[cfg(test)]` module
aside), from its `fn` line to its closing brace, and fails naming those
longer than MAX lines. Prints the longest either way, so a closing note can
quote it. `make check` runs it on the worker, the destination and the
vendors (CONTRIBUTING.md, "Add a CRM vendor").
"""

import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"\w+\"\s+)?fn\s+(\w+)")


def code_of(line, state):
    """`line` without its comments, string and char literals (so their
    braces are not counted), and the state it leaves: inside a block
    comment, a string (which may run over lines), or neither."""
    out, i = [], 0
    while i < len(line):
        if state == "comment":
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), state
            i, state = end + 2, None
            continue
        if state == "string":
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            if i >= len(line):
                return "".join(out), state
            i, state = i + 1, None
            continue
        two = line[i : i + 2]
        if two == "//":
            break
        if two == "/*":
            state, i = "comment", i + 2
            continue
        c = line[i]
        if c == '"':
            state, i = "string", i + 1
            continue
        char = re.match(r"'(\\.|[^\\'])'", line[i:])
        if char:
            i += len(char.group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out), state


# An inline test module: `#[cfg(test)]` then `mod NAME {`. It closes the
# file; a test module declared in a file of its own (`mod tests;`) does not
# end what is measured.
TEST_MODULE = re.compile(r"(pub(\([^)]*\))? )?mod \w+\s*\{")


def product_lines(lines):
    """`lines` up to the file's inline test module (all of them without one)."""
    for n, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and n + 1 < len(lines) and TEST_MODULE.match(lines[n + 1]):
            return lines[:n]
    return lines


def functions(path):
    """(name, first line, length) of each function outside tests."""
    lines = product_lines(open(path, encoding="utf-8").read().splitlines())
    found, stack, depth, state = [], [], 0, None
    for number, raw in enumerate(lines, 1):
        code, state = code_of(raw, state)
        m = FN.match(code)
        if m and not code.rstrip().endswith(";"):
            stack.append((m.group(1), number, depth))
        for c in code:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if stack and depth == stack[-1][2]:
                    name, first, _ = stack.pop()
                    found.append((name, first, number - first + 1))
        # A declaration without a body (a trait's) ends at its `;`.
        if stack and depth == stack[-1][2] and code.rstrip().endswith(";"):
            stack.pop()
    return found


def main():
    limit, paths = int(sys.argv[1]), sys.argv[2:]
    measured = [(length, path, first, name) for path in paths for name, first, length in functions(path)]
    if not measured:
        sys.exit("check_fn_length: no functions found")
    measured.sort(reverse=True)
    length, path, first, name = measured[0]
    print(f"check_fn_length: {len(measured)} functions, the longest {name} ({path}:{first}), {length} lines; at most {limit}")
    over = [m for m in measured if m[0] > limit]
    for length, path, first, name in over:
        print(f"  {path}:{first}: {name} is {length} lines", file=sys.stderr)
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
