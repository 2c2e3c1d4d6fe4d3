#!/usr/bin/python3
"""Writes core/src/view/data/onnx-op-docs.json: each ONNX operator's documentation line, as
Netron shows it in its side panel, for the graph explorer's panel.

From ONNX's own operator schemas (onnx.defs.get_all_schemas_with_history(), the installed
python3-onnx): the newest version of each (domain, op), its doc's first paragraph with the
markdown stripped (cut after its first sentence when long), its since_version and domain. One
line per op, sorted, so a regenerated file diffs by op.

    /usr/bin/python3 scripts/gen-onnx-op-docs.py            # writes the file
    /usr/bin/python3 scripts/gen-onnx-op-docs.py -          # prints it (the test compares)
"""
import json
import os
import re
import sys

import onnx
from onnx import defs

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'core', 'src', 'view', 'data', 'onnx-op-docs.json')
# A paragraph longer than this is cut after its first sentence.
LONG = 240


def plain(md):
    """Markdown to one line of text: links keep their words, code and emphasis lose their marks."""
    s = re.sub(r'<[^>]+>', '', md)
    s = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', s)
    s = re.sub(r'`+([^`]*)`+', r'\1', s)
    s = re.sub(r'(\*\*|__)(.+?)\1', r'\2', s)
    s = re.sub(r'(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])', r'\1', s)
    return re.sub(r'\s+', ' ', s).strip()


def first_line(doc):
    """The doc's first paragraph as plain text; its first sentence when the paragraph is long."""
    paras = [p for p in re.split(r'\n\s*\n', (doc or '').strip()) if p.strip()]
    if not paras:
        return ''
    text = plain(paras[0])
    if len(text) > LONG:
        m = re.search(r'^(.+?[.!?])(\s|$)', text)
        if m and len(m.group(1)) >= 20:
            text = m.group(1)
    return text


def main():
    newest = {}
    for s in defs.get_all_schemas_with_history():
        if s.deprecated:
            continue
        key = (s.domain or 'ai.onnx', s.name)
        if key not in newest or s.since_version > newest[key].since_version:
            newest[key] = s
    rows = []
    for (domain, name), s in sorted(newest.items(), key=lambda kv: (kv[0][0] != 'ai.onnx', kv[0][0], kv[0][1])):
        doc = first_line(s.doc)
        if not doc:
            continue
        key = name if domain == 'ai.onnx' else f'{domain}:{name}'
        entry = {'domain': domain, 'since': s.since_version, 'doc': doc}
        rows.append(f'    {json.dumps(key)}: {json.dumps(entry, ensure_ascii=False)}')
    text = (
        '{\n'
        f'  "generator": "scripts/gen-onnx-op-docs.py",\n'
        f'  "onnx": {json.dumps(onnx.__version__)},\n'
        '  "ops": {\n' + ',\n'.join(rows) + '\n  }\n}\n'
    )
    if sys.argv[1:] == ['-']:
        sys.stdout.write(text)
    else:
        tmp = OUT + '.tmp'
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, OUT)
        print(f'{OUT}: {len(rows)} ops from onnx {onnx.__version__}')


if __name__ == '__main__':
    main()
