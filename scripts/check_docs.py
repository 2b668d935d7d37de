#!/usr/bin/env python3
"""`make docs-check` (part of `make test`): the README stays a front door
(at most 200 lines), every relative link in the Markdown resolves, every
document a source file names (`docs/…`, `*.md`) exists in the repository,
every repository path the Markdown or a source comment quotes in backticks
(`tests/memory/tests/sim.rs`, `scripts/`) exists, unless git ignores it (a file
the tools write, such as `config/deploy/hookgate.toml`), and docs/local.md's
table of the local stack's outputs lists what `LOCAL_OUTPUTS` in
scripts/provision.py holds, no more and no less, and every template
parameter's default the Markdown quotes (`Name` followed by a number, or by
"default" and a number) is the template's, and every count of tests a
paragraph gives for a suite it names (`tests/memory/tests/services/` … 76 tests)
is the suite's, unless the paragraph names the commit it was counted at,
and every Rust name ARCHITECTURE.md's walk of one webhook quotes (a type,
`Type::method`, `module::function`, `path.rs::function`) is defined in the
code."""

import ast
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README_MAX_LINES = 200
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A document named in code: a page under docs/ or a top-level Markdown file.
NAMED_DOC = re.compile(r"(?<![\w/.-])((?:docs/)?[A-Za-z][\w.-]*\.md)\b")
SOURCE_SUFFIXES = {".rs", ".py", ".sh", ".toml", ".mjs", ".yaml"}
# A path quoted in backticks: a top-level folder, a slash, more path.
QUOTED_PATH = re.compile(r"`([A-Za-z][\w.-]*/[\w./-]*)`")


def missing_paths(text, tops):
    """The quoted repository paths in `text` that do not exist and git does not ignore."""
    out = []
    for quoted in QUOTED_PATH.findall(text):
        if quoted.split("/")[0] not in tops:
            continue
        path = quoted.rstrip("/").split(":")[0]
        if (ROOT / path).exists():
            continue
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0
        if not ignored:
            out.append(quoted)
    return out


# The root's visible entries, each with its line in ARCHITECTURE.md's layout
# table (a row starting with the entry in backticks), and at most this many.
ROOT_MAX_ENTRIES = 14
ARCHITECTURE = "ARCHITECTURE.md"
# The folders the root held before the crates and the test support moved
# (crates/, tests/): a quoted path under one of them names a file that moved.
RETIRED_TOPS = {"core", "adapters", "operator", "cli", "memory", "testkit", "dev", "emulator",
                "fixtures", "bench", "fuzz", "tools"}


def root_problems(files):
    """The root's visible entries beyond ROOT_MAX_ENTRIES, and those without
    their row in ARCHITECTURE.md."""
    entries = sorted({p.relative_to(ROOT).parts[0] for p in files} - {""})
    visible = [e for e in entries if not e.startswith(".")]
    out = []
    if len(visible) > ROOT_MAX_ENTRIES:
        out.append(f"the root has {len(visible)} visible entries (at most {ROOT_MAX_ENTRIES}): "
                   + ", ".join(visible))
    rows = (ROOT / ARCHITECTURE).read_text(encoding="utf-8")
    for entry in visible:
        if not re.search(rf"^\| `{re.escape(entry)}/?`", rows, re.M):
            out.append(f"{ARCHITECTURE} has no row for the root entry `{entry}`")
    return out


LOCAL_OUTPUTS_DOC = "docs/local.md"
LOCAL_OUTPUTS_HEADING = "## The local stack's outputs"
# A row of that table: | `Output` | `local value` | why |
LOCAL_OUTPUT_ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \|", re.M)


