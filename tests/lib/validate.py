#!/usr/bin/env python3
"""validate.py -- check JSON documents against one of schemas/*.json (draft 2020-12).

  validate.py [--invalid | --closed] SCHEMA [FILE]   (FILE defaults to stdin)
  validate.py --check-schemas DIR            (every DIR/*.json against the metaschema)
  validate.py --serve REQ ANS                 (a server for a test's requests: serve())

Input is one JSON object per line (JSON Lines), or one pretty-printed JSON
document.  Every schema in SCHEMA's directory is loaded, so the relative
"$ref"s into common.json resolve.  Empty input is an error: nothing was
checked, so nothing passes.

Exit 0 when every document is valid (with --invalid: when every document is
rejected; with --closed: when every document is a valid object and the same
object with one unlisted field is rejected), 1 otherwise, 2 on a usage error or an unusable schema, 3 when no
usable jsonschema is installed (the bats suite skips on 3).

Works with jsonschema 4.18+ (the referencing registry) and with 4.0-4.17
(RefResolver; Debian bookworm's python3-jsonschema is 4.10).
"""
import glob
import json
import os
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError as e:  # pragma: no cover
    print("validate.py: no usable jsonschema (draft 2020-12): %s" % e, file=sys.stderr)
    sys.exit(3)


def load_all(directory):
    schemas = {}
    for f in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(f, encoding="utf-8") as fh:
            s = json.load(fh)
        if "$id" not in s:
            print("validate.py: %s has no $id" % f, file=sys.stderr)
            sys.exit(2)
        schemas[s["$id"]] = (f, s)
    return schemas


def validator_for(schema, schemas):
    """A validator for schema, and a lookup(ref) that resolves a $ref from it."""
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:
        Registry = None
    if Registry is not None:
        reg = Registry().with_resources(
            (sid, Resource.from_contents(s, default_specification=DRAFT202012))
            for sid, (_, s) in schemas.items())
        res = reg.resolver(base_uri=schema["$id"])
        return Draft202012Validator(schema, registry=reg), lambda ref: res.lookup(ref).contents
    resolver = jsonschema.RefResolver(
        base_uri=schema["$id"], referrer=schema,
        store={sid: s for sid, (_, s) in schemas.items()})
    return Draft202012Validator(schema, resolver=resolver), lambda ref: resolver.resolve(ref)[1]


def documents(text, err):
    """The JSON documents of text (one, or one a line); None: a line is not JSON."""
    text = text.strip()
    if not text:
        return []
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                docs.append(json.loads(line))
            except ValueError as e:
                print("validate.py: line %d is not JSON: %s: %r" % (n, e, line[:200]), file=err)
                return None
    return docs


def check_schemas(directory):
    schemas = load_all(directory)
    if not schemas:
        print("validate.py: no schemas in %s" % directory, file=sys.stderr)
        return 2
    bad = 0
    for sid, (f, s) in schemas.items():
        try:
            Draft202012Validator.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            print("%s: %s at %s" % (f, e.message, "/".join(map(str, e.absolute_path))), file=sys.stderr)
            bad += 1
        # every $ref must resolve
        _, lookup = validator_for(s, schemas)
        for ref in refs(s):
            try:
                lookup(ref)
            except Exception as e:  # noqa: BLE001
                print("%s: unresolvable $ref %s: %s" % (f, ref, str(e)[:200]), file=sys.stderr)
                bad += 1
    return 1 if bad else 0


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def check(mode, path, text, err, cache):
    """validate.py's verdict on text against the schema at path: its exit
    code, its reasons written to err.  mode: "-", "--invalid" or "--closed".
    cache keeps each schema's validator (the server's, between requests)."""
    want_invalid, closed = mode == "--invalid", mode == "--closed"
    if path not in cache:
        schemas = load_all(os.path.dirname(os.path.abspath(path)))
        with open(path, encoding="utf-8") as fh:
            schema = json.load(fh)
        cache[path] = validator_for(schema, schemas)[0]
    v = cache[path]
    docs = documents(text, err)
    if docs is None:
        return 1
    if not docs:
        print("validate.py: no JSON document to check against %s" % os.path.basename(path), file=err)
        return 1
    failed = 0
    for i, d in enumerate(docs, 1):
        try:
            errs = sorted(v.iter_errors(d), key=lambda e: list(map(str, e.absolute_path)))
        except Exception as e:  # noqa: BLE001 -- an unresolvable $ref, a broken schema
            print("validate.py: %s: %s: %s" % (os.path.basename(path), type(e).__name__, str(e)[:300]),
                  file=err)
            return 2
        if errs:
            failed += 1
            if not want_invalid:
                print("document %d: %s" % (i, json.dumps(d)[:600]), file=err)
                for e in errs:
                    print("  at /%s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:400]),
                          file=err)
                    for c in sorted(e.context or [], key=lambda c: list(c.absolute_schema_path))[:12]:
                        print("    (%s) at /%s: %s" % ("/".join(map(str, c.absolute_schema_path)),
                              "/".join(map(str, c.absolute_path)), c.message[:300]), file=err)
        elif want_invalid:
            print("document %d was accepted, expected a rejection: %s" % (i, json.dumps(d)[:600]),
                  file=err)
        elif closed:
            if not isinstance(d, dict):
                print("document %d is not an object" % i, file=err)
                failed += 1
            elif v.is_valid(dict(d, zz_unlisted=True)):
                print("document %d: %s accepts an unlisted field" % (i, os.path.basename(path)),
                      file=err)
                failed += 1
    if want_invalid:
        return 0 if failed == len(docs) else 1
    return 1 if failed else 0


def serve(req, ans):
    """--serve REQ ANS: one python for a whole test (its start and
    jsonschema's import cost ~0.5 s of CPU a call, tests/schemas.bats).
    Each request is a line on the FIFO REQ, "MODE<TAB>SCHEMA<TAB>FILE";
    the reasons go to FILE.err, the exit code as a line on the FIFO ANS.
    Never exits on its own: the test's teardown ends it."""
    cache = {}
    while True:
        with open(req, encoding="utf-8") as fh:
            line = fh.readline()
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        mode, path, doc = parts
        try:
            with open(doc + ".err", "w", encoding="utf-8") as err:
                try:
                    with open(doc, encoding="utf-8") as fh:
                        rc = check(mode, path, fh.read(), err, cache)
                except Exception as e:  # noqa: BLE001 -- answered, never fatal
                    print("validate.py: %s: %s" % (type(e).__name__, str(e)[:300]), file=err)
                    rc = 2
        except OSError:
            rc = 2
        with open(ans, "w", encoding="utf-8") as fh:
            fh.write("%d\n" % rc)


def main(argv):
    mode = "-"
    if argv[:1] == ["--check-schemas"] and len(argv) == 2:
        return check_schemas(argv[1])
    if argv[:1] == ["--serve"] and len(argv) == 3:
        return serve(argv[1], argv[2])
    if argv[:1] in (["--invalid"], ["--closed"]):
        mode = argv[0]
        argv = argv[1:]
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    if len(argv) == 2:
        with open(argv[1], encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = sys.stdin.read()
    return check(mode, argv[0], text, sys.stderr, {})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
