#!/usr/bin/env python3
"""Puts a generated section into a results page between its markers.

    scripts/splice_section.py DOC FRAGMENT NAME

writes FRAGMENT between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in DOC, replacing
what was there, or appends it with the markers when DOC has none.
"""
import sys

doc, frag, name = sys.argv[1:4]
begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
text = open(doc).read()
section = begin + "\n" + open(frag).read() + end + "\n"
b, e = text.find(begin), text.find(end)
if b >= 0 and e >= 0:
    text = text[:b] + section + text[e + len(end) + 1:]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(doc, "w").write(text)
