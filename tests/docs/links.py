#!/usr/bin/env python3
"""Every relative link of the project's Markdown resolves (ctest docs_links).

Checks the top-level *.md and docs/*.md: each [text](target) outside code
(fenced blocks and `spans`) whose target has no URL scheme must name an
existing file or directory, relative to the linking file; a #fragment into
a Markdown file must be one of its headings' anchors, made as GitHub makes
them (lower case, punctuation but '-' and '_' dropped, spaces to '-',
repeats numbered -1, -2, ...).  Prints each broken link and exits 1;
exits 1 too when no link was found at all (the check would prove nothing).
Usage: links.py SOURCE_DIR
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(path):
    """The file's lines outside fenced code, with `code spans` blanked."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield n, re.sub(r"`[^`]*`", "``", line)


def heading_texts(path):
    """Headings with their code spans kept (anchors keep the span's text)."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"^#{1,6}\s", line):
                yield line


def anchor_set(path):
    seen = {}
    out = set()
    for line in heading_texts(path):
        text = re.sub(r"^#{1,6}\s+", "", line).strip().rstrip("#").strip()
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    files = sorted(glob.glob(os.path.join(src, "*.md")) +
                   glob.glob(os.path.join(src, "docs", "*.md")))
    checked = bad = 0
    for md in files:
        for n, line in prose_lines(md):
            for target in LINK.findall(line):
                if SCHEME.match(target):
                    continue
                checked += 1
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(md),
                                                     path)) if path else md
                where = "%s:%d: %s" % (os.path.relpath(md, src), n, target)
                if not os.path.exists(dest):
                    print("broken link (no such file) " + where)
                    bad += 1
                elif frag and dest.endswith(".md") and \
                        frag not in anchor_set(dest):
                    print("broken link (no such heading) " + where)
                    bad += 1
    print("docs_links: %d relative links in %d files, %d broken" %
          (checked, len(files), bad))
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
