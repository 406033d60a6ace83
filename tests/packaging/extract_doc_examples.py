#!/usr/bin/env python3
"""Extracts the C++ examples of a Markdown guide (docs/sdk.md) into files, so the build compiles
them and the tests run them: documentation examples that stop compiling fail the build.

Every ```cpp block must start with `// file: NAME` (NAME: letters, digits, '_', '.', ending in .h
or .cc); blocks naming the same file are joined in order. Writes OUT_DIR/NAME, leaving files
whose content is unchanged untouched (no needless rebuild), removes stale ones, and prints the
.cc files written, one a line, for CMake.

Usage: extract_doc_examples.py GUIDE.md OUT_DIR
"""

import re
import sys
from pathlib import Path

FENCE_OPEN = re.compile(r"^```cpp\s*$")
FENCE_CLOSE = re.compile(r"^```\s*$")
FILE_LINE = re.compile(r"^// file: ([A-Za-z0-9_.]+\.(?:h|cc))\s*$")


def extract(guide: Path) -> dict:
    files: dict = {}
    lines = guide.read_text().splitlines()
    index = 0
    while index < len(lines):
        if not FENCE_OPEN.match(lines[index]):
            index += 1
            continue
        start = index + 1
        end = start
        while end < len(lines) and not FENCE_CLOSE.match(lines[end]):
            end += 1
        if end == len(lines):
            sys.exit(f"{guide}:{index + 1}: a ```cpp block is never closed")
        block = lines[start:end]
        name = FILE_LINE.match(block[0]) if block else None
        if not name:
            sys.exit(f"{guide}:{start + 1}: a ```cpp block must start with `// file: NAME.h` or "
                     f"`// file: NAME.cc` (the file its code is compiled in)")
        files.setdefault(name.group(1), []).append(
            f"#line {start + 2} \"{guide}\"\n" + "\n".join(block[1:]) + "\n")
        index = end + 1
    if not files:
        sys.exit(f"{guide}: no ```cpp block found")
    return {name: "".join(parts) for name, parts in files.items()}


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    guide, out_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    files = extract(guide)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in set(p.name for p in out_dir.iterdir()) - set(files):
        (out_dir / stale).unlink()
    for name, content in files.items():
        path = out_dir / name
        header = f"// Extracted from {guide} by {Path(__file__).name}: edit the guide, not this.\n"
        if name.endswith(".h"):
            content = content.replace("#pragma once\n", "\n", 1)  # keeps the #line numbering
            header += "#pragma once\n"
        if not path.exists() or path.read_text() != header + content:
            path.write_text(header + content)
    print("\n".join(sorted(name for name in files if name.endswith(".cc"))))


if __name__ == "__main__":
    main()
