#!/usr/bin/env python3
"""Seeds a fuzz corpus from the repo's tests: every `json!(…)` literal and raw string
`r#"…"#` in the given Rust files that parses as JSON (after dropping trailing commas) is
written to the corpus directory, one file per value, named by its SHA-1.

    fuzz/seeds/extract.py CORPUS_DIR [--prefix HEX] [--wrap KEY] FILE...
"""
import hashlib, json, os, re, sys

def literals(src):
    i = 0
    while True:
        j = src.find("json!(", i)
        k = src.find('r#"', i)
        if j < 0 and k < 0:
            return
        if j >= 0 and (k < 0 or j < k):
            start = j + len("json!(")
            depth, p, in_str, esc = 1, start, False, False
            while p < len(src) and depth:
                c = src[p]
                if in_str:
                    if esc: esc = False
                    elif c == "\\": esc = True
                    elif c == '"': in_str = False
                elif c == '"': in_str = True
                elif c in "([{": depth += 1
                elif c in ")]}": depth -= 1
                p += 1
            yield src[start:p - 1]
            i = p
        else:
            end = src.find('"#', k + 3)
            if end < 0:
                return
            yield src[k + 3:end]
            i = end + 2

def main():
    args = sys.argv[1:]
    out = args.pop(0)
    prefix = b""
    wrap = None
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag == "--prefix":
            prefix = bytes.fromhex(args.pop(0))
        elif flag == "--wrap":
            wrap = args.pop(0)
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in args:
        src = open(path, encoding="utf-8").read()
        for lit in literals(src):
            text = re.sub(r",(\s*[\]}])", r"\1", lit)
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if wrap:
                value = {wrap: value}
            data = prefix + json.dumps(value, ensure_ascii=False).encode()
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
            n += 1
    print(f"{out}: {n} seeds")

main()
