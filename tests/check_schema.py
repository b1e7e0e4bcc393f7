#!/usr/bin/env python3
"""Compares sliceops' ONNX schema (proto/onnx.proto) with the onnx.proto the onnx package ships.

Both files are read by the same small proto2 parser below; for every message the fields (name,
number, type with names resolved to their full names, label or oneof, packed option) and reserved
numbers and names, and for every enum its values, must be the same. Any difference is listed and the
exit status is 1. Comments and the order of declarations do not matter.

Run with the pinned onnx of models/requirements.txt (CI does, from .ci/run):
    python3 tests/check_schema.py [OURS.proto [THEIRS.proto]]
"""

import os
import re
import sys

SCALARS = {
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
    "sfixed32", "sfixed64", "bool", "string", "bytes",
}

TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|0[xX][0-9a-fA-F]+|-?\d+|.', re.S)


def tokens(text):
    out = []
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.isspace() or t.startswith("//") or t.startswith("/*"):
            continue
        out.append(t)
    return out


class Parser:
    """Reads messages and enums into flat dicts keyed by their full names (`onnx.TensorProto.DataType`)."""

    def __init__(self, text):
        self.t = tokens(text)
        self.i = 0
        self.package = ""
        self.messages = {}  # full name -> {"fields": {...}, "reserved": set(), "scope": [..]}
        self.enums = {}  # full name -> {name: value}, plus reserved
        self.raw_types = []  # (message full name, field name, type as written)

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def next(self):
        tok = self.peek()
        if tok is None:
            raise SyntaxError("unexpected end of file")
        self.i += 1
        return tok

    def expect(self, tok):
        got = self.next()
        if got != tok:
            raise SyntaxError(f"expected {tok!r}, got {got!r} (token {self.i})")

    def skip_statement(self):
        while self.next() != ";":
            pass

    def options(self):
        """`[packed = true, ...]` -> dict."""
        opts = {}
        if self.peek() == "[":
            self.next()
            while True:
                key = self.next()
                self.expect("=")
                opts[key] = self.next()
                if self.peek() == ",":
                    self.next()
                    continue
                self.expect("]")
                break
        return opts

    def reserved(self):
        items = set()
        while True:
            tok = self.next()
            if tok == ";":
                return items
            if tok == ",":
                continue
            if tok.startswith('"'):
                items.add(tok.strip('"'))
            elif self.peek() == "to":
                self.next()
                end = self.next()
                end = 536870911 if end == "max" else int(end, 0)
                items.update(range(int(tok, 0), end + 1))
            else:
                items.add(int(tok, 0))

    def file(self):
        while self.peek() is not None:
            tok = self.next()
            if tok in ("syntax", "option", "import"):
                self.skip_statement()
            elif tok == "package":
                self.package = self.next()
                self.expect(";")
            elif tok == "message":
                self.message([self.package] if self.package else [])
            elif tok == "enum":
                self.enum([self.package] if self.package else [])
            elif tok == ";":
                continue
            else:
                raise SyntaxError(f"unexpected {tok!r} at top level")

    def enum(self, scope):
        name = ".".join(scope + [self.next()])
        values, reserved = {}, set()
        self.expect("{")
        while (tok := self.next()) != "}":
            if tok == "option":
                self.skip_statement()
            elif tok == "reserved":
                reserved |= self.reserved()
            elif tok == ";":
                continue
            else:
                self.expect("=")
                values[tok] = int(self.next(), 0)
                self.options()
                self.expect(";")
        self.enums[name] = {"values": values, "reserved": reserved}

    def field(self, full, label, oneof):
        ftype = self.next()
        fname = self.next()
        self.expect("=")
        number = int(self.next(), 0)
        opts = self.options()
        self.expect(";")
        self.messages[full]["fields"][fname] = {
            "number": number,
            "type": ftype,
            "label": f"oneof {oneof}" if oneof else label,
            "packed": opts.get("packed") == "true",
        }

    def message(self, scope):
        name = self.next()
        full = ".".join(scope + [name])
        self.messages[full] = {"fields": {}, "reserved": set(), "scope": scope + [name]}
        self.expect("{")
        while (tok := self.next()) != "}":
            if tok == "message":
                self.message(scope + [name])
            elif tok == "enum":
                self.enum(scope + [name])
            elif tok == "reserved":
                self.messages[full]["reserved"] |= self.reserved()
            elif tok in ("option", "extensions"):
                self.skip_statement()
            elif tok in ("optional", "repeated", "required"):
                self.field(full, tok, None)
            elif tok == "oneof":
                group = self.next()
                self.expect("{")
                while self.peek() != "}":
                    if self.peek() == "option":
                        self.next()
                        self.skip_statement()
                    else:
                        self.field(full, None, group)
                self.expect("}")
            elif tok == ";":
                continue
            else:
                raise SyntaxError(f"unexpected {tok!r} in message {full}")

    def resolve(self):
        """Field types as full names, looked up from the innermost scope outwards, as protoc does."""
        known = set(self.messages) | set(self.enums)
        for full, msg in self.messages.items():
            for f in msg["fields"].values():
                t = f["type"]
                if t in SCALARS:
                    continue
                if t.startswith("."):
                    f["type"] = t[1:]
                    continue
                scope = msg["scope"]
                for k in range(len(scope), -1, -1):
                    candidate = ".".join(scope[:k] + [t])
                    if candidate in known:
                        f["type"] = candidate
                        break
                else:
                    raise SyntaxError(f"{full}.{t}: unknown type")