def local_outputs_problems():
    """Where docs/local.md's table and scripts/provision.py's LOCAL_OUTPUTS differ."""
    tree = ast.parse((ROOT / "scripts/provision.py").read_text(encoding="utf-8"))
    code = next((ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "LOCAL_OUTPUTS" for t in node.targets)), None)
    if code is None:
        return ["scripts/provision.py: no LOCAL_OUTPUTS = {…} literal"]
    text = (ROOT / LOCAL_OUTPUTS_DOC).read_text(encoding="utf-8")
    if LOCAL_OUTPUTS_HEADING not in text:
        return [f"{LOCAL_OUTPUTS_DOC}: no section {LOCAL_OUTPUTS_HEADING!r} (the local stack's outputs)"]
    section = text.split(LOCAL_OUTPUTS_HEADING, 1)[1].split("\n## ", 1)[0]
    documented = {}
    for name, value in LOCAL_OUTPUT_ROW.findall(section):
        if name in documented:
            return [f"{LOCAL_OUTPUTS_DOC}: the local stack's outputs list {name} twice"]
        documented[name] = value
    problems = []
    for name in sorted(set(code) | set(documented)):
        where = f"{LOCAL_OUTPUTS_DOC}, {LOCAL_OUTPUTS_HEADING[3:]!r}"
        if name not in documented:
            problems.append(f"{where}: no row for {name} (LOCAL_OUTPUTS: {code[name]!r})")
        elif name not in code:
            problems.append(f"{where}: {name} is not in scripts/provision.py's LOCAL_OUTPUTS")
        elif code[name] != documented[name]:
            problems.append(f"{where}: {name} is {documented[name]!r}, "
                            f"scripts/provision.py's LOCAL_OUTPUTS says {code[name]!r}")
    return problems


def tracked():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return [ROOT / line for line in out.splitlines() if (ROOT / line).is_file()]


TEMPLATE = "infra/template.yaml"
# A parameter and the number quoted right after it: `Name` 5, `Name` **1,000**,
# `Name`, default **5**.
QUOTED_DEFAULT = r"`{name}`,?\s+(?:default\s+)?\**(\d[\d,]*(?:\.\d+)?)\b"


def parameter_defaults():
    """The template's parameters with a numeric Default: name -> the number's text."""
    text = (ROOT / TEMPLATE).read_text(encoding="utf-8")
    section = text.split("\nParameters:\n", 1)[1]
    section = re.split(r"\n[A-Z][A-Za-z]*:\n", section, maxsplit=1)[0]
    out = {}
    for name, body in re.findall(r"^  ([A-Za-z0-9]+):\n((?:    .*\n)+)", section, re.M):
        default = re.search(r"^    Default: \"?(-?\d+(?:\.\d+)?)\"?\s*$", body, re.M)
        if default:
            out[name] = default.group(1)
    return out


def quoted_default_problems(files):
    """Each number the Markdown quotes right after a parameter, held to its default."""
    defaults = parameter_defaults()
    problems = []
    for path in files:
        if path.suffix != ".md" or "node_modules" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for name, default in defaults.items():
            for m in re.finditer(QUOTED_DEFAULT.format(name=name), text):
                if m.group(1).replace(",", "") != default:
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{path.relative_to(ROOT)}:{line}: quotes `{name}` as "
                                    f"{m.group(1)}; the template's default is {default}")
    return problems


# The test suites whose size the docs may quote: folder -> its test files.
SUITES = {"tests/memory/tests/services/": "tests/memory/tests/services", "tests/integration/tests/it/": "tests/integration/tests/it"}
TEST_ATTR = re.compile(r"^\s*#\[(?:tokio::)?test(?:\(.*\))?\]", re.M)
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def suite_sizes():
    """Each suite's number of test functions (#[test], #[tokio::test])."""
    return {name: sum(len(TEST_ATTR.findall(f.read_text(encoding="utf-8")))
                      for f in (ROOT / folder).rglob("*.rs"))
            for name, folder in SUITES.items()}


def quoted_count_problems(files):
    """A paragraph that names a suite and says `N tests`, with no commit id, gives its size."""
    sizes = suite_sizes()
    problems = []
    for path in files:
        if path.suffix != ".md" or "node_modules" in path.parts:
            continue
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            named = [s for s in SUITES if s in paragraph]
            if len(named) != 1 or COMMIT.search(paragraph):
                continue
            for m in re.finditer(r"\b(\d[\d,]*) tests\b", paragraph):
                if int(m.group(1).replace(",", "")) != sizes[named[0]]:
                    problems.append(f"{path.relative_to(ROOT)}: says {m.group(0)} of `{named[0]}`, "
                                    f"which has {sizes[named[0]]}")
    return problems


