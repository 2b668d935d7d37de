#!/usr/bin/env python3
"""No product source file grows past what a reader takes in at once.

Usage: check_file_length.py MAX DIR...

Counts each Rust file under every DIR up to its inline test module (as
check_fn_length.py finds it: a `#[cfg(test)]` line followed by
`mod NAME {`), skips files named `tests.rs`
and anything under a `tests/` folder of a DIR (test code), and fails naming
the files longer than MAX lines. Prints the five longest either way, so a
closing note can quote them. `make check` runs it over the product code:
the shipped crates, the functions and the simulator (ARCHITECTURE.md).
"""

import pathlib
import sys

from check_fn_length import product_lines


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    limit, roots = int(sys.argv[1]), [pathlib.Path(d) for d in sys.argv[2:]]
    sizes = []
    for root in roots:
        for path in sorted(root.rglob("*.rs")):
            if path.name == "tests.rs" or "tests" in path.relative_to(root).parts:
                continue
            sizes.append((len(product_lines(path.read_text(encoding="utf-8").splitlines())), str(path)))
    if not sizes:
        sys.exit(f"check_file_length: no Rust file under {' '.join(sys.argv[2:])}")
    sizes.sort(reverse=True)
    longest = ", ".join(f"{p} {n}" for n, p in sizes[:5])
    print(f"check_file_length: {len(sizes)} files; the longest {longest}; at most {limit}")
    over = [(n, p) for n, p in sizes if n > limit]
    for n, p in over:
        print(f"  {p}: {n} lines outside its tests", file=sys.stderr)
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
