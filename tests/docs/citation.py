#!/usr/bin/env python3
"""CITATION.cff parses as YAML and has what CFF 1.2.0 requires (ctest
docs_citation; Debian 12 packages no cffconvert, so this is the check):
cff-version, message, title, authors, and for the preferred citation and
every reference a type, a title and authors each with a name or a family
name.  Prints what is missing and exits 1.
Usage: citation.py SOURCE_DIR
"""
import os
import sys

try:
    import yaml
except ImportError:
    print("skip: python3's yaml module is missing (Debian: python3-yaml)")
    sys.exit(77)


def check_work(w, where, errs):
    for k in ("type", "title", "authors"):
        if not w.get(k):
            errs.append("%s: no %s" % (where, k))
    for i, a in enumerate(w.get("authors") or []):
        if not (a.get("name") or a.get("family-names")):
            errs.append("%s: author %d has no name" % (where, i + 1))


def main():
    path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".",
                        "CITATION.cff")
    with open(path, encoding="utf-8") as f:
        cff = yaml.safe_load(f)
    errs = []
    for k in ("cff-version", "message", "title", "authors"):
        if not cff.get(k):
            errs.append("no " + k)
    check_work(dict(cff, type=cff.get("type", "software")), "the project",
               errs)
    if "preferred-citation" in cff:
        check_work(cff["preferred-citation"], "preferred-citation", errs)
    refs = cff.get("references") or []
    for i, r in enumerate(refs):
        check_work(r, "reference %d" % (i + 1), errs)
    for e in errs:
        print("CITATION.cff: " + e)
    print("docs_citation: %d references, %d problems" % (len(refs), len(errs)))
    return 1 if errs or not refs else 0


if __name__ == "__main__":
    sys.exit(main())