WALK_DOC = "ARCHITECTURE.md"
WALK_HEADING = "## One webhook, end to end"
# A quoted Rust name: `Type`, `Type::name`, `module::name`, `path/file.rs::name`.
QUOTED_NAME = re.compile(r"`((?:[\w/.-]+\.rs::|[A-Za-z_]\w*::)?[A-Za-z_]\w*)`")
DEFINITION = r"(?:struct|enum|trait|type|fn|const|static|mod)\s+{}\b"


def has_method(texts, owner, name):
    """Whether some `impl … Owner {…}` or `trait Owner {…}` block of `texts`
    (up to the next item at the margin) defines `fn name`."""
    owned = re.escape(owner)
    block = re.compile(r"^(?:pub )?(?:impl\b[^{;]*\b" + owned + r"\b[^{;]*|trait " + owned
                       + r"\b[^{;]*)\{", re.M)
    method = re.compile(r"\bfn {}\b".format(re.escape(name)))
    for text in texts:
        for m in block.finditer(text):
            end = re.compile(r"^\}", re.M).search(text, m.end())
            if method.search(text[m.end(): end.start() if end else len(text)]):
                return True
    return False


def walk_problems(files):
    """The Rust names the walk of one webhook quotes that no source defines."""
    text = (ROOT / WALK_DOC).read_text()
    walk = text.split(WALK_HEADING, 1)[1]
    sources = {p.relative_to(ROOT).as_posix(): p.read_text(errors="replace")
               for p in files if p.suffix == ".rs"}
    everything = "\n".join(sources.values())

    def defined(name, within=None):
        pattern = re.compile(DEFINITION.format(re.escape(name)))
        return bool(pattern.search(sources.get(within, "") if within else everything))

    out = []
    for quoted in QUOTED_NAME.findall(walk):
        owner, _, name = quoted.rpartition("::")
        if owner.endswith(".rs"):
            ok = owner in sources and defined(name, owner)
        elif owner[:1].isupper():
            ok = defined(owner) and has_method(sources.values(), owner, name)
        elif owner:
            modules = [p for p in sources if p.endswith((f"/{owner}.rs", f"/{owner}/mod.rs"))]
            ok = any(defined(name, p) for p in modules)
        elif name[:1].isupper() and not name.isupper():
            ok = defined(name)
        else:
            continue
        if not ok:
            out.append(f"{WALK_DOC}: the walk names `{quoted}`, which no Rust source defines")
    return out


def main():
    problems = []
    readme_lines = len((ROOT / "README.md").read_text().splitlines())
    if readme_lines > README_MAX_LINES:
        problems.append(f"README.md has {readme_lines} lines (at most {README_MAX_LINES})")
    problems += local_outputs_problems()
    files = tracked()
    tops = {p.relative_to(ROOT).parts[0] for p in files if len(p.relative_to(ROOT).parts) > 1}
    tops |= RETIRED_TOPS
    problems += root_problems(files)
    problems += quoted_default_problems(files)
    problems += quoted_count_problems(files)
    problems += walk_problems(files)
    for path in files:
        rel = path.relative_to(ROOT)
        if (path.suffix in SOURCE_SUFFIXES or path.suffix == ".md" or path.name == "Makefile") \
                and "node_modules" not in rel.parts:
            for quoted in missing_paths(path.read_text(errors="replace"), tops):
                problems.append(f"{rel}: quotes `{quoted}`, which does not exist")
        if path.suffix == ".md" and "node_modules" not in rel.parts:
            for target in LINK.findall(path.read_text()):
                if target.startswith(("http://", "https://", "mailto:", "#")):
                    continue
                if not (path.parent / target.split("#")[0]).exists():
                    problems.append(f"{rel}: link to {target}, which does not exist")
        elif path.suffix in SOURCE_SUFFIXES or path.name == "Makefile":
            if "node_modules" in rel.parts:
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                for doc in NAMED_DOC.findall(line):
                    if not ((ROOT / doc).exists() or (ROOT / "docs" / doc).exists()):
                        problems.append(f"{rel}:{n}: names {doc}, which the repository lacks")
    for p in problems:
        print(f"docs-check: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"docs-check ok: README {readme_lines} lines; each root entry in {ARCHITECTURE}; links and named documents resolve "
          f"across {len(files)} files; {LOCAL_OUTPUTS_DOC} lists the local stack's outputs; "
          f"the parameter defaults and suite sizes quoted are true; the walk's names are defined")



if __name__ == "__main__":
    main()