def parse(path):
    with open(path, encoding="utf-8") as fh:
        p = Parser(fh.read())
    p.file()
    p.resolve()
    return p


def compare(ours, theirs):
    problems = []
    for kind, a, b in (("message", ours.messages, theirs.messages), ("enum", ours.enums, theirs.enums)):
        for name in sorted(set(b) - set(a)):
            problems.append(f"{kind} {name}: missing from ours")
        for name in sorted(set(a) - set(b)):
            problems.append(f"{kind} {name}: ours only")
    for name in sorted(set(ours.messages) & set(theirs.messages)):
        fa, fb = ours.messages[name]["fields"], theirs.messages[name]["fields"]
        for f in sorted(set(fb) - set(fa)):
            problems.append(f"{name}.{f} (field {fb[f]['number']}): missing from ours")
        for f in sorted(set(fa) - set(fb)):
            problems.append(f"{name}.{f}: ours only")
        for f in sorted(set(fa) & set(fb)):
            for key in ("number", "type", "label", "packed"):
                if fa[f][key] != fb[f][key]:
                    problems.append(f"{name}.{f}: {key} is {fa[f][key]!r} in ours, {fb[f][key]!r} in onnx")
        ra, rb = ours.messages[name]["reserved"], theirs.messages[name]["reserved"]
        if ra != rb:
            problems.append(f"{name}: reserved {sorted(map(str, ra))} in ours, {sorted(map(str, rb))} in onnx")
    for name in sorted(set(ours.enums) & set(theirs.enums)):
        va, vb = ours.enums[name]["values"], theirs.enums[name]["values"]
        for v in sorted(set(vb) - set(va)):
            problems.append(f"{name}.{v} = {vb[v]}: missing from ours")
        for v in sorted(set(va) - set(vb)):
            problems.append(f"{name}.{v}: ours only")
        for v in sorted(set(va) & set(vb)):
            if va[v] != vb[v]:
                problems.append(f"{name}.{v}: {va[v]} in ours, {vb[v]} in onnx")
        if ours.enums[name]["reserved"] != theirs.enums[name]["reserved"]:
            problems.append(f"enum {name}: reserved values differ")
    return problems


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ours = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "proto", "onnx.proto")
    if len(sys.argv) > 2:
        theirs = sys.argv[2]
    else:
        import onnx

        theirs = os.path.join(os.path.dirname(onnx.__file__), "onnx.proto")
    a, b = parse(ours), parse(theirs)
    problems = compare(a, b)
    if problems:
        print(f"{ours} differs from {theirs}:")
        for p in problems:
            print(f"  {p}")
        sys.exit(1)
    print(f"{ours} matches {theirs}: {len(a.messages)} messages, {len(a.enums)} enums")


if __name__ == "__main__":
    main()
