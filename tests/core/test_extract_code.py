"""Source code as the indexer reads it (``core.extract.code``): in every language with a
grammar, each function, class, method (impl block, receiver method, namespace) a chunk
of its own under the names that enclose it, with the comments right above it, at its
lines; a long function split between statements, never inside a line; a language
without a grammar, a grammar that fails and a minified file, each as it should be."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux.core.extract import code
from rifflux.core.packing import ChunkLimits

from ..formats import chunks_of, indexed, prepared, skipped

PYTHON = '''\
"""Owls."""

import os


# Says hello to an owl.
def greet(name):
    return f"hello {name}"


class Owl:
    """An owl."""

    sound = "hoo"

    def __init__(self, name):
        self.name = name

    # Makes the owl hoot.
    @property
    def hoot(self):
        return self.sound * 2


CONSTANT = 3
'''

JAVASCRIPT = '''\
// Says hello to an owl.
function greet(name) {
  return `hello ${name}`;
}

class Owl {
  constructor(name) {
    this.name = name;
  }

  // Makes the owl hoot.
  hoot() {
    return "hoo";
  }
}

const fly = (owl) => owl.name + " flies";
export default Owl;
'''

TYPESCRIPT = '''\
// Says hello to an owl.
export function greet(name: string): string {
  return `hello ${name}`;
}

interface Bird {
  wings: number;
}

export class Owl implements Bird {
  wings = 2;
  constructor(private name: string) {}

  // Makes the owl hoot.
  hoot(): string {
    return "hoo";
  }
}

namespace Birds {
  export function count(): number { return 1; }
}
'''

TSX = '''\
// Says hello to an owl.
export function Greet(props: { name: string }) {
  return <div>hello {props.name}</div>;
}

export class Owl extends React.Component {
  // Makes the owl hoot.
  hoot(): string {
    return "hoo";
  }
  render() {
    return <span>{this.hoot()}</span>;
  }
}
'''

GO = '''\
package owls

import "fmt"

// Greet says hello to an owl.
func Greet(name string) string {
\treturn fmt.Sprintf("hello %s", name)
}

// Owl is a bird.
type Owl struct {
\tName string
}

// Hoot makes the owl hoot.
func (o *Owl) Hoot() string {
\treturn "hoo"
}
'''

RUST = '''\
use std::fmt;

/// Says hello to an owl.
fn greet(name: &str) -> String {
    format!("hello {}", name)
}

#[derive(Debug)]
struct Owl {
    name: String,
}

impl Owl {
    /// Makes the owl hoot.
    fn hoot(&self) -> String {
        "hoo".to_string()
    }
}

impl fmt::Display for Owl {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}
'''

JAVA = '''\
package owls;

// An owl.
public class Owl {
    private String name;

    public Owl(String name) {
        this.name = name;
    }

    // Makes the owl hoot.
    @Override
    public String hoot() {
        return "hoo";
    }
}
'''

C = '''\
#include <stdio.h>

/* Says hello to an owl. */
static const char *greet(const char *name) {
    return name;
}

struct owl {
    const char *name;
};

// Makes the owl hoot.
int hoot(struct owl *o) {
    return printf("hoo %s\\n", o->name);
}
'''

CPP = '''\
#include <string>

namespace birds {

// An owl.
class Owl {
 public:
  // Makes the owl hoot.
  std::string hoot() const {
    return "hoo";
  }
};

// Says hello to an owl.
std::string greet(const std::string& name) {
  return "hello " + name;
}

}  // namespace birds

template <typename T>
T twice(T x) {
  return x + x;
}
'''

SHELL = '''\
#!/bin/sh
set -e

# Says hello to an owl.
greet() {
  echo "hello $1"
}

hoot() {
  echo hoo
}

greet owl
'''

#: Each language's file and its chunks: (breadcrumb, first line, last line).
LANGUAGES = {
    "owl.py": (PYTHON, [("", 1, 3), ("greet", 6, 8), ("Owl", 11, 14), ("Owl > __init__", 16, 17),
                        ("Owl > hoot", 19, 22), ("", 25, 25)]),
    "owl.js": (JAVASCRIPT, [("greet", 1, 4), ("Owl", 6, 6), ("Owl > constructor", 7, 9),
                            ("Owl > hoot", 11, 14), ("Owl", 15, 15), ("fly", 17, 17),
                            ("", 18, 18)]),
    "owl.ts": (TYPESCRIPT, [("greet", 1, 4), ("Bird", 6, 8), ("Owl", 10, 11),
                            ("Owl > constructor", 12, 12), ("Owl > hoot", 14, 17),
                            ("Owl", 18, 18), ("Birds", 20, 20), ("Birds > count", 21, 21),
                            ("Birds", 22, 22)]),
    "owl.tsx": (TSX, [("Greet", 1, 4), ("Owl", 6, 6), ("Owl > hoot", 7, 10),
                      ("Owl > render", 11, 13), ("Owl", 14, 14)]),
    "owl.go": (GO, [("", 1, 3), ("Greet", 5, 8), ("Owl", 10, 13), ("Owl.Hoot", 15, 18)]),
    "owl.rs": (RUST, [("", 1, 1), ("greet", 3, 6), ("Owl", 8, 11), ("Owl", 13, 13),
                      ("Owl > hoot", 14, 17), ("Owl", 18, 18), ("Owl (fmt::Display)", 20, 20),
                      ("Owl (fmt::Display) > fmt", 21, 23), ("Owl (fmt::Display)", 24, 24)]),
    "Owl.java": (JAVA, [("", 1, 1), ("Owl", 3, 5), ("Owl > Owl", 7, 9), ("Owl > hoot", 11, 15),
                        ("Owl", 16, 16)]),
    "owl.c": (C, [("", 1, 1), ("greet", 3, 6), ("owl", 8, 10), ("hoot", 12, 15)]),
    "owl.cpp": (CPP, [("", 1, 1), ("birds", 3, 3), ("birds > Owl", 5, 7),
                      ("birds > Owl > hoot", 8, 11), ("birds > Owl", 12, 12),
                      ("birds > greet", 14, 17), ("birds", 19, 19), ("twice", 21, 24)]),
    "owl.sh": (SHELL, [("", 1, 2), ("greet", 4, 7), ("hoot", 9, 11), ("", 13, 13)]),
}


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_each_definition_is_a_chunk_of_its_own_under_its_names(
    tmp_path: Path, name: str
) -> None:
    text, expected = LANGUAGES[name]
    result, doc = indexed(tmp_path, name, text.encode())
    assert result.kind == "code" and result.warning is None
    assert [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks] == expected
    lines = text.splitlines()
    for chunk in doc.chunks:  # each chunk is its lines, as written
        assert chunk.content == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
    # the comment right above a definition is the definition's
    for chunk in doc.chunks:
        if "Says hello to an owl" in chunk.content:
            assert chunk.heading_path.endswith(("greet", "Greet")), chunk
        if "hoot." in chunk.content:
            assert chunk.heading_path.endswith(("hoot", "Hoot")), chunk


def test_a_comment_between_a_class_line_and_its_first_method_is_the_methods() -> None:
    text = "class Owl:\n    # Makes it hoot.\n    def hoot(self):\n        return 1\n"
    doc = chunks_of("owl.py", text.encode())
    assert [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks] == [
        ("Owl", 1, 1), ("Owl > hoot", 2, 4)]


def test_a_go_method_of_a_generic_type_is_named_by_the_type() -> None:
    text = ("package owls\n\n// Stack of birds.\ntype Stack[T any] struct{ items []T }\n\n"
            "// Push adds one.\nfunc (s *Stack[T]) Push(x T) { s.items = append(s.items, x) }\n")
    doc = chunks_of("stack.go", text.encode())
    assert [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks] == [
        ("", 1, 1), ("Stack", 3, 4), ("Stack.Push", 6, 7)]


def long_python() -> str:
    body = "".join(f"    if x > {i}:\n        x = compute_value_number_{i}(x, 'padding')\n"
                   f"        log('step {i} done')\n" for i in range(120))
    return f"# Runs every step.\ndef long_one(x):\n    \"\"\"Steps.\"\"\"\n{body}    return x\n"


def long_go() -> str:
    body = "".join(f"\tif x > {i} {{\n\t\tx = computeValueNumber{i}(x, \"padding\")\n"
                   f"\t\tlog(\"step {i} done\")\n\t}}\n" for i in range(120))
    head = "package owls\n\n// Runs every step.\nfunc LongOne(x int) int {\n"
    return f"{head}{body}\treturn x\n}}\n"


@pytest.mark.parametrize(("name", "text", "crumb"), [
    ("long.py", long_python(), "long_one"), ("long.go", long_go(), "LongOne")])
def test_a_long_function_is_split_between_statements_never_inside_a_line(
    name: str, text: str, crumb: str
) -> None:
    limits = ChunkLimits()
    assert len(text) > 2 * limits.code_max_chars
    doc = chunks_of(name, text.encode(), limits)
    pieces = [c for c in doc.chunks if c.heading_path == crumb]
    assert len(pieces) >= 3
    lines = text.splitlines()
    for chunk in pieces:
        assert len(chunk.content) <= limits.code_max_chars
        assert chunk.content == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
    # one after another, every line once, each after the first opening a statement
    assert pieces[0].content.startswith("// Runs every step." if name.endswith(".go")
                                        else "# Runs every step.")
    for before, after in zip(pieces, pieces[1:], strict=False):
        assert after.line_start == before.line_end + 1
        assert after.content.lstrip().startswith(("if x > ", "return x")), after.content[:40]
    assert pieces[-1].line_end == len(lines)


def test_a_language_without_a_grammar_is_read_as_plain_text_between_blank_lines(
    tmp_path: Path
) -> None:
    text = ("class Owl\n  def hoot\n    \"hoo\"\n  end\nend\n\n"
            "def greet(name)\n  \"hello #{name}\"\nend\n")
    result, doc = indexed(tmp_path, "owl.rb", text.encode())
    assert result.kind == "code" and result.warning is None
    assert [(c.heading_path, c.line_start, c.line_end, c.content) for c in doc.chunks] == [
        ("", 1, 5, "class Owl\n  def hoot\n    \"hoo\"\n  end\nend"),
        ("", 7, 9, "def greet(name)\n  \"hello #{name}\"\nend")]


def test_a_grammar_that_fails_reads_the_file_as_plain_text_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(language: str) -> object:
        raise OSError(f"cannot load the {language} grammar's library")

    monkeypatch.setattr(code, "_parser", broken)
    result, doc = indexed(tmp_path, "owl.py", PYTHON.encode())
    assert result.warning == ("the python grammar failed (OSError: cannot load the python "
                              "grammar's library): read as plain text")
    lines = PYTHON.splitlines()
    assert {c.heading_path for c in doc.chunks} == {""}
    covered = {n for c in doc.chunks for n in range(c.line_start, c.line_end + 1)}
    assert covered == {n for n, line in enumerate(lines, 1) if line.strip()}
    for chunk in doc.chunks:
        assert chunk.content == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])


def test_a_file_of_one_10_mb_line_is_skipped_as_minified(tmp_path: Path) -> None:
    line = "var a=1;" * (10 * 1024 * 1024 // 8)
    reason = skipped(prepared(tmp_path, "bundle.min.js", line.encode()))
    assert reason == (f"a line of {len(line):,} characters (minified or generated code?): "
                      "it is skipped")
